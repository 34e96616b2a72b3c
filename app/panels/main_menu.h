// The menu bar: File (presets, screenshot, screenshot folder, quit), View (theme, colormap,
// scale, columns), Help.
#pragma once
#include "state/app_state.h"
#include "shell/capture.h"

#include <string>
#include <vector>

namespace attnscope {

struct MenuActions {
  bool screenshot = false;     // save the window as PNG now
  bool quit = false;
  bool theme_changed = false;  // re-apply the style
  CaptureSpec capture;         // a panel to save now (panel non-empty)
  bool new_workspace = false, open = false, save = false, save_as = false;
  bool export_trace = false, copy_pytorch = false, save_pytorch = false;
  std::string open_recent;     // a recent file to open
};

MenuActions drawMainMenu(AppState& app, const std::vector<std::string>& recent, double now);

}  // namespace attnscope
