#include "panels/heatmap_grid.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "display/comparison.h"
#include "display/map_look.h"
#include "display/stage_figures.h"
#include "formats/export.h"
#include "panels/head_statistics_panel.h"
#include "panels/heatmap_header.h"
#include "state/capture_targets.h"
#include "state/model_session.h"
#include "widgets/fonts.h"
#include "widgets/heatmap.h"
#include "widgets/layout_dump.h"
#include "widgets/text.h"
#include "widgets/theme.h"

namespace attnscope {

namespace {

// The tooltip of cell (i, j): how the number came about.
std::string describeCell(const Snapshot& snap, const HeadTrace& h, Stage stage, int i, int j) {
  const Trace& t = *snap.trace;
  const auto& tok = snap.tokens();
  // The tokens of a query row and a key column: a weight's rows and a T × d map's columns are
  // dimensions, not tokens (hovering Q's column 20 of a 6-token text read past the tokens: a crash).
  const std::string q = stageInfo(stage).parameter ? "" : tok[i], k = stageInfo(stage).square ? tok[j] : "";
  std::string s;
  auto at = [&](Stage st) { return StageMap(t, h, st)(i, j); };  // the cell in another stage
  const bool masked = at(Stage::Mask) > 0.5f;
  switch (stage) {
    case Stage::Scores: {
      s = "score(" + q + " → " + k + ") = q" + std::to_string(i + 1) + " · k" + std::to_string(j + 1);
      if (t.head_width <= 4) {
        s += "\n= ";
        for (int d = 0; d < t.head_width; ++d)
          s += (d ? " + " + formatFactor(h.queries(i, d)) : formatFixed(h.queries(i, d))) + " · " +
               formatFactor(h.keys(j, d));
      } else {
        s += "  (a sum over " + std::to_string(t.head_width) + " dimensions)";
      }
      s += "\n= " + formatFixed(h.scores(i, j));
      break;
    }
    case Stage::ScaledScores:  // after the mask, as the notebook divides the masked scores
      if (masked)
        s = "masked: −∞ ÷ √" + std::to_string(t.head_width) + " stays −∞";
      else if (t.model.scale == Scale::SqrtDk)
        s = formatFixed(h.scores(i, j)) + " ÷ √" + std::to_string(t.head_width) + " (" + formatFixed(t.scale_divisor) +
            ") = " + formatFixed(at(Stage::ScaledScores));
      else
        s = "no scaling: " + formatFixed(at(Stage::ScaledScores));
      break;
    case Stage::MaskedScores:
      if (masked)
        s = "'" + k + "' comes after '" + q + "': masked to −∞,\nso softmax gives it weight 0";
      else
        s = "'" + k + "' is visible to '" + q + "': the score stays " + formatFixed(at(Stage::MaskedScores));
      break;
    case Stage::UnmaskedWeights:
      s = "softmax over every key of '" + q + "', later ones too:\nexp(" + formatFixed(at(Stage::ScaledScores)) +
          " − row max) ÷ Σ exp(…) = " + formatFixed(at(Stage::UnmaskedWeights));
      break;
    case Stage::Tril:
      s = j <= i ? "1: '" + k + "' is visible to '" + q + "'" : "0: '" + k + "' comes after '" + q + "'";
      break;
    case Stage::TrilWeights:
      s = formatFixed(at(Stage::UnmaskedWeights)) + " × " + (j <= i ? "1" : "0") + " = " +
          formatFixed(at(Stage::TrilWeights)) + "\n(the row no longer sums to 1: the next map divides by its sum)";
      break;
    case Stage::Weights:
      if (trilRoute(t.model)) {
        const StageMap kept(t, h, Stage::TrilWeights);
        double sum = 0;
        for (int c = 0; c <= i; ++c) sum += kept(i, c);
        s = masked ? "after × tril: 0 (a later key)"
                   : formatFixed(at(Stage::TrilWeights)) + " ÷ row sum " + formatFixed(static_cast<float>(sum)) +
                         " = " + formatFixed(h.weights(i, j));
      } else if (t.model.normalization == Normalization::Sum)
        s = formatFixed(at(Stage::ScaledScores)) + " ÷ row sum = " + formatFixed(h.weights(i, j));
      else if (masked)
        s = "softmax of −∞ = 0 (masked)";
      else
        s = "score q" + std::to_string(i + 1) + "·k" + std::to_string(j + 1) + " = " + formatFixed(h.scores(i, j)) +
            (t.model.scale == Scale::SqrtDk
                 ? "\n÷ √" + std::to_string(t.head_width) + " → " + formatFixed(at(Stage::ScaledScores))
                 : "") +
            "\nsoftmax over the row of '" + q + "':\nexp(" + formatFixed(at(Stage::ScaledScores)) +
            " − row max) ÷ Σ exp(…) = " + formatFixed(h.weights(i, j));
      break;
    case Stage::DropoutMask:
      if (!t.dropout_active)
        s = "no dropout here (p = 0, eval mode, or a variant without dropout): kept";
      else if (at(Stage::DropoutMask) > 0.5f)
        s = "kept: weight × 1/(1 − p) = × " + formatFixed(t.dropout_scale, 3);
      else
        s = "dropped: weight → 0";
      break;
    case Stage::DroppedWeights:
      if (!t.dropout_active)
        s = "no dropout: " + formatFixed(at(Stage::DroppedWeights));
      else if (at(Stage::DropoutMask) > 0.5f)
        s = formatFixed(h.weights(i, j)) + " × " + formatFixed(t.dropout_scale, 3) + " = " +
            formatFixed(at(Stage::DroppedWeights));
      else
        s = formatFixed(h.weights(i, j)) + " dropped → 0";
      break;
    case Stage::WQuery:
    case Stage::WKey:
    case Stage::WValue: {
      const char* name = stage == Stage::WQuery ? "W_query" : stage == Stage::WKey ? "W_key" : "W_value";
      const char* out = stage == Stage::WQuery ? "q" : stage == Stage::WKey ? "k" : "v";
      s = std::string(name) + "[d" + std::to_string(i) + ", " + std::to_string(j) +
          "] = " + formatFixed(StageMap(t, h, stage)(i, j)) + ":\nhow much input dimension d" + std::to_string(i) +
          " adds to " + out + "[" + std::to_string(j) + "] of every token";
      break;
    }
    case Stage::Queries:
    case Stage::Keys:
    case Stage::Values: {
      const Matrix& m = stage == Stage::Queries ? h.queries : stage == Stage::Keys ? h.keys : h.values;
      const char* v = stage == Stage::Queries ? "q" : stage == Stage::Keys ? "k" : "v";
      s = std::string(v) + std::to_string(i + 1) + "[" + std::to_string(j) + "] = " + formatFixed(m(i, j)) +
          (t.model.variant == Variant::Simple
               ? "\n(simple attention: the input x" + std::to_string(i + 1) + " itself)"
               : "\n= x" + std::to_string(i + 1) + " · column " + std::to_string(j) + " of this head's W");
      break;
    }
    case Stage::Mask:
      s = masked ? "1: '" + k + "' comes after '" + q + "', hidden" : "0: '" + k + "' is visible to '" + q + "'";
      break;
    case Stage::Context:
      s = "context z" + std::to_string(i + 1) + "[" + std::to_string(j) + "] = Σₖ αₖ·v_k[" + std::to_string(j) +
          "] = " + formatFixed(h.context(i, j));
      break;
  }
  if (stage == Stage::Weights || stage == Stage::DroppedWeights) {  // the row's head statistics
    const std::string row = rowStatisticsText(snap, h.index, i, stage == Stage::DroppedWeights);
    if (!row.empty()) s += "\n\n" + row;
  }
  return s;
}

// Why a module map is not there in this configuration, or nullptr.
const char* missingModuleMap(const Trace& t, ModuleMap m) {
  if (m == ModuleMap::Concat && t.heads < 2) return "concatenation";
  if (m == ModuleMap::OutProj && !hasOutProj(t.model.variant)) return "out_proj";
  return nullptr;
}

// Up to this many tokens an edit's changed cells are outlined.
constexpr int kOutlinedTokens = 64;

// Up to this many tokens, every map shows its numbers (the book's examples have 6).
constexpr int kAlwaysLabelledTokens = 12;

// A lesson step's maps may have their numbers down to this much of the cells' font to be whole
// (as the lesson's code and print-out may, lesson_panel.cpp).
constexpr float kSmallestCellText = 0.75f;

// A head's map: its own range, or the stage's across heads with a shared scale, or the locked one.
// `window`: the tokens shown (zoomed), whose first row may not be row 1.
MapLook stageLook(const Snapshot& snap, const ViewState& view, Stage stage, int head, const CellWindow& window) {
  const Trace& t = *snap.trace;
  // Locked: the ranges of the result on screen when the lock was set (so a small change looks small).
  const bool locked = view.lock_range && static_cast<std::size_t>(t.heads) <= view.locked_heads.size();
  const auto& ranges = locked ? view.locked_heads : snap.ranges;
  ValueRange range = ranges[static_cast<std::size_t>(head)][static_cast<int>(stage)];
  if (view.shared_scale)
    for (int o = 0; o < t.heads; ++o)
      range = merge(range, ranges[static_cast<std::size_t>(o)][static_cast<int>(stage)]);
  // Beside the concat, a head's context is a slice of it: one value, one colour in both.
  if (stage == Stage::Context && t.heads > 1 && view.show_module[static_cast<int>(ModuleMap::Concat)])
    range = (locked ? view.locked_module : snap.module_ranges)[static_cast<int>(ModuleMap::Concat)];
  MapLook look = attnscope::stageLook(t, stage, range, lookChoices(view));
  // A trained model's weights span the rows below the first (engine_worker.cpp stageRanges).
  // Said only where row 1's cell is shown (a zoom past it shows no cell off the scale).
  if (snap.model && stage == Stage::Weights && t.model.causal && t.tokens > 1 && look.range.hi < 1 &&
      look.legend.empty() && (window.rows <= 0 || (window.row0 == 0 && window.col0 == 0)))
    look.legend = "row 1 (always 1) is off the scale";  // its top: the rest's largest
  return look;
}

MapLook moduleLook(const Snapshot& snap, const ViewState& view, ModuleMap map) {
  const bool locked = view.lock_range && !view.locked_heads.empty();
  return colouredBy((locked ? view.locked_module : snap.module_ranges)[static_cast<int>(map)], false,
                    lookChoices(view));
}

// A lesson step names the maps it is about: the others recede.
bool dimmedByLesson(const ViewState& view, const char* id) {
  return !view.highlight.empty() && std::find(view.highlight.begin(), view.highlight.end(), id) == view.highlight.end();
}

// Around a map's cells: the row labels' band on the left, the title's line and the column labels
// above (upright when they do not fit across a cell, as drawHeatmap decides), the colorbar below —
// or beside the cells, where a grid short of height has width to spare.
struct Margins {
  float left;              // the row labels' band
  float title;             // the title's line
  float label_font;        // the labels' font size
  float bottom;            // the colorbar below the cells (0 when it stands beside them)
  float scale = 1;         // the labels' font at this much of its size
  float beside = 0;        // the colorbar's band right of the cells (0: below them)
  float beside_cells = 0;  // … and the least height of the cells that holds its labels and legend
  // Above the cells of a map whose widest column label is `col_label_w` (px at the font's own
  // size), `cols` wide.
  float top(float col_label_w, int cols, float cell) const {
    col_label_w *= scale;
    const bool upright = col_label_w + 6 > cell && cols > 1;
    return title + (upright ? std::min(col_label_w, px(48)) + px(6) : label_font + px(4));
  }
};

// A map's claim on the grid: its cells as shown (a zoomed window's) and the narrowest its title
// can be (its first part: the title is never cut).
struct TileNeed {
  int rows = 1, cols = 1;  // cells shown
  float title_w = 0;       // pixels: the title's first part …
  float full_title_w = 0;  // … and the whole title, shown where it costs no cell size
  bool focus = true;       // a map the lesson step is about (every map when no step names any)
  int row_kind = 0;        // what its rows are (0 tokens, 1 input dimensions): see LayoutOptions
  float col_label_w = 0;   // its widest column label at the labels' font's own size (Margins::top)
  float shrink = 1;        // its cells at this much of the grid's cell: a map longer than the text (draw)
  LegendRoom legend_room;  // the width its colorbar below the cells needs to hold its legend between
                           // the range labels (heatmapLegendRoom, the labels' font's own size)
};

// A card of maps: a head's, or the module's, under a heading.
struct CardNeed {
  std::vector<TileNeed> tiles;
  float heading_w = 0;  // its heading's narrowest form, pixels
  float heading_h = 0;  // the heading's height at the grid's width (wrapped when wider still)
};

struct Box {
  float x = 0, y = 0, w = 0, h = 0;  // relative to the grid's origin; w = 0: not drawn
  float cells_top = 0;               // a map's: from its top to its cells, level with its line's (0: its own)
  float cell = 0;                    // a map's cells' side: the grid's, or less (TileNeed::shrink)
  float below = 0;                   // a map's legend line drawn this far below h, into the gap under it
};

struct LayoutOptions {
  bool full_titles = false;   // whole titles ("context  2 heads concatenated  6×4")
  bool share_labels = false;  // a map beside one of the same rows draws no row labels of its own
  bool focus_only = false;    // the maps a lesson step is not about are set aside
};

// Where every card and map goes for one cell size: each map as wide as its columns need (a 6 × 2
// context narrow, a 6 × 6 map wider), maps side by side within a card and cards side by side
// while they fit the width, else on the next row.
struct GridLayout {
  float cell = 0;                           // side of a heatmap cell in pixels, the same in every map but
                                            // those longer than the text (TileNeed::shrink, Box::cell)
  std::vector<Box> cards;                   // a card: its heading, then its maps (w = 0: set aside whole)
  std::vector<std::vector<Box>> tiles;      // per card, one per map (w = 0: set aside)
  std::vector<std::vector<bool>> labelled;  // per map: it draws its row labels
  float width = 0, height = 0;              // the grid's extent
  bool fits_width = true;                   // every map is within the width
  float focus_bottom = 0;                   // the lowest edge of a map the step is about
  bool set_aside = false;                   // some maps are not drawn (focus_only)
  bool colorbar_beside = false;             // the colorbars stand right of the cells (Margins::beside)
  bool name_positions = false;              // thinned rows' names start with their positions (draw)
};

// One card's maps at `cell`, relative to the card: side by side while they fit `width`. `after`:
// the rows (kind, count) of the map just before the card on its line, whose labels its first map
// may read by (share_labels), or {-1, -1}.
struct CardLayout {
  std::vector<Box> tiles;
  std::vector<bool> labelled;
  float w = 0, h = 0;
  bool any = false;                   // some map of it is drawn
  bool reads_before = false;          // its first map reads by the labels of the map before the card
  std::pair<int, int> last{-1, -1};   // the rows of its last map drawn, where the next card's first is beside it
  float first_top = 0, last_top = 0;  // its first and last maps' cells' tops, from the card's top
};

CardLayout layOutCard(const CardNeed& card, float cell, float width, float gap, const Margins& m, LayoutOptions o,
                      std::pair<int, int> after) {
  CardLayout c;
  float x = 0, y = card.heading_h, row_h = 0;
  c.w = std::min(card.heading_w, width);
  std::pair<int, int> last = after;
  // The maps of one line have their cells' tops level, below the tallest column labels among them
  // (Q's "d0 d1" across beside the scores' upright keys put the scores' rows half a row lower, the
  // row labels they read by beside the wrong row).
  std::vector<std::size_t> line;
  bool wrapped = false;  // its maps take more than one line
  const auto endLine = [&] {
    float top = 0;
    for (std::size_t k : line) top = std::max(top, c.tiles[k].cells_top);
    row_h = 0;
    for (std::size_t k : line) {
      Box& b = c.tiles[k];
      b.h += top - b.cells_top;
      b.cells_top = top;
      row_h = std::max(row_h, b.h);
    }
    line.clear();
  };
  for (const TileNeed& t : card.tiles) {
    if (o.focus_only && !t.focus) {
      c.tiles.push_back({});
      c.labelled.push_back(false);
      continue;
    }
    const float side = cell * t.shrink;
    const auto widthOf = [&](bool labels) {
      return std::max((labels ? m.left : px(4)) + side * t.cols + m.beside, o.full_titles ? t.full_title_w : t.title_w);
    };
    const bool first_of_card = !c.any;
    // (A lesson step's maps, which share their labels, are never shrunk: their rows stay level.)
    bool labels = !(o.share_labels && (x > 0 || first_of_card) && last == std::make_pair(t.row_kind, t.rows));
    float w = widthOf(labels);
    const float top = m.top(t.col_label_w, t.cols, side);
    if (!labels && x > 0) x -= gap - px(10);  // closer to the map whose labels it reads by
    if (x > 0 && x + w > width)
      endLine(), x = 0, y += row_h + gap, row_h = 0, labels = true, w = widthOf(true), wrapped = true;
    // A legend too wide for its colorbar's line takes one of its own below it, in the gap under the
    // map and as much more as it needs (the log scale's "▨ exactly 0: below a log scale" had been cut
    // at the grid's bottom edge by a lesson step's maps, fitted to the window without the gap). The
    // bar as drawHeatmap draws it: the cells' width, at least the tile's up to 120 px.
    const float bar_w = std::max(side * t.cols, std::min(w - (labels ? m.left : px(4)), px(120)));
    const bool legend_line = m.beside == 0 && !t.legend_room.fits(bar_w, m.scale);
    const float legend_h = legend_line ? std::max(0.0f, m.label_font + 2 - px(4)) : 0;
    const float h = top + std::max(side * t.rows, m.beside_cells) + m.bottom + std::max(0.0f, legend_h - gap);
    if (first_of_card) c.reads_before = !labels;
    line.push_back(c.tiles.size());
    c.tiles.push_back({x, y, w, h, top, side, std::min(legend_h, gap)});
    c.labelled.push_back(labels);
    c.w = std::max(c.w, x + w);
    x += w + gap;
    row_h = std::max(row_h, h);
    last = {t.row_kind, t.rows};
    c.any = true;
  }
  endLine();
  c.h = y + row_h + gap;
  // The next card, beside this one's first line, is beside its last map only when that is on it.
  c.last = wrapped ? std::make_pair(-1, -1) : last;
  bool first = true;
  for (const Box& b : c.tiles)
    if (b.w > 0) {
      if (first) c.first_top = b.y + b.cells_top, first = false;
      c.last_top = b.y + b.cells_top;
    }
  return c;
}

GridLayout layOutGrid(const std::vector<CardNeed>& cards, float cell, float width, float gap, Margins m,
                      LayoutOptions o) {
  GridLayout g;
  g.cell = cell;
  g.colorbar_beside = m.beside > 0;
  float cx = 0, cy = 0, card_row_h = 0;
  const float card_gap = gap * 2;      // cards stand apart from one another more than maps do …
  std::pair<int, int> before{-1, -1};  // … unless one reads by the row labels of the map before it,
  float before_top = 0;                // whose cells' top (from the card row's top) it then takes
  for (std::size_t n = 0; n < cards.size(); ++n) {
    const CardNeed& card = cards[n];
    CardLayout c = layOutCard(card, cell, width, gap, m, o, cx > 0 ? before : std::make_pair(-1, -1));
    // A card whose first map would read by the labels of a map whose rows stand higher (its heading
    // taller) draws its own; one whose rows would stand higher comes down to them (in a lesson's
    // focus the module's card has no heading: the concat's rows were 46 px above head 2's labels).
    if (c.reads_before && c.first_top > before_top + 0.5f) c = layOutCard(card, cell, width, gap, m, o, {-1, -1});
    if (!c.any) {  // every map of the card set aside: not even its heading
      g.cards.push_back({cx, cy, 0, 0});
      g.tiles.push_back(std::move(c.tiles));
      g.labelled.push_back(std::move(c.labelled));
      g.set_aside = true;
      continue;
    }
    float at = cx > 0 ? cx + (c.reads_before ? gap : card_gap) : 0;
    if (at > 0 && at + c.w > width) {  // on the next line, with labels of its own
      c = layOutCard(card, cell, width, gap, m, o, {-1, -1});
      at = 0, cy += card_row_h, card_row_h = 0;
    }
    cx = at;
    if (c.reads_before && at > 0 && c.first_top < before_top - 0.5f) {
      const float down = before_top - c.first_top;
      for (Box& b : c.tiles) b.y += down;
      c.h += down, c.first_top += down, c.last_top += down;
    }
    for (std::size_t k = 0; k < c.tiles.size(); ++k) {
      Box& b = c.tiles[k];
      if (b.w == 0) {
        g.set_aside = true;
        continue;
      }
      if (b.w > width) g.fits_width = false;
      b.x += cx, b.y += cy;
      if (card.tiles[k].focus) g.focus_bottom = std::max(g.focus_bottom, b.y + b.h + b.below);
    }
    g.cards.push_back({cx, cy, c.w, c.h});
    g.tiles.push_back(std::move(c.tiles));
    g.labelled.push_back(std::move(c.labelled));
    g.width = std::max(g.width, cx + c.w);
    g.height = std::max(g.height, cy + c.h);
    card_row_h = std::max(card_row_h, c.h);
    cx += c.w;
    before = c.last;
    before_top = c.last_top;
  }
  return g;
}

// The room right of map `b` that no other map or card takes, up to the grid's `width`: where its
// legend may run on ("top: the largest below row 1 (row 1 is 1)" was cut to "top: the largest
// belo…" beside 900 empty pixels of a presented trained model's map).
float freeRightOf(const GridLayout& g, const Box& b, float width, float gap) {
  float right = width;
  const auto limit = [&](const Box& o) {
    if (o.w > 0 && &o != &b && o.x >= b.x + b.w - 0.5f && o.y < b.y + b.h && o.y + o.h > b.y)
      right = std::min(right, o.x - gap / 2);
  };
  for (const Box& card : g.cards) limit(card);
  for (const auto& card : g.tiles)
    for (const Box& o : card) limit(o);
  return std::max(0.0f, right - (b.x + b.w));
}

// The largest cell (to 1/2²⁴ of `cap`) for which ok(layout) holds, given that it holds for tiny cells.
template <class Ok>
float largestCell(float cap, const Ok& ok) {
  float lo = 0, hi = cap;
  for (int k = 0; k < 24; ++k) {
    const float c = (lo + hi) / 2;
    (ok(c) ? lo : hi) = c;
  }
  return lo;
}

// The vertical extents of the maps drawn (the focus maps only, where `focus_only`), top first.
std::vector<std::pair<float, float>> mapSpans(const GridLayout& g, const std::vector<CardNeed>& cards,
                                              bool focus_only) {
  std::vector<std::pair<float, float>> spans;
  for (std::size_t c = 0; c < g.tiles.size(); ++c)
    for (std::size_t k = 0; k < g.tiles[c].size(); ++k)
      if (const Box& b = g.tiles[c][k]; b.w > 0 && (!focus_only || cards[c].tiles[k].focus))
        spans.push_back({b.y, b.y + b.h + b.below});
  std::sort(spans.begin(), spans.end());
  return spans;
}

// The rows of maps: maps whose extents overlap stand in one row (cards side by side may start
// their maps lower, under a heading that wraps).
std::size_t rowsOfMaps(const GridLayout& g, const std::vector<CardNeed>& cards) {
  std::size_t rows = 0;
  float bottom = -FLT_MAX;
  for (const auto& [top, end] : mapSpans(g, cards, false)) {
    if (top >= bottom - 0.5f)
      ++rows, bottom = end;
    else
      bottom = std::max(bottom, end);
  }
  return rows;
}

// The lowest edge of the first row of the maps a lesson step is about (0: none drawn).
float firstFocusRowBottom(const GridLayout& g, const std::vector<CardNeed>& cards) {
  const auto spans = mapSpans(g, cards, true);
  float bottom = spans.empty() ? 0 : spans.front().second;
  for (const auto& [top, end] : spans)
    if (top < bottom - 0.5f) bottom = std::max(bottom, end);
  return bottom;
}

// The cell size, then the layout. The largest cells that show every map in width × height;
// cells stop growing at `max_cell`. Up to 12 tokens the maps show the numbers the notebook prints:
// when the whole grid fits only with cells below `full_cell` (four decimals), the maps take that
// size as far as the width allows (at least the compact labels' `min_cell`) and the grid scrolls
// down. Larger maps (min_cell 0) shrink to fit, but below 96 px a map the grid scrolls instead,
// its maps 96 px, then as large as their rows of maps allow while no map is taller than the grid's
// window. Maps that fit in one row shrink on to 96 px of the screen's rather than of the text's
// size (at 200 % a trained model's 14 × 14 map that fitted 175 px of a 1280 × 680 window was
// grown to 1138 px across, three of its rows in view).
GridLayout arrangeGrid(const std::vector<CardNeed>& cards, float width, float height, float gap, Margins m,
                       float min_cell, float full_cell, float max_cell, LayoutOptions o) {
  const float cap = std::max(max_cell, full_cell);
  float width_cell = cap, largest = 1;  // the cells every map's width allows; the largest map's side, in cells
  for (const CardNeed& c : cards)
    for (const TileNeed& t : c.tiles) {
      width_cell = std::min(width_cell, (width - m.left - m.beside) / (t.cols * t.shrink));
      largest = std::max(largest, static_cast<float>(std::max(t.rows, t.cols)) * t.shrink);
    }
  float cell = largestCell(cap, [&](float c) {
    const GridLayout g = layOutGrid(cards, c, width, gap, m, o);
    return g.fits_width && g.height <= height;
  });
  const float least_map = rowsOfMaps(layOutGrid(cards, cell, width, gap, m, o), cards) <= 1 ? 96 : px(96);
  if (full_cell > 0) {
    if (cell < full_cell) cell = std::max(min_cell, std::min(full_cell, width_cell));
  } else if (cell * largest < least_map) {  // maps of 96 px, then as large as their rows of maps allow
    const float floor = least_map / largest;
    const std::size_t rows = rowsOfMaps(layOutGrid(cards, floor, width, gap, m, o), cards);
    float lo = floor, hi = std::max(lo, cap);
    for (int k = 0; k < 24; ++k) {
      const float c = (lo + hi) / 2;
      const GridLayout g = layOutGrid(cards, c, width, gap, m, o);
      bool within = g.fits_width && rowsOfMaps(g, cards) <= rows;
      for (const auto& card : g.tiles)
        for (const Box& b : card) within = within && b.h + b.below <= height;  // its legend's line too
      (within ? lo : hi) = c;
    }
    cell = lo;
  }
  return layOutGrid(cards, std::min(cell, cap), width, gap, m, o);
}

// A lesson step's layout (docs/DESIGN.md §3.7 "Focus"): every map in view where the step's maps
// have four decimals so; else the maps it is about in view whole, from the grid's top, at the
// largest cells up to `target_cell` (four decimals; 0 for maps too large for numbers) and never
// below `floor_cell` (three decimals, or two where three leave a map of the step out of view), the other maps beside
// them, dimmed, where that costs the step's maps nothing (below the fold is fine), or else set aside. Maps side by side
// with the same rows share one band of row labels. `need_w`: how wide the grid would have to be for the step's maps
// alone, in one row, at the target and at the floor cells (0 where that row is taller than the grid) — what the
// lesson's column gives way to (App::drawPanels). It depends on the height alone, never on the width the grid was
// given.
struct FocusArrangement {
  GridLayout layout;
  float best_w = 0, least_w = 0;
};

FocusArrangement arrangeFocus(const std::vector<CardNeed>& cards, float width, float height, float gap, Margins m,
                              float floor_cell, float target_cell, float max_cell, bool full_titles) {
  const float cap = std::max(max_cell, target_cell);
  const LayoutOptions all{full_titles, true, false}, only{full_titles, true, true};
  const auto showsFocus = [&](LayoutOptions o) {
    return [&, o](float c) {
      const GridLayout g = layOutGrid(cards, c, width, gap, m, o);
      return g.fits_width && g.focus_bottom <= height;
    };
  };
  const float c0 = largestCell(cap, showsFocus(all)), c1 = largestCell(cap, showsFocus(only));
  // Every map in view, the step's with four decimals: all of them, as large as that allows.
  const float every = largestCell(cap, [&](float c) {
    const GridLayout g = layOutGrid(cards, c, width, gap, m, all);
    return g.fits_width && g.height <= height;
  });
  FocusArrangement f;
  if (target_cell > 0) {  // maps with numbers
    const float want = std::max(floor_cell, std::min(target_cell, c1));
    if (every >= target_cell)
      f.layout = layOutGrid(cards, std::min(every, cap), width, gap, m, all);
    else if (c0 >= want)
      f.layout = layOutGrid(cards, std::min(c0, cap), width, gap, m, all);
    else
      f.layout = layOutGrid(cards, std::min(std::max(c1, floor_cell), cap), width, gap, m, only);
    constexpr float kUnbounded = 1e9f;
    const GridLayout best = layOutGrid(cards, target_cell, kUnbounded, gap, m, only);
    const GridLayout least = layOutGrid(cards, floor_cell, kUnbounded, gap, m, only);
    f.best_w = best.focus_bottom <= height ? best.width : 0;
    f.least_w = least.focus_bottom <= height ? least.width : 0;
  } else {  // maps too large for numbers: whole, and as large as the step's maps alone would be, near enough
    float largest = 1;
    for (const CardNeed& c : cards)
      for (const TileNeed& t : c.tiles)
        if (t.focus) largest = std::max(largest, static_cast<float>(std::max(t.rows, t.cols)));
    const bool beside = c0 * largest >= px(160) || c0 >= c1 * 0.8f;
    f.layout = layOutGrid(cards, std::min(beside ? c0 : c1, cap), width, gap, m, beside ? all : only);
  }
  return f;
}

// Unzoomed, an axis of dimensions shows at most its first max(4T, 64): GPT-2's 768-wide output
// beside a 20-token text made every map's cells 0.4 px, the weights a speck (every map has one
// cell size); a head's 64 dimensions stay whole. The notes line says so; a zoom shows the rest.
int dimensionsShown(int T) { return std::max(4 * T, 64); }

// The window of cells every map shows at the current zoom (linked across maps, so the same
// query and key rows stay side by side from scores to weights).
// A zoom that shows every token is none: zoomed in on a long text, a short one kept the zoom's
// dimension window (a 5-token Q map showed d0–d4 of its 16).
CellWindow zoomWindow(float zoom, float center_row, float center_col, int T) {
  CellWindow w;
  const int n = std::clamp(static_cast<int>(std::ceil(T / std::max(zoom, 1.0f))),
                           std::min(T, HeatmapGrid::kMinZoomCells), T);
  if (zoom <= 1 || n >= T) {
    w.dims = dimensionsShown(T);
    return w;
  }
  const float cr = center_row < 0 ? T / 2.0f : center_row;
  const float cc = center_col < 0 ? T / 2.0f : center_col;
  w.rows = w.cols = n;
  w.row0 = std::clamp(static_cast<int>(std::lround(cr - n / 2.0f)), 0, T - n);
  w.col0 = std::clamp(static_cast<int>(std::lround(cc - n / 2.0f)), 0, T - n);
  return w;
}

// The cells a map of `rows` × `cols` shows at the zoom `w` (linked across maps): an axis over the
// tokens follows the zoom's window; an axis of dimensions (a T × d map's columns, a weight's rows
// and columns) shows its first as many as the window has tokens, so that every map zooms and keeps
// the cells' size (a 256-dimension output unzoomed made every map's cells 0.7 px). Unzoomed: all.
CellWindow shownWindow(const CellWindow& w, int rows, int cols, bool token_rows, bool token_cols) {
  CellWindow s;
  if (w.rows <= 0) {  // unzoomed: every token, and of a long axis of dimensions its first w.dims
    if (w.dims <= 0) return s;
    if (!token_rows && rows > w.dims) s.rows = w.dims;
    if (!token_cols && cols > w.dims) s.cols = w.dims;
    return s;
  }
  s.row0 = token_rows ? w.row0 : 0;
  s.rows = token_rows ? w.rows : std::min(rows, w.rows);
  s.col0 = token_cols ? w.col0 : 0;
  s.cols = token_cols ? w.cols : std::min(cols, w.cols);
  return s;
}

// Wheel zooms about the cell under the mouse; a right-button drag pans.
void applyZoom(float& zoom, float& center_row, float& center_col, const HeatmapHit& hit, int T) {
  if (center_row < 0) center_row = center_col = T / 2.0f;
  if (hit.wheel != 0 && hit.hover_row >= 0) {
    const float factor = std::pow(1.25f, hit.wheel);
    // Never closer than kMinZoomCells rows: a narrower window leaves the T × d maps nothing to show.
    const float most = static_cast<float>(T) / static_cast<float>(std::min(T, HeatmapGrid::kMinZoomCells));
    const float next = std::clamp(zoom * factor, 1.0f, std::max(1.0f, most));
    const float f = zoom / next;
    center_row = hit.hover_row + (center_row - hit.hover_row) * f;
    center_col = hit.hover_col + (center_col - hit.hover_col) * f;
    zoom = next;
  }
  center_row = std::clamp(center_row + hit.pan_rows, 0.0f, static_cast<float>(T));
  center_col = std::clamp(center_col + hit.pan_cols, 0.0f, static_cast<float>(T));
  if (zoom <= 1) center_row = center_col = T / 2.0f;
}

// Whether stage s means something for this configuration: others would repeat their neighbour.
const char* missingStage(const Trace& t, Stage s) {
  if (stageInfo(s).parameter && t.model.variant == Variant::Simple) return "projection weights";
  if (s == Stage::ScaledScores && t.model.scale == Scale::None) return "scaling";
  if ((s == Stage::Mask || s == Stage::MaskedScores) && !t.model.causal) return "mask";
  if (s == Stage::MaskedScores && trilRoute(t.model)) return "−∞ mask (the tril route masks the weights)";
  if (!stageHeld(t, s)) return "tril route";
  if ((s == Stage::DropoutMask || s == Stage::DroppedWeights) && !t.dropout_active) {
    // The step has nn.Dropout; what turns it off is said (eval mode was read as "no dropout here").
    if (!hasDropout(t.model.variant)) return "dropout";
    return t.model.dropout <= 0 ? "dropout (p = 0)" : !t.model.training ? "dropout (off in eval mode)" : "dropout";
  }
  return nullptr;
}

std::vector<Stage> visibleStages(const ViewState& v, const Trace& t) {
  std::vector<Stage> out;
  for (const StageInfo& s : stageTable())
    if (s.heatmap && v.show[static_cast<int>(s.stage)] && !missingStage(t, s.stage)) out.push_back(s.stage);
  return out;
}

// "scaling, mask, dropout": what the shown columns leave out (the pipeline shows why).
std::string skippedStages(const ViewState& v, const Trace& t) {
  std::string out;
  for (const StageInfo& s : stageTable()) {
    const char* why = missingStage(t, s.stage);
    if (s.heatmap && v.show[static_cast<int>(s.stage)] && why && out.find(why) == std::string::npos)
      out += (out.empty() ? "" : ", ") + std::string(why);
  }
  return out;
}

// The weights nearly one colour on a linear scale: a long text's softmax spreads a row over its keys
// (GPT-2 small's exercise: about 1/358 of a row each, against a top of 1), and its maps were flat
// purple. Said, with the scale that shows them, where a head shown has a typical weight (1 / the
// keys a row spreads over, exp of its mean entropy) under 1/40 of its colour range's top: in the
// colour map's darkest 2.5 %.
std::string flatWeightsNote(const Snapshot& snap, const ViewState& view, const std::vector<Stage>& stages,
                            const std::vector<int>& heads) {
  if (view.colour_scale != ColourScale::Linear) return "";
  if (std::find(stages.begin(), stages.end(), Stage::Weights) == stages.end() &&
      std::find(stages.begin(), stages.end(), Stage::DroppedWeights) == stages.end())
    return "";
  double widest_spread = 0;
  for (int h : heads)
    if (const HeadStatistics* st = snap.statisticsOf(h); st && h < static_cast<int>(snap.ranges.size())) {
      const double top = view.weights_fixed
                             ? 1.0
                             : snap.ranges[static_cast<std::size_t>(h)][static_cast<std::size_t>(Stage::Weights)].hi;
      const double keys = std::exp(static_cast<double>(st->mean_entropy));
      if (top * keys >= 40) widest_spread = std::max(widest_spread, keys);
    }
  if (widest_spread == 0) return "";
  return "weights look flat: View › Colour scale › Logarithmic (a row spreads over ~" +
         std::to_string(std::lround(widest_spread)) + " keys)";
}

constexpr const char* kWheelHint = "wheel over a map: zoom · right-drag: pan";

// One line of notes under the header: the preset's description (in full on hover), zoom, where
// dropout masks come from, and the maps this step has none of. `beside`: on the line of the item
// before (the go-to field), where there is anything to say; `wheel_hint`: the wheel's hint among
// them (else the go-to field's tooltip says it). Returns true when "reset zoom" was pressed.
bool drawNotes(const Snapshot& snap, float zoom, CellWindow w, int widest, const std::string& skipped, bool lesson,
               const std::string& rounding, const std::string& flat, bool beside, bool wheel_hint, bool keep_line) {
  const Trace& t = *snap.trace;
  bool reset = false;
  std::vector<std::string> notes;
  if (wheel_hint && zoom <= 1 && t.tokens > 24) notes.push_back(kWheelHint);
  if (t.dropout_active)
    notes.push_back(t.model.dropout_rng == DropoutStream::Mkl ? "dropout masks: torch with MKL (pip's, Intel CPU)"
                                                              : "dropout masks: torch without MKL (Debian's)");
  if (!skipped.empty()) notes.push_back("no " + skipped + " in this step");
  const nlohmann::json& view = snap.inputs->view;
  // A lesson step says what the preset is about in its own words.
  const std::string about = !lesson && view.contains("preset") && view["preset"].is_object()
                                ? view["preset"].value("description", "")
                                : "";
  if (zoom <= 1 && w.dims > 0 && widest > w.dims)  // shownWindow's unzoomed cap, where a map shown has it
    notes.push_back("dimensions d0–d" + std::to_string(w.dims - 1) + " of " + std::to_string(widest) +
                    " shown");
  if (zoom > 1) {
    // A map's dimensions show their first as many as the tokens shown (shownWindow): said when some
    // are wider, and of which (GPT-2's 64-wide heads show whole beside its 768-wide inputs).
    const int narrowest = std::min({t.head_width, t.d_in, t.model.d_out});
    const int widest_map = std::max({t.head_width, t.d_in, t.model.d_out});
    const bool wide = widest > w.rows;  // (a model's weights alone have no dimensions to say)
    const std::string which = narrowest <= w.rows       ? " of the maps wider than " + std::to_string(w.rows)
                              : narrowest == widest_map ? " of " + std::to_string(widest_map)
                                                        : " of each map";
    if (beside) ImGui::SameLine(0, px(16));
    // The button first, whole; the text beside it, or on a line of its own where it does not fit
    // ("… reset zoo" ran off the tab at 200 %), cut to the tab's width, whole on hover.
    reset = ImGui::SmallButton("reset zoom");
    layout().widget("reset_zoom");
    char said[224];
    std::snprintf(said, sizeof said, "zoom ×%.1f: queries %d–%d, keys %d–%d%s", static_cast<double>(zoom), w.row0 + 1,
                  w.row0 + w.rows, w.col0 + 1, w.col0 + w.cols,
                  wide ? (", dimensions d0–d" + std::to_string(w.rows - 1) + which).c_str() : "");
    layout().state()["grid_zoom"] = said;  // tests: which rows, keys and dimensions it says
    ImGui::SameLine();
    if (ImGui::CalcTextSize(said).x > ImGui::GetContentRegionAvail().x) ImGui::NewLine();
    const std::string shown = fitText(said, ImGui::GetContentRegionAvail().x);
    ImGui::TextUnformatted(shown.c_str());
    if (shown != said && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", said);
  }
  std::string line;
  for (const std::string& n : notes) line += (line.empty() ? "" : "  ·  ") + n;
  if (!about.empty()) line = about + (line.empty() ? "" : "  ·  " + line);
  if (!flat.empty())
    line = flat + (line.empty() ? "" : "  ·  " + line);  // before the preset's words: it says what is seen
  if (!rounding.empty()) line = rounding + (line.empty() ? "" : "  ·  " + line);  // first: it explains the numbers
  layout().state()["grid_notes"] = line;  // tests: the preset's note is there, or gone
  if (line.empty()) {                     // the zoom's line ends here (no SameLine left open for the maps)
    if (keep_line && zoom <= 1 && !beside) ImGui::Dummy(ImVec2(0, ImGui::GetTextLineHeight()));
    return reset;
  }
  if (zoom > 1 || beside) ImGui::SameLine(0, px(16));
  // One line: what does not fit ends in "…", and the whole text shows on hover.
  const std::string shown = fitText(line, ImGui::GetContentRegionAvail().x);
  ImGui::TextDisabled("%s", shown.c_str());
  if (shown != line && ImGui::IsItemHovered()) {
    ImGui::BeginTooltip();
    ImGui::PushTextWrapPos(px(520));
    ImGui::TextUnformatted(line.c_str());
    ImGui::PopTextWrapPos();
    ImGui::EndTooltip();
  }
  return reset;
}

// Where a heading's first `kept` parts ("  ·  " apart) end (npos: it has no more).
std::size_t keptPartsEnd(const std::string& heading, int kept) {
  const std::string separator = "  ·  ";
  std::size_t end = heading.find(separator);
  for (int k = 1; k < kept && end != std::string::npos; ++k) end = heading.find(separator, end + separator.size());
  return end;
}

// A card's heading: its parts after the first `kept` ("  ·  " apart) go while it is wider than the
// card, then it wraps; never cut. The grid reserves `heading_h` for it.
void drawCardHeading(std::string heading, float width, int kept = 1) {
  const std::size_t least = keptPartsEnd(heading, kept);
  for (std::size_t cut; ImGui::CalcTextSize(heading.c_str()).x > width && least != std::string::npos &&
                        (cut = heading.rfind("  ·  ")) != std::string::npos && cut >= least;)
    heading.resize(cut);
  ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + width);
  ImGui::TextUnformatted(heading.c_str());
  ImGui::PopTextWrapPos();
}

// The heading's narrowest form (its first `kept` parts) and its height within `width`.
void measureHeading(const std::string& heading, float width, float line, CardNeed& card, int kept = 1) {
  const std::string first = heading.substr(0, keptPartsEnd(heading, kept));
  card.heading_w = ImGui::CalcTextSize(first.c_str()).x;
  card.heading_h = ImGui::CalcTextSize(first.c_str(), nullptr, false, width).y - ImGui::GetTextLineHeight() + line;
}

// A map's title within its tile: its last parts (two spaces apart) go while it is wider — the
// shape, then the detail; the first part always stays whole (the grid makes the tile that wide).
std::string tileTitle(std::string title, float width) {
  while (ImGui::CalcTextSize(title.c_str()).x > width) {  // a "  ·  " part whole, never its dot left behind
    std::size_t cut = title.rfind("  ·  ");
    if (cut == std::string::npos) cut = title.rfind("  ");
    if (cut == std::string::npos) break;
    title.resize(cut);
  }
  return title;
}

float titleWidth(const std::string& title) {
  return ImGui::CalcTextSize(title.substr(0, title.find("  ")).c_str()).x + px(2);
}

// A trained model's names its layer, not the chapter's step (it read "The module: 4b · Multi-head
// attention" over GPT-2's concatenated heads).
std::string moduleCardHeading(const Snapshot& snap) {
  const Trace& t = *snap.trace;
  if (snap.model)
    return "Layer " + std::to_string(snap.layer + 1) + "  ·  the module: " +
           (t.heads == 1 ? std::string("its head") : "its " + std::to_string(t.heads) + " heads concatenated") +
           ", out_proj";
  return std::string("The module: ") + variantTitle(t.model.variant) +
         (t.model.batch_size > 1 ? "  ·  batch element " + std::to_string(snap.batch + 1) : "");
}

// The module's card: its maps (the concatenated context, out_proj's weight, the output), each in
// its tile of the grid's layout.
// Returns the fewest decimals its maps rounded their numbers to (4 when none did).
int drawModuleCard(const PanelContext& ctx, const Snapshot& snap, const std::vector<ModuleMap>& maps,
                   const Box& card_box, const std::vector<Box>& tiles, const std::vector<bool>& labelled,
                   const std::vector<float>& legend_room, bool colorbar_beside, bool name_positions, ImVec2 grid_origin,
                   bool heading, float text_scale, CellWindow window) {
  int fewest = 4;
  const Trace& t = *snap.trace;
  const BatchTrace& bt = snap.shown();
  const ViewState& view = ctx.view;
  ImGui::SetCursorScreenPos(ImVec2(grid_origin.x + card_box.x, grid_origin.y + card_box.y));
  if (heading) {
    const std::string text = moduleCardHeading(snap);
    drawCardHeading(text, card_box.w);
    layout().widget("card_heading_module");
    layout().state()["card_heading_module"] = text;
  }
  for (std::size_t k = 0; k < maps.size(); ++k) {
    const ModuleMapInfo& info = moduleMapInfo(maps[k]);
    const Box& b = tiles[k];
    if (b.w == 0) continue;  // a lesson step set it aside
    ImGui::SetCursorScreenPos(ImVec2(grid_origin.x + b.x, grid_origin.y + b.y));
    const std::string title = tileTitle(moduleHeading(t, bt, info.map), b.w);
    const StageMap values = moduleMapValues(t, bt, info.map);
    HeatmapSpec spec;
    spec.id = std::string("b") + std::to_string(snap.batch) + "m" + info.id;
    spec.title = title;
    spec.values = values;
    spec.window = shownWindow(window, static_cast<int>(values.rows()), static_cast<int>(values.cols()), !info.parameter,
                              false);
    spec.look = moduleLook(snap, view, info.map);
    spec.row_labels = !labelled[k]     ? nullptr
                      : info.parameter ? &snap.dims
                                       : &snap.tokens();  // none: the map beside it has them
    spec.col_labels = &snap.dims;
    spec.token_rows = !info.parameter;
    spec.selected_row = info.parameter || ctx.capture.hides_selection
                            ? -1
                            : std::clamp(view.token, 0, snap.tokenCount() - 1);
    spec.version = snap.outputs_serial;
    spec.owner = ctx.snapshot;
    const ModuleMap map = info.map;
    const Snapshot* s = &snap;
    spec.describe = [s, map](int i, int j) {
      const Trace& tr = *s->trace;
      const StageMap m = moduleMapValues(tr, s->shown(), map);
      const std::string cell = formatFixed(m(i, j));
      switch (map) {
        case ModuleMap::Concat: {
          const int hw = tr.head_width;
          return "head " + std::to_string(j / hw + 1) + "'s context z" + std::to_string(i + 1) + "[" +
                 std::to_string(j % hw) + "] = " + cell;
        }
        case ModuleMap::OutProj:
          return "out_proj.weight[" + std::to_string(j) + ", " + std::to_string(i) + "] = " + cell +
                 ":\nhow much context dimension d" + std::to_string(i) + " adds to output d" + std::to_string(j);
        case ModuleMap::Output:
          return std::string(hasOutProj(tr.model.variant) ? "output = concat · out_proj.weightᵀ + bias:\n"
                                                          : "output = the context:\n") +
                 "'" + s->tokens()[static_cast<std::size_t>(i)] + "' d" + std::to_string(j) + " = " + cell;
      }
      return cell;
    };
    spec.dump = {{"head", -1}, {"module", true}, {"stage", info.id}, {"batch", snap.batch}};
    spec.dimmed = dimmedByLesson(view, info.id);
    spec.cell = b.cell;
    spec.cells_top = b.cells_top;
    spec.text_scale = text_scale;
    spec.legend_room = legend_room[k];
    spec.colorbar_beside = colorbar_beside;
    spec.name_positions = name_positions ? 1 : 0;
    const HeatmapHit hit = drawHeatmap(ctx.textures, spec, ImVec2(b.w, b.h));
    if (hit.decimals > 0) fewest = std::min(fewest, hit.decimals);
    if (hit.clicked_row >= 0 && !info.parameter) ctx.commands.push("select_token", {{"index", hit.clicked_row}});
  }
  return fewest;
}

}  // namespace

void HeatmapGrid::drawMapsMenu(const PanelContext& ctx) {
  const Snapshot* snap = ctx.snapshot.get();
  drawHeatmapHeaderMenu(ctx, snap ? snap->inputs->model : ctx.document.workspace().model, snap ? snap->batch : 0,
                        snap ? snap->trace.get() : nullptr, true);
}

void HeatmapGrid::goTo(int first, int last, int T) {
  const int n = std::max(last - first + 1, std::min(T, kMinZoomCells));
  if (n >= T) return reset();
  zoom_ = static_cast<float>(T) / static_cast<float>(n);
  center_row_ = center_col_ = (static_cast<float>(first) + static_cast<float>(last) + 1) / 2.0f;
}

std::string HeatmapGrid::roundingNote(bool model) const {
  if (rounded_to_ >= 4) return "";
  // "some maps'" where others show all 4: the note stood above a map of 4 decimals, the rounded ones
  // (another head's, wider numbers) further down.
  return std::string(some_whole_ ? "some maps' numbers" : "numbers") + " rounded to " + std::to_string(rounded_to_) +
         " decimals to fit; hover a cell for " +
         (model ? "4" : "the notebook's 4");  // no notebook printed a model's weights
}

void HeatmapGrid::drawGoTo(CommandQueue& cmd, bool in_header) {
  ImGui::SetNextItemWidth(px(170));
  if (ImGui::InputTextWithHint("##go_to", "go to token, 1–T, a–b", go_to_, sizeof go_to_,
                               ImGuiInputTextFlags_EnterReturnsTrue))
    cmd.push("go_to", {{"text", std::string(go_to_)}});
  layout().widget("go_to");
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Enter a token's name (t500), its number (500) or a range (400-431): every map zooms to it%s%s",
                      in_header ? "\n" : "", in_header ? kWheelHint : "");
}

void HeatmapGrid::draw(const PanelContext& ctx) {
  const ImVec2 top = ImGui::GetCursorScreenPos(), region = ImGui::GetContentRegionAvail();
  const float main_w = ImGui::GetWindowWidth();  // the main area's, of which the grid gets what its padding leaves
  layout().panel("heatmaps", top, ImVec2(top.x + region.x, top.y + region.y));
  const Snapshot* snap = ctx.snapshot.get();
  const ViewState& view = ctx.view;
  CommandQueue& cmd = ctx.commands;
  rounded_to_ = rounding_now_;  // the notes line says what last frame's maps did
  rounding_now_ = 4;
  numbered_ = std::exchange(numbered_now_, false);
  some_whole_ = std::exchange(some_whole_now_, false);
  // The header, folded into a menu where it would take the maps' room (a projector's text); none
  // while a lesson step chose the maps: its controls are in the lesson's menu (drawMapsMenu).
  if (!ctx.maps_menu)
    layout().state()["header_folded"] = drawHeatmapHeader(ctx,
                                                          snap ? snap->inputs->model : ctx.document.workspace().model,
                                                          snap ? snap->batch : 0, snap ? snap->trace.get() : nullptr);
  // Long inputs: go straight to a token or a range of them. On the header's last row where it
  // fits (a row of its own took 58 px from two maps of 204 at 1280 × 720 and 200 %), the wheel's
  // hint then its tooltip's; else on a row of its own, the notes beside it.
  const bool go_to = snap && snap->tokenCount() > 24;
  bool go_to_up = false;
  if (go_to && !ctx.maps_menu && ctx.engine_error.empty()) {
    ImGui::SameLine(0, px(16));
    go_to_up = ImGui::GetCursorScreenPos().x + px(170) <=
               ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
    if (go_to_up)
      drawGoTo(cmd, true);
    else
      ImGui::NewLine();
  }
  layout().state()["go_to_in_header"] = go_to_up;

  if (!ctx.engine_error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, theme().selection);
    // The result on screen is of these settings when only its rest failed (a two-part result).
    const bool rest_failed = snap && !snap->complete && snap->version == ctx.document.version();
    ImGui::TextWrapped("%s%s%s",
                       ctx.modelOpen() ? "Not computed: "
                       : rest_failed   ? "Some heads' maps were not computed: "
                                       : "The engine refused these settings: ",
                       ctx.engine_error.c_str(), snap && !rest_failed ? "  (showing the last valid result)" : "");
    ImGui::PopStyleColor();
  }
  if (!snap) {
    if (ctx.engine_error.empty()) ImGui::TextUnformatted(ctx.waitingText());  // else said above
    return;
  }
  // After an edit (a new document version, same tokens) the cells it changed are outlined for a
  // moment: small maps only, compared bit for bit with the result before.
  if (snap->serial != shown_serial_) {
    if (shown_small_ && shown_small_->version != snap->version && shown_small_->tokenCount() == snap->tokenCount() &&
        snap->tokenCount() <= kOutlinedTokens && shown_small_->shown().heads.size() == snap->shown().heads.size())
      previous_ = shown_small_, outline_from_ = ctx.now, outlined_.clear();
    else if (shown_serial_ != 0 && shown_version_ != snap->version)
      previous_.reset();
    shown_serial_ = snap->serial, shown_version_ = snap->version;
    // Held only while small: a long text's result (GPT-2 at 1024 tokens: 100 MB of maps) is not
    // kept alive by a tab that may not be drawn again.
    shown_small_ = snap->tokenCount() <= kOutlinedTokens ? ctx.snapshot : nullptr;
  }
  if (previous_ && ctx.now >= outline_from_ + kOutlineSeconds) previous_.reset();
  const Trace& t = *snap->trace;
  const int T = snap->tokenCount();
  std::vector<Stage> stages = visibleStages(view, t);
  if (reveal_head_ >= 0 && !missingStage(t, reveal_stage_) &&  // a figure of a map the columns leave out (the mask)
      std::find(stages.begin(), stages.end(), reveal_stage_) == stages.end()) {
    std::vector<Stage> all;
    for (const StageInfo& s : stageTable())
      if (s.stage == reveal_stage_ || std::find(stages.begin(), stages.end(), s.stage) != stages.end())
        all.push_back(s.stage);
    stages = all;
  }
  if (go_to && !go_to_up) drawGoTo(cmd, false);
  const CellWindow window = zoomWindow(T);
  if (zoom_ > 1 && window.rows <= 0) reset();  // the text shorter than the zoom's window: no zoom
  // A lesson step's notes: the lesson panel says what the grid set aside; a zoom still has its line.
  // The notes line's room stays while the layout does, once a rounding note took it: the note takes
  // a line from maps that fit the tab, whose numbers may then no longer fit, which took the note
  // away, which gave the line back … (a trained model's 9 × 9 map at 1280 × 720 changed every frame).
  std::uint64_t note_key = static_cast<std::uint64_t>(region.x) * 100003u + static_cast<std::uint64_t>(region.y);
  for (const std::uint64_t part : {static_cast<std::uint64_t>(T), static_cast<std::uint64_t>(view.head + 1),
                                   static_cast<std::uint64_t>(fonts().small->FontSize * 16),
                                   static_cast<std::uint64_t>(snap->batch), static_cast<std::uint64_t>(zoom_ * 1000)})
    note_key = note_key * 1000003u + part;
  for (Stage s : stages) note_key = note_key * 31 + static_cast<std::uint64_t>(s) + 1;
  for (bool on : view.show_module) note_key = note_key * 3 + (on ? 1 : 0);
  // What the maps did last time they were drawn says nothing of another layout's: the chapter's maps,
  // drawn before a model opened and the tab left, had kept a line above a model's six-token maps.
  if (note_key != note_key_) note_key_ = note_key, note_line_kept_ = false, rounded_to_ = 4, numbered_ = false;
  std::string rounding = roundingNote(static_cast<bool>(snap->model));
  if (!rounding.empty())
    note_line_kept_ = true;
  else if (note_line_kept_ && !numbered_)  // kept and empty where the maps show all four decimals
    rounding = "hover a cell for its number";
  // The module's maps this step has, shown as one more card after the heads'.
  std::vector<ModuleMap> module_maps;
  for (const ModuleMapInfo& info : moduleMapTable())
    if (view.show_module[static_cast<int>(info.map)] && !missingModuleMap(t, info.map)) module_maps.push_back(info.map);
  // The longest axis of dimensions among the maps shown (a weight's d_in rows and its head's
  // columns, a T × w map's columns, the module's d_out): a model's weights alone have none.
  int widest = module_maps.empty() ? 0 : t.model.d_out;
  for (Stage stage : stages)
    if (stageInfo(stage).parameter)
      widest = std::max({widest, t.d_in, t.head_width});
    else if (!stageInfo(stage).square)
      widest = std::max(widest, t.head_width);
  // Which heads: all, or the one chosen in the header (none when only the module's maps are on).
  std::vector<int> heads;
  for (int h = 0; h < t.heads && !stages.empty(); ++h)
    if (view.head < 0 || view.head == h) heads.push_back(h);
  if (heads.empty() && !stages.empty()) heads.push_back(0);
  const std::string flat = flatWeightsNote(*snap, view, stages, heads);
  if ((!ctx.maps_menu || zoom_ > 1) &&
      drawNotes(*snap, zoom_, window, widest, skippedStages(view, t), !view.highlight.empty(), rounding, flat,
                go_to && !go_to_up, !go_to_up, note_line_kept_))
    reset();
  // While the mouse is over a map the wheel zooms it, so it must not also scroll the grid.
  ImGui::BeginChild("grid", ImVec2(0, 0), false,
                    ImGuiWindowFlags_HorizontalScrollbar | (wheel_on_map_ ? ImGuiWindowFlags_NoScrollWithMouse : 0));
  wheel_on_map_ = false;
  if (std::exchange(scroll_to_top_, false)) ImGui::SetScrollY(0), ImGui::SetScrollX(0);
  const int batch = snap->batch;
  const BatchTrace& bt = snap->shown();
  if (stages.empty() && module_maps.empty()) {
    ImGui::TextUnformatted("Every map is hidden: choose some in the row of maps above.");
    ImGui::EndChild();
    return;
  }
  const int H = static_cast<int>(heads.size()), S = static_cast<int>(stages.size());
  const int M = static_cast<int>(module_maps.size());
  const ImGuiStyle& style = ImGui::GetStyle();
  const float header = ImGui::GetTextLineHeightWithSpacing() + 4;
  const float gap = style.ItemSpacing.x * 2;
  const float fs = fonts().small->FontSize;
  // The rows' names, as they are and as drawHeatmap thins them, each starting with its number:
  // measured once per result (a text of 1024 tokens).
  if (names_key_ != std::make_pair(snap->serial, fs)) {
    const int T_all = static_cast<int>(snap->tokens().size());
    names_key_ = {snap->serial, fs};
    names_w_ = {widestAxisName(snap->tokens(), 0, T_all, false, fs),
                widestAxisName(snap->tokens(), 0, T_all, true, fs)};
  }
  const float label_w = names_w_[0], numbered_w = names_w_[1];
  // The row labels' band for names `width` wide (at most 90 px) with their font at `scale`.
  const auto bandFor = [&](float width, float scale) {
    return std::min(width * scale, px(90)) + px(4) + 1;  // + 1: rounding must not shorten a token
  };
  // The maps' margins with their labels' font at `scale` of its size (a lesson step may fit it).
  const auto marginsAt = [&](float scale) {
    return Margins{bandFor(label_w, scale), ImGui::GetTextLineHeight(), fs * scale, heatmapColorbarHeight(scale),
                   scale};
  };
  const Margins margins = marginsAt(1);
  // The widest of column labels d0 … d(n−1) (a head's may start further on: headFirstColumn).
  const auto dimsLabelWidth = [&](int n) {
    return fonts().small->CalcTextSizeA(fs, FLT_MAX, 0, ("d" + std::to_string(std::max(n - 1, 0))).c_str()).x;
  };
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  // The book's sizes always show their numbers: cells as wide as the widest compact label of the
  // T × T maps (the grid scrolls if need be). Larger maps fit the window and zoom instead.
  // Measured once per result and choice of heads and columns, not every frame (a 64-head wrapper
  // has 55 k labels).
  float min_cell = 0, three_cell = 0, full_cell = 0;
  // A trained model's maps fit the tab instead: its pattern is what the text is about (ten tokens at
  // 1280 × 720 and 150 % showed five rows of four-decimal weights, the selected query below), and
  // a cell's number is its tooltip's.
  if (T <= kAlwaysLabelledTokens && !window.rows && !snap->model) {
    std::uint64_t key = snap->serial * 1000003u + static_cast<std::uint64_t>(view.head + 1);
    for (Stage stage : stages) key = key * 31 + static_cast<std::uint64_t>(stage) + 1;
    for (ModuleMap m : module_maps) key = key * 37 + static_cast<std::uint64_t>(m) + 1;
    key = key * 31 + static_cast<std::uint64_t>(fs * 16);
    for (const std::string& id : view.highlight) key = key * 31 + std::hash<std::string>()(id);
    key = key * 31 + (view.highlight.empty() ? 1u : 2u);
    if (key != label_cells_key_) {
      label_cells_key_ = key;
      label_cells_ = {0, 0, 0};
      // Every shown map of a readable size (a W of GPT-2's 768 inputs is not). Where nn.Linear's
      // signed weights are in play, a map that may have negatives takes room for a minus sign
      // whether or not it has one now, so a re-roll does not move the maps; a lesson step's maps
      // are the step's own (no re-roll), and fit the window better without.
      const bool linear = t.model.variant != Variant::Simple && t.model.variant != Variant::SelfAttentionV1 &&
                          view.highlight.empty();
      auto measure = [&](const StageMap& map, bool dropout, bool may_be_negative) {
        if (map.rows() > kAlwaysLabelledTokens || map.cols() > 64) return;
        for (Eigen::Index i = 0; i < map.rows(); ++i)
          for (Eigen::Index j = 0; j < map.cols(); ++j) {
            const float v = linear && may_be_negative && !std::isinf(map(i, j)) ? -std::fabs(map(i, j)) : map(i, j);
            auto need = [&](CellFormat f) {
              const std::string label = dropout ? dropoutCellText(t.dropout_active, t.dropout_scale, v)
                                                : cellLabel(v, f);
              return heatmapCellFor(fonts().small->CalcTextSizeA(fs, FLT_MAX, 0, label.c_str()).x);
            };
            label_cells_[0] = std::max(label_cells_[0], need(CellFormat::Compact));
            label_cells_[1] = std::max(label_cells_[1], need(CellFormat::Decimals3));
            label_cells_[2] = std::max(label_cells_[2], need(CellFormat::Decimals4));
          }
      };
      // A lesson step's cells are sized for the maps it is about; the others, dimmed beside them,
      // show their numbers where those fit too.
      for (int h : heads) {
        if (!bt.heads[h].hasMaps()) continue;
        for (Stage stage : stages) {
          if (dimmedByLesson(view, stageInfo(stage).id)) continue;
          const bool probabilities = stage == Stage::Weights || stage == Stage::DropoutMask ||
                                     stage == Stage::DroppedWeights || stage == Stage::Mask ||
                                     stage == Stage::UnmaskedWeights || stage == Stage::Tril ||
                                     stage == Stage::TrilWeights;
          measure(StageMap(t, bt.heads[h], stage), stage == Stage::DropoutMask, !probabilities);
        }
      }
      for (ModuleMap m : module_maps)
        if (!dimmedByLesson(view, moduleMapInfo(m).id)) measure(moduleMapValues(t, bt, m), false, true);
    }
    min_cell = label_cells_[0];
    three_cell = label_cells_[1];
    full_cell = label_cells_[2];
  }
  // The cards: one per head (the same maps), then the module's. Each map as wide as its columns.
  // The scrollbar's room kept whether it shows or not: a layout that depended on it would flicker.
  const float grid_w = ImGui::GetWindowWidth() - style.ScrollbarSize;
  const bool focus = !view.highlight.empty();  // a lesson step names the maps it is about
  // One head's card of one map, outside a lesson step: the map's title leads the card's heading, one
  // line for both, as a saved figure's title ("weights (softmax)  14×14  ·  layer 3  ·  head 2 of 4";
  // at 1280 × 720 and 200 % the two lines took 44 px of a 124-px map's height).
  const bool one_map = !focus && H == 1 && S == 1 && M == 0 && !ctx.capture.one_map;  // a map saved alone: its title
  // Never cut: a trained model's layer, after a one-map card's title, and each head's number
  // after the layer (two cards of a 2-token text at 1280 × 720 and 200 % both read "Layer 1").
  const int heading_kept = snap->model ? 2 : 1;
  auto headingOf = [&](int h) {  // a head is named only where there are several; 'simple' has no Q, K, V of its own
    const std::string shapes = t.model.variant == Variant::Simple
                                   ? "Q = K = V = X: " + std::to_string(t.tokens) + "×" + std::to_string(t.head_width)
                                   : "Q, K, V: " + std::to_string(t.tokens) + "×" + std::to_string(t.head_width);
    // A trained model's maps say their layer: a projected card of "Head 2 of 4" alone left the room
    // asking which of the model's layers it was (the status bar says it, far below).
    const std::string title = one_map ? stageHeading(t, stages.front()) + "  ·  " : "";
    const std::string layer = snap->model ? (one_map ? "layer " : "Layer ") + std::to_string(snap->layer + 1) + "  ·  "
                                          : "";
    return title + (t.heads > 1 ? layer + (layer.empty() && !one_map ? "Head " : "head ") + std::to_string(h + 1) +
                                      " of " + std::to_string(t.heads) + "  ·  head width " +
                                      std::to_string(t.head_width) + "  ·  " + shapes
                                : layer + shapes);
  };
  float text_scale = 1;  // the cells' font, at this much of its size
  std::vector<CardNeed> needs;
  for (int n = 0; n < H; ++n) {
    CardNeed card;
    measureHeading(headingOf(heads[n]), grid_w, header, card, heading_kept);
    for (Stage stage : stages) {
      const StageInfo& info = stageInfo(stage);
      TileNeed tile;
      const int rows = info.parameter ? t.d_in : T, cols = info.square ? T : t.head_width;
      const CellWindow shown = shownWindow(window, rows, cols, !info.parameter, info.square);
      tile.rows = shown.rows > 0 ? shown.rows : rows;
      tile.cols = shown.cols > 0 ? shown.cols : cols;
      if (!one_map) {  // else the heading says it
        tile.title_w = titleWidth(stageHeading(t, stage));
        tile.full_title_w = ImGui::CalcTextSize(stageHeading(t, stage).c_str()).x + px(8);
      }
      tile.focus = !dimmedByLesson(view, info.id);
      tile.row_kind = info.parameter ? 1 : 0;
      tile.col_label_w = info.square ? label_w : dimsLabelWidth(headFirstColumn(t, heads[n]) + tile.cols);
      tile.legend_room = heatmapLegendRoom(stageLook(*snap, view, stage, heads[n], window));
      card.tiles.push_back(tile);
    }
    needs.push_back(std::move(card));
  }
  if (M > 0) {
    CardNeed card;
    measureHeading(moduleCardHeading(*snap), grid_w, header, card);
    for (ModuleMap m : module_maps) {
      const StageMap values = moduleMapValues(t, bt, m);
      const std::string title = moduleHeading(t, bt, m);
      const CellWindow shown = shownWindow(window, static_cast<int>(values.rows()), static_cast<int>(values.cols()),
                                           !moduleMapInfo(m).parameter, false);
      TileNeed tile;
      tile.rows = shown.rows > 0 ? shown.rows : static_cast<int>(values.rows());
      tile.cols = shown.cols > 0 ? shown.cols : static_cast<int>(values.cols());
      tile.title_w = titleWidth(title);
      tile.full_title_w = ImGui::CalcTextSize(title.c_str()).x + px(8);
      tile.focus = !dimmedByLesson(view, moduleMapInfo(m).id);
      tile.row_kind = moduleMapInfo(m).parameter ? 1 : 0;
      tile.col_label_w = dimsLabelWidth(tile.cols);
      card.tiles.push_back(tile);
    }
    needs.push_back(std::move(card));
  }
  GridLayout g;
  if (focus) {
    // A lesson step: its maps whole from the top, 4 decimals where they fit, never fewer than 3.
    // The grid starts at the top of every step (Next and Back never leave one of its maps cut).
    if (view.highlight != focus_) focus_ = view.highlight, ImGui::SetScrollY(0), ImGui::SetScrollX(0);
    // The cells for a label font at `scale`: the labels' width scales with it, their room does not.
    const auto cellAt = [&](float cell, float scale) {
      return cell <= 0 ? cell : std::max({(cell - px(5)) * scale + px(5), fs * scale + px(2), px(16)});
    };
    // `fewest`: the cells of the fewest decimals the step's maps may show (three, else two).
    const auto arrange =
        [&](float scale, float fewest) {  // the room asked for is the short titles' (whole ones come where they fit)
          const Margins m = marginsAt(scale);
          const float floor = cellAt(fewest, scale), target = cellAt(full_cell, scale);
          FocusArrangement f = arrangeFocus(needs, grid_w, avail.y, gap, m, floor, target, px(72), false);
          const FocusArrangement whole = arrangeFocus(needs, grid_w, avail.y, gap, m, floor, target, px(72), true);
          if (whole.layout.cell >= f.layout.cell - 0.5f &&
              whole.layout.focus_bottom <= std::max(f.layout.focus_bottom, avail.y) &&
              whole.layout.set_aside == f.layout.set_aside)
            f.layout = whole.layout;
          return f;
        };
    // The numbers' font as it is; where the step's maps are not whole at three decimals so, a
    // little smaller (down to kSmallestCellText of it), as the lesson's boxes fit their column.
    const auto wholeAt = [&](float fewest) {
      return [&, fewest](const FocusArrangement& f, float scale) {
        return full_cell <= 0 || (f.layout.focus_bottom <= avail.y + 0.5f && f.layout.fits_width &&
                                  f.layout.cell >= cellAt(fewest, scale) - 0.01f);
      };
    };
    // The step's maps in one card (one head's, or the module's): the headings go, a line for the maps.
    const auto holdsFocus = [](const CardNeed& c) {
      return std::any_of(c.tiles.begin(), c.tiles.end(), [](const TileNeed& t) { return t.focus; });
    };
    if (std::count_if(needs.begin(), needs.end(), holdsFocus) == 1)
      for (CardNeed& c : needs)
        if (holdsFocus(c)) c.heading_w = c.heading_h = 0;
    // The module's maps say what they are in their titles: its heading goes, the heads' stay.
    if (M > 0) needs.back().heading_w = needs.back().heading_h = 0;
    // The numbers' font as it is, else the largest step of it down to kSmallestCellText with which
    // the arrangement is `ok`, else as it is (each step's arrangement worked out once).
    std::vector<float> scales{1};
    for (float scale = 0.95f; scale >= kSmallestCellText - 0.001f; scale -= 0.05f) scales.push_back(scale);
    std::vector<FocusArrangement> at_three{arrange(1, three_cell)}, at_two;  // by font step, as far as needed
    const auto largestFontWhere = [&](std::vector<FocusArrangement>& at, float fewest, const auto& ok) {
      for (std::size_t k = 0; k < scales.size(); ++k) {
        if (k == at.size()) at.push_back(arrange(scales[k], fewest));
        if (ok(at[k], scales[k])) return k;
      }
      return std::size_t{0};
    };
    const auto threeWhole = wholeAt(three_cell), twoWhole = wholeAt(min_cell);
    const std::vector<FocusArrangement>* chosen = &at_three;
    std::size_t step = largestFontWhere(at_three, three_cell, threeWhole);
    if (!threeWhole(at_three[step], scales[step])) {
      // Two decimals rather than a map of the step's below the fold: at 1280 × 720 and 200 % steps 5,
      // 7 and 8 showed one of their two maps with three, the other out of view.
      const std::size_t two = largestFontWhere(at_two, min_cell, twoWhole);
      if (min_cell > 0 && twoWhole(at_two[two], scales[two]))
        chosen = &at_two, step = two;
      else  // the grid scrolls, its first row of the step's maps whole where a little smaller text
        // allows it (at 1280 × 720 and 200 % step 7's masked scores lost their colorbar's labels below
        // the fold, by 6 px)
        step = largestFontWhere(at_three, three_cell, [&](const FocusArrangement& f, float) {
          return firstFocusRowBottom(f.layout, needs) <= avail.y + 0.5f && f.layout.fits_width;
        });
    }
    const FocusArrangement& at_one = at_three.front();
    text_scale = scales[step];
    g = (*chosen)[step].layout;
    // The lesson's column gives way to the step's maps: the main area they need, whole.
    const float chrome = main_w - grid_w;  // the scrollbar's room and the panel's padding
    const FocusArrangement smallest = arrange(kSmallestCellText, three_cell);
    if (min_cell > 0 && at_two.empty()) at_two.push_back(arrange(1, min_cell));  // two decimals at the full font
    const FocusArrangement compact = min_cell > 0 ? at_two.front() : FocusArrangement{};
    focus_need_ = {at_one.best_w > 0 ? at_one.best_w + chrome : 0, at_one.least_w > 0 ? at_one.least_w + chrome : 0,
                   smallest.least_w > 0 ? smallest.least_w + chrome : 0,
                   compact.least_w > 0 ? compact.least_w + chrome : 0};
  } else {
    focus_.clear();
    focus_need_ = {};
    // Whole titles ("context  2 heads concatenated  6×4") where they cost neither cell size nor rows.
    const auto arrange = [&](const Margins& m) {
      GridLayout l = arrangeGrid(needs, grid_w, avail.y, gap, m, min_cell, full_cell, px(72), {false, false, false});
      const GridLayout whole = arrangeGrid(needs, grid_w, avail.y, gap, m, min_cell, full_cell, px(72),
                                           {true, false, false});
      if (whole.cell >= l.cell - 0.5f && whole.height <= std::max(l.height, avail.y)) l = whole;
      return l;
    };
    // Maps without numbers longer than the text on a side (a T × 64 context or Q beside the T × T
    // weights, a trained model's W_query or output) take smaller cells, no longer than the longest
    // of the others, where that makes the others larger: with one cell in every map the widest set
    // it, and at 1280 × 720 and 200 % a 20-token text's scores and weights were 48 px beside its
    // 156-px context, most of the tab empty. The maps no longer than the text keep the grid's cell
    // (a 6 × 2 context stays narrow beside its weights).
    int kept = window.rows > 0 ? window.rows : T;  // the tokens shown, or the shortest map's side
    int shortest = INT_MAX;
    for (const CardNeed& c : needs)
      for (const TileNeed& tile : c.tiles) shortest = std::min(shortest, std::max(tile.rows, tile.cols));
    kept = std::max(kept, shortest);
    const auto shrinkBy = [&](bool on) {
      for (CardNeed& c : needs)
        for (TileNeed& tile : c.tiles)
          tile.shrink = on ? std::min(1.0f,
                                      static_cast<float>(kept) / static_cast<float>(std::max(tile.rows, tile.cols)))
                           : 1.0f;
    };
    // The grid with these margins, its maps shrunk (`needs`) as `shrunk` says.
    struct Arranged {
      GridLayout layout;
      bool shrunk = false;
    };
    const auto arrangeWith = [&](const Margins& below) {
      shrinkBy(false);
      Arranged a{arrange(below), false};
      if (full_cell <= 0) {
        shrinkBy(true);
        const GridLayout shrunk = arrange(below);
        if (shrunk.cell > a.layout.cell * 1.03f)
          a = {shrunk, true};
        else
          shrinkBy(false);
      }
      // Maps without numbers in one row, short of height: their colorbars beside the cells where that
      // makes them larger, or whole where below they were not (a trained model's 14 × 14 weights at
      // 1280 × 720 and 200 % were 138 px, the colorbar's labels below the fold).
      if (full_cell <= 0) {
        Margins beside = below;
        beside.bottom = 0;
        const auto widen = [&](const MapLook& look) {
          const ColorbarBand band = heatmapColorbarBeside(look);
          beside.beside = std::max(beside.beside, band.width);
          beside.beside_cells = std::max(beside.beside_cells, band.least_height);
        };
        for (int h : heads)
          for (Stage stage : stages) widen(stageLook(*snap, view, stage, h, window));
        for (ModuleMap m : module_maps) widen(moduleLook(*snap, view, m));
        const GridLayout b = arrange(beside);
        const auto whole = [&](const GridLayout& l) { return l.fits_width && l.height <= avail.y + 0.5f; };
        const GridLayout& g0 = a.layout;
        if (rowsOfMaps(b, needs) == 1 &&
            ((whole(b) && !whole(g0)) || (whole(b) == whole(g0) && b.cell > g0.cell * 1.03f)))
          a.layout = b;
      }
      return a;
    };
    Margins below = margins;
    if (one_map) below.title = 0;  // its title is in the card's heading
    Arranged chosen = arrangeWith(below);
    // Rows too small for every name: the band holds them as drawHeatmap thins them, each starting
    // with its position, where that costs the cells at most numberedNamesShare and no map leaves the tab (a
    // 99-token map at 1920 × 1080 3 %; a 14-token one beside the side panels at 200 % would lose
    // 20 px of 138: its names stay).
    // The smallest cells of a map whose rows are tokens: a map longer than the text (a T × 64 Q
    // beside the T × T weights) is shrunk, its rows thinned where the grid's are not.
    float token_cell = FLT_MAX;
    for (std::size_t c = 0; c < needs.size(); ++c)
      for (std::size_t k = 0; k < needs[c].tiles.size(); ++k)
        if (const Box& box = chosen.layout.tiles[c][k]; needs[c].tiles[k].row_kind == 0 && box.w > 0)
          token_cell = std::min(token_cell, box.cell);
    if (token_cell < fs + 1 && numbered_w > label_w) {
      Margins numbered = below;
      numbered.left = bandFor(numbered_w, 1);
      const Arranged n = arrangeWith(numbered);
      const GridLayout &a = chosen.layout, &b = n.layout;
      if (b.cell >= numberedNamesShare(fs, a.cell) * a.cell && b.height <= std::max(a.height, avail.y) + 0.5f &&
          (b.fits_width || !a.fits_width))
        chosen = n, chosen.layout.name_positions = true;
      shrinkBy(chosen.shrunk);
    }
    g = chosen.layout;
  }
  // The maps a step set aside, named in the notes line next frame (one line either way).
  std::string aside;
  for (std::size_t c = 0; c < needs.size(); ++c)
    for (std::size_t k = 0; k < needs[c].tiles.size(); ++k)
      if (g.tiles[c][k].w == 0) {
        const std::string name = c < static_cast<std::size_t>(H) ? stageInfo(stages[k]).label
                                                                 : moduleMapInfo(module_maps[k]).label;
        if (aside.find(name) == std::string::npos) aside += (aside.empty() ? "" : ", ") + name;
      }
  set_aside_ = aside;

  const ImVec2 grid_origin = ImGui::GetCursorScreenPos();
  const int selected_row = ctx.capture.hides_selection ? -1 : std::clamp(view.token, 0, T - 1);  // figures: no outline
  bool selection_seen = false;     // the selected query's row on screen in a map of queries
  std::optional<float> scroll_to;  // else how far to scroll to the nearest map whose window holds it
  // Which cards the grid's window shows: their heads are computed first after the next edit.
  const float visible_top = ImGui::GetWindowPos().y, visible_bottom = visible_top + ImGui::GetWindowHeight();
  visible_heads_.clear();
  for (int n = 0; n < H; ++n) {
    const int h = heads[n];
    const Box& box = g.cards[static_cast<std::size_t>(n)];
    if (box.w == 0) continue;  // a lesson step set its maps aside
    const ImVec2 card(grid_origin.x + box.x, grid_origin.y + box.y);
    ImGui::SetCursorScreenPos(card);
    if (needs[static_cast<std::size_t>(n)].heading_h > 0) {  // a lesson step's one card of maps has none
      const std::string heading = headingOf(h);
      drawCardHeading(heading, box.w, heading_kept);
      layout().widget("card_heading_" + std::to_string(h));
      layout().state()["card_headings"][std::to_string(h)] = heading;
    }
    if (card.y + box.h > visible_top && card.y < visible_bottom) visible_heads_.push_back(h);
    if (!bt.heads[h].hasMaps()) {  // off screen when the edit was made: its maps follow shortly
      ImGui::SetCursorScreenPos(ImVec2(card.x, card.y + header));
      ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + box.w);  // in the window's coordinates
      drawMapsMissing(ctx, h);
      ImGui::PopTextWrapPos();
      continue;
    }
    for (int k = 0; k < S; ++k) {
      const Stage stage = stages[k];
      const StageInfo& info = stageInfo(stage);
      const Box& b = g.tiles[static_cast<std::size_t>(n)][static_cast<std::size_t>(k)];
      if (b.w == 0) continue;
      const ImVec2 tile(grid_origin.x + b.x, grid_origin.y + b.y);
      ImGui::SetCursorScreenPos(tile);
      if (h == reveal_head_ && stage == reveal_stage_) {  // its top (with the title) at the window's
        const float top = ImGui::GetWindowPos().y;
        if (tile.y < top || tile.y + b.h > top + ImGui::GetWindowHeight())
          ImGui::SetScrollY(ImGui::GetScrollY() + (tile.y - top) - gap);
      }
      const HeadTrace& head = bt.heads[h];
      HeatmapSpec spec;
      spec.id = std::string("b") + std::to_string(batch) + "h" + std::to_string(h) + info.id;
      // A map saved alone says which layer and head it is, as its SVG does (the PNG read "weights
      // (softmax)  43×43", the card's heading cropped off).
      spec.title = one_map ? ""
                   : ctx.capture.one_map
                       ? tileTitle(stageFigureTitle(t, stage, batch, h, snap->model ? snap->layer : -1), b.w)
                       : tileTitle(stageHeading(t, stage), b.w);
      spec.values = StageMap(t, head, stage);
      spec.look = stageLook(*snap, view, stage, h, window);
      spec.row_labels = !g.labelled[static_cast<std::size_t>(n)][static_cast<std::size_t>(k)]
                            ? nullptr  // those of the map beside it
                        : info.parameter ? &snap->dims
                                         : &snap->tokens();  // a weight's rows: input dims
      spec.col_labels = info.square ? &snap->tokens() : &snap->head_dims[static_cast<std::size_t>(h)];
      spec.token_rows = !info.parameter, spec.token_cols = info.square;
      spec.selected_row = info.parameter ? -1 : selected_row;
      if (info.square && !ctx.capture.hides_selection) spec.selected_col = view.key;
      spec.window = shownWindow(window, static_cast<int>(spec.values.rows()), static_cast<int>(spec.values.cols()),
                                !info.parameter, info.square);
      spec.version = snap->head_serial[static_cast<std::size_t>(h)];  // kept by a second part
      spec.owner = ctx.snapshot;
      spec.describe = [snap, &head, stage](int i, int j) { return describeCell(*snap, head, stage, i, j); };
      spec.dump = {{"head", h}, {"stage", info.id}, {"batch", batch}};
      if (previous_ && previous_->batch == batch && previous_->shown().heads[h].hasMaps() && head.hasMaps() &&
          !ctx.capture.rendering) {  // a figure shows the numbers, not the last edit's traces
        auto& cells = outlined_[{h, static_cast<int>(stage)}];  // found once per edit, drawn while they fade
        if (!cells) cells = changedCells(StageMap(*previous_->trace, previous_->shown().heads[h], stage), spec.values);
        spec.outlined = *cells;
        spec.outline_alpha = static_cast<float>(1.0 - (ctx.now - outline_from_) / kOutlineSeconds);
      }
      // A lesson step names the maps it is about: the others recede.
      spec.dimmed = dimmedByLesson(view, info.id);
      spec.cell = b.cell;            // the same cells in every map (but one longer than the text)
      spec.cells_top = b.cells_top;  // … level with the maps beside it
      spec.text_scale = text_scale;
      spec.legend_room = freeRightOf(g, b, grid_w, gap);
      spec.colorbar_beside = g.colorbar_beside;
      spec.name_positions = g.name_positions ? 1 : 0;
      HeatmapHit hit = drawHeatmap(ctx.textures, spec, ImVec2(b.w, b.h));
      if (spec.selected_row >= 0) {  // where the selected query is, in each map of queries
        const float top = ImGui::GetWindowPos().y, bottom = top + ImGui::GetWindowHeight();
        if (hit.selected_y >= 0 && hit.selected_y - hit.cell / 2 >= top && hit.selected_y + hit.cell / 2 <= bottom)
          selection_seen = true;
        else if (const float by = hit.selected_y - (top + bottom) / 2;  // the nearest: no jump past the map in view
                 hit.selected_y >= 0 && (!scroll_to || std::abs(by) < std::abs(*scroll_to)))
          scroll_to = by;
      }
      if (hit.decimals > 0) rounding_now_ = std::min(rounding_now_, hit.decimals), numbered_now_ = true;
      if (hit.decimals >= 4) some_whole_now_ = true;
      if (hit.clicked_row >= 0) cmd.push("select_token", {{"index", hit.clicked_row}});
      if (hit.hover_row >= 0) wheel_on_map_ = true;
      const std::string menu = spec.id + "##menu";
      if (hit.context_menu) ImGui::OpenPopup(menu.c_str());
      if (ImGui::BeginPopup(menu.c_str())) {
        ImGui::TextDisabled("%s", mapFileStem(batch, h, stage).c_str());  // as the files are named
        for (const char* format : {"csv", "json", "npy"})
          if (ImGui::MenuItem((std::string("Export as .") + format + "…").c_str()))
            cmd.push("dialog", {{"which", "export_map"}, {"stage", info.id}, {"head", h}, {"format", format}});
        if (ImGui::MenuItem("Save as a figure (SVG, PDF, PNG)…"))
          cmd.push("dialog", {{"which", "export_map"}, {"stage", info.id}, {"head", h}, {"format", "svg"}});
        if (ImGui::MenuItem("Save this map as PNG"))
          cmd.push("screenshot", {{"path", ""}, {"panel", info.id}, {"head", h}});
        ImGui::EndPopup();
      }
      if (!info.square) hit.hover_col = hit.pan_cols = 0;
      if (hit.wheel != 0 || hit.pan_rows != 0 || hit.pan_cols != 0) applyZoom(zoom_, center_row_, center_col_, hit, T);
    }
  }
  if (M > 0 && g.cards.back().w > 0) {
    std::vector<float> legend_room;
    for (const Box& b : g.tiles.back()) legend_room.push_back(freeRightOf(g, b, grid_w, gap));
    rounding_now_ = std::min(rounding_now_,
                             drawModuleCard(ctx, *snap, module_maps, g.cards.back(), g.tiles.back(), g.labelled.back(),
                                            legend_room, g.colorbar_beside, g.name_positions, grid_origin,
                                            needs.back().heading_h > 0, text_scale, window));
  }
  // A query selected out of sight (↑/↓, a click in the Inspector or Lines) is scrolled to where no
  // map shows its row, once per selection, so that scrolling by hand is never undone; zoomed
  // elsewhere, the zoom moves to it. Only a move of the selection: a new text, a lesson's step and
  // the first frame lay the grid out from its top as before.
  std::uint64_t selection_context = static_cast<std::uint64_t>(T);
  for (const std::string& id : view.highlight)
    selection_context = selection_context * 31 + std::hash<std::string>()(id);
  if (selected_row >= 0 && !stages.empty() && !ctx.capture.rendering &&
      (selected_row != scrolled_to_row_ || selection_context != selection_context_)) {
    const bool moved = scrolled_to_row_ >= 0 && selection_context == selection_context_;
    scrolled_to_row_ = selected_row, selection_context_ = selection_context;
    if (moved && !selection_seen && scroll_to)
      ImGui::SetScrollY(ImGui::GetScrollY() + *scroll_to);
    else if (moved && !selection_seen && zoom_ > 1 &&
             (selected_row < window.row0 || selected_row >= window.row0 + window.rows))
      center_row_ = center_col_ = static_cast<float>(selected_row) + 0.5f;  // as "go to" zooms to a token
  }
  // Reserve the grid's full extent so the child scrolls when it is larger than the panel.
  ImGui::SetCursorScreenPos(grid_origin);
  ImGui::Dummy(ImVec2(g.width, g.height));
  ImGui::EndChild();
}

namespace {

// The first n of the snapshot's dimension labels ("d0", "d1", …), as the grid shows them.
std::vector<std::string> dimsOf(const Snapshot& snap, Eigen::Index n) {
  return std::vector<std::string>(snap.dims.begin(),
                                  snap.dims.begin() +
                                      std::min<Eigen::Index>(n, static_cast<Eigen::Index>(snap.dims.size())));
}

}  // namespace

CellWindow HeatmapGrid::zoomWindow(int tokens) const {
  return attnscope::zoomWindow(zoom_, center_row_, center_col_, tokens);
}

FigureSpec heatmapFigure(const Snapshot& snap, const ViewState& view, Stage stage, int head, bool caption,
                         CellWindow zoom) {
  const Trace& t = *snap.trace;
  const HeadTrace& h = snap.shown().heads.at(static_cast<std::size_t>(head));
  const StageInfo& info = stageInfo(stage);
  // Titled and labelled as attnscope-cli's figure of the map (display/stage_figures.h) …
  FigureSpec f = stageFigure(t, h, stage, snap.tokens(), snap.batch, head, snap.model ? snap.layer : -1);
  f.look = stageLook(snap, view, stage, head, zoom);  // … coloured as draw() colours it
  if (zoom.rows > 0 && !info.parameter) {       // zoomed: the cells on screen, the tokens' axes windowed
    const bool square = info.square;
    const Eigen::Index r0 = zoom.row0, nr = zoom.rows, c0 = square ? zoom.col0 : 0,
                       nc = square ? zoom.cols : f.values.cols();
    auto block = std::make_shared<Matrix>(nr, nc);
    for (Eigen::Index i = 0; i < nr; ++i)
      for (Eigen::Index j = 0; j < nc; ++j) (*block)(i, j) = f.values(r0 + i, c0 + j);
    f.owned = block;
    f.values = StageMap(*block);
    f.row_labels.assign(f.row_labels.begin() + r0, f.row_labels.begin() + r0 + nr);
    if (square) f.col_labels.assign(f.col_labels.begin() + c0, f.col_labels.begin() + c0 + nc);
    f.first_row_token = static_cast<int>(r0);
    if (square) f.first_col_token = static_cast<int>(c0);
    f.title += "  ·  queries " + std::to_string(r0 + 1) + "–" + std::to_string(r0 + nr) +
               (square ? ", keys " + std::to_string(c0 + 1) + "–" + std::to_string(c0 + nc) : "") + " of " +
               std::to_string(t.tokens);
  }
  if (caption) {  // the stage by its title, never its id
    f.caption = mapsOrigin(snap, "  ·  ") +
                (t.heads > 1 ? "  ·  head " + std::to_string(head + 1) + " of " + std::to_string(t.heads) : "") +
                "  ·  " + captureSubject(info.id, t.model) + "  ·  T " + std::to_string(t.tokens) +
                seedPart(snap, "  ·  ");
  }
  return f;
}

FigureSpec moduleFigure(const Snapshot& snap, const ViewState& view, ModuleMap map, bool caption) {
  const Trace& t = *snap.trace;
  const BatchTrace& bt = snap.shown();
  const ModuleMapInfo& info = moduleMapInfo(map);
  FigureSpec f;
  f.values = moduleMapValues(t, bt, map);
  f.title = moduleHeading(t, bt, map);
  if (snap.model) f.title += "  ·  layer " + std::to_string(snap.layer + 1);
  if (t.model.batch_size > 1)
    f.title += "  ·  batch " + std::to_string(snap.batch + 1) + " of " + std::to_string(t.model.batch_size);
  f.row_labels = info.parameter ? dimsOf(snap, f.values.rows()) : snap.tokens();
  f.col_labels = dimsOf(snap, f.values.cols());
  f.first_row_token = info.parameter ? -1 : 0;
  f.look = moduleLook(snap, view, map);  // the colours as the module's card chooses them
  if (caption)
    f.caption = mapsOrigin(snap, "  ·  ") + "  ·  " + info.title + "  ·  T " + std::to_string(t.tokens) +
                seedPart(snap, "  ·  ");
  return f;
}

}  // namespace attnscope

namespace attnscope {

const char* stageMissingFrom(const Trace& t, Stage s) { return missingStage(t, s); }
const char* moduleMapMissingFrom(const Trace& t, ModuleMap m) { return missingModuleMap(t, m); }

}  // namespace attnscope
