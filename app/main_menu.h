// The menu bar: File (presets, screenshot, screenshot folder, quit), View (theme, colormap,
// scale, columns), Help.
#pragma once
#include "app_state.h"
#include "capture.h"

namespace attnscope {

struct MenuActions {
  bool screenshot = false;     // save the window as PNG now
  bool quit = false;
  bool theme_changed = false;  // re-apply the style
  CaptureSpec capture;         // a panel to save now (panel non-empty)
};

MenuActions drawMainMenu(AppState& app, double now);

}  // namespace attnscope
