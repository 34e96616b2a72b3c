// The heatmap grid: one card per head with its maps — scores, scaled scores, causal mask, weights,
// dropout mask, weights after dropout (and context) — tiled to be as large as the panel allows.
#pragma once
#include <imgui.h>

#include "state/app_state.h"

namespace attnscope {

// Draws into the current window (a tab of the main area).
void drawHeatmapGrid(AppState& app);

}  // namespace attnscope
