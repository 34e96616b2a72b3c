// The heatmap grid: one card per head with its maps — scores, scaled scores, causal mask, weights,
// dropout mask, weights after dropout (and context) — tiled to be as large as the panel allows.
#pragma once
#include <imgui.h>

#include "app_state.h"

namespace attnscope {

void drawHeatmapGrid(AppState& app, ImVec2 pos, ImVec2 size);

}  // namespace attnscope
