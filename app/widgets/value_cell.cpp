#include "widgets/value_cell.h"

#include <imgui.h>
#include <imgui_internal.h>  // TempInputIsActive: the field is being typed into

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string_view>
#include <utility>

#include "display/number_text.h"

namespace attnscope {

int shownValueColumns(int cols, int extra) { return std::min(cols, 64 - extra); }

namespace {
// A value as its cell shows it: `decimals` decimals, and three significant digits from a million on
// (3.4e38 took 40 digits and pushed the other columns out of view).
std::string cellText(float v, int decimals) { return std::fabs(v) >= 1e6f ? formatShort(v) : formatFixed(v, decimals); }
}  // namespace

float valueColumnWidth(float lo, float hi) {
  const float widest = std::max(ImGui::CalcTextSize(cellText(lo, 4).c_str()).x,
                                ImGui::CalcTextSize(cellText(hi, 4).c_str()).x);
  return std::max(widest, ImGui::CalcTextSize("0.0000").x) + 2 * ImGui::GetStyle().FramePadding.x + 2;
}

namespace {

// The cell being typed into, as it stood in the last frame that drew it: a cell that stops being
// drawn while typed into (its Weights card scrolled out of view, its row removed) never hears that
// it lost the keyboard, and commitTypedCellIfGone applies its text by `commit`.
struct TypedText {
  ImGuiID id = 0;
  int frame = -1;  // ImGui's frame count when it was last drawn
  std::string text, initial;
  std::function<void(float)> commit;
};
TypedText typed_text;  // one field at a time has the keyboard

// The number a typed text means: a value ("-0.5", "1e-3") or, as ImGui's own fields take it, an
// operation on the value before typing ("+0.1", "*2", "/4"). Nullopt: not a finite number.
std::optional<float> typedNumber(const std::string& text, const std::string& initial) {
  std::size_t at = text.find_first_not_of(" \t");
  if (at == std::string::npos) return std::nullopt;
  const char op = text[at];
  if (op == '+' || op == '*' || op == '/') at = text.find_first_not_of(" \t", at + 1);
  if (at == std::string::npos) return std::nullopt;
  const char* begin = text.c_str() + at;
  char* end = nullptr;
  const double operand = std::strtod(begin, &end);
  if (end == begin || std::string_view(end).find_first_not_of(" \t") != std::string_view::npos) return std::nullopt;
  const double base = std::strtod(initial.c_str(), nullptr);  // the value as its field showed it, as ImGui reads it
  const double v = op == '+' ? base + operand : op == '*' ? base * operand : op == '/' ? base / operand : operand;
  if (!std::isfinite(v) || std::fabs(v) >= 3.4028235677973366e38) return std::nullopt;  // ±∞ as a float32
  return static_cast<float>(v);
}

}  // namespace

bool valueCell(float& value, int decimals, std::string* shown, std::string* refused,
               const std::function<void(float)>& commit) {
  ImGui::SetNextItemWidth(-1);
  char format[8];
  std::snprintf(format, sizeof format, "%%.%df", std::clamp(decimals, 0, 6));
  const ImGuiID id = ImGui::GetID("##v");
  // ImGui prints the number with printf's hyphen; the maps, the inspector and the figures use a true
  // minus (−). So the field's own text is drawn transparent and formatFixed's drawn over it — while
  // it is dragged too, not while it is typed into (then the typed characters show).
  const bool typing = ImGui::TempInputIsActive(id);
  if (!typing) ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(0, 0, 0, 0));
  // DragFloat turns into a text field on a double-click or Ctrl+click (ImGui 1.86). A typed value
  // is applied once, when the field lets go of the keyboard (Enter, a click away, a key that acts
  // while typing): ImGui's field applies each keystroke, so "0.7" went 0 → 0.7 through the maps,
  // and the field's own Ctrl+Z changed the workspace. Escape keeps the value as it was.
  // A decimal comma is a point: ImGui's number filter dropped it, and "0,5" was 5.
  if (typing)
    for (ImWchar& ch : ImGui::GetIO().InputQueueCharacters)
      if (ch == ',') ch = '.';
  float live = value;
  const bool dragged = ImGui::DragFloat("##v", &live, 0.005f, 0, 0, format);
  const bool typed_now = typing || ImGui::TempInputIsActive(id);
  if (typed_now)
    if (const ImGuiInputTextState* state = ImGui::GetInputTextState(id); state && state->TextA.Data)
      typed_text = {id, ImGui::GetFrameCount(), state->TextA.Data,
                    state->InitialTextA.Data ? state->InitialTextA.Data : "", commit};
  bool changed = dragged && !typed_now;
  if (changed) value = live;
  if (ImGui::IsItemDeactivated() && typed_text.id == id && typed_text.frame >= ImGui::GetFrameCount() - 1) {
    const TypedText t = std::exchange(typed_text, {});
    // Escape: ImGui's field gives the value its first text back, but its own text stays as typed
    // (a cancel is not written back), so the typed text is there to be ignored.
    const bool cancelled = typing && ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape));
    if (!cancelled && t.text != t.initial) {
      if (const std::optional<float> v = typedNumber(t.text, t.initial)) {
        changed = *v != value || std::signbit(*v) != std::signbit(value);
        value = *v;
      } else if (refused) {
        *refused = t.text;
      }
    }
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

void commitTypedCellIfGone() {
  if (typed_text.id == 0 || typed_text.frame >= ImGui::GetFrameCount()) return;  // none, or drawn this frame
  const TypedText t = std::exchange(typed_text, {});
  if (t.text == t.initial || !t.commit) return;
  if (const std::optional<float> v = typedNumber(t.text, t.initial)) t.commit(*v);
}

}  // namespace attnscope
