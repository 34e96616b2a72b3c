// Every file attnscope writes goes through here (docs/DESIGN.md §3.5 "Atomic writes"): a temporary
// file beside the target, written, fsynced and renamed over it, so after a crash, a kill or a full
// disk the file is the old one or the new one, never a mix. Writers stream into it (a trace's JSON
// or a large workspace is never held twice in memory) and every write is checked: a failure removes
// the temporary file and throws one InputError naming the path, the old file untouched.
// Only regular files are replaced (or new ones made): a FIFO, a device, a socket or a folder at the
// path is refused before anything is written, so saving onto /dev/full never renames a file over it.
#pragma once
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

namespace attnscope {

// Writes what `write` puts into the stream to `path`, atomically. A symbolic link is followed (its
// target is replaced, the link stays). Throws InputError "PATH: why; the previous file is
// unchanged". An exception thrown by `write` abandons the temporary file and propagates.
void writeFileAtomically(const std::string& path, const std::function<void(std::ostream&)>& write);
void writeFileAtomically(const std::string& path, const std::string& contents);

// A new file in `folder` that appears whole: written to a temporary file, then given the first of
// name(1), name(2), … (k < 1000) that no file has, never replacing one, even another writer's made
// in the meantime. Returns its path; throws InputError like writeFileAtomically.
std::string writeNewFileAtomically(const std::string& folder, const std::function<std::string(int k)>& name,
                                   const std::function<void(std::ostream&)>& write);

// What a write to `path` would replace, following symbolic links; throws InputError naming the path
// when it is not a regular file or a new one (a FIFO, device, socket or folder). Callers that want
// to refuse before doing expensive work call it first; writeFileAtomically checks again.
std::string writableTarget(const std::string& path);
// writableTarget, and a file can be made in its folder (one is made and removed): a missing folder,
// a read-only one or a full disk is said before long work whose result goes there, not after.
std::string checkWritable(const std::string& path);

// What a file on disk is, to notice that another program wrote it since we read or wrote it: its
// device and inode (a rename over it makes another), size and modification time (nanoseconds).
struct FileStamp {
  bool exists = false;
  std::uint64_t device = 0, inode = 0, size = 0;
  std::int64_t modified_ns = 0;
  bool operator==(const FileStamp& o) const {
    return exists == o.exists && device == o.device && inode == o.inode && size == o.size &&
           modified_ns == o.modified_ns;
  }
  bool operator!=(const FileStamp& o) const { return !(*this == o); }
};
FileStamp fileStamp(const std::string& path);  // following symbolic links; exists = false if none

// Temporary files left by a write that never finished (the process was killed between creating and
// renaming it) are recorded while they exist, so the next start can remove them (docs/DESIGN.md
// §3.5). The journal is the state folder's business (app/state/session_files.h); the core only says
// when a temporary file comes and goes. Both hooks are optional and must not throw.
struct TemporaryFileHooks {
  std::function<void(const std::string& path)> created;  // before it is made (it may never be)
  std::function<void(const std::string& path)> gone;     // after it was renamed or removed
};
void setTemporaryFileHooks(TemporaryFileHooks hooks);

// The prefix of every temporary file's name (".attnscope-" and 12 random letters), for the clean-up.
inline constexpr const char* kTemporaryFilePrefix = ".attnscope-";

}  // namespace attnscope
