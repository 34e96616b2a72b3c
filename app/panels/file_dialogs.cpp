#include "panels/file_dialogs.h"

#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "shell/layout_dump.h"
#include "shell/theme.h"

namespace attnscope {

namespace fs = std::filesystem;

namespace {

struct DialogKind {
  const char* which;
  const char* title;
  const char* default_name;
};

constexpr DialogKind kDialogs[] = {
    {"open", "Open workspace or screenshot", ""},
    {"save_as", "Save workspace as", "workspace.json"},
    {"export_trace", "Export the trace", "trace-export"},
    {"save_pytorch", "Save PyTorch code", "attention.py"},
    {"export_map", "Export matrix", ""},
};

const DialogKind* findDialog(const std::string& which) {
  for (const DialogKind& d : kDialogs)
    if (which == d.which) return &d;
  return nullptr;
}

}  // namespace

void FileDialogs::begin(const std::string& which, const std::string& stage, int head, const std::string& format) {
  const DialogKind* kind = findDialog(which);
  if (!kind) return;
  which_ = which;
  folder_ = settings_.last_folder;
  stage_ = stage;
  head_ = head;
  format_ = format;
  name_ = which == "export_map" ? stage + "_h" + std::to_string(head + 1) + "." + format : kind->default_name;
}

bool FileDialogs::browse() {
  ImGui::SetNextItemWidth(-1);
  ImGui::InputText("##folder", &folder_);
  layout().widget("file_folder");
  std::error_code ec;
  const bool lists_files = which_ == "open" || which_ == "save_as";
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
    } else if (lists_files) {
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
  if (which_ == "export_trace") {
    ImGui::RadioButton("JSON", &trace_format_, 0);
    ImGui::SameLine();
    ImGui::RadioButton("CSV files", &trace_format_, 1);
    ImGui::SameLine();
    ImGui::RadioButton(".npy files", &trace_format_, 2);
  }
  const bool ok = ImGui::Button(which_ == "open" ? "Open" : "Save") || enter;
  layout().widget("file_ok");
  ImGui::SameLine();
  const bool cancel = ImGui::Button("Cancel");  // a quit waiting for this save does not happen (App::update)
  layout().widget("file_cancel");
  if (cancel) {
    which_.clear();
    ImGui::CloseCurrentPopup();
  }
  return ok;
}

void FileDialogs::draw(const PanelContext& ctx) {
  CommandQueue& cmd = ctx.commands;
  const DialogKind* kind = findDialog(which_);
  if (kind && !ImGui::IsPopupOpen("##file")) ImGui::OpenPopup("##file");
  if (ImGui::BeginPopupModal("##file", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) {
    ImGui::TextUnformatted(kind ? kind->title : "");
    if (browse() && !name_.empty()) {
      const std::string path = (fs::path(folder_) / name_).string();
      if (which_ == "open") {
        cmd.push("open", {{"path", path}});
      } else if (which_ == "save_as") {
        cmd.push("save", {{"path", fs::path(path).extension().empty() ? path + ".json" : path}});
      } else if (which_ == "export_trace") {
        cmd.push("export_trace", {{"path", path}, {"format", trace_format_ == 0 ? "json" : trace_format_ == 1 ? "csv" : "npy"}});
      } else if (which_ == "save_pytorch") {
        cmd.push("save_pytorch", {{"path", path}});
      } else if (which_ == "export_map") {
        cmd.push("export_map", {{"stage", stage_}, {"head", head_}, {"path", path}, {"format", format_}});
      }
      settings_.last_folder = folder_;
      saveSettings(settings_);
      which_.clear();
      ImGui::CloseCurrentPopup();
    }
    ImGui::EndPopup();
  }

  // Unsaved changes: Save (then go on), Don't save / Discard, Cancel. The buttons' ids start with
  // the action ("quit_save", "open_discard") for the layout dump.
  if (!unsaved_action_.empty() && !ImGui::IsPopupOpen("Unsaved changes")) ImGui::OpenPopup("Unsaved changes");
  if (ImGui::BeginPopupModal("Unsaved changes", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) {
    if (unsaved_action_.empty()) {  // answered by a script
      ImGui::CloseCurrentPopup();
      ImGui::EndPopup();
      return;
    }
    const std::string& file = ctx.document.file();
    const std::string name = file.empty() ? "this untitled workspace" : fs::path(file).filename().string();
    ImGui::PushTextWrapPos(px(520));
    ImGui::Text("Save the changes to %s before %s?", name.c_str(), unsaved_doing_.c_str());
    if (!file.empty()) ImGui::TextDisabled("in %s", fs::path(file).parent_path().string().c_str());
    ImGui::PopTextWrapPos();
    ImGui::Spacing();
    const std::string& a = unsaved_action_;
    const char* choice = nullptr;
    if (ImGui::Button("Save")) choice = "save";
    layout().widget(a + "_save");
    ImGui::SameLine();
    if (ImGui::Button(a == "quit" ? "Don't save" : "Discard")) choice = "discard";
    layout().widget(a + "_discard");
    ImGui::SameLine();
    if (ImGui::Button("Cancel")) choice = "cancel";
    layout().widget(a + "_cancel");
    if (choice) {
      cmd.push("unsaved", {{"choice", choice}});
      unsaved_action_.clear();
      ImGui::CloseCurrentPopup();
    }
    ImGui::EndPopup();
  }
}

}  // namespace attnscope
