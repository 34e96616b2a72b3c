// The inputs panel: the T × d_in embedding table, every cell a drag/typed field that recomputes
// live; rename, add, remove and reorder tokens; change d_in; randomize; reset to the book's
// example; type a sentence. Below, the embedding vectors as arrows in 2-D/3-D (drag to rotate).
#pragma once
#include <imgui.h>

#include "state/app_state.h"

namespace attnscope {

void drawInputsPanel(AppState& app, ImVec2 pos, ImVec2 size, double now);

}  // namespace attnscope
