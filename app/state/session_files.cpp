#include "state/session_files.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/errors.h"
#include "formats/atomic_file.h"
#include "formats/file_reading.h"
#include "formats/json_format.h"
#include "formats/json_reading.h"
#include "formats/workspace_file.h"
#include "lessons/lesson.h"

namespace attnscope {

namespace fs = std::filesystem;

std::string homeFolder() {
  const char* home = std::getenv("HOME");
  std::error_code ec;
  return home && *home && fs::is_directory(home, ec) ? std::string(home) : std::string("/");
}

namespace {

std::string statePath(const std::string& name) {
  std::error_code ec;
  fs::create_directories(stateFolder(), ec);
  return (fs::path(stateFolder()) / name).string();
}

// "20261122-101530": the local time in the names of kept files.
std::string timeStamp() {
  const std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
  return stamp;
}

// An flock on a file of the state folder, released when it goes out of scope.
class FolderLock {
 public:
  explicit FolderLock(const std::string& name) {
    fd_ = ::open(statePath(name).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
  }
  ~FolderLock() {
    if (fd_ >= 0) ::close(fd_);
  }

 private:
  int fd_ = -1;
};

Settings readSettings() {
  Settings s;
  const std::string path = statePath("settings.json");
  std::error_code ec;
  nlohmann::json j;
  if (fs::exists(path, ec)) {
    try {  // never a FIFO or a huge file
      j = readJson(readFileWithin(path, 1 << 20), path, 64 << 20);
    } catch (const InputError&) {
    }
    if (!j.is_object()) moveAside(path);  // unreadable: kept for the user, never overwritten; defaults
  }
  if (j.is_object()) {
    if (j.contains("recent") && j["recent"].is_array())
      for (const auto& r : j["recent"])
        if (r.is_string()) s.recent.push_back(r.get<std::string>());
    if (j.contains("last_folder") && j["last_folder"].is_string()) s.last_folder = j["last_folder"].get<std::string>();
    if (j.contains("lesson_folder") && j["lesson_folder"].is_string())
      s.lesson_folder = j["lesson_folder"].get<std::string>();
  }
  return s;
}

// Never the working directory, which is the repository when the app runs from a checkout: the
// browser starts in the last folder used, else the home folder.
Settings withDefaults(Settings s) {
  if (s.last_folder.empty()) s.last_folder = homeFolder();
  if (s.lesson_folder.empty()) s.lesson_folder = lessonsFolder();  // the chapter's lessons, the first time
  return s;
}

// BASE-STAMP.EXT, BASE-STAMP-2.EXT, …: the k-th name tried for a file made in one second.
std::string stampedName(const std::string& base, const std::string& stamp, int k, const std::string& ext) {
  return base + "-" + stamp + (k > 1 ? "-" + std::to_string(k) : "") + ext;
}

}  // namespace

Settings loadSettings() { return withDefaults(readSettings()); }

Settings updateSettings(const std::function<void(Settings&)>& change) {
  FolderLock lock("settings.lock");
  Settings s = readSettings();
  change(s);
  try {
    writeFileAtomically(statePath("settings.json"), jsonText(nlohmann::json{{"recent", s.recent},
                                                                            {"last_folder", s.last_folder},
                                                                            {"lesson_folder", s.lesson_folder}},
                                                             2));
  } catch (const InputError&) {
    // Settings are a convenience; the work itself is saved elsewhere.
  }
  return withDefaults(std::move(s));
}

Settings rememberFile(const std::string& path) {
  const std::string full = documentPath(path);
  return updateSettings([&](Settings& s) {
    s.recent.erase(std::remove(s.recent.begin(), s.recent.end(), full), s.recent.end());
    s.recent.insert(s.recent.begin(), full);
    if (s.recent.size() > 10) s.recent.resize(10);
    s.last_folder = fs::path(full).parent_path().string();
  });
}

// ---- instances ----------------------------------------------------------------------------------

namespace {

std::string autosaveName(int slot) {
  return slot <= 1 ? "autosave.json" : "autosave-" + std::to_string(slot) + ".json";
}
std::string lockName(int slot) { return "instance-" + std::to_string(slot) + ".lock"; }

// The slot's lock when no instance holds it, else -1.
int lockSlot(int slot) {
  const int fd = ::open(statePath(lockName(slot)).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

InstanceSlot InstanceSlot::take() {
  for (int slot = 1; slot <= kMaxInstances; ++slot)
    if (const int fd = lockSlot(slot); fd >= 0) return InstanceSlot(slot, fd);
  return InstanceSlot(0, -1);
}

InstanceSlot::~InstanceSlot() {
  if (fd_ >= 0) ::close(fd_);
}

std::string InstanceSlot::autosavePath() const { return (fs::path(stateFolder()) / autosaveName(number_)).string(); }

std::string InstanceSlot::collectOrphans() const {
  std::string note;
  for (int slot = 1; slot <= kMaxInstances; ++slot) {
    if (slot == number_ || (number_ == 0 && slot == 1)) continue;
    const std::string path = (fs::path(stateFolder()) / autosaveName(slot)).string();
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) continue;
    const int fd = lockSlot(slot);
    if (fd < 0) continue;  // a running instance's
    const nlohmann::json view = autosaveView(path);
    if (!holdsUnsavedWork(view)) {
      fs::remove(path, ec);  // saved work: its file has it
    } else if (const std::string kept = moveAside(path); !kept.empty()) {
      const std::string file = fileNameOf(view);
      note += std::string(note.empty() ? "" : " ") + "Unsaved work of another window (" +
              (file.empty() ? std::string("untitled") : fs::path(file).filename().string()) + ") is kept in " + kept +
              ".";
    }
    ::close(fd);
  }
  return note;
}

// ---- the autosave -------------------------------------------------------------------------------

void Autosave::update(const Document& doc, const ViewState& view_state, double now, const nlohmann::json& trained_model,
                      bool unsaved) {
  if (path_.empty()) return;
  if (std::optional<Written> done = writing_->poll()) {  // the last write ended
    gap_ = std::max(0.5, 10 * done->seconds);
    if (done->error.empty()) {
      written_version_ = done->version;
      written_view_ = std::move(done->view_text);
      if (failing_) message_ = std::make_pair(std::string("Autosave works again: ") + path_, false);
      failing_ = false;
    } else {
      // A full disk must not stop the session, but the user must know their work is not kept.
      if (!failing_)
        message_ = std::make_pair(std::string("Autosave is off: ") + done->error +
                                      ". Your work is kept only when you save it (Ctrl+S); autosave tries again.",
                                  true);
      failing_ = true;
    }
  }
  if (writing_->busy() || now - last_write_ < gap_) return;
  nlohmann::json view = savedView(view_state, doc.workspace().view);
  if (!trained_model.is_null()) view["trained_model"] = trained_model;
  putFileName(view, doc.file());
  putFileStamp(view, doc.fileStamp());
  view["dirty"] = unsaved;
  std::string view_text = jsonText(view);
  // Serializing a GPT-2-sized workspace takes a while: only when the inputs or the view changed.
  // While writing fails, it is tried again at most every few seconds.
  if (doc.version() == written_version_ && view_text == written_view_) return;
  if (failing_ && now - last_write_ < 5.0) return;
  auto ws = std::make_shared<Workspace>(doc.workspace());  // the document as it is now; it moves on
  ws->view = std::move(view);
  last_write_ = now;
  writing_->start([path = path_, ws, version = doc.version(), view_text = std::move(view_text)](
                      const std::atomic<bool>&) {
    Written w{version, view_text, "", 0};
    // The engine's threads first: a GPT-2-sized write beside a computation cost a reply 100 ms.
    // Niced, not idle-scheduled: it still ends while a training run keeps every core busy.
    setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), 19);
    const auto start = std::chrono::steady_clock::now();
    try {
      std::error_code ec;
      fs::create_directories(fs::path(path).parent_path(), ec);
      saveWorkspace(path, *ws);
    } catch (const std::exception& e) {  // InputError, or no memory for the text: tried again later
      w.error = e.what();
    }
    w.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return w;
  });
}

std::string Autosave::pending() const {
  std::error_code ec;
  return !path_.empty() && fs::is_regular_file(path_, ec) ? path_ : "";
}

nlohmann::json autosaveView(const std::string& path) {
  // Only its first members are read: a saved workspace writes its view before its tokens and
  // numbers, so a 300 MB autosave costs what its first kilobytes cost. (One written by an older
  // attnscope has its view last: it is read to the end, keeping nothing else.)
  struct Done {};
  nlohmann::json view = nlohmann::json::object();
  std::ifstream in(path, std::ios::binary);
  if (!in) return view;
  std::string key;
  try {
    const nlohmann::json ignored = nlohmann::json::parse(in, [&](int depth, nlohmann::json::parse_event_t event,
                                                                 nlohmann::json& parsed) {
      using E = nlohmann::json::parse_event_t;
      if (depth > kMaxJsonDepth) throw Done{};
      if (depth == 1 && event == E::key) {
        key = parsed.get<std::string>();
        if (key == "tokens" || key == "embeddings" || key == "parameters") throw Done{};  // no view before them
        return true;
      }
      if (depth == 1 && key == "view" && event == E::object_end) {
        view = parsed;
        throw Done{};
      }
      return depth != 1 || key == "view" || event == E::key;  // keep the view only
    });
    (void)ignored;
  } catch (const Done&) {
  } catch (const nlohmann::json::exception&) {
  }
  return view.is_object() ? view : nlohmann::json::object();
}

std::string keepUnsaved(const Document& doc, const ViewState& view_state, const nlohmann::json& trained_model) {
  const std::string name = doc.file().empty() ? "untitled" : fs::path(doc.file()).stem().string();
  Workspace ws = doc.workspace();
  nlohmann::json view = savedView(view_state, doc.workspace().view);
  if (!trained_model.is_null()) view["trained_model"] = trained_model;
  putFileName(view, doc.file());
  putFileStamp(view, doc.fileStamp());
  view["dirty"] = true;
  ws.view = std::move(view);
  statePath("settings.json");  // creates the folder
  const std::string stamp = timeStamp();
  try {
    // Written whole before it has its name: whoever lists the folder never finds it half written.
    return writeNewFileAtomically(
        stateFolder(), [&](int k) { return stampedName("unsaved-" + name, stamp, k, ".json"); },
        [&ws](std::ostream& out) { writeWorkspace(out, ws); });
  } catch (const InputError&) {
    return "";
  }
}

std::string moveAside(const std::string& path) {
  const std::string stamp = timeStamp();
  const fs::path p(path);
  for (int k = 1; k < 1000; ++k) {
    const std::string target =
        (p.parent_path() / stampedName(p.stem().string() + "-kept", stamp, k, p.extension().string())).string();
    // renameat2's RENAME_NOREPLACE: two instances moving aside in one second never replace each other's.
    if (::renameat2(AT_FDCWD, path.c_str(), AT_FDCWD, target.c_str(), RENAME_NOREPLACE) == 0) return target;
    if (errno != EEXIST) return "";
  }
  return "";
}

Recovery planRecovery(const Autosave& autosave, const std::string& open_path) {
  Recovery r;
  const std::string path = autosave.pending();
  if (path.empty()) return r;
  if (open_path.empty()) {
    r.restore = path;
    return r;
  }
  // Whose is it, and does it hold unsaved work? Only the view is needed; a file that cannot be
  // read at all is kept too.
  const nlohmann::json v = autosaveView(path);
  const std::string file = fileNameOf(v);
  if (!holdsUnsavedWork(v)) return r;  // saved work: nothing to lose
  std::error_code ec;
  const auto same = [&ec](const std::string& a, const std::string& b) {  // one file, however spelled
    return !a.empty() && (documentPath(a) == documentPath(b) || fs::equivalent(a, b, ec));
  };
  bool newer = false;
  if (same(file, open_path)) {
    const auto saved = fs::last_write_time(open_path, ec);
    const auto autosaved = fs::last_write_time(path, ec);
    // Newer unsaved changes to the very file asked for: the file opens as asked, and they are
    // offered (App: Restore them, or keep the file as saved), never put in its place unasked.
    // Older: the file changed since, and the autosave is older unsaved work of it.
    newer = !ec && autosaved > saved;
  }
  const std::string kept = moveAside(path);
  if (newer && !kept.empty()) {
    r.offer = kept;
    return r;
  }
  if (!kept.empty())
    r.note = "Unsaved work of the last session (" +
             (file.empty() ? std::string("untitled") : fs::path(file).filename().string()) + ") is kept in " + kept;
  return r;
}

}  // namespace attnscope
