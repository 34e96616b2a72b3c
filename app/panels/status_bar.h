// The status bar: engine time, frame time, sizes, threads, and the latest toast.
#pragma once
#include <imgui.h>

#include "state/app_state.h"

namespace attnscope {

void drawStatusBar(AppState& app, ImVec2 pos, ImVec2 size, double now);

}  // namespace attnscope
