// Numbers typed into drags and sliders, applied once (widgets/typed_number.h).
#include "widgets/typed_number.h"

#include <imgui_internal.h>  // TempInputIsActive, GetInputTextState: the field being typed into

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string_view>
#include <type_traits>
#include <utility>

namespace attnscope {

namespace {

// The field being typed into, as it stood in the last frame that drew it: a field that stops being
// drawn while typed into never hears that it lost the keyboard (commitTypedNumberIfGone).
struct TypedText {
  ImGuiID id = 0;
  int frame = -1;  // ImGui's frame count when it was last drawn
  std::string text, initial;
  std::function<void(double)> commit;
};
TypedText typed_text;

// The number a typed text means: a value ("-0.5", "1e-3") or, as ImGui's own fields take it, an
// operation on the value before typing ("+0.1", "*2", "/4"). Nullopt: not a finite float32.
std::optional<double> typedNumber(const std::string& text, const std::string& initial) {
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
  return v;
}

// The clipboard as the window gives it, while a number field's paste reads it with points.
const char* (*window_clipboard)(void*) = nullptr;

const char* clipboardWithPoints(void* user) {
  static std::string text;  // ImGui copies it at once
  const char* got = window_clipboard != nullptr ? window_clipboard(user) : nullptr;
  text = got != nullptr ? got : "";
  std::replace(text.begin(), text.end(), ',', '.');
  return text.c_str();
}

}  // namespace

DecimalCommaAsPoint::DecimalCommaAsPoint(ImGuiID id) {
  if (ImGui::GetActiveID() != id) return;
  ImGuiIO& io = ImGui::GetIO();
  for (ImWchar& ch : io.InputQueueCharacters)
    if (ch == ',') ch = '.';
  window_clipboard = io.GetClipboardTextFn;
  io.GetClipboardTextFn = clipboardWithPoints;
  swapped_ = true;
}

DecimalCommaAsPoint::~DecimalCommaAsPoint() {
  if (swapped_) ImGui::GetIO().GetClipboardTextFn = window_clipboard;
}

bool typingInto(ImGuiID id) { return ImGui::TempInputIsActive(id); }

std::optional<double> afterTypedNumber(ImGuiID id, bool typing_before, std::string* refused,
                                       const std::function<void(double)>& commit) {
  if (typing_before || ImGui::TempInputIsActive(id))
    if (const ImGuiInputTextState* state = ImGui::GetInputTextState(id); state && state->TextA.Data)
      typed_text = {id, ImGui::GetFrameCount(), state->TextA.Data,
                    state->InitialTextA.Data ? state->InitialTextA.Data : "", commit};
  if (!ImGui::IsItemDeactivated() || typed_text.id != id || typed_text.frame < ImGui::GetFrameCount() - 1)
    return std::nullopt;
  const TypedText t = std::exchange(typed_text, {});
  // Escape: ImGui's field gives the value its first text back, but its own text stays as typed (a
  // cancel is not written back), so the typed text is there to be ignored.
  if (typing_before && ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape))) return std::nullopt;
  if (t.text == t.initial) return std::nullopt;
  const std::optional<double> v = typedNumber(t.text, t.initial);
  if (!v && refused) *refused = t.text;
  return v;
}

void commitTypedNumberIfGone() {
  if (typed_text.id == 0 || typed_text.frame >= ImGui::GetFrameCount()) return;  // none, or drawn this frame
  const TypedText t = std::exchange(typed_text, {});
  if (t.text == t.initial || !t.commit) return;
  if (const std::optional<double> v = typedNumber(t.text, t.initial)) t.commit(*v);
}

std::string typedRefusal(const std::string& text, const std::string& what, const std::string& keeps, const char* is) {
  return "Not applied: \"" + text + "\" is " + is + " (" + what + " keeps " + keeps + ")";
}

namespace {

// A slider of T (ImGui's SliderInt or SliderFloat as `slider`) whose typed value applies once.
template <class T, class Slider>
bool sliderTyped(const char* label, T value, T lo, T hi, const char* format, ImGuiDataType type, CommandQueue& queue,
                 const char* what, const std::function<void(T)>& apply, Slider slider) {
  const ImGuiID id = ImGui::GetID(label);
  const auto fit = [lo, hi](double typed) {  // rounded (an int's) and clamped, as the slider's own values
    const double in = std::clamp(typed, static_cast<double>(lo), static_cast<double>(hi));
    return static_cast<T>(std::is_integral_v<T> ? std::round(in) : in);
  };
  const bool typing = typingInto(id);
  T live = value;
  bool dragged = false;
  {
    const DecimalCommaAsPoint points(id);
    dragged = slider(&live);
  }
  std::function<void(double)> commit;  // kept while typed into (a frame later maybe): copies
  if (typing || typingInto(id)) commit = [apply, fit](double typed) { apply(fit(typed)); };
  std::string refused;
  const std::optional<double> typed = afterTypedNumber(id, typing, &refused, commit);
  if (!refused.empty()) {
    char keeps[64];
    ImGui::DataTypeFormatString(keeps, sizeof keeps, type, &value, format);  // as the slider shows it
    queue.refuse(typedRefusal(refused, what, keeps, "not a number it can take"));
  }
  if (typed) live = fit(*typed);
  if (!typed && (typing || typingInto(id) || !dragged)) return false;  // keystrokes are not applied
  if (live == value) return false;
  apply(live);
  return true;
}

}  // namespace

bool sliderIntTyped(const char* label, int value, int lo, int hi, const char* format, ImGuiSliderFlags flags,
                    CommandQueue& queue, const char* what, const std::function<void(int)>& apply) {
  return sliderTyped(label, value, lo, hi, format, ImGuiDataType_S32, queue, what, apply,
                     [&](int* live) { return ImGui::SliderInt(label, live, lo, hi, format, flags); });
}

bool sliderFloatTyped(const char* label, float value, float lo, float hi, const char* format, ImGuiSliderFlags flags,
                      CommandQueue& queue, const char* what, const std::function<void(float)>& apply) {
  return sliderTyped(label, value, lo, hi, format, ImGuiDataType_Float, queue, what, apply,
                     [&](float* live) { return ImGui::SliderFloat(label, live, lo, hi, format, flags); });
}

}  // namespace attnscope
