// Process-wide memory policy for programs that compute traces again and again (the app, the CLI's
// benchmark): see tuneMalloc.
#pragma once
#include <cstddef>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

namespace attnscope {

// An allocator whose vectors leave new elements uninitialized on resize (default-initialized, not
// value-initialized): for a buffer each element of which is written before it is read, handed
// from one owner to the next (the projections' block: zeroing GPT-2's 113 MB a pass at 1024
// tokens cost ~8 ms).
template <class T>
struct UninitializedAllocator : std::allocator<T> {
  using value_type = T;
  UninitializedAllocator() = default;
  template <class U>
  UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}
  template <class U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
using FloatBuffer = std::vector<float, UninitializedAllocator<float>>;

// Memory for a large buffer that lives long (a model's packed weights, 340 MB for GPT-2 small):
// 64-byte aligned; from kLargeBufferBytes on, a mapping of its own advised to transparent huge
// pages, so that its first writes take a page fault per 2 MiB instead of per 4 KiB (340 MB: 1.0 s
// in small pages, about half in huge ones, on the VM of docs/DESIGN.md §2.6 "Opening a model") —
// unless hugePagesPay says small pages come cheaper (a VM whose host takes free 2 MiB blocks back).
// Where huge pages are off it is an ordinary mapping. Under AddressSanitizer, operator new (whose
// bounds it checks).
constexpr std::size_t kLargeBufferBytes = std::size_t{2} << 20;
void* allocateLarge(std::size_t bytes);
void freeLarge(void* p, std::size_t bytes) noexcept;

// The bytes free in blocks of fewer than 2^`order` pages of 4 KiB, from /proc/buddyinfo's text
// (a line a zone: "Node 0, zone Normal" and the free blocks of each order, 0 on). Whatever the
// text: a zone's counts end at its first word that is no count, and a sum past size_t's range is
// its largest value.
std::size_t freeBytesBelowOrder(const std::string& buddyinfo, int order);
// Whether a buffer of `bytes` should ask for huge pages. Yes, but where free page reporting hands
// free blocks of 2^order pages and up back to a VM's host (/sys/module/page_reporting) and the free
// blocks below that order hold twice the buffer: a huge page is then a block the host must back
// again on its first touch (the app opened GPT-2 small in 0.36–1.64 s, one run after another),
// and small pages are taken from the smaller blocks first, which it never took (0.38–0.40 s;
// docs/DESIGN.md §2.6 "Opening a model").
bool hugePagesPay(std::size_t bytes);

// A vector's allocator over allocateLarge, new elements left uninitialized (as
// UninitializedAllocator): for buffers written whole before they are read.
template <class T>
struct LargeBufferAllocator : UninitializedAllocator<T> {
  using value_type = T;
  LargeBufferAllocator() = default;
  template <class U>
  LargeBufferAllocator(const LargeBufferAllocator<U>&) noexcept {}
  template <class U>
  struct rebind {
    using other = LargeBufferAllocator<U>;
  };
  T* allocate(std::size_t n) { return static_cast<T*>(allocateLarge(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) noexcept { freeLarge(p, n * sizeof(T)); }
};

// A GPT-2 trace holds ~100 MB of maps in 4 MB matrices. glibc hands such blocks back to the kernel
// when they are freed and page-faults them in again on the next trace, and a large share of a
// trace's time went to clearing fresh pages (docs/engine-measurements.md). This keeps freed blocks
// in the process for reuse (blocks up to 32 MB come from the heap; the heap is not trimmed below
// 1 GiB of free space), and holds glibc to two arenas: the maps are allocated on the engine's
// thread and freed on the UI thread, the colours the other way round, and every further arena kept
// its own peak of freed blocks, which raised the app's peak with GPT-2. Resident memory then stays
// at its peak instead of falling between traces. Call once, first thing in main.
void tuneMalloc();

}  // namespace attnscope
