// The editable number of a table: the Inputs panel's embeddings and the Weights tab's parameters
// are edited alike — drag to change (one undo step per drag), double-click or Ctrl+click to type.
#pragma once

namespace attnscope {

// ImGui tables take at most 64 columns: how many of `cols` value columns a table shows beside its
// `extra` columns of its own (names, buttons). GPT-2's 768 show their first 64 − extra.
int shownValueColumns(int cols, int extra);

// One number as a drag field filling its table cell, shown with `format`. True when the user
// changed `value` in this frame (a drag step or a typed value).
bool valueCell(float& value, const char* format = "%.2f");

}  // namespace attnscope
