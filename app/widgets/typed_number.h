// Numbers typed into ImGui's drags and sliders (a Ctrl+click or double-click turns them into a
// text field, ImGui 1.86), applied once: as the field lets go of the keyboard (Enter, Tab, a click
// away, a key that acts while typing) — ImGui's field applies each keystroke, so "14" went 1 → 14
// through the maps and a typed "0.7" through 0, and the field's own Ctrl+Z edited the workspace.
// Escape keeps the value; a decimal comma is a point (ImGui's filter dropped it: "0,5" was 5); a
// text that is no finite float32 number is refused; ImGui's operations on the shown value ("+0.1",
// "*2", "/4") work. One field at a time has the keyboard, so one record serves every field.
#pragma once
#include <imgui.h>

#include <functional>
#include <optional>
#include <string>

#include "state/command_queue.h"

namespace attnscope {

// While it lives (across a number field's call), a decimal comma typed or pasted into the field
// `id`, if it has the keyboard, is a point: ImGui's number filter dropped it ("0,5" was 5).
class DecimalCommaAsPoint {
 public:
  explicit DecimalCommaAsPoint(ImGuiID id);
  ~DecimalCommaAsPoint();
  DecimalCommaAsPoint(const DecimalCommaAsPoint&) = delete;
  DecimalCommaAsPoint& operator=(const DecimalCommaAsPoint&) = delete;

 private:
  bool swapped_ = false;
};

// Whether the drag or slider `id` is being typed into (its keystrokes are not to be applied).
bool typingInto(ImGuiID id);
// Call right after the field `id`, with what typingInto said right before it: the number typed,
// once, in the frame the field lets go of the keyboard; nullopt otherwise (nothing typed, Escape,
// or a text that is no number, which is then put in `refused`). `commit` applies the typed number
// where the field stops being drawn before it lets go (commitTypedNumberIfGone).
std::optional<double> afterTypedNumber(ImGuiID id, bool typing_before, std::string* refused = nullptr,
                                       const std::function<void(double)>& commit = {});
// At the end of each frame, after every panel: the number typed into a field that was not drawn in
// this frame (its card scrolled out of view, its row gone, its panel hidden) is applied by its
// `commit`, not lost.
void commitTypedNumberIfGone();

// SliderInt and SliderFloat showing `value`, whose typed values apply once (above): `apply` gets a
// drag step's value, or a typed one (rounded, clamped to lo … hi) — also a frame later, where the
// slider stops being drawn while typed into, so it holds nothing of the frame's. A typed text that
// is no number is said in `queue`, naming the slider `what`. True when `apply` was called.
bool sliderIntTyped(const char* label, int value, int lo, int hi, const char* format, ImGuiSliderFlags flags,
                    CommandQueue& queue, const char* what, const std::function<void(int)>& apply);
bool sliderFloatTyped(const char* label, float value, float lo, float hi, const char* format, ImGuiSliderFlags flags,
                      CommandQueue& queue, const char* what, const std::function<void(float)>& apply);

// The one message for a typed text that is no number: "Not applied: "1e" is no finite float32
// number (token 3, d1 keeps 0.8500)"; `is` says what it is not (a slider: "not a number it can take").
std::string typedRefusal(const std::string& text, const std::string& what, const std::string& keeps,
                         const char* is = "no finite float32 number");

}  // namespace attnscope
