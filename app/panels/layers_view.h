// The Layers tab (docs/DESIGN.md §3.4 "Layers"): a trained model's every layer and head at once —
// an L × H grid of thumbnails of the heads' attention weights, each labelled with what its scores
// say it does (previous token, sink, duplicate, induction), and a sortable table of those scores.
// A click on a thumbnail or a row makes that layer and head the ones every other view shows
// (select_layer). Draws from the snapshot only; without a model, says how to open one.
#pragma once
#include <imgui.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "panels/panel.h"
#include "widgets/thumbnail_atlas.h"

namespace attnscope {

class LayersView {
 public:
  // Draws a column of `size` beside the grid: the text's tokens and the next tokens, where the
  // Text panel is hidden (ModelTextPanel::drawBeside).
  using BesideGrid = std::function<void(const PanelContext& ctx, ImVec2 size)>;
  void draw(const PanelContext& ctx, const BesideGrid& beside = {});

 private:
  struct GridMetrics {
    float label_w, label_h, gap, cell, tag_w, small_px;
  };
  static GridMetrics gridMetrics(const ModelPass& pass, ImVec2 size);
  static float besideWidth(const PanelContext& ctx, const ModelPass& pass);
  void gridAndTable(const PanelContext& ctx, const Snapshot& s, const BesideGrid& beside);
  void gridOrTable(const PanelContext& ctx, const Snapshot& s, bool both);
  static bool tagsFit(const GridMetrics& g);    // a thumbnail holds a label's tag ("induct")
  static float letterPx(const GridMetrics& g);  // … else its letter at this size (0: too small to read)
  void grid(const PanelContext& ctx, const Snapshot& s, ImVec2 size);
  void scoresTable(const PanelContext& ctx, const Snapshot& s, ImVec2 size);
  void givenHead(const PanelContext& ctx, ImVec2 size);

  ThumbnailAtlas atlas_;
  std::vector<int> order_;        // the table's rows (layer · H + head) in the order shown
  std::uint64_t sorted_for_ = 0;  // the snapshot serial order_ was sorted for
  int sorted_column_ = 0;         // the column order_ is sorted by (its header keeps the arrow's room)
  bool table_instead_ = false;    // where both do not fit: the table in the grid's place
  enum class LabelForm { None, Tag, Letter };
  LabelForm form_ = LabelForm::None;  // how thumbnails show their labels (draw decides, grid draws;
                                      // letters: the line above has their key)
  // Given maps: the picked head's map as drawn, made again when another is picked.
  std::shared_ptr<const Matrix> head_map_;
  ValueRange head_range_;
  std::shared_ptr<const GivenAttention> shown_given_;
  int shown_layer_ = -1, shown_head_ = -1;
  int table_brought_ = -1;  // the chosen head (layer · H + head) whose table row was last brought into view
  std::uint64_t head_version_ = 0;
};

}  // namespace attnscope
