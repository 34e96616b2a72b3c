// The status bar: engine time, frame time, sizes, threads, and the latest toast. A view: the sizes
// are those of the snapshot on screen.
#pragma once
#include <imgui.h>

#include "panels/panel.h"

namespace attnscope {

class StatusBar {
 public:
  // `statistics_hidden`: the head statistics are asked for but have no room at this size (said,
  // not left to vanish: at 1280 × 720 and 200 % they had gone without a word).
  void draw(const PanelContext& ctx, ImVec2 pos, ImVec2 size, bool statistics_hidden = false);
  // Its height: one line of text and a little padding (it grows with the text size).
  static float height();
  // The latest toast in a box whose bottom-right corner is `corner` less a margin, wrapped within
  // `width`: with the status bar hidden, and above it for a toast too long to fit beside its text.
  // Nothing when there is none.
  static void drawToast(const PanelContext& ctx, ImVec2 corner, float width);
};

}  // namespace attnscope
