// The status bar: engine time, frame time, sizes, threads, and the latest toast. A view: the sizes
// are those of the snapshot on screen.
#pragma once
#include <imgui.h>

#include "panels/panel.h"

namespace attnscope {

class StatusBar {
 public:
  void draw(const PanelContext& ctx, ImVec2 pos, ImVec2 size);
};

}  // namespace attnscope
