// The editable number of a table: the Inputs panel's embeddings and the Weights tab's parameters
// are edited alike — drag to change (one undo step per drag), double-click or Ctrl+click to type.
#pragma once
#include <functional>
#include <string>

namespace attnscope {

// ImGui tables take at most 64 columns: how many of `cols` value columns a table shows beside its
// `extra` columns of its own (names, buttons). GPT-2's 768 show their first 64 − extra.
int shownValueColumns(int cols, int extra);
// The width of a value column whose cells show 4 decimals whole: `lo` … `hi` the values' range
// (a minus sign takes room only when some value is negative, "10.0000" more than "0.4300").
float valueColumnWidth(float lo, float hi);

// A value as its cell shows it: `decimals` decimals (a true minus), and three significant digits
// from a million on (3.4e38 took 40 digits and pushed the other columns out of view).
std::string cellText(float v, int decimals = 4);

// One number as a drag field filling its table cell, with `decimals` decimals (the maps' 4 by
// default) and a true minus, as every number of the app; `shown`, if given, gets the text drawn.
// True when the user changed `value` in this frame: a drag step, or a typed value once the field
// lets go of the keyboard (Enter, a click away; never a keystroke, and Escape keeps the value).
// A typed text that is no finite float32 ("1e", "1e39") changes nothing and is put in `refused`.
// `commit` applies a typed value where the cell stops being drawn before it lets go of the
// keyboard (commitTypedNumberIfGone, widgets/typed_number.h).
bool valueCell(float& value, int decimals = 4, std::string* shown = nullptr, std::string* refused = nullptr,
               const std::function<void(float)>& commit = {});

}  // namespace attnscope
