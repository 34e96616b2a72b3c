#include "panels/main_menu.h"

#include <imgui.h>
#include <imgui_stdlib.h>

#include "engine/errors.h"
#include "shell/layout_dump.h"
#include "shell/theme.h"
#include "formats/presets.h"
#include "shell/screenshot.h"

namespace attnscope {

MenuActions drawMainMenu(AppState& app, const std::vector<std::string>& recent, double now) {
  MenuActions act;
  static bool show_help = false;
  if (ImGui::BeginMainMenuBar()) {
    if (ImGui::BeginMenu("File")) {
      if (ImGui::MenuItem("New (the book's example)")) act.new_workspace = true;
      if (ImGui::MenuItem("Open…", "Ctrl+O")) act.open = true;
      if (ImGui::BeginMenu("Open recent", !recent.empty())) {
        for (const std::string& r : recent)
          if (ImGui::MenuItem(r.c_str())) act.open_recent = r;
        ImGui::EndMenu();
      }
      if (ImGui::MenuItem("Save", "Ctrl+S")) act.save = true;
      if (ImGui::MenuItem("Save as…")) act.save_as = true;
      ImGui::Separator();
      if (ImGui::MenuItem("Export the trace…")) act.export_trace = true;
      if (ImGui::MenuItem("Copy PyTorch code")) act.copy_pytorch = true;
      if (ImGui::MenuItem("Save PyTorch code…")) act.save_pytorch = true;
      ImGui::Separator();
      if (ImGui::BeginMenu("Presets")) {
        static const std::vector<PresetInfo> catalog = presetCatalog();
        for (const PresetInfo& preset : catalog) {
          if (ImGui::MenuItem(preset.title.c_str())) {
            try {
              app.replaceWorkspace(loadWorkspace(presetPath(preset.name)));
            } catch (const InputError& e) {
              app.showToast(e.what(), true, now);
            }
          }
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
      ImGui::Separator();
      if (ImGui::MenuItem("Save screenshot", "F12")) act.screenshot = true;
      if (ImGui::BeginMenu("Save panel as PNG")) {
        for (const char* panel : {"model", "inputs", "heatmaps", "pipeline", "inspector"})
          if (ImGui::MenuItem(panel))
            act.capture = CaptureSpec{static_cast<float>(app.view.screenshot_scale), panel, 0, app.view.caption};
        ImGui::EndMenu();
      }
      if (ImGui::BeginMenu("Screenshot size")) {
        for (int k = 1; k <= 3; ++k)
          if (ImGui::MenuItem((std::to_string(k) + "×").c_str(), nullptr, app.view.screenshot_scale == k))
            app.view.screenshot_scale = k;
        ImGui::Separator();
        ImGui::MenuItem("Caption (variant, sizes, seed)", nullptr, &app.view.caption);
        ImGui::EndMenu();
      }
      if (ImGui::BeginMenu("Screenshot folder")) {
        if (app.view.screenshot_dir.empty()) app.view.screenshot_dir = defaultScreenshotFolder();
        ImGui::SetNextItemWidth(px(360));
        ImGui::InputText("##folder", &app.view.screenshot_dir);
        ImGui::EndMenu();
      }
      ImGui::Separator();
      if (ImGui::MenuItem("Quit", "Ctrl+Q")) act.quit = true;
      ImGui::EndMenu();
    }
    if (ImGui::BeginMenu("Edit")) {
      if (ImGui::MenuItem("Undo", "Ctrl+Z", false, app.history.canUndo())) app.undo();
      if (ImGui::MenuItem("Redo", "Ctrl+Shift+Z", false, app.history.canRedo())) app.redo();
      ImGui::EndMenu();
    }
    if (ImGui::BeginMenu("View")) {
      ImGui::MenuItem("Inspector", nullptr, &app.view.show_inspector);
      if (ImGui::MenuItem("Light theme (slides, print)", nullptr, app.view.light_theme)) {
        app.view.light_theme = !app.view.light_theme;
        act.theme_changed = true;
      }
      ImGui::Separator();
      for (Colormap c : {Colormap::Viridis, Colormap::Cividis})
        if (ImGui::MenuItem(colormapTitle(c), nullptr, app.view.colormap == c)) app.view.colormap = c;
      ImGui::MenuItem("Diverging map for signed values", nullptr, &app.view.diverging_for_signed);
      ImGui::MenuItem("Shared colour scale across heads", nullptr, &app.view.shared_scale);
      if (ImGui::BeginMenu("Columns")) {
        for (int s = 0; s < kStageCount; ++s)
          ImGui::MenuItem(stageTitle(static_cast<Stage>(s)), nullptr, &app.view.show[s]);
        ImGui::EndMenu();
      }
      ImGui::EndMenu();
    }
    if (ImGui::BeginMenu("Help")) {
      if (ImGui::MenuItem("Keys and mouse")) show_help = true;
      ImGui::EndMenu();
    }
    ImGui::EndMainMenuBar();
  }
  if (show_help) {
    ImGui::SetNextWindowSize(ImVec2(px(520), 0), ImGuiCond_Appearing);
    if (ImGui::Begin("Help", &show_help, ImGuiWindowFlags_NoCollapse)) {
      ImGui::TextWrapped(
          "Mouse\n"
          "  hover a cell: how its number is computed\n"
          "  click a row: select that query token everywhere\n"
          "  click a key in the inspector: highlight its column\n"
          "  wheel over a map: zoom every map; right-drag: pan\n"
          "  drag the 3-D plot: rotate; Ctrl+click a slider or cell: type a value\n\n"
          "Keys\n"
          "  ↑ ↓ ← →: previous / next query token\n"
          "  Tab, Shift+Tab: next / previous head (then all heads)\n"
          "  Ctrl+Z, Ctrl+Shift+Z: undo, redo (a slider drag is one step)\n"
          "  F12: save the window as PNG (File › Screenshot folder)\n"
          "  Ctrl+Q: quit\n\n"
          "Colours: viridis for non-negative maps, blue–white–red centred on 0 for signed ones; grey "
          "cells are −∞ (masked).");
    }
    ImGui::End();
  }
  return act;
}

}  // namespace attnscope
