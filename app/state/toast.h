// A brief message for the user in the status bar: a confirmation, or why something did not happen.
#pragma once
#include <cstddef>
#include <string>

namespace attnscope {

struct Toast {
  std::string text;  // "" for none
  bool error = false;
  double until = 0;  // shown until this time
  // Where the hint to make room for a large text size (F10, F11) begins in `text` (npos: none): void
  // in presentation, the note before it stays.
  std::size_t hint_room = std::string::npos;
  double refused_at = -1;  // a typed value a panel refused, said at this time (−1: another message)
};

}  // namespace attnscope
