#include "widgets/value_cell.h"

#include <imgui.h>

#include <algorithm>

namespace attnscope {

int shownValueColumns(int cols, int extra) { return std::min(cols, 64 - extra); }

bool valueCell(float& value, const char* format) {
  ImGui::SetNextItemWidth(-1);
  // DragFloat turns into a text field on a double-click or Ctrl+click (ImGui 1.86).
  return ImGui::DragFloat("##v", &value, 0.005f, 0, 0, format);
}

}  // namespace attnscope
