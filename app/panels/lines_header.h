// The Lines view's header (docs/DESIGN.md §3.4): the stage, the heads' toggles (their colours are
// the lines' legend), the top k, "only the selected token", Save figure… and the hint on reading
// the lines. Planned from the pieces' widths before anything is drawn, like the heatmaps' header,
// so that where it would take the lines' room — a projector's large text in a 1280-pixel window —
// it folds: the heads' toggles and an "options ▾" menu holding the rest, the hint included.
#pragma once
#include <string>

#include "panels/panel.h"

namespace attnscope {

// What the header shows of the snapshot: the lines' stage, heads and k.
struct LinesHeaderState {
  int heads = 1;                 // of the shown element (a toggle each when more than one)
  int layer = 0;                 // a trained model's shown layer: the heads' colours (headColour)
  bool can_drop = false;         // the trace has dropped weights (dropout active)
  bool dropped = false;          // the lines are of the weights after dropout
  bool all_keys = true;          // every key drawn (T ≤ kLinesAllKeysUpTo): no top k
  int k = 0;                     // else the top k keys per query
  int tokens = 0;                // T, for the top k's tooltip
  const char* no_drop_why = "";  // why "after dropout" is off (its tooltip), when !can_drop
  std::string hint;              // how to read the lines: their opacity and width, hovering, clicking
};

// At the cursor of the Lines tab: on the panel's lines, or — where the whole header would take
// more than a quarter of what the tab has left — folded into the heads' toggles and the menu.
// The choice follows the tab's size, the text size and the state, never last frame's layout; while
// the menu is open it stays folded (a choice in it may shorten the header: the menu would vanish
// under the mouse).
void drawLinesHeader(const PanelContext& ctx, const LinesHeaderState& s);

}  // namespace attnscope
