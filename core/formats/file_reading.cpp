#include "formats/file_reading.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "engine/errors.h"

namespace attnscope {

std::string cannotOpen(int error) {
  switch (error) {
    case ENOENT:
    case ENOTDIR:
    case 0: return "cannot open the file (does it exist?)";
    case EACCES:
    case EPERM: return "cannot open the file: permission denied";
    case ELOOP: return "cannot open the file: a loop of symbolic links";
    default: return std::string("cannot open the file: ") + std::strerror(error);
  }
}

std::string readFileWithin(const std::string& path, std::int64_t max_bytes, FileKind kind) {
  auto fail = [&path](const std::string& why) { throw InputError(path + ": " + why); };
  const auto limit = [max_bytes] { return "the limit of " + std::to_string(max_bytes) + " bytes"; };
  struct stat st;
  if (path.empty() || ::stat(path.c_str(), &st) != 0) fail(cannotOpen(path.empty() ? ENOENT : errno));
  if (S_ISDIR(st.st_mode)) fail("is a directory, not a file");
  const bool regular = S_ISREG(st.st_mode);
  if (!regular && kind == FileKind::Regular)
    fail("is not a regular file (a pipe or a device is not read here: it could block or never end)");
  if (regular && st.st_size > max_bytes) fail(std::to_string(st.st_size) + " bytes is larger than " + limit());
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(cannotOpen(errno == 0 ? EACCES : errno));
  // Read in blocks, at most one past the limit: a file that grows, a pipe or a device cannot make
  // us read without end.
  std::string bytes;
  if (regular) bytes.reserve(static_cast<std::size_t>(st.st_size));
  char block[65536];
  while (in) {
    in.read(block, sizeof block);
    bytes.append(block, static_cast<std::size_t>(in.gcount()));
    if (static_cast<std::int64_t>(bytes.size()) > max_bytes) fail("larger than " + limit());
  }
  if (in.bad()) fail("cannot read the file");
  return bytes;
}

}  // namespace attnscope
