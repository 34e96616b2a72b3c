// The pipeline: X → Q, K, V → scores → scaled → masked → softmax → dropout → context → concat →
// out_proj → output, left to right as small heatmaps with their shapes and the operation on each
// arrow. Click a step to enlarge it below; steps the variant lacks are greyed with the reason.
#pragma once
#include <imgui.h>

#include "state/app_state.h"

namespace attnscope {

void drawPipeline(AppState& app, ImVec2 size);

}  // namespace attnscope
