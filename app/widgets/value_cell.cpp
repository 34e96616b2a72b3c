#include "widgets/value_cell.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>

#include "display/number_text.h"
#include "widgets/typed_number.h"

namespace attnscope {

int shownValueColumns(int cols, int extra) { return std::min(cols, 64 - extra); }

std::string cellText(float v, int decimals) { return std::fabs(v) >= 1e6f ? formatShort(v) : formatFixed(v, decimals); }

float valueColumnWidth(float lo, float hi) {
  const float widest = std::max(ImGui::CalcTextSize(cellText(lo, 4).c_str()).x,
                                ImGui::CalcTextSize(cellText(hi, 4).c_str()).x);
  return std::max(widest, ImGui::CalcTextSize("0.0000").x) + 2 * ImGui::GetStyle().FramePadding.x + 2;
}

bool valueCell(float& value, int decimals, std::string* shown, std::string* refused,
               const std::function<void(float)>& commit) {
  ImGui::SetNextItemWidth(-1);
  char format[8];
  std::snprintf(format, sizeof format, "%%.%df", std::clamp(decimals, 0, 6));
  const ImGuiID id = ImGui::GetID("##v");
  // ImGui prints the number with printf's hyphen; the maps, the inspector and the figures use a true
  // minus (−). So the field's own text is drawn transparent and formatFixed's drawn over it — while
  // it is dragged too, not while it is typed into (then the typed characters show).
  const bool typing = typingInto(id);
  if (!typing) ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(0, 0, 0, 0));
  // DragFloat turns into a text field on a double-click or Ctrl+click: a typed value is applied
  // once, as the field lets go of the keyboard (widgets/typed_number.h).
  float live = value;
  bool dragged = false;
  {
    const DecimalCommaAsPoint points(id);
    dragged = ImGui::DragFloat("##v", &live, 0.005f, 0, 0, format);
  }
  bool changed = dragged && !typing && !typingInto(id);
  if (changed) value = live;
  std::function<void(double)> commit_typed;  // kept while typed into (a frame later maybe): a copy
  if (commit && (typing || typingInto(id))) commit_typed = [commit](double v) { commit(static_cast<float>(v)); };
  if (const std::optional<double> typed = afterTypedNumber(id, typing, refused, commit_typed)) {
    const float v = static_cast<float>(*typed);
    changed = v != value || std::signbit(v) != std::signbit(value);
    value = v;
  }
  if (typing) return changed;
  ImGui::PopStyleColor();
  // As many decimals as fit the field, down to 2, as the maps' cells do (a digit cut off at the
  // field's edge would read as a shorter number).
  const ImVec2 lo = ImGui::GetItemRectMin(), hi = ImGui::GetItemRectMax();
  const float room = hi.x - lo.x - ImGui::GetStyle().FramePadding.x;
  std::string text = cellText(value, decimals);
  for (int d = decimals - 1; d >= 2 && ImGui::CalcTextSize(text.c_str()).x > room; --d) text = cellText(value, d);
  if (shown) *shown = text;
  const ImVec2 size = ImGui::CalcTextSize(text.c_str());
  // Centred as ImGui centres a drag field's text; clipped to the field when it is narrower.
  ImDrawList* draw = ImGui::GetWindowDrawList();
  draw->PushClipRect(lo, hi, true);
  draw->AddText(ImVec2(std::max(lo.x + ImGui::GetStyle().FramePadding.x, (lo.x + hi.x - size.x) / 2),
                       (lo.y + hi.y - size.y) / 2),
                ImGui::GetColorU32(ImGuiCol_Text), text.c_str());
  draw->PopClipRect();
  return changed;
}

}  // namespace attnscope
