#include "engine/memory.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>  // defines __GLIBC__
#include <fstream>
#include <limits>
#include <new>
#include <sstream>
#include <string>

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#if defined(__linux__)
#include <sys/mman.h>
#endif

#if defined(__SANITIZE_ADDRESS__)
#define ATTNSCOPE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ATTNSCOPE_ASAN 1
#endif
#endif

namespace attnscope {

void tuneMalloc() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's maximum on 64-bit systems
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_ARENA_MAX, 2);
#endif
}

namespace {
constexpr std::size_t kAlignment = 64;
constexpr std::size_t kHugePage = std::size_t{2} << 20;
#if defined(ATTNSCOPE_ASAN)
constexpr bool kOwnMappings = false;
#else
constexpr bool kOwnMappings = true;
#endif

// Whole 4 KiB pages: the last part of a buffer short of 2 MiB stays in small pages, not a huge
// page mostly unused (GPT-2's 192 panel buffers of 2.4–7.1 MiB had held 150 MB more).
std::size_t mappedBytes(std::size_t bytes) {
  constexpr std::size_t kPage = 4096;
  return (bytes + kPage - 1) / kPage * kPage;
}
}  // namespace

void* allocateLarge(std::size_t bytes) {
#if defined(__linux__)
  if (kOwnMappings && bytes >= kLargeBufferBytes) {
    // A huge page's worth more, then the ends trimmed: the buffer starts on a 2 MiB boundary, so
    // every 2 MiB of it can be one huge page.
    const std::size_t length = mappedBytes(bytes);
    void* raw = mmap(nullptr, length + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) throw std::bad_alloc();
    const auto start = reinterpret_cast<std::uintptr_t>(raw);
    const std::uintptr_t aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
    if (aligned > start) munmap(raw, aligned - start);
    if (const std::size_t tail = start + length + kHugePage - (aligned + length); tail > 0)
      munmap(reinterpret_cast<void*>(aligned + length), tail);
    void* p = reinterpret_cast<void*>(aligned);
    // Advice: refused (huge pages off), the pages are 4 KiB.
    madvise(p, length, hugePagesPay(length) ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    return p;
  }
#endif
  return ::operator new(bytes, std::align_val_t(kAlignment));
}

std::size_t freeBytesBelowOrder(const std::string& buddyinfo, int order) {
  order = std::min(order, 30);  // 4 TiB blocks: more than any machine has (a shift stays defined)
  constexpr std::size_t kMost = std::numeric_limits<std::size_t>::max();
  std::size_t bytes = 0;
  std::istringstream lines(buddyinfo);
  for (std::string line; std::getline(lines, line);) {
    const std::size_t zone = line.find("zone");
    if (zone == std::string::npos) continue;
    std::istringstream counts(line.substr(zone + 4));
    std::string name;
    counts >> name;
    std::size_t blocks = 0;
    for (int o = 0; o < order && counts >> blocks; ++o) {  // a count past size_t's range: all memory
      const std::size_t block = std::size_t{4096} << o;
      bytes = blocks > (kMost - bytes) / block ? kMost : bytes + blocks * block;
    }
  }
  return bytes;
}

bool hugePagesPay(std::size_t bytes) {
#if defined(__linux__)
  static const int reporting_order = [] {
    std::ifstream in("/sys/module/page_reporting/parameters/page_reporting_order");
    int order = -1;
    return in >> order ? order : -1;
  }();
  if (reporting_order <= 0) return true;  // no free page reporting: the host keeps what it gave
  std::ifstream in("/proc/buddyinfo");
  std::stringstream text;
  text << in.rdbuf();
  return freeBytesBelowOrder(text.str(), reporting_order) < 2 * bytes;
#else
  (void)bytes;
  return true;
#endif
}

void freeLarge(void* p, std::size_t bytes) noexcept {
  if (p == nullptr) return;
#if defined(__linux__)
  if (kOwnMappings && bytes >= kLargeBufferBytes) {
    munmap(p, mappedBytes(bytes));
    return;
  }
#else
  (void)bytes;
#endif
  ::operator delete(p, std::align_val_t(kAlignment));
}

}  // namespace attnscope
