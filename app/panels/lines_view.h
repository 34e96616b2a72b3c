// The Lines view (docs/DESIGN.md §3.4): attention as lines between tokens, as
// BertViz's head view draws it. Query tokens on the left, key tokens on the right, one line per
// (query i, key j) of every head shown, its opacity and width following the weight (or the weight
// after dropout), one colour per head. Heads switch on and off; hovering a token, or selecting a
// query token with "only the selected token", isolates its lines. Above kLinesAllKeysUpTo tokens
// only the top k keys of each query are drawn and the token lists scroll. A view: it draws the
// snapshot only; its settings are the ViewState's lines_* fields, changed through `view` commands.
#pragma once
#include <imgui.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "display/colormap.h"
#include "display/vector_figure.h"
#include "panels/panel.h"

namespace attnscope {

// One line of the view: query i, key j, head h, the map's value and how it is drawn.
struct AttentionLine {
  int i = 0, j = 0, head = 0;
  float value = 0;
};

// The lines of every head with maps: per query, every key whose value is positive (top_k <= 0) or
// the top_k largest positive ones (ties: the lower key first), in (head, query, key) order.
// `dropped`: the weights after dropout, else the weights. Exposed for the figure code and tests.
std::vector<AttentionLine> attentionLines(const Snapshot& snap, bool dropped, int top_k);

// c at `alpha` (clamped to [0, 1]) as ImGui's colour: the lines, the heads' toggles.
ImU32 colourU32(Rgb c, float alpha);

// A line's opacity in [floor, 1]: the value over the largest the stage can have (1 for weights,
// 1/(1 − p) after dropout); its width in px at 1×: 1 + 4 × opacity. The top-k lines of long
// inputs are at least kTopKLeastAlpha opaque: GPT-2's rows spread over ~1000 keys, and a line of
// weight 0.01 drawn at 1 % would be drawn in vain.
constexpr float kTopKLeastAlpha = 0.08f;
float lineAlpha(float value, float most, float floor = 0.0f);
float lineWidth(float alpha);

// The view as an SVG or PDF figure (`--panel lines` with .svg or .pdf): the lines the view draws
// for `view` (its stage, k, heads and the selected token when isolated; never a hover), in the
// light theme's head colours, every token listed.
LinesFigureSpec linesFigure(const Snapshot& snap, const ViewState& view, bool caption);

class LinesView {
 public:
  void draw(const PanelContext& ctx, ImVec2 size);
  void reset();

 private:
  // The lines of the snapshot for the stage and k (recomputed when any of them changes).
  std::uint64_t cached_serial_ = 0;
  bool cached_dropped_ = false;
  int cached_k_ = -1;
  std::vector<AttentionLine> lines_;
  int hover_query_ = -1, hover_key_ = -1;  // the token under the mouse in the last frame
  // The widest row name (widestAxisName) for a result, font size and step: not measured every frame.
  std::tuple<std::uint64_t, float, int> names_key_{0, 0.0f, 0};
  float names_w_ = 0;
  int scrolled_to_ = -1;                   // the selected query last scrolled into sight
  bool mouse_moved_ = false;               // the mouse has moved over the canvas (not a resting pointer)
  std::string dump_key_;                   // what the cached dump describes
  nlohmann::json dump_lines_;
};

}  // namespace attnscope
