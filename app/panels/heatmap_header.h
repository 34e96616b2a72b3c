// The heatmaps' header (docs/DESIGN.md §3.4): the head, the batch element, the shared colour
// scale and a toggle per map. Which piece goes on which line is planned from their widths before
// anything is drawn, and the plan both measures the header and draws it, so the grid can fold the
// header into a menu where it would take the maps' room: a projector's large text in a
// 1280-pixel window.
#pragma once
#include <imgui.h>

#include "engine/attention.h"
#include "panels/panel.h"

namespace attnscope {

enum class HeaderForm {
  Inline,      // on the panel's lines, each piece beside the last while it fits
  Folded,      // one line: the head and a "maps, batch, scale ▾" button, its menu the rest (FoldedMenu)
  FoldedMenu,  // that menu: the batch element, the shared scale, the maps; a line apiece
  LessonMenu,  // a lesson step's menu beside its words: everything, a line apiece
};

// Inline, unless the whole header would take more than a quarter of the heatmaps' `region`: then
// Folded. Worked out from the region, the text size and the model's pieces (its heads, batch,
// route), never from last frame's layout, so the header does not flip between forms.
HeaderForm heatmapHeaderForm(const ModelConfig& m, const Trace* t, ImVec2 region);

// Draws the header in `form` at the cursor. `shown_batch`: the batch element on screen.
void drawHeatmapHeader(const PanelContext& ctx, const ModelConfig& m, int shown_batch, const Trace* t, HeaderForm form);

}  // namespace attnscope
