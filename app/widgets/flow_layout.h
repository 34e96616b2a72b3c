// A header's pieces placed on lines before anything is drawn (docs/DESIGN.md §3.4): each beside the
// last while it fits. The same placement measures a header (to fold it where it would take the
// room of what it heads) and then draws it, so the two cannot disagree.
#pragma once
#include <imgui.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "widgets/theme.h"

namespace attnscope {

// Piece: any struct with float width (on screen), spacing (before it, beside the last), height
// (its line's, at least), keep (what must fit beside it as well: a label never ends a line apart
// from what it names) and bool beside (set here: on the last piece's line).

// Places `pieces` within `width`: each but the first goes beside the last where may(piece) and it fits.
template <class Piece, class May>
void placeFlow(std::vector<Piece>& pieces, float width, May may) {
  float right = 0;
  for (std::size_t k = 0; k < pieces.size(); ++k) {
    Piece& p = pieces[k];
    p.beside = k > 0 && may(p) && right + p.spacing + p.width + p.keep <= width;
    right = (p.beside ? right + p.spacing : 0) + p.width;
  }
}

// Placed pieces' height: their lines, each as tall as its tallest piece, and the spacing after each.
template <class Piece>
float flowHeight(const std::vector<Piece>& pieces) {
  float h = 0, line = 0;
  for (const Piece& p : pieces) {
    if (!p.beside) h += line > 0 ? line + ImGui::GetStyle().ItemSpacing.y : 0, line = 0;
    line = std::max(line, p.height);
  }
  return h + (line > 0 ? line + ImGui::GetStyle().ItemSpacing.y : 0);
}

// A folded header's menu's width, px(…) of it (the heatmaps', the Lines', a lesson step's): a
// header's toggles flow in it, a hint wraps.
constexpr float kFoldedMenuWidth = 440;

// A folded header's menu: the popup `id` opened below the last item (its button), not over it at
// the mouse, px(width) wide and within the window (a position set here is not kept inside it by
// ImGui). As BeginPopup: EndPopup when it returns true.
inline bool beginMenuBelowItem(const char* id, float width) {
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  const float menu_w = px(width), right = vp->WorkPos.x + vp->WorkSize.x;
  ImGui::SetNextWindowPos(
      ImVec2(std::max(vp->WorkPos.x, std::min(ImGui::GetItemRectMin().x, right - menu_w)), ImGui::GetItemRectMax().y));
  ImGui::SetNextWindowSize(ImVec2(menu_w, 0));
  return ImGui::BeginPopup(id);
}

}  // namespace attnscope
