#include "widgets/theme.h"

namespace attnscope {

namespace {
Theme current;
float current_scale = 1;
}  // namespace

const Theme& theme() { return current; }
float uiScale() { return current_scale; }

void applyTheme(bool light, float scale) {
  ImGuiStyle style;  // fresh, so switching themes never compounds the scaling
  if (light)
    ImGui::StyleColorsLight(&style);
  else
    ImGui::StyleColorsDark(&style);
  style.WindowRounding = 0;
  style.FrameRounding = 3;
  style.GrabRounding = 3;
  style.WindowBorderSize = 1;
  style.ItemSpacing = ImVec2(8, 6);
  style.FramePadding = ImVec2(6, 4);
  // Menus, tooltips and notes opaque: ImGui's 94 % (dark) let the token labels of the Lines canvas
  // and the Inspector's terms show through a folded header's menu, as words among its words.
  style.Colors[ImGuiCol_PopupBg] = light ? ImVec4(1, 1, 1, 1) : ImVec4(0.12f, 0.12f, 0.15f, 1);
  if (light) {
    style.Colors[ImGuiCol_WindowBg] = ImVec4(1, 1, 1, 1);
    style.Colors[ImGuiCol_ChildBg] = ImVec4(1, 1, 1, 0);
    style.Colors[ImGuiCol_Text] = ImVec4(0.05f, 0.05f, 0.08f, 1);
    // Dimmed text (a Lines head toggled off, hints) at 4.6 : 1 on the panels' light grey, as the dark
    // theme's is: ImGui's light grey was 2.5 : 1, gone on a projector.
    style.Colors[ImGuiCol_TextDisabled] = ImVec4(0.42f, 0.42f, 0.45f, 1);
    // Controls need a tone of their own on a white page.
    style.Colors[ImGuiCol_FrameBg] = ImVec4(0.88f, 0.89f, 0.92f, 1);
    style.Colors[ImGuiCol_FrameBgHovered] = ImVec4(0.80f, 0.84f, 0.92f, 1);
    style.Colors[ImGuiCol_FrameBgActive] = ImVec4(0.72f, 0.80f, 0.92f, 1);
    style.Colors[ImGuiCol_Border] = ImVec4(0.75f, 0.75f, 0.80f, 1);
    style.Colors[ImGuiCol_TitleBg] = style.Colors[ImGuiCol_TitleBgActive] = ImVec4(0.90f, 0.91f, 0.94f, 1);
    style.Colors[ImGuiCol_MenuBarBg] = ImVec4(0.93f, 0.93f, 0.95f, 1);
    style.FrameBorderSize = 1;
  } else {
    style.Colors[ImGuiCol_WindowBg] = ImVec4(0.09f, 0.09f, 0.11f, 1);
    // A slider's value is written over its grab: ImGui's bright blue grab left white digits at 3.7 : 1
    // (a projector lost the point of "1.00" under it); this blue keeps them at 5.8 : 1.
    style.Colors[ImGuiCol_SliderGrab] = ImVec4(0.20f, 0.40f, 0.68f, 1);
    style.Colors[ImGuiCol_SliderGrabActive] = ImVec4(0.26f, 0.50f, 0.82f, 1);
  }
  style.ScaleAllSizes(scale);
  ImGui::GetStyle() = style;

  current_scale = scale;
  current.light = light;
  // Masked cells: a grey darker than the light end of every colormap (coolwarm's near-zero white).
  current.masked_cell = light ? IM_COL32(150, 150, 156, 255) : IM_COL32(72, 72, 78, 255);
  current.grid_line = ImGui::GetColorU32(style.Colors[ImGuiCol_WindowBg]);
  current.selection = light ? IM_COL32(230, 40, 40, 255) : IM_COL32(255, 90, 90, 255);
  current.hover = light ? IM_COL32(0, 0, 0, 255) : IM_COL32(255, 255, 255, 255);
  current.text_dim = light ? IM_COL32(70, 70, 80, 255) : IM_COL32(185, 185, 195, 255);
}

}  // namespace attnscope
