#include "formats/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <streambuf>
#include <vector>

#include "engine/errors.h"

namespace attnscope {

namespace fs = std::filesystem;

namespace {


std::mutex& hooksMutex() {
  static std::mutex m;
  return m;
}
TemporaryFileHooks& hooks() {
  static TemporaryFileHooks h;
  return h;
}

void tell(bool created, const std::string& tmp) {
  std::lock_guard<std::mutex> lock(hooksMutex());
  const auto& hook = created ? hooks().created : hooks().gone;
  if (hook) hook(tmp);
}

// The umask, read without changing it (umask(2) can only set it, which would race with other
// threads creating files): /proc/self/status has it since Linux 4.7; 022 otherwise.
mode_t processUmask() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("Umask:", 0) == 0) return static_cast<mode_t>(std::strtoul(line.c_str() + 6, nullptr, 8));
  return 022;
}

const char* kindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a pipe (FIFO)";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// A stream buffer over the temporary file's descriptor: 1 MiB at a time, EINTR retried, the first
// error kept (its errno) so the message says why.
class FdBuffer : public std::streambuf {
 public:
  explicit FdBuffer(int fd) : fd_(fd), buffer_(1 << 20) { setp(buffer_.data(), buffer_.data() + buffer_.size()); }
  int error() const { return error_; }
  bool flushAll() { return drain() && error_ == 0; }

 protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() ? 0 : -1; }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    if (n >= static_cast<std::streamsize>(buffer_.size())) {  // large blocks go straight through
      if (!drain() || !writeAll(s, static_cast<std::size_t>(n))) return 0;
      return n;
    }
    return std::streambuf::xsputn(s, n);
  }

 private:
  bool drain() {
    const std::size_t n = static_cast<std::size_t>(pptr() - pbase());
    const bool ok = writeAll(pbase(), n);
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    return ok;
  }
  bool writeAll(const char* p, std::size_t left) {
    if (error_) return false;
    while (left > 0) {
      const ssize_t n = ::write(fd_, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        error_ = n < 0 ? errno : EIO;
        return false;
      }
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    return true;
  }
  int fd_;
  std::vector<char> buffer_;
  int error_ = 0;
};

// A new file `folder`/.attnscope-XXXXXXXXXXXX (twelve random letters or digits), open for writing,
// its path in *path; -1 with errno set when none can be made. Its name is journaled before the file
// exists (the `created` hook), so a kill at any moment after it appears leaves it listed for the
// next start's clean-up; mkstemp would make it first, and a kill before the journal was written
// left it behind for good. A name taken already is unlisted again and another drawn — with 62¹²
// names, a file of someone else's that the clean-up could take for ours is not to be met.
int createTemporaryFile(const fs::path& folder, std::string* path) {
  static constexpr char kLetters[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 draw(
      std::random_device{}() ^ (static_cast<std::uint64_t>(::getpid()) << 32) ^
      static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string name = kTemporaryFilePrefix;
    for (int i = 0; i < 12; ++i) name += kLetters[draw() % (sizeof(kLetters) - 1)];
    *path = (folder / name).string();
    tell(true, *path);
    const int fd = ::open(path->c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) return fd;
    const int err = errno;
    tell(false, *path);  // not ours: the clean-up must never remove it
    if (err != EEXIST) {
      errno = err;
      return -1;
    }
  }
  errno = EEXIST;
  return -1;
}

}  // namespace

FileStamp fileStamp(const std::string& path) {
  FileStamp s;
  struct stat st;
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return s;
  s.exists = true;
  s.device = static_cast<std::uint64_t>(st.st_dev);
  s.inode = static_cast<std::uint64_t>(st.st_ino);
  s.size = static_cast<std::uint64_t>(st.st_size);
  s.modified_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return s;
}

void setTemporaryFileHooks(TemporaryFileHooks h) {
  std::lock_guard<std::mutex> lock(hooksMutex());
  hooks() = std::move(h);
}

std::string writableTarget(const std::string& path) {
  std::error_code ec;
  fs::path target = path;
  for (int hops = 0; hops < 40 && fs::is_symlink(target, ec); ++hops) {
    const fs::path link = fs::read_symlink(target, ec);
    if (ec) break;
    target = link.is_absolute() ? link : target.parent_path() / link;
  }
  struct stat st;
  if (::stat(target.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    fail(path, std::string("is ") + kindOf(st.st_mode) + ", not a regular file: nothing was written to it");
  return target.string();
}

std::string checkWritable(const std::string& path) {
  const fs::path target = writableTarget(path);
  const fs::path folder = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  std::string tmp;
  const int fd = createTemporaryFile(folder, &tmp);
  if (fd < 0) fail(path, std::string("cannot write (") + std::strerror(errno) + "); nothing was written");
  ::close(fd);
  ::unlink(tmp.c_str());
  tell(false, tmp);
  return target.string();
}

namespace {

// A temporary file in `folder`, given `mode` (or, with none, the permissions and owner of `like` if it
// exists, else a new file's), filled by `write`, fsynced and closed; then `place` puts it at its name
// (returning 0 or an errno, the temporary file still there on failure) and the folder is fsynced.
// `path` names the file in messages.
void writeThenPlace(const std::string& path, const fs::path& folder, const fs::path& like,
                    const std::function<void(std::ostream&)>& write,
                    const std::function<int(const std::string&)>& place) {
  // What a failure leaves: the file as it was, or no file where there was none.
  struct stat st;
  const bool replaces = !like.empty() && ::stat(like.c_str(), &st) == 0;
  const std::string unchanged = replaces ? "; the previous file is unchanged" : "; nothing was written";
  std::string tmp;
  const int fd = createTemporaryFile(folder, &tmp);
  if (fd < 0) fail(path, std::string("cannot write (") + std::strerror(errno) + ")" + unchanged);
  bool open = true;
  auto discard = [&] {
    if (open) ::close(fd);
    open = false;
    ::unlink(tmp.c_str());
    tell(false, tmp);
  };
  auto abandon = [&](const std::string& why, int err) {
    discard();
    fail(path, why + " (" + std::strerror(err) + ")" + unchanged);
  };
  mode_t mode;
  if (replaces) {
    mode = st.st_mode & 07777;  // keep the file's permissions …
    if (st.st_uid != ::geteuid() || st.st_gid != ::getegid())
      (void)::fchown(fd, st.st_uid, st.st_gid);  // … and owner, where allowed (root saving a user's file)
  } else {
    mode = 0666 & ~processUmask();  // what a plain new file would get
  }
  if (::fchmod(fd, mode) != 0) abandon("cannot set permissions", errno);
  FdBuffer buffer(fd);
  std::ostream out(&buffer);
  try {
    write(out);
  } catch (...) {
    discard();
    throw;
  }
  if (!buffer.flushAll() || !out) abandon("write failed", buffer.error() ? buffer.error() : EIO);
  if (::fsync(fd) != 0) abandon("write failed", errno);
  open = false;
  if (::close(fd) != 0) {
    const int err = errno;
    discard();
    fail(path, std::string("write failed (") + std::strerror(err) + ")" + unchanged);
  }
  if (const int err = place(tmp); err != 0) {
    discard();
    fail(path, std::string("cannot replace the file (") + std::strerror(err) + ")" + unchanged);
  }
  tell(false, tmp);
  const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY);
  if (dir >= 0) {  // the rename itself survives a crash
    ::fsync(dir);
    ::close(dir);
  }
}

}  // namespace

// A temporary file beside the target (a short name, so a long target name still fits), written
// and fsynced, given the target's permissions, renamed over it, and the folder fsynced.
void writeFileAtomically(const std::string& path, const std::function<void(std::ostream&)>& write) {
  const fs::path target = writableTarget(path);
  const fs::path folder = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  writeThenPlace(path, folder, target, write, [&target](const std::string& tmp) {
    return std::rename(tmp.c_str(), target.c_str()) == 0 ? 0 : errno;
  });
}

std::string writeNewFileAtomically(const std::string& folder, const std::function<std::string(int)>& name,
                                   const std::function<void(std::ostream&)>& write) {
  std::string placed;
  const fs::path dir = folder.empty() ? fs::path(".") : fs::path(folder);
  writeThenPlace((dir / name(1)).string(), dir, {}, write, [&](const std::string& tmp) {
    for (int k = 1; k < 1000; ++k) {
      const std::string target = (dir / name(k)).string();
      // RENAME_NOREPLACE: a name another writer took in the meantime is never replaced.
      if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, target.c_str(), RENAME_NOREPLACE) == 0) {
        placed = target;
        return 0;
      }
      if (errno != EEXIST) return errno;
    }
    return EEXIST;
  });
  return placed;
}

void writeFileAtomically(const std::string& path, const std::string& contents) {
  writeFileAtomically(path, [&contents](std::ostream& out) {
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  });
}

}  // namespace attnscope
