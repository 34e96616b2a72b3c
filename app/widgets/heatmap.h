// drawHeatmap: the widget every matrix is shown with. The cells are one GL texture (HeatmapTextures), uploaded
// only when the values or colours change, so a 1024 × 1024 map costs what a 6 × 6 one does per
// frame. Around it: a title, token labels on both axes (rows = queries, columns = keys) at a
// density that fits, value labels with contrasting text when cells are big enough, −∞ cells in
// the theme's masked grey, a colorbar with the range, a hover tooltip and row selection.
#pragma once
#include <imgui.h>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "display/colormap.h"
#include "display/map_look.h"
#include "engine/stages.h"
#include "engine/tensor.h"
#include "widgets/heatmap_textures.h"

namespace attnscope {

// The cells shown: all, or a zoomed window (rows/cols ≤ 0 = to the end).
struct CellWindow {
  int row0 = 0, rows = 0;
  int col0 = 0, cols = 0;
  int dims = 0;  // a grid's unzoomed window: an axis of dimensions shows at most its first `dims` (0: all)
};

struct HeatmapSpec {
  std::string id;                                        // stable: texture cache key, layout dump name
  std::string title;                                     // drawn above the map
  StageMap values;                                       // −∞ cells are drawn masked
  std::shared_ptr<const void> owner;                     // owns `values`' sources: large maps are coloured on a
                                                         // thread of their own (none: on the UI thread)
  MapLook look;                                          // colours, a mask's labels, colorbar words, legend
  const std::vector<std::string>* row_labels = nullptr;  // one per row
  const std::vector<std::string>* col_labels = nullptr;  // one per column
  bool token_rows = false, token_cols = false;           // the labels are the text's tokens, from the first
                                                         // (a thinned name starts with its position)
  int selected_row = -1;                                 // outlined
  int selected_col = -1;                                 // outlined too (a key picked in the inspector)
  std::vector<int> named_rows, named_cols;               // named whatever the thinning, as the selection
                                                         // is (Compare: the tokens A and B differ in)
  bool compact = false;                                  // cells only: no title, labels or colorbar
  CellWindow window;                                     // zoom: the part of the map shown
  std::uint64_t version = 0;                             // change it when `values` change
  std::function<std::string(int, int)> describe;         // tooltip for cell (row, col)
  std::vector<StageMap> label_peers;                     // maps drawn beside this one at the same cell size
                                                         // (Compare's A and B): the labels take the finest
                                                         // format that fits theirs too, so both read alike
  nlohmann::json dump;                                   // extra fields for the layout dump
  bool dimmed = false;                                   // drawn faded: a lesson step is about other maps
  std::function<bool(int, int)> blank;                   // cells (row, col) drawn without a label (a difference's
                                                         // cells masked on both sides: "−∞" read as a change)
  std::vector<std::pair<int, int>> outlined;             // cells an edit just changed: outlined …
  float outline_alpha = 0;                               // … this opaque (fading out)
  float cell = 0;                                        // the cells' side as a grid laid them out (the same in
                                                         // every map; the labels take the rest of the width);
                                                         // 0: as large as the size allows
  float cells_top = 0;                                   // from the top to the cells, as a grid laid the maps out
                                                         // (at least the map's own: maps side by side keep their
                                                         // rows level); 0: its own
  float text_scale = 1;                                  // the cells' font at this much of its size (0.75–1: a
                                                         // lesson step fitting its maps to the window)
  float legend_room = 0;                                 // pixels right of the tile that no other map takes: the
                                                         // legend may run on into them
  bool legend_below = false;                             // below the colorbar: the legend on a line of its
                                                         // own, never between the range labels (B − A: its
                                                         // centre tick, 0, had given way to it); with the
                                                         // colorbar beside: below the cells, not in its band
  int legend_lines = 1;                                  // below the colorbar: the lines the legend may take,
                                                         // broken between its " · " parts, or a part too wide
                                                         // at a space (the caller's room for them:
                                                         // heatmapLegendLines); what is left, cut
  bool colorbar_beside = false;                          // the colorbar stands right of the cells, its range
                                                         // labels and legend beside it (a grid short of height,
                                                         // wide enough); else below them
  int name_positions = -1;                               // thinned rows' names start with their positions: 1
                                                         // yes (a grid's band holds them), 0 no, −1 where the
                                                         // band holds them at the cells' size
};

struct HeatmapHit {
  int clicked_row = -1;                  // a row the user clicked this frame
  float wheel = 0;                       // mouse-wheel notches over the map (zoom)
  float hover_row = -1, hover_col = -1;  // the cell under the mouse, fractional
  float pan_rows = 0, pan_cols = 0;      // a right-button drag, in cells
  bool context_menu = false;             // right-clicked without dragging: open the map's menu
  int decimals = -1;  // the decimals its numbers were rounded to (4, 3, 2); −1: no numbers, or its own text
  // The selected row's middle on screen, and a cell's side; −1 when no row is selected or it is
  // outside the window of cells shown (zoomed elsewhere): the grid scrolls to a selection out of sight.
  float selected_y = -1, cell = 0;
};

// `look`'s colormap from its bottom to its top, left to right or (upright) bottom to top: a
// colorbar's, or a colour key's ramp; a map of one value, its one colour.
void drawColourRamp(ImDrawList* draw, const MapLook& look, ImVec2 p0, ImVec2 size, bool upright = false);
// A legend's masked-grey square at (x, y), in a line of text `fs` high; returns where its text goes.
float drawMaskedSwatch(ImDrawList* draw, float x, float y, float fs);
// Height below the cells taken by the colorbar and its labels (their font at `text_scale`).
float heatmapColorbarHeight(float text_scale = 1);
// The narrowest colorbar below the cells that has `look`'s legend on its range labels' line, between
// them: text × the labels' font scale + fixed pixels. On a narrower bar — or where the map's one
// value is said mid-bar — the legend takes a line of its own below them. No legend: 0 and 0.
struct LegendRoom {
  float text = 0;   // the legend's and the wider end label's text, at the font's own size
  float fixed = 0;  // the clearances beside them
  // Whether a bar `bar_w` wide holds the legend between its range labels, their font at `text_scale`.
  bool fits(float bar_w, float text_scale = 1) const { return text * text_scale + fixed <= bar_w; }
};
LegendRoom heatmapLegendRoom(const MapLook& look);
// A legend below the colorbar `width` pixels wide, in lines of the small font (at `text_scale`):
// whole on one line where it fits, else broken between its " · " parts ("blue: B < A", "red: B > A")
// and a part wider than `width` alone at its last space that fits, at most `most` lines (the last
// then cut with "…").
std::vector<std::string> heatmapLegendLines(const std::string& legend, float width, int most, float text_scale = 1);
// A colorbar standing beside the cells (HeatmapSpec::colorbar_beside): the band it takes right of
// them, and the least height of the cells that holds its range labels and legend (their font at
// `text_scale`); without the legend where it goes below the cells (HeatmapSpec::legend_below).
struct ColorbarBand {
  float width = 0, least_height = 0;
};
ColorbarBand heatmapColorbarBeside(const MapLook& look, float text_scale = 1, bool legend_in_band = true);
// The side of a cell that shows a label `label_width` pixels wide (in the cells' small font at `text_scale`).
float heatmapCellFor(float label_width, float text_scale = 1);
// The widest of names [from, from + n) in `font` (null: the small one) at `size`, each with its
// number as a thinned axis shows it where `numbered` (display/map_look.h: axisName).
float widestAxisName(const std::vector<std::string>& names, int from, int n, bool numbered, float size,
                     ImFont* font = nullptr);

// Draws within `size` at the cursor and advances it; the cells' texture from `textures`.
HeatmapHit drawHeatmap(HeatmapTextures& textures, const HeatmapSpec& spec, ImVec2 size);

}  // namespace attnscope
