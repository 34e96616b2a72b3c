// Head statistics (docs/DESIGN.md §3.4): under the main area, one row per head of the
// shown batch element — how it spreads its attention. Its mean entropy in nats and e^(mean entropy),
// "as if every row attended evenly to this many tokens"; the mean weight on the previous and on the
// first token; and two small charts over the query rows: the entropy of each row (bars, in front of
// the most the row could have, ln of the keys it sees, in grey) and the row sums after dropout
// (bars, with the line at 1 — above it where dropout kept more than 1 − p of the row's weight).
// Hovering a bar explains its row; clicking it selects that query token, clicking a head's name
// shows that head. A view: it draws the snapshot only (its statistics are derived on the engine
// thread, engine/head_statistics.h).
#pragma once
#include <imgui.h>

#include <string>

#include "panels/panel.h"

namespace attnscope {

class HeadStatisticsPanel {
 public:
  // The height the panel asks for under a main column `column_h` px tall: its title, the table's
  // header and one row per head, at most a quarter of the column (then its rows scroll).
  static float height(const PanelContext& ctx, float column_h);
  void draw(const PanelContext& ctx, ImVec2 pos, ImVec2 size);
  // Whether a chosen head's row is still being brought into view (the panel drawn within the last
  // 0.1 s): the app keeps drawing meanwhile rather than sleep with the row half in view — once the
  // engine is idle (while it computes, a frame takes its cores for nothing).
  bool bringing(double now) const { return bringing_ >= 0 && !brought_ && now - drawn_at_ < 0.1; }

 private:
  static constexpr int kBringFrames = 8;  // frames a chosen row is scrolled towards before giving up
  int bringing_ = -1;                     // the chosen head (−1: none)
  bool brought_ = false;                  // its row was brought into view (or it has none here): left to the user
  int bring_frames_ = 0;                  // frames spent on it since the table was final
  float brought_top_ = -1;                // its row's top in the table the frame before
  double drawn_at_ = -1;                  // PanelContext::now of the panel's last frame
};

// One query row of one head of the snapshot, for tooltips (the heatmaps' weights maps, the charts):
// "row 'journey': entropy 0.69 nats ≈ 2.0 tokens · largest 0.52 on 'journey'" and, with
// `row_sum`, "· sum after dropout 1.05". Empty while the head's maps compute.
std::string rowStatisticsText(const Snapshot& snap, int head, int row, bool row_sum);

}  // namespace attnscope
