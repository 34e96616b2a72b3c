#include "formats/temporary_files.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>

#include "formats/atomic_file.h"

namespace attnscope {

namespace fs = std::filesystem;

std::string stateFolder() {
  const char* xdg = std::getenv("XDG_STATE_HOME");
  const char* home = std::getenv("HOME");
  const fs::path base = xdg && *xdg ? fs::path(xdg) : fs::path(home && *home ? home : ".") / ".local" / "state";
  return (base / "attnscope").string();
}

namespace {

constexpr const char* kEndOfList = ".\n";  // the line after the last name

// This process's journal: the temporary files in flight, rewritten whole at each change (a few
// lines), under an exclusive flock held until the process ends (a crash or a kill releases it).
class Journal {
 public:
  explicit Journal(std::string folder) : folder_(std::move(folder)) {}
  ~Journal() {
    if (fd_ >= 0) {
      ::close(fd_);
      ::unlink(path_.c_str());  // a clean exit leaves nothing to clean
    }
  }
  void created(const std::string& tmp) {
    std::lock_guard<std::mutex> lock(mutex_);
    files_.insert(absolute(tmp));
    write();
  }
  void gone(const std::string& tmp) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = files_.find(absolute(tmp));  // one of them: another write may hold the same name
    if (it != files_.end()) files_.erase(it);
    write();
  }

 private:
  static std::string absolute(const std::string& p) {
    std::error_code ec;
    const fs::path a = fs::absolute(p, ec);
    return (ec ? fs::path(p) : a).lexically_normal().string();
  }
  void write() {
    if (fd_ < 0 && !open()) return;
    std::string text;
    for (const std::string& f : files_) text += f + "\n";
    text += kEndOfList;
    // Written over the old list, then cut to length: a kill between the two leaves the new list,
    // its end line, then the old one's tail (which the clean-up never reads), and never an empty
    // journal while a file is in flight.
    ssize_t at = 0;
    while (at < static_cast<ssize_t>(text.size())) {
      const ssize_t n = ::pwrite(fd_, text.data() + at, text.size() - static_cast<std::size_t>(at), at);
      if (n <= 0) return;
      at += n;
    }
    (void)::ftruncate(fd_, static_cast<off_t>(text.size()));
  }
  bool open() {
    if (tried_) return false;
    tried_ = true;
    std::error_code ec;
    const fs::path dir = fs::path(folder_) / "temporary";
    fs::create_directories(dir, ec);
    path_ = (dir / (std::to_string(::getpid()) + ".journal")).string();
    const int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return false;
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd);
      return false;
    }
    fd_ = fd;
    return true;
  }
  std::string folder_, path_;
  std::mutex mutex_;
  std::multiset<std::string> files_;
  int fd_ = -1;
  bool tried_ = false;
};

std::shared_ptr<Journal>& journal() {
  static std::shared_ptr<Journal> j;
  return j;
}

}  // namespace

void journalTemporaryFiles(const std::string& folder) {
  auto j = std::make_shared<Journal>(folder);
  journal() = j;
  TemporaryFileHooks hooks;
  hooks.created = [j](const std::string& tmp) { j->created(tmp); };
  hooks.gone = [j](const std::string& tmp) { j->gone(tmp); };
  setTemporaryFileHooks(std::move(hooks));
}

int removeAbandonedTemporaryFiles(const std::string& folder) {
  int removed = 0;
  std::error_code ec;
  const fs::path dir = fs::path(folder) / "temporary";
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".journal" || !entry.is_regular_file(ec)) continue;
    const int fd = ::open(entry.path().c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) continue;
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {  // its process is alive and may be writing
      ::close(fd);
      continue;
    }
    std::ifstream in(entry.path());
    std::string line;
    while (std::getline(in, line) && line + "\n" != kEndOfList) {
      const fs::path p(line);
      struct stat st;
      if (!p.is_absolute() || p.filename().string().rfind(kTemporaryFilePrefix, 0) != 0) continue;
      if (::lstat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      if (::unlink(p.c_str()) == 0) ++removed;
    }
    ::unlink(entry.path().c_str());
    ::close(fd);
  }
  return removed;
}

}  // namespace attnscope
