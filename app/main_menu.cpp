#include "main_menu.h"

#include <imgui.h>
#include <imgui_stdlib.h>

#include "errors.h"
#include "layout_dump.h"
#include "presets.h"
#include "screenshot.h"

namespace attnscope {

MenuActions drawMainMenu(AppState& app, double now) {
  MenuActions act;
  static bool show_help = false;
  if (ImGui::BeginMainMenuBar()) {
    if (ImGui::BeginMenu("File")) {
      if (ImGui::BeginMenu("Presets")) {
        for (const std::string& name : presetNames()) {
          if (ImGui::MenuItem(name.c_str())) {
            try {
              Workspace ws = loadWorkspace(presetPath(name));
              ws.view = app.workspace.view;
              app.workspace = std::move(ws);
              app.view.batch = 0;
              app.changed();
            } catch (const InputError& e) {
              app.showToast(e.what(), true, now);
            }
          }
        }
        ImGui::EndMenu();
      }
      ImGui::Separator();
      if (ImGui::MenuItem("Save screenshot", "F12")) act.screenshot = true;
      if (ImGui::BeginMenu("Screenshot folder")) {
        if (app.view.screenshot_dir.empty()) app.view.screenshot_dir = defaultScreenshotFolder();
        ImGui::SetNextItemWidth(360);
        ImGui::InputText("##folder", &app.view.screenshot_dir);
        ImGui::EndMenu();
      }
      ImGui::Separator();
      if (ImGui::MenuItem("Quit", "Ctrl+Q")) act.quit = true;
      ImGui::EndMenu();
    }
    if (ImGui::BeginMenu("View")) {
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
    ImGui::SetNextWindowSize(ImVec2(460, 0), ImGuiCond_Appearing);
    if (ImGui::Begin("Help", &show_help, ImGuiWindowFlags_NoCollapse)) {
      ImGui::TextWrapped(
          "Hover a cell to see how its number is computed. Click a row to select that query token in "
          "every map.\n\nF12: save the window as PNG (File › Screenshot folder).\nCtrl+Q: quit.\n\n"
          "Colours: viridis for non-negative maps, blue–white–red centred on 0 for signed ones; grey "
          "cells are −∞ (masked). Ctrl+click a slider to type a value.");
    }
    ImGui::End();
  }
  return act;
}

}  // namespace attnscope
