#include "panels/file_dialogs.h"

#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <filesystem>
#include <utility>
#include <vector>

#include "engine/errors.h"
#include "engine/stages.h"
#include "formats/export.h"
#include "widgets/kept_text.h"
#include "widgets/layout_dump.h"
#include "widgets/theme.h"

namespace attnscope {

namespace fs = std::filesystem;

namespace {

struct DialogKind {
  const char* which;
  const char* title;
  const char* default_name;
  const char* extensions;  // the files it can use, space-separated ("" none: a folder; export_map: a map's formats)
  bool lessons;            // starts in the lesson folder (settings: the shipped lessons the first time)
};

constexpr DialogKind kDialogs[] = {
    {"open", "Open workspace or screenshot", "", "json png", false},
    {"open_lesson", "Open lesson", "", "json", true},
    // A file of tensors, or a Hugging Face folder (opened with no file chosen).
    {"open_model", "Open a trained model", "", "safetensors pth pt npz bin", false},
    {"save_as", "Save workspace as", "workspace.json", "json", false},
    {"export_trace", "Export the trace (into a folder)", "trace-export", "", false},
    {"save_pytorch", "Save PyTorch code", "attention.py", "py", false},
    {"export_map", "Save one map", "", "", false},
    {"save_lines", "Save the Lines view as a figure (.svg, .pdf or .png)", "lines.svg", "svg pdf png", false},
    {"save_model", "Save the trained model (its state_dict: .npz, .safetensors, .pth or .pt)", "model.npz",
     "npz safetensors pth pt", false},
};

const DialogKind* findDialog(const std::string& which) {
  for (const DialogKind& d : kDialogs)
    if (which == d.which) return &d;
  return nullptr;
}

// A map's formats as the radio buttons name them.
const char* formatLabel(const std::string& f) {
  if (f == "csv") return "CSV";
  if (f == "json") return "JSON";
  if (f == "npy") return ".npy";
  if (f == "png") return "PNG";
  if (f == "svg") return "SVG";
  if (f == "pdf") return "PDF";
  return "?";
}

// Where the browser opens: the last folder used (settings, which default to the home folder), else
// the home folder when that folder is gone.
std::string startFolder(const std::string& remembered) {
  std::error_code ec;
  return !remembered.empty() && fs::is_directory(remembered, ec) ? remembered : homeFolder();
}

}  // namespace

void FileDialogs::begin(const std::string& which, const std::string& stage, int head, const std::string& format) {
  const DialogKind* kind = findDialog(which);
  if (!kind) {
    std::string names;
    for (const DialogKind& d : kDialogs) names += (names.empty() ? "" : ", ") + std::string(d.which);
    throw InputError("which: no dialog '" + which + "' (one of " + names + ")");
  }
  which_ = which;
  folder_ = startFolder(kind->lessons ? settings_.lesson_folder : settings_.last_folder);
  stage_ = stage;
  head_ = head;
  const auto& formats = mapFileFormats();
  format_ = std::find(formats.begin(), formats.end(), format) != formats.end() ? format : "csv";
  message_.clear();
  name_wanted_ = which == "export_map";  // b1_h2_weights.csv: the batch shown is known when drawn
  name_ = kind->default_name;
}

bool FileDialogs::modelRead(const std::string& path, const std::string& why) {
  const std::optional<ModelChoice> chosen = std::exchange(model_chosen_, std::nullopt);
  if (why.empty() || !chosen || chosen->path != path || !which_.empty()) return false;
  begin("open_model");
  folder_ = chosen->folder;
  name_ = chosen->name;
  message_ = why;
  return true;
}

bool FileDialogs::usable(const std::string& file) const {
  const std::string ext = extensionOf(file);
  if (which_ == "export_map") {
    const auto& formats = mapFileFormats();
    return std::find(formats.begin(), formats.end(), ext) != formats.end();
  }
  const DialogKind* kind = findDialog(which_);
  const std::string extensions = kind ? std::string(" ") + kind->extensions + " " : "";
  return !ext.empty() && extensions.find(" " + ext + " ") != std::string::npos;  // export_trace: a folder
}

void FileDialogs::typed() {
  message_.clear();
  if (which_ != "export_map" || fs::path(name_).extension().empty()) return;
  std::string name = name_, format;
  if (mapFileFormat(&name, format_, &format, &message_)) format_ = format;  // x.csv: CSV, whatever was chosen
}

bool FileDialogs::browse() {
  ImGui::SetNextItemWidth(-1);
  inputTextKept("##folder", nullptr, &folder_, folder_field_);  // a folder named 📚 stays itself
  layout().widget("file_folder");
  std::error_code ec;
  // The list gives up height until the whole dialog fits the window (list_height_): at 1280 × 720
  // and 200 % its 520 px pushed the name, the heads, Open and Cancel below the window's edge.
  const float lines = ImGui::GetTextLineHeightWithSpacing();
  const float list_height = list_height_ > 0 ? list_height_ : px(260);
  ImGui::BeginChild("entries", ImVec2(px(520), list_height), true);
  if (ImGui::Selectable("..")) folder_ = fs::path(folder_).parent_path().string();
  std::vector<fs::directory_entry> entries;
  for (const auto& e : fs::directory_iterator(folder_, fs::directory_options::skip_permission_denied, ec))
    entries.push_back(e);
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.path().filename() < b.path().filename(); });
  // Folders first, then files: those this dialog can use are selectable, the others dimmed.
  listed_.clear();
  bool open_now = false;
  for (int pass = 0; pass < 2; ++pass)
    for (const auto& e : entries) {
      const std::string name = e.path().filename().string();
      std::error_code dir_ec;
      const bool dir = e.is_directory(dir_ec);
      if (name.empty() || name[0] == '.' || dir != (pass == 0)) continue;
      if (dir) {
        if (ImGui::Selectable((name + "/").c_str())) folder_ = e.path().string();
        continue;
      }
      listed_.push_back(name);
      if (!usable(name)) {
        ImGui::TextDisabled("%s", name.c_str());
        continue;
      }
      if (ImGui::Selectable(name.c_str(), name == name_, ImGuiSelectableFlags_AllowDoubleClick)) {
        name_ = name;
        typed();
        if (ImGui::IsMouseDoubleClicked(0)) open_now = true;
      }
    }
  if (ec) ImGui::TextDisabled("cannot list this folder: %s", ec.message().c_str());
  ImGui::EndChild();
  ImGui::SetNextItemWidth(-1);
  const bool enter = inputTextKept("##name", nullptr, &name_, name_field_, ImGuiInputTextFlags_EnterReturnsTrue);
  if (ImGui::IsItemEdited()) typed();
  layout().widget("file_name");
  if (which_ == "open_model") {
    // What it opens, unless a refusal below says what to mend (both overflowed 1280 × 720 at 200 %).
    const bool hf = fs::is_regular_file(fs::path(folder_) / "config.json", ec);
    ImGui::PushTextWrapPos(px(520));
    if (message_.empty())
      ImGui::TextDisabled(
          hf ? "This folder holds config.json: Open with no file chosen opens it as a Hugging Face model."
             : "A Hugging Face GPT-2 folder (config.json, model.safetensors, vocab.json, merges.txt): "
               "go into it and Open. Or the book's GPTModel: a .pth, .safetensors or .npz file, "
               "with vocab.json and merges.txt beside it.");
    ImGui::PopTextWrapPos();
    ImGui::SetNextItemWidth(px(140));
    ImGui::InputInt("heads, for a file without config.json (0: its width / 64)", &model_heads_);
    model_heads_ = std::clamp(model_heads_, 0, 1024);
    layout().widget("file_model_heads");
  } else if (which_ == "export_trace") {
    ImGui::RadioButton("JSON", &trace_format_, 0);
    ImGui::SameLine();
    ImGui::RadioButton("CSV files", &trace_format_, 1);
    ImGui::SameLine();
    ImGui::RadioButton(".npy files", &trace_format_, 2);
  } else if (which_ == "export_map") {  // the extension follows the format chosen
    bool first = true;
    for (const std::string& f : mapFileFormats()) {
      if (!first) ImGui::SameLine();
      first = false;
      if (ImGui::RadioButton(formatLabel(f), format_ == f) && format_ != f) {
        format_ = f;
        name_ = withExtension(name_, f);
        message_.clear();
      }
      layout().widget("file_format_" + f);
    }
    ImGui::PushTextWrapPos(px(520));
    ImGui::TextDisabled("CSV, JSON, .npy: the numbers · PNG: as on screen · SVG, PDF: vector figures");
    ImGui::PopTextWrapPos();
  }
  if (!message_.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, theme().selection);
    ImGui::PushTextWrapPos(px(520));
    ImGui::TextUnformatted(message_.c_str());
    ImGui::PopTextWrapPos();
    ImGui::PopStyleColor();
    layout().widget("file_message");
  }
  const bool opens = which_ == "open" || which_ == "open_lesson" || which_ == "open_model";
  const bool ok = ImGui::Button(opens ? "Open" : "Save") || enter || open_now;
  layout().widget("file_ok");
  ImGui::SameLine();
  // Escape cancels, as in any dialog. A quit waiting for this save does not happen (Controller::update).
  const bool cancel = ImGui::Button("Cancel") || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false);
  layout().widget("file_cancel");
  // The content's bottom against the window's (a margin of a line each side): taken from the
  // list's height, down to four lines; the dialog scrolls only below that.
  const float bottom = ImGui::GetCursorPosY() + ImGui::GetStyle().WindowPadding.y;
  const float room = ImGui::GetIO().DisplaySize.y - 2 * lines;
  list_height_ = std::clamp(list_height - (bottom - room), 4 * lines, px(260));
  const float top = ImGui::GetWindowPos().y, height = ImGui::GetWindowSize().y;
  recentre_ = list_height_ < px(260) - 0.5f || top < 0 ||  // fitted to the window (kept in its middle), or cut
              top + height > ImGui::GetIO().DisplaySize.y + 0.5f;
  if (cancel) {
    which_.clear();
    ImGui::CloseCurrentPopup();
  }
  return ok;
}

void FileDialogs::draw(const PanelContext& ctx, const Prompts& prompts) {
  CommandQueue& cmd = ctx.commands;
  const DialogKind* kind = findDialog(which_);
  // The title in the title bar ("###file": one popup whatever it says; the bar was empty, the title
  // the body's first line).
  if (kind && !ImGui::IsPopupOpen("###file")) ImGui::OpenPopup("###file");
  if (name_wanted_ && ctx.snapshot) {  // the file a map goes to: b1_h2_weights.csv, as the CLI names it
    Stage stage = Stage::Weights;
    if (parseStage(stage_, &stage)) name_ = mapFileStem(ctx.snapshot->batch, head_, stage) + "." + format_;
    name_wanted_ = false;
  }
  if (std::exchange(recentre_, false)) {  // it grew or shrank off the window: back in the middle
    const ImVec2 display = ImGui::GetIO().DisplaySize;
    ImGui::SetNextWindowPos(ImVec2(display.x / 2, display.y / 2), ImGuiCond_Always, ImVec2(0.5f, 0.5f));
  }
  if (ImGui::BeginPopupModal((std::string(kind ? kind->title : "") + "###file").c_str(), nullptr,
                             ImGuiWindowFlags_AlwaysAutoResize)) {
    Stage stage;
    if (which_ == "export_map" && parseStage(stage_, &stage))  // the map by its title
      ImGui::TextDisabled("%s  ·  head %d", stageInfo(stage).title, head_ + 1);
    const bool ok = browse();
    if (kind) {
      layout().state()["file_dialog"] = {
          {"which", which_},  {"folder", folder_},          {"name", name_}, {"format", format_}, {"message", message_},
          {"files", listed_}, {"model_heads", model_heads_}};
    }
    std::string format = format_;
    if (ok && which_ == "export_map" && !name_.empty()) {
      std::string name = name_;
      if (mapFileFormat(&name, format_, &format, &message_))
        name_ = name;  // the extension decides
      else
        format.clear();  // one message, nothing written
    }
    if (ok && (!name_.empty() || which_ == "open_model") && !format.empty()) {
      const std::string path = name_.empty() ? folder_ : (fs::path(folder_) / name_).string();
      if (which_ == "open_model") {  // the loader says what it cannot use
        nlohmann::json args = {{"path", path}};
        if (model_heads_ > 0) args["num_heads"] = model_heads_;
        cmd.push("model_open", args);
        model_chosen_ = ModelChoice{path, folder_, name_};
      } else if (which_ == "open") {
        cmd.push("open", {{"path", path}});
      } else if (which_ == "open_lesson") {  // checked whole when opened: a damaged one is one message
        cmd.push("lesson_open", {{"path", path}});
      } else if (which_ == "save_as") {
        cmd.push("save", {{"path", fs::path(path).extension().empty() ? path + ".json" : path}});
      } else if (which_ == "export_trace") {
        cmd.push("export_trace", {{"path", path},
                                  {"format", trace_format_ == 0   ? "json"
                                             : trace_format_ == 1 ? "csv"
                                                                  : "npy"}});
      } else if (which_ == "save_model") {
        cmd.push("learn_save", {{"path", fs::path(path).extension().empty() ? path + ".npz" : path}});
      } else if (which_ == "save_pytorch") {
        cmd.push("save_pytorch", {{"path", path}});
      } else if (which_ == "save_lines") {  // the view's figure; the extension names the format (SVG without one)
        cmd.push("screenshot",
                 {{"path", fs::path(path).extension().empty() ? path + ".svg" : path}, {"panel", "lines"}});
      } else if (which_ == "export_map" && (format == "png" || format == "svg" || format == "pdf")) {
        cmd.push("screenshot", {{"path", path}, {"panel", stage_}, {"head", head_}});  // a figure of the map
      } else if (which_ == "export_map") {
        cmd.push("export_map", {{"stage", stage_}, {"head", head_}, {"path", path}, {"format", format}});
      }
      // The folder the file is in (a typed absolute path names its own).
      const std::string folder = fs::path(path).parent_path().string();
      const bool lessons = kind->lessons;
      settings_ = updateSettings([&](Settings& s) { (lessons ? s.lesson_folder : s.last_folder) = folder; });
      which_.clear();
      ImGui::CloseCurrentPopup();
    }
    ImGui::EndPopup();
  }

  // Unsaved changes: Save (then go on), Don't save / Discard, Cancel. The buttons' ids start with
  // the action ("quit_save", "open_discard") for the layout dump.
  if (prompts.unsaved_action.empty()) unsaved_answered_ = false;
  if (!prompts.unsaved_action.empty() && !unsaved_answered_ && !ImGui::IsPopupOpen("Unsaved changes"))
    ImGui::OpenPopup("Unsaved changes");
  if (ImGui::BeginPopupModal("Unsaved changes", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) {
    if (prompts.unsaved_action.empty()) {  // answered by a script
      ImGui::CloseCurrentPopup();
      ImGui::EndPopup();
      return;
    }
    const std::string& file = ctx.document.file();
    ImGui::PushTextWrapPos(px(520));
    ImGui::Text("Save %s before %s?", prompts.unsaved_what.c_str(), prompts.unsaved_doing.c_str());
    if (!file.empty()) ImGui::TextDisabled("in %s", fs::path(file).parent_path().string().c_str());
    ImGui::PopTextWrapPos();
    ImGui::Spacing();
    const std::string& a = prompts.unsaved_action;
    const char* choice = nullptr;
    if (ImGui::Button("Save")) choice = "save";
    layout().widget(a + "_save");
    ImGui::SameLine();
    if (ImGui::Button(a == "quit" ? "Don't save" : "Discard")) choice = "discard";
    layout().widget(a + "_discard");
    ImGui::SameLine();
    if (ImGui::Button("Cancel")) choice = "cancel";
    layout().widget(a + "_cancel");
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false)) choice = "cancel";  // as in any dialog
    if (choice) {
      cmd.push("unsaved", {{"choice", choice}});  // which closes the prompt
      unsaved_answered_ = true;
      ImGui::CloseCurrentPopup();
    }
    ImGui::EndPopup();
  }

  // Changed on disk: Overwrite, Save as…, Cancel (ids "overwrite_yes", "overwrite_save_as",
  // "overwrite_cancel"). Cancel saves nothing; what waited for the save says it did not happen.
  if (!overwrite_path_.empty() && !ImGui::IsPopupOpen("Changed on disk")) ImGui::OpenPopup("Changed on disk");
  if (ImGui::BeginPopupModal("Changed on disk", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) {
    ImGui::PushTextWrapPos(px(520));
    ImGui::Text("%s changed on disk since you opened or saved it: another program wrote it.",
                fs::path(overwrite_path_).filename().string().c_str());
    ImGui::TextDisabled("Overwrite replaces what it wrote with this workspace; Save as keeps both.");
    ImGui::PopTextWrapPos();
    ImGui::Spacing();
    int choice = 0;
    if (ImGui::Button("Overwrite")) choice = 1;
    layout().widget("overwrite_yes");
    ImGui::SameLine();
    if (ImGui::Button("Save as…")) choice = 2;
    layout().widget("overwrite_save_as");
    ImGui::SameLine();
    if (ImGui::Button("Cancel")) choice = 3;
    layout().widget("overwrite_cancel");
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false)) choice = 3;  // as in any dialog
    if (choice == 1) cmd.push("save", {{"path", overwrite_path_}, {"overwrite", true}});
    if (choice == 2) begin("save_as");
    if (choice) {
      overwrite_path_.clear();
      ImGui::CloseCurrentPopup();
    }
    ImGui::EndPopup();
  }

  // Unsaved changes of the last session, newer than the file opened: Restore them, or Keep the
  // file as saved (ids "recovery_restore", "recovery_keep"). Either way nothing is lost: the
  // changes stay in the kept file until restored.
  if (prompts.recovery_kept.empty()) recovery_answered_ = false;
  if (!prompts.recovery_kept.empty() && !recovery_answered_ &&
      !ImGui::IsPopupOpen("Unsaved changes from the last session"))
    ImGui::OpenPopup("Unsaved changes from the last session");
  if (ImGui::BeginPopupModal("Unsaved changes from the last session", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) {
    ImGui::PushTextWrapPos(px(520));
    ImGui::Text("The last session left unsaved changes to %s, newer than the file.",
                fs::path(prompts.recovery_file).filename().string().c_str());
    ImGui::TextDisabled(
        "Restore puts them back (save to keep them); Keep the file shows it as saved. The changes "
        "stay in %s either way.",
        prompts.recovery_kept.c_str());
    ImGui::PopTextWrapPos();
    ImGui::Spacing();
    int choice = 0;
    if (ImGui::Button("Restore the changes")) choice = 1;
    layout().widget("recovery_restore");
    ImGui::SameLine();
    if (ImGui::Button("Keep the file as saved")) choice = 2;
    layout().widget("recovery_keep");
    if (choice) {  // the `recovery` command does it (and closes the offer), as a script would
      cmd.push("recovery", {{"choice", choice == 1 ? "restore" : "keep"}});
      recovery_answered_ = true;
      ImGui::CloseCurrentPopup();
    }
    ImGui::EndPopup();
  }
  layout().state()["recovery_offer"] = prompts.recovery_kept;  // tests: the offer, "" for none
}

}  // namespace attnscope
