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

// In the heatmaps' panel, at the cursor: on the panel's lines, or — where the whole header would
// take more than a quarter of what the panel has left — folded into one line, the head and a
// "maps, batch, scale ▾" menu holding the rest. The choice follows the panel, the text size and
// the model's pieces (its heads, batch, route), never last frame's layout, so it does not flip
// between frames. `shown_batch`: the batch element on screen. Returns true when folded.
bool drawHeatmapHeader(const PanelContext& ctx, const ModelConfig& m, int shown_batch, const Trace* t);

// The same controls as a menu's body, a line apiece (the maps' toggles flow): a lesson step's menu
// beside its words holds the head too (`with_head`), the folded header's menu has it on its line.
// Inside a popup: Escape closes it.
void drawHeatmapHeaderMenu(const PanelContext& ctx, const ModelConfig& m, int shown_batch, const Trace* t,
                           bool with_head);

}  // namespace attnscope
