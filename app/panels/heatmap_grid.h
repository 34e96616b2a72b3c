// The heatmap grid: one card per head with its maps — scores, scaled scores, causal mask, weights,
// dropout mask, weights after dropout (and context) — tiled to be as large as the panel allows.
// A view: it draws the snapshot only. It owns its zoom and pan (linked across all maps).
#pragma once
#include <imgui.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "display/vector_figure.h"
#include "panels/panel.h"
#include "widgets/heatmap.h"

namespace attnscope {

// The map of `stage` of head `head` (0-based) of the snapshot's shown batch element as a vector
// figure, with the grid's choices: its heading, the tokens (d0, d1, … for T × w maps), the colour
// range (shared across heads when the view shares it), the colormap (coolwarm centred on 0 for
// signed maps when the view says so) and the cells' labels. `caption`: a line naming the step, the
// head, the stage and the seed under it. The snapshot must outlive the spec; its head must have
// its maps (Snapshot::complete).
// `zoom`: the grid's zoom window (HeatmapGrid::zoomWindow), so that a figure shows what the map
// on screen shows; rows 0: the whole map.
FigureSpec heatmapFigure(const Snapshot& snap, const ViewState& view, Stage stage, int head, bool caption = false,
                         CellWindow zoom = {});
// The module's map `map` (the heads concatenated, out_proj's weight, the output) likewise.
FigureSpec moduleFigure(const Snapshot& snap, const ViewState& view, ModuleMap map, bool caption = false);

// Why this configuration has no map of stage s (or module map m) worth showing — "dropout",
// "mask", … (the grid greys its toggle) — or nullptr.
const char* stageMissingFrom(const Trace& t, Stage s);
const char* moduleMapMissingFrom(const Trace& t, ModuleMap m);

class HeatmapGrid {
 public:
  // Draws into the current window (a tab of the main area).
  void draw(const PanelContext& ctx);
  void reset() { zoom_ = 1, center_row_ = center_col_ = -1; }  // unzoomed
  // Another workspace or model: unzoomed, and scrolled to its top (the grid's child window kept the
  // chapter's scroll over a model's maps, its first heading out of sight).
  void replaced() { reset(), scroll_to_top_ = true; }
  // Zooms every map to queries and keys first … last (0-based) of T tokens: at least
  // kMinZoomCells of them, so no map shrinks to a cell.
  void goTo(int first, int last, int T);
  static constexpr int kMinZoomCells = 8;
  // The heads whose cards were on screen in the last frame (empty before the first).
  const std::vector<int>& visibleHeads() const { return visible_heads_; }
  // Scrolls the grid so that this head's map of `stage` is in view, from the next frame on (a
  // figure of one map); head −1: no more.
  void reveal(int head, Stage stage) { reveal_head_ = head, reveal_stage_ = stage; }
  // A lesson step's header, as a menu (App puts its button beside the tabs): heads, batch element,
  // shared scale and the maps shown.
  void drawMapsMenu(const PanelContext& ctx);
  // The maps a lesson step's layout set aside for want of room, in the last frame ("scores, masked").
  const std::string& setAside() const { return set_aside_; }
  // The tokens the maps are zoomed to (rows 0: not zoomed), for figures of what is on screen.
  CellWindow zoomWindow(int tokens) const;
  // Said when last frame's maps rounded their numbers to fewer decimals than the notebook's 4 for
  // room ("numbers rounded to 3 decimals …"); empty when none did.
  std::string roundingNote(bool model = false) const;  // model: a trained model's maps
  // The main area's width a lesson step's maps need to be shown whole in one row with four
  // decimals (best), with three (least), with three in the smallest font the grid fits them
  // with (smallest), and with two (compact), measured in the last frame; 0 where no width does
  // (too tall) or outside a step. It depends on the height alone.
  struct FocusNeed {
    float best = 0, least = 0, smallest = 0, compact = 0;
  };
  FocusNeed focusNeed() const { return focus_need_; }
  // Until when the cells an edit changed are outlined (the window keeps drawing till then).
  double outlinedUntil() const { return previous_ ? outline_from_ + kOutlineSeconds : 0; }
  static constexpr double kOutlineSeconds = 2.0;

 private:
  // The "go to token" field; `in_header`: on the header's row, the wheel's hint in its tooltip.
  void drawGoTo(CommandQueue& cmd, bool in_header);
  bool scroll_to_top_ = false;                // replaced(): the next frame's grid from its top
  float zoom_ = 1;                            // ≥ 1: all maps show T/zoom rows and columns …
  float center_row_ = -1, center_col_ = -1;   // … around this cell (−1: the middle)
  bool wheel_on_map_ = false;                 // the mouse wheel zooms a map, not the grid's scroll
  char go_to_[64] = "";                       // the "go to" field's text
  std::vector<int> visible_heads_;            // cards on screen in the last frame
  std::uint64_t label_cells_key_ = 0;         // what label_cells_ was measured for
  std::pair<std::uint64_t, float> names_key_{};  // the result and font size names_w_ was measured for
  std::array<float, 2> names_w_{};               // the widest token name: as it is, and numbered (axisName)
  std::array<float, 3> label_cells_{};        // cell sides the compact, three- and four-decimal labels need
  std::uint64_t shown_serial_ = 0, shown_version_ = 0;  // the result drawn last frame (0: none) …
  std::shared_ptr<const Snapshot> shown_small_;         // … held if its maps may be outlined against
  std::shared_ptr<const Snapshot> previous_;  // the one before an edit, while its changes are outlined
  double outline_from_ = 0;                   // when that edit's result came
  std::map<std::pair<int, int>, std::optional<std::vector<std::pair<int, int>>>>
      outlined_;                           // (head, stage) → its changed cells
  std::vector<std::string> focus_;         // the step's maps the grid was laid out for (a new step: back to the top)
  FocusNeed focus_need_;                   // focusNeed()
  std::string set_aside_;                  // the maps a step set aside, for the notes line ("scores, masked")
  int rounded_to_ = 4, rounding_now_ = 4;  // the fewest decimals a map's numbers showed: last frame, this one
  std::uint64_t note_key_ = 0;             // the layout the notes line's room is kept for (draw)
  bool note_line_kept_ = false;
  bool some_whole_ = false, some_whole_now_ = false;  // whether a map showed all 4 decimals: last frame, this one
  bool numbered_ = false, numbered_now_ = false;  // whether a map showed numbers: last frame, this one
  int scrolled_to_row_ = -1;                      // the selected query last seen (draw: scrolled to once)
  std::uint64_t selection_context_ = 0;           // … with the text's length and the lesson step's maps
  int reveal_head_ = -1;                   // a map kept in view (reveal)
  Stage reveal_stage_ = Stage::Weights;
};

}  // namespace attnscope
