// Dark and light (slides, print) themes: ImGui's style plus the few colours the heatmaps need.
#pragma once
#include <imgui.h>

namespace attnscope {

struct Theme {
  bool light = false;
  ImU32 masked_cell;  // −∞ cells: a neutral grey distinct from every colormap entry's use
  ImU32 grid_line;    // lines between cells, the window background
  ImU32 selection;    // outline of the selected query row
  ImU32 hover;        // outline of the hovered cell
  ImU32 text_dim;     // axis labels
};

void applyTheme(bool light, float scale);
const Theme& theme();

// The UI scale (monitor content scale × screenshot scale) the theme was applied with; px(12)
// turns a size designed at 1× into pixels, so layouts grow with the fonts.
float uiScale();
inline float px(float size) { return size * uiScale(); }

}  // namespace attnscope
