// The model panel: variant, d_out, num_heads, dropout, seed, training, qkv_bias, causal, scale,
// batch size and the execution path. Controls that do not apply to the variant are disabled and
// say why on hover.
#pragma once
#include <imgui.h>

#include "state/app_state.h"

namespace attnscope {

void drawModelPanel(AppState& app, ImVec2 pos, ImVec2 size);

}  // namespace attnscope
