#include "state/files.h"

#include <imgui.h>
#include <imgui_stdlib.h>

#include <GLFW/glfw3.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/errors.h"
#include "formats/export.h"
#include "shell/layout_dump.h"
#include "formats/pytorch_script.h"
#include "shell/theme.h"

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

std::string folderOf(const std::string& path) {
  const fs::path p = fs::absolute(path);
  return p.parent_path().string();
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
    s.last_folder = j.value("last_folder", "");
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
  s.last_folder = folderOf(full);
  saveSettings(s);
}

void Autosave::update(const AppState& app, double now) {
  if (!enabled_ || now - last_write_ < 0.5) return;
  nlohmann::json view = viewToJson(app.view);
  view["file"] = app.file;
  view["dirty"] = app.dirty;
  std::string view_text = view.dump();
  // Serializing a GPT-2-sized workspace takes a while: only when the inputs or the view changed.
  if (app.version == written_version_ && view_text == written_view_) return;
  Workspace ws = app.workspace;
  ws.view = std::move(view);
  try {
    writeFileAtomically(statePath("autosave.json"), dumpWorkspace(ws));
    written_version_ = app.version;
    written_view_ = std::move(view_text);
  } catch (const InputError&) {
    // A full disk must not stop the session; the next change tries again.
  }
  last_write_ = now;
}

bool Autosave::restore(AppState& app) const {
  if (!enabled_) return false;
  const std::string path = statePath("autosave.json");
  if (!fs::exists(path)) return false;
  try {
    Workspace ws = loadWorkspace(path);
    app.view = viewFromJson(ws.view);
    app.file = ws.view.value("file", "");
    app.dirty = ws.view.value("dirty", false);
    app.workspace = std::move(ws);
    app.changed();
    return true;
  } catch (const InputError&) {
    return false;  // a damaged autosave: start from the book's example instead
  }
}

FileUi::FileUi() : settings_(loadSettings()) {}

void FileUi::begin(Mode mode, const std::string& name) {
  mode_ = mode;
  folder_ = settings_.last_folder;
  name_ = name;
  error_.clear();
}

void FileUi::open() { begin(Mode::Open, ""); }
void FileUi::saveAs() { begin(Mode::SaveAs, "workspace.json"); }
void FileUi::exportTrace() { begin(Mode::ExportTrace, "trace-export"); }
void FileUi::savePytorch() { begin(Mode::SavePytorch, "attention.py"); }
void FileUi::exportMatrix(const std::string& name, std::function<std::string(const std::string&)> write) {
  begin(Mode::ExportMatrix, name);
  write_matrix_ = std::move(write);
}

bool FileUi::openPath(AppState& app, const std::string& path, double now) {
  try {
    Workspace ws = loadWorkspace(path);
    app.history.record(app.workspace);
    app.view = viewFromJson(ws.view);
    app.workspace = std::move(ws);
    app.file = fs::path(path).extension() == ".png" ? "" : fs::absolute(path).string();  // a PNG opens untitled
    app.dirty = false;
    app.changed();
    rememberFile(settings_, path);
    app.showToast("Opened " + path, false, now);
    return true;
  } catch (const InputError& e) {
    app.showToast(e.what(), true, now);
    return false;
  }
}

bool FileUi::save(AppState& app, double now) {
  if (app.file.empty()) {
    saveAs();
    return false;
  }
  Workspace ws = app.workspace;
  ws.view = viewToJson(app.view);
  try {
    saveWorkspace(app.file, ws);
  } catch (const InputError& e) {
    app.showToast(std::string("Not saved: ") + e.what(), true, now);
    return false;
  }
  app.dirty = false;
  rememberFile(settings_, app.file);
  app.showToast("Saved " + app.file, false, now);
  return true;
}

void FileUi::requestQuit(AppState& app, bool* quit_now) {
  if (app.dirty) {
    confirm_quit_ = true;  // ask first
    *quit_now = false;
  } else {
    *quit_now = true;
  }
}

bool FileUi::browse() {
  ImGui::SetNextItemWidth(-1);
  ImGui::InputText("##folder", &folder_);
  layout().widget("file_folder");
  std::error_code ec;
  const bool wants_files = mode_ == Mode::Open;
  ImGui::BeginChild("entries", ImVec2(px(520), px(260)), true);
  if (ImGui::Selectable("..")) folder_ = fs::path(folder_).parent_path().string();
  std::vector<fs::directory_entry> entries;
  for (const auto& e : fs::directory_iterator(folder_, fs::directory_options::skip_permission_denied, ec)) entries.push_back(e);
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.path().filename() < b.path().filename(); });
  for (const auto& e : entries) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    if (e.is_directory(ec)) {
      if (ImGui::Selectable((name + "/").c_str())) folder_ = e.path().string();
    } else if (wants_files || mode_ == Mode::SaveAs) {
      const std::string ext = e.path().extension().string();
      if (ext != ".json" && ext != ".png") continue;
      if (ImGui::Selectable(name.c_str(), name == name_, ImGuiSelectableFlags_AllowDoubleClick)) {
        name_ = name;
        if (ImGui::IsMouseDoubleClicked(0)) return true;
      }
    }
  }
  if (ec) ImGui::TextDisabled("cannot list this folder: %s", ec.message().c_str());
  ImGui::EndChild();
  ImGui::SetNextItemWidth(-1);
  const bool enter = ImGui::InputText("##name", &name_, ImGuiInputTextFlags_EnterReturnsTrue);
  layout().widget("file_name");
  if (mode_ == Mode::ExportTrace) {
    ImGui::RadioButton("JSON", &export_format_, 0);
    ImGui::SameLine();
    ImGui::RadioButton("CSV files", &export_format_, 1);
    ImGui::SameLine();
    ImGui::RadioButton(".npy files", &export_format_, 2);
  }
  if (!error_.empty()) ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(theme().selection), "%s", error_.c_str());
  const bool ok = ImGui::Button(mode_ == Mode::Open ? "Open" : "Save") || enter;
  layout().widget("file_ok");
  ImGui::SameLine();
  if (ImGui::Button("Cancel")) {
    mode_ = Mode::None;
    ImGui::CloseCurrentPopup();
  }
  return ok;
}

void FileUi::draw(AppState& app, double now, bool* quit_now) {
  static const char* titles[] = {"", "Open workspace or screenshot", "Save workspace as", "Export the trace",
                                 "Save PyTorch code", "Export matrix"};
  if (mode_ != Mode::None && !ImGui::IsPopupOpen("##file")) ImGui::OpenPopup("##file");
  if (ImGui::BeginPopupModal("##file", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) {
    ImGui::TextUnformatted(titles[static_cast<int>(mode_)]);
    if (browse() && !name_.empty()) {
      const std::string path = (fs::path(folder_) / name_).string();
      std::string error;
      switch (mode_) {
        case Mode::Open:
          if (!openPath(app, path, now)) error = "cannot open " + path;
          break;
        case Mode::SaveAs: {
          const std::string target = fs::path(path).extension().empty() ? path + ".json" : path;
          const std::string before = app.file;
          app.file = target;
          if (!save(app, now)) {
            app.file = before;
            error = "not saved: see the message below";
          }
          break;
        }
        case Mode::ExportTrace:
          try {
            if (!app.trace) throw InputError("no trace yet");
            const ExportFormat f = export_format_ == 0 ? ExportFormat::Json : export_format_ == 1 ? ExportFormat::Csv : ExportFormat::Npy;
            const int n = attnscope::exportTrace(app.workspace, *app.trace, path, f);
            app.showToast("Wrote " + std::to_string(n) + " file" + (n == 1 ? "" : "s") + " to " + path, false, now);
          } catch (const InputError& e) {
            error = e.what();
          }
          break;
        case Mode::SavePytorch:
          try {
            writeFileAtomically(path, pytorchScript(app.workspace, app.file.empty() ? "untitled" : app.file));
            app.showToast("Saved " + path + "  (run: /usr/bin/python3 " + name_ + ")", false, now);
          } catch (const InputError& e) {
            error = e.what();
          }
          break;
        case Mode::ExportMatrix:
          error = write_matrix_(path);
          if (error.empty()) app.showToast("Saved " + path, false, now);
          break;
        case Mode::None:
          break;
      }
      if (error.empty()) {
        settings_.last_folder = folder_;
        saveSettings(settings_);
        mode_ = Mode::None;
        ImGui::CloseCurrentPopup();
      } else {
        error_ = error;
      }
    }
    ImGui::EndPopup();
  }

  if (confirm_quit_ && !ImGui::IsPopupOpen("Unsaved changes")) ImGui::OpenPopup("Unsaved changes");
  if (ImGui::BeginPopupModal("Unsaved changes", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) {
    ImGui::Text("Save the changes to %s before quitting?", app.file.empty() ? "this untitled workspace" : app.file.c_str());
    if (ImGui::Button("Save")) {
      confirm_quit_ = false;
      ImGui::CloseCurrentPopup();
      *quit_now = save(app, now);  // untitled: the save dialog opens instead
    }
    layout().widget("quit_save");
    ImGui::SameLine();
    if (ImGui::Button("Don't save")) {
      confirm_quit_ = false;
      ImGui::CloseCurrentPopup();
      *quit_now = true;
    }
    layout().widget("quit_discard");
    ImGui::SameLine();
    if (ImGui::Button("Cancel")) {
      confirm_quit_ = false;
      ImGui::CloseCurrentPopup();
    }
    ImGui::EndPopup();
  }
}

}  // namespace attnscope
