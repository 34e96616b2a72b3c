#include "state/session_files.h"

#include <algorithm>
#include <ctime>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/errors.h"
#include "formats/atomic_file.h"
#include "formats/json_format.h"
#include "lessons/lesson.h"

namespace attnscope {

namespace fs = std::filesystem;

std::string stateFolder() {
  const char* xdg = std::getenv("XDG_STATE_HOME");
  const char* home = std::getenv("HOME");
  const fs::path base = xdg && *xdg ? fs::path(xdg) : fs::path(home && *home ? home : ".") / ".local" / "state";
  return (base / "attnscope").string();
}

std::string homeFolder() {
  const char* home = std::getenv("HOME");
  std::error_code ec;
  return home && *home && fs::is_directory(home, ec) ? std::string(home) : std::string("/");
}

namespace {

std::string statePath(const char* name) {
  std::error_code ec;
  fs::create_directories(stateFolder(), ec);
  return (fs::path(stateFolder()) / name).string();
}

}  // namespace

Settings loadSettings() {
  Settings s;
  const std::string path = statePath("settings.json");
  std::error_code ec;
  nlohmann::json j;
  if (fs::is_regular_file(path, ec) && fs::file_size(path, ec) < (1u << 20)) {  // never a FIFO or a huge file
    std::ifstream in(path);
    j = nlohmann::json::parse(in, nullptr, false);
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
  // Never the working directory, which is the repository when the app runs from a checkout: the
  // browser starts in the last folder used, else the home folder (issue 11).
  if (s.last_folder.empty()) s.last_folder = homeFolder();
  if (s.lesson_folder.empty()) s.lesson_folder = lessonsFolder();  // the chapter's lessons, the first time
  return s;
}

void saveSettings(const Settings& s) {
  try {
    writeFileAtomically(statePath("settings.json"),
                        jsonText(nlohmann::json{{"recent", s.recent}, {"last_folder", s.last_folder},
                                                {"lesson_folder", s.lesson_folder}}, 2));
  } catch (const InputError&) {
    // Settings are a convenience; the work itself is saved elsewhere.
  }
}

void rememberFile(Settings& s, const std::string& path) {
  const std::string full = documentPath(path);
  s.recent.erase(std::remove(s.recent.begin(), s.recent.end(), full), s.recent.end());
  s.recent.insert(s.recent.begin(), full);
  if (s.recent.size() > 10) s.recent.resize(10);
  s.last_folder = fs::path(full).parent_path().string();
  saveSettings(s);
}

void Autosave::update(const Document& doc, const ViewState& view_state, double now) {
  if (!enabled_ || now - last_write_ < 0.5) return;
  nlohmann::json view = savedView(view_state, doc.workspace().view);
  putFileName(view, doc.file());
  view["dirty"] = doc.dirty();
  std::string view_text = jsonText(view);
  // Serializing a GPT-2-sized workspace takes a while: only when the inputs or the view changed.
  if (doc.version() == written_version_ && view_text == written_view_) return;
  Workspace ws = doc.workspace();
  ws.view = std::move(view);
  try {
    writeFileAtomically(statePath("autosave.json"), dumpWorkspace(ws));
    written_version_ = doc.version();
    written_view_ = std::move(view_text);
  } catch (const InputError&) {
    // A full disk must not stop the session; the next change tries again.
  }
  last_write_ = now;
}

namespace {

// "20261122-101530": the local time in the names of kept files.
std::string timeStamp() {
  const std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
  return stamp;
}

}  // namespace

std::string keepUnsaved(const Document& doc, const ViewState& view_state) {
  const std::string stamp = timeStamp();
  const std::string name = doc.file().empty() ? "untitled" : fs::path(doc.file()).stem().string();
  const std::string path = (fs::path(stateFolder()) / ("unsaved-" + name + "-" + stamp + ".json")).string();
  Workspace ws = doc.workspace();
  nlohmann::json view = savedView(view_state, doc.workspace().view);
  putFileName(view, doc.file());
  view["dirty"] = true;
  ws.view = std::move(view);
  try {
    statePath("settings.json");  // creates the folder
    saveWorkspace(path, ws);
  } catch (const InputError&) {
    return "";
  }
  return path;
}

std::string moveAside(const std::string& path) {
  const std::string stamp = timeStamp();
  const fs::path p(path);
  std::string target = (p.parent_path() / (p.stem().string() + "-kept-" + stamp + p.extension().string())).string();
  std::error_code ec;
  for (int k = 2; fs::exists(target, ec); ++k)
    target = (p.parent_path() / (p.stem().string() + "-kept-" + stamp + "-" + std::to_string(k) + p.extension().string())).string();
  fs::rename(path, target, ec);
  return ec ? "" : target;
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
  std::string file;
  bool dirty = true;
  std::ifstream in(path, std::ios::binary);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_object() && j.contains("view") && j["view"].is_object()) {
    const nlohmann::json& v = j["view"];
    file = fileNameOf(v);
    if (v.contains("dirty") && v["dirty"].is_boolean()) dirty = v["dirty"].get<bool>();
  }
  if (!dirty) return r;  // saved work: nothing to lose
  std::error_code ec;
  const auto same = [&ec](const std::string& a, const std::string& b) {  // one file, however spelled
    return !a.empty() && (documentPath(a) == documentPath(b) || fs::equivalent(a, b, ec));
  };
  if (same(file, open_path)) {
    const auto saved = fs::last_write_time(open_path, ec);
    const auto autosaved = fs::last_write_time(path, ec);
    if (!ec && autosaved > saved) {
      r.restore = path;
      r.note = "Recovered unsaved changes to " + fs::path(file).filename().string() +
               " from the last session (newer than the file). Save to keep them.";
      return r;
    }
    // The file changed since: the autosave is older unsaved work of it, kept aside below.
  }
  const std::string kept = moveAside(path);
  if (!kept.empty())
    r.note = "Unsaved work of the last session (" + (file.empty() ? std::string("untitled") : fs::path(file).filename().string()) +
             ") is kept in " + kept;
  return r;
}

std::string Autosave::pending() const {
  if (!enabled_) return "";
  const std::string path = statePath("autosave.json");
  std::error_code ec;
  return fs::is_regular_file(path, ec) ? path : "";
}

}  // namespace attnscope
