// fuzz_png: PNG text chunks (core/formats/png_image.h). The bytes are written to a file of this
// process (in /dev/shm when there is one: no disk traffic), then read the ways the app reads a
// file: isPng, readPngText(path, "attnscope-workspace", 1 MiB) and loadWorkspace (which opens a
// PNG by its workspace chunk). Each either refuses with an InputError or returns a result; the
// answers agree with each other (isPng ⇔ the PNG signature; readPngText only reads PNGs and
// returns at most max_bytes; a loaded PNG is the workspace of its chunk).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

#include "formats/png_image.h"
#include "fuzz_common.h"

namespace {

// One scratch file per process (libFuzzer's -fork/-jobs workers and fuzz_replay's children are
// processes of their own), removed after each input.
const std::string& scratchPath() {
  static const std::string path = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : (tmp && *tmp ? tmp : "/tmp");
    return dir + "/attnscope-fuzz-png-" + std::to_string(getpid()) + ".png";
  }();
  return path;
}

void writeFile(const std::string& path, const std::uint8_t* data, std::size_t size) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) attnscope::fuzz::finding("harness: cannot create " + path);
  while (size > 0) {
    const ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) attnscope::fuzz::finding("harness: cannot write " + path);
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  close(fd);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace attnscope;
  static const unsigned char kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  constexpr std::size_t kMaxText = std::size_t{1} << 20;
  const std::string& path = scratchPath();
  writeFile(path, data, size);

  const bool signature = size >= 8 && std::memcmp(data, kSignature, 8) == 0;
  bool png = false;
  try {
    png = isPng(path);
  } catch (const std::exception& e) {
    fuzz::unexpected("isPng", e);
  }
  FUZZ_CHECK(png == signature, "isPng disagrees with the file's first 8 bytes");

  std::optional<std::string> text;
  bool read = false;
  try {
    text = readPngText(path, kWorkspaceChunk, kMaxText);
    read = true;
  } catch (const InputError&) {
  } catch (const std::exception& e) {
    fuzz::unexpected("readPngText", e);
  }
  FUZZ_CHECK(!read || png, "readPngText accepted a file without the PNG signature");
  FUZZ_CHECK(!text || text->size() <= kMaxText, "readPngText returned " + std::to_string(text->size()) + " bytes");

  // Opening the file as the app does: a PNG is the workspace in its chunk.
  const Limits limits = fuzz::smallLimits();
  try {
    const Workspace ws = loadWorkspace(path, limits);
    fuzz::checkConsistent(ws, limits, "loadWorkspace");
    if (png) {
      FUZZ_CHECK(text.has_value(), "loadWorkspace opened a PNG in which readPngText found no workspace");
      fuzz::checkSame(ws, parseWorkspace(*text, limits), "loadWorkspace(png) vs parseWorkspace(its chunk)");
    }
  } catch (const InputError&) {
  } catch (const std::exception& e) {
    fuzz::unexpected("loadWorkspace", e);
  }
  unlink(path.c_str());
  return 0;
}
