// Reading a whole file, bounded (docs/DESIGN.md §3.5): every file attnscope reads in one piece comes
// through here, so none can make it block, read without end or hold more than its limit.
#pragma once
#include <cstdint>
#include <string>

namespace attnscope {

// Which files a read accepts besides regular ones.
enum class FileKind {
  Regular,      // only a regular file: a FIFO would block the caller, a device never end
  AnyReadable,  // also a pipe or a device (/dev/stdin, <(…)): read at most one block past the limit
};

// The contents of `path`, refused before anything is read when the path does not exist, is a
// folder, is not a regular file (FileKind::Regular) or is a regular file over `max_bytes`. Throws
// InputError "PATH: why": "cannot open the file (does it exist?)", "is a directory, not a file",
// "is not a regular file (…)", "N bytes is larger than the limit of M bytes".
std::string readFileWithin(const std::string& path, std::int64_t max_bytes, FileKind kind = FileKind::Regular);

// Why a path could not be opened, from its errno: "cannot open the file (does it exist?)" when it
// does not, "cannot open the file: permission denied", "…: a loop of symbolic links", else the
// system's words. Every reader says it alike (an unreadable model had read as a missing one).
std::string cannotOpen(int error);

}  // namespace attnscope
