#include "state/session_files.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/errors.h"

namespace attnscope {

namespace fs = std::filesystem;

std::string stateFolder() {
  const char* xdg = std::getenv("XDG_STATE_HOME");
  const char* home = std::getenv("HOME");
  const fs::path base = xdg && *xdg ? fs::path(xdg) : fs::path(home && *home ? home : ".") / ".local" / "state";
  return (base / "attnscope").string();
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
  std::ifstream in(statePath("settings.json"));
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);  // unreadable: defaults
  if (j.is_object()) {
    if (j.contains("recent") && j["recent"].is_array())
      for (const auto& r : j["recent"])
        if (r.is_string()) s.recent.push_back(r.get<std::string>());
    if (j.contains("last_folder") && j["last_folder"].is_string()) s.last_folder = j["last_folder"].get<std::string>();
  }
  if (s.last_folder.empty()) s.last_folder = fs::current_path().string();
  return s;
}

void saveSettings(const Settings& s) {
  try {
    writeFileAtomically(statePath("settings.json"),
                        nlohmann::json{{"recent", s.recent}, {"last_folder", s.last_folder}}.dump(2));
  } catch (const InputError&) {
    // Settings are a convenience; the work itself is saved elsewhere.
  }
}

void rememberFile(Settings& s, const std::string& path) {
  const std::string full = fs::absolute(path).string();
  s.recent.erase(std::remove(s.recent.begin(), s.recent.end(), full), s.recent.end());
  s.recent.insert(s.recent.begin(), full);
  if (s.recent.size() > 10) s.recent.resize(10);
  s.last_folder = fs::path(full).parent_path().string();
  saveSettings(s);
}

void Autosave::update(const Document& doc, const ViewState& view_state, double now) {
  if (!enabled_ || now - last_write_ < 0.5) return;
  nlohmann::json view = viewToJson(view_state);
  view["file"] = doc.file();
  view["dirty"] = doc.dirty();
  std::string view_text = view.dump();
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

std::string Autosave::pending() const {
  if (!enabled_) return "";
  const std::string path = statePath("autosave.json");
  std::error_code ec;
  return fs::is_regular_file(path, ec) ? path : "";
}

}  // namespace attnscope
