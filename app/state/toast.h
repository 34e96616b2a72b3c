// A brief message for the user in the status bar: a confirmation, or why something did not happen.
#pragma once
#include <string>

namespace attnscope {

struct Toast {
  std::string text;  // "" for none
  bool error = false;
  double until = 0;        // shown until this time
  bool hint_room = false;  // the hint to make room for a large text size (F10, F11): void in presentation
};

}  // namespace attnscope
