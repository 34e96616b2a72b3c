// The inspector: the selected query token worked through by hand, as the notebook does for
// "journey" (x²): xᵢ, qᵢ, its row of scores, scaled scores and weights as labelled bars, and the
// context vector zᵢ = Σⱼ αᵢⱼ vⱼ with every term. Shapes of every step. Clicking a key token
// highlights that column in every map. A view: it draws the snapshot only.
#pragma once
#include <imgui.h>

#include "panels/panel.h"

namespace attnscope {

class InspectorPanel {
 public:
  void draw(const PanelContext& ctx, ImVec2 pos, ImVec2 size);
};

}  // namespace attnscope
