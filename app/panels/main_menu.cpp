#include "panels/main_menu.h"

#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "state/key_bindings.h"
#include "state/screenshot_paths.h"
#include "widgets/kept_text.h"
#include "widgets/layout_dump.h"
#include "widgets/theme.h"

namespace attnscope {

namespace {

void viewToggle(CommandQueue& cmd, const char* label, const char* field, bool value, const char* shortcut = nullptr) {
  if (ImGui::MenuItem(label, shortcut, value)) cmd.push("view", {{"field", field}, {"value", !value}});
}

}  // namespace

void MainMenu::draw(const PanelContext& ctx, const std::vector<std::string>& recent, bool fullscreen,
                    bool lesson_open) {
  CommandQueue& cmd = ctx.commands;
  const ViewState& view = ctx.view;
  if (ImGui::BeginMainMenuBar()) {
    const bool file_menu = ImGui::BeginMenu("File");
    layout().widget("menu_file");  // the layout dump's names let tests click through the menu
    if (file_menu) {
      // New, Open and the presets ask first when there are unsaved changes (Controller::asksFirst).
      if (ImGui::MenuItem("New (the book's example)")) cmd.push("new");
      layout().widget("menu_new");
      if (ImGui::MenuItem("Open…", shortcutLabel("dialog", {{"which", "open"}})))
        cmd.push("dialog", {{"which", "open"}});
      if (ImGui::BeginMenu("Open recent", !recent.empty())) {
        for (const std::string& r : recent)
          if (ImGui::MenuItem(r.c_str())) cmd.push("open", {{"path", r}});
        ImGui::EndMenu();
      }
      // A trained model (docs/DESIGN.md §3.1 "A trained model"): the workspace waits beside it.
      if (ImGui::MenuItem("Open model…")) cmd.push("dialog", {{"which", "open_model"}});
      layout().widget("menu_open_model");
      if (ImGui::MenuItem("Close model", nullptr, false, ctx.modelOpen())) cmd.push("model_close");
      layout().widget("menu_close_model");
      ImGui::Separator();
      if (ImGui::MenuItem("Save", shortcutLabel("save"))) cmd.push("save");
      if (ImGui::MenuItem("Save as…")) cmd.push("dialog", {{"which", "save_as"}});
      ImGui::Separator();
      if (ImGui::MenuItem("Export the trace…")) cmd.push("dialog", {{"which", "export_trace"}});
      if (ImGui::MenuItem("Copy PyTorch code")) cmd.push("copy_pytorch");
      if (ImGui::MenuItem("Save PyTorch code…")) cmd.push("dialog", {{"which", "save_pytorch"}});
      ImGui::Separator();
      const bool presets_menu = ImGui::BeginMenu("Presets");
      layout().widget("menu_presets");
      if (presets_menu) {
        for (const PresetInfo& preset : presets_) {
          if (ImGui::MenuItem(preset.title.c_str())) cmd.push("preset", {{"name", preset.name}});
          layout().widget("menu_preset_" + preset.name);
          if (!preset.description.empty() && ImGui::IsItemHovered()) {
            ImGui::BeginTooltip();
            ImGui::PushTextWrapPos(ImGui::GetFontSize() * 28);
            ImGui::TextUnformatted(preset.description.c_str());
            ImGui::PopTextWrapPos();
            ImGui::EndTooltip();
          }
        }
        ImGui::EndMenu();
      }
      // Lessons: the chapter's steps with the notebook's code (core/lessons); a teacher's own file
      // through the file browser, as the other files are opened.
      const bool lessons_menu = ImGui::BeginMenu("Open lesson");
      layout().widget("menu_lessons");
      if (lessons_menu) {
        for (const LessonInfo& lesson : lessons_) {
          if (ImGui::MenuItem(lesson.title.c_str())) cmd.push("lesson_open", {{"path", lesson.path}});
          layout().widget("menu_lesson_" + std::filesystem::path(lesson.path).stem().string());
        }
        if (!lessons_.empty()) ImGui::Separator();
        if (ImGui::MenuItem("A lesson file…")) cmd.push("dialog", {{"which", "open_lesson"}});
        layout().widget("menu_lesson_file");
        ImGui::EndMenu();
      }
      if (ImGui::MenuItem("Close lesson", nullptr, false, lesson_open)) cmd.push("lesson_close");
      layout().widget("menu_close_lesson");
      ImGui::Separator();
      if (ImGui::MenuItem("Save screenshot", shortcutLabel("screenshot"))) cmd.push("screenshot", {{"path", ""}});
      if (ImGui::BeginMenu("Save panel as PNG")) {
        for (const std::string& panel : panelNames())
          if (ImGui::MenuItem(panel.c_str())) cmd.push("screenshot", {{"path", ""}, {"panel", panel}});
        ImGui::EndMenu();
      }
      if (ImGui::BeginMenu("Screenshot size")) {
        for (int k = 1; k <= 3; ++k)
          if (ImGui::MenuItem((std::to_string(k) + "×").c_str(), nullptr, view.screenshot_scale == k))
            cmd.push("view", {{"field", "screenshot_scale"}, {"value", k}});
        ImGui::Separator();
        viewToggle(cmd, "Caption (variant, sizes, seed)", "caption", view.caption);
        ImGui::EndMenu();
      }
      if (ImGui::BeginMenu("Screenshot folder")) {
        if (ImGui::IsWindowAppearing()) screenshot_dir_ = view.screenshot_dir;
        ImGui::SetNextItemWidth(px(360));
        inputTextKept("##folder", nullptr, &screenshot_dir_, screenshot_dir_field_);
        if (ImGui::IsItemDeactivatedAfterEdit() || (ImGui::IsItemEdited() && screenshot_dir_ != view.screenshot_dir))
          cmd.push("view", {{"field", "screenshot_dir"}, {"value", screenshot_dir_}});
        ImGui::EndMenu();
      }
      ImGui::Separator();
      if (ImGui::MenuItem("Quit", shortcutLabel("quit"))) cmd.push("quit");
      ImGui::EndMenu();
    }
    const bool edit_menu = ImGui::BeginMenu("Edit");
    layout().widget("menu_edit");
    if (edit_menu) {
      using Target = ModelSession::UndoTarget;
      const Target target = ctx.model ? ctx.model->undoTarget() : Target::Document;
      const bool can_undo = target == Target::Text ? ctx.model->canUndoText()
                                                   : target == Target::Document && ctx.document.history().canUndo();
      const bool can_redo = target == Target::Text ? ctx.model->canRedoText()
                                                   : target == Target::Document && ctx.document.history().canRedo();
      if (ImGui::MenuItem("Undo", shortcutLabel("undo"), false, can_undo)) cmd.push("undo");
      if (ImGui::MenuItem("Redo", shortcutLabel("redo"), false, can_redo)) cmd.push("redo");
      ImGui::Separator();
      if (ImGui::MenuItem("Paste embeddings", shortcutLabel("paste_embeddings")))
        cmd.push("paste_embeddings");  // the clipboard's text
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "The clipboard's tensor in place of the inputs: what print(x) shows in a notebook,\n"
            "a NumPy array, nested lists, or CSV/TSV columns (one row per token)");
      layout().widget("menu_paste_embeddings");
      if (ImGui::MenuItem("Paste parameters")) cmd.push("paste_parameters");  // a printed state_dict
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "The clipboard's print(m.state_dict()) in place of those weights (the Weights tab shows them);\n"
            "print it in full first: torch.set_printoptions(profile=\"full\", precision=8) (4 decimals otherwise)");
      layout().widget("menu_paste_parameters");
      ImGui::EndMenu();
    }
    const bool view_menu = ImGui::BeginMenu("View");
    layout().widget("menu_view");
    if (view_menu) {
      const bool text_menu = ImGui::BeginMenu("Text size");
      layout().widget("menu_text_size");
      if (text_menu) {  // the whole UI, the maps' labels and the figures
        for (int percent : textSizeSteps()) {
          if (ImGui::MenuItem((std::to_string(percent) + " %").c_str(), nullptr, view.text_size == percent))
            cmd.push("view", {{"field", "text_size"}, {"value", percent}});
          layout().widget("menu_text_size_" + std::to_string(percent));
        }
        ImGui::Separator();
        if (ImGui::MenuItem("Larger", shortcutLabel("view", {{"value", "larger"}}), false,
                            view.text_size < kMaxTextSize))
          cmd.push("view", {{"field", "text_size"}, {"value", "larger"}});
        if (ImGui::MenuItem("Smaller", shortcutLabel("view", {{"value", "smaller"}}), false,
                            view.text_size > kMinTextSize))
          cmd.push("view", {{"field", "text_size"}, {"value", "smaller"}});
        if (ImGui::MenuItem("Reset", shortcutLabel("view", {{"field", "text_size"}, {"value", 100}}), false,
                            view.text_size != 100))
          cmd.push("view", {{"field", "text_size"}, {"value", 100}});
        ImGui::EndMenu();
      }
      if (ImGui::MenuItem("Full screen", shortcutLabel("fullscreen"), fullscreen))
        cmd.push("fullscreen", {{"on", !fullscreen}});
      layout().widget("menu_fullscreen");
      viewToggle(cmd, "Presentation: hide the panels around the maps", "presentation", view.presentation,
                 shortcutLabel("view", {{"field", "presentation"}}));
      layout().widget("menu_presentation");
      viewToggle(cmd, "Reload on change (when a notebook rewrites the file)", "watch", view.watch);
      layout().widget("menu_watch");
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "The workspace's file, or the open model's, is taken again whenever another program\n"
            "saves over it (Ctrl+Z brings back what was shown before)");
      ImGui::Separator();
      // Compare: A pinned aside, B the current settings (the Compare tab).
      if (ImGui::MenuItem(ctx.pinned ? "Pin again as A" : "Pin as A (compare)", shortcutLabel("pin"))) cmd.push("pin");
      layout().widget("menu_pin");
      if (ImGui::MenuItem("Swap A and B", nullptr, false, static_cast<bool>(ctx.pinned))) cmd.push("swap");
      if (ImGui::MenuItem("Unpin A", nullptr, false, static_cast<bool>(ctx.pinned))) cmd.push("unpin");
      ImGui::Separator();
      {  // with presentation on, the side panels are hidden whatever their own setting says
        ImGui::BeginDisabled(view.presentation);
        viewToggle(cmd, "Model panel", "model_panel", view.show_model);
        layout().widget("menu_model_panel");
        viewToggle(cmd, "Inputs panel", "inputs_panel", view.show_inputs);
        layout().widget("menu_inputs_panel");
        viewToggle(cmd, "Inspector", "inspector", view.show_inspector);
        layout().widget("menu_inspector");
        viewToggle(cmd, "Head statistics", "statistics", view.show_statistics);
        layout().widget("menu_statistics");
        if (ImGui::IsItemHovered())
          ImGui::SetTooltip(
              "Under the maps where a quarter of the window's height holds a whole row of it "
              "(at 200 %% text: a window taller than 800 px)");
        ImGui::EndDisabled();
      }
      viewToggle(cmd, "Status bar", "status_bar", view.show_status);
      layout().widget("menu_status_bar");
      ImGui::Separator();
      if (ImGui::MenuItem("Light theme (slides, print)", nullptr, view.light_theme))
        cmd.push("view", {{"field", "theme"}, {"value", view.light_theme ? "dark" : "light"}});
      ImGui::Separator();
      for (Colormap c : {Colormap::Viridis, Colormap::Cividis})
        if (ImGui::MenuItem(colormapTitle(c), nullptr, view.colormap == c))
          cmd.push("view", {{"field", "colormap"}, {"value", colormapId(c)}});
      viewToggle(cmd, "Diverging map for signed values", "diverging_for_signed", view.diverging_for_signed);
      viewToggle(cmd, "Shared colour scale across heads", "shared_scale", view.shared_scale);
      if (ImGui::BeginMenu("Colour scale")) {  // how values map onto the colours
        for (const ColourScaleInfo& s : colourScaleTable())
          if (ImGui::MenuItem(s.title, nullptr, view.colour_scale == s.scale))
            cmd.push("view", {{"field", "colour_scale"}, {"value", s.id}});
        ImGui::EndMenu();
      }
      layout().widget("menu_colour_scale");
      if (ImGui::MenuItem("Weights on a fixed 0–1 scale", nullptr, view.weights_fixed))
        cmd.push("view", {{"field", "weights_range"}, {"value", view.weights_fixed ? "data" : "fixed"}});
      layout().widget("menu_weights_range");
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "Softmax weights coloured from 0 to 1, whatever their spread: nearly uniform weights look weak");
      viewToggle(cmd, "Lock colour ranges (small changes look small)", "lock_range", view.lock_range);
      if (ImGui::BeginMenu("Columns")) {
        for (const GridColumn& c : gridColumns()) {
          if (!c.per_head && c.index == 0) {  // the module's maps after the heads' stages
            ImGui::Separator();
            ImGui::TextDisabled("the module");
          }
          const bool on = view.shows(c);
          if (ImGui::MenuItem(c.title, nullptr, on))
            cmd.push("view", {{"field", "columns"}, {"value", columnsWith(view, c.id, !on)}});
        }
        ImGui::EndMenu();
      }
      ImGui::EndMenu();
    }
    const bool help_menu = ImGui::BeginMenu("Help");
    layout().widget("menu_help");
    if (help_menu) {
      if (ImGui::MenuItem("Keys and mouse")) show_help_ = true;
      layout().widget("menu_keys_help");
      ImGui::EndMenu();
    }
    ImGui::EndMainMenuBar();
  }
  if (show_help_) {
    // Never taller than the window (at a projector's text size its lines scroll), each line's
    // continuation indented under its text.
    const ImVec2 room = ImGui::GetMainViewport()->Size;
    ImGui::SetNextWindowSize(ImVec2(std::min(px(560), room.x * 0.9f), 0), ImGuiCond_Appearing);
    ImGui::SetNextWindowSizeConstraints(ImVec2(0, 0), ImVec2(room.x * 0.95f, room.y * 0.9f));
    if (ImGui::Begin("Help", &show_help_, ImGuiWindowFlags_NoCollapse)) {
      layout().panel("help", ImGui::GetWindowPos(),
                     ImVec2(ImGui::GetWindowPos().x + ImGui::GetWindowSize().x,
                            ImGui::GetWindowPos().y + ImGui::GetWindowSize().y));
      auto section = [](const char* title, const std::vector<std::string>& lines) {
        ImGui::TextUnformatted(title);
        ImGui::Indent();
        for (const std::string& line : lines) ImGui::TextWrapped("%s", line.c_str());
        ImGui::Unindent();
        ImGui::Spacing();
      };
      section("Mouse", {"hover a cell: how its number is computed", "click a row: select that query token everywhere",
                        "click a key in the inspector: highlight its column",
                        "wheel over a map: zoom every map; right-drag: pan",
                        "drag the 3-D plot: rotate; Ctrl+click a slider or cell: type a value"});
      section("Keys", keyHelpLines());  // the binding table's, as the window acts on them (state/key_bindings.h)
      ImGui::TextWrapped(
          "Colours: viridis for non-negative maps, blue–white–red centred on 0 for signed ones; grey cells are −∞ "
          "(masked).");
    }
    ImGui::End();
  }
}

}  // namespace attnscope
