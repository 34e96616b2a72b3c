#include "panels/compare_view.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "display/number_text.h"
#include "panels/heatmap_grid.h"
#include "state/capture_targets.h"
#include "widgets/fonts.h"
#include "widgets/heatmap.h"
#include "widgets/layout_dump.h"
#include "widgets/text.h"
#include "widgets/theme.h"

namespace attnscope {

namespace {

// A row of the comparison: one stage of one head, or one of the module's maps (head −1).
struct CompareRow {
  int head = -1;    // B's head
  int head_a = -1;  // A's: the same, but a trained model's head chosen when A was pinned (own_heads)
  bool module = false;
  Stage stage = Stage::Weights;
  ModuleMap map = ModuleMap::Output;
  int key() const { return module ? 100 + static_cast<int>(map) : static_cast<int>(stage); }
  const char* id() const { return module ? moduleMapInfo(map).id : stageInfo(stage).id; }
  const char* label() const { return module ? moduleMapInfo(map).label : stageInfo(stage).label; }
};

// The map of `row` in snapshot s, or an empty map when s has none (no such head, its maps still
// computing, a stage this step lacks: simple attention's weights).
StageMap rowValues(const Snapshot& s, const CompareRow& row) {
  const Trace& t = *s.trace;
  const BatchTrace& bt = s.shown();
  if (row.module) return moduleMapValues(t, bt, row.map);
  if (row.head < 0 || row.head >= static_cast<int>(bt.heads.size())) return {};
  const HeadTrace& h = bt.heads[static_cast<std::size_t>(row.head)];
  if (stageInfo(row.stage).parameter ? !hasProjections(t.model.variant) : !h.hasMaps()) return {};
  return StageMap(t, h, row.stage);
}

// Two maps' ranges that one colour scale serves (A and B of other shapes): overlapping, neither span
// more than four times the other's — the smaller keeps at least a quarter of the colours.
bool alikeRanges(ValueRange a, ValueRange b) {
  const float sa = a.hi - a.lo, sb = b.hi - b.lo;
  return sa > 0 && sb > 0 && a.lo <= b.hi && b.lo <= a.hi && std::max(sa, sb) <= 4 * std::min(sa, sb);
}

// The colour range snapshot s computed for `row` (the worker scanned it), or an empty range.
ValueRange rowRange(const Snapshot& s, const CompareRow& row) {
  if (row.module) return s.module_ranges[static_cast<int>(row.map)];
  if (row.head < 0 || row.head >= static_cast<int>(s.ranges.size())) return {};
  return s.ranges[static_cast<std::size_t>(row.head)][static_cast<int>(row.stage)];
}

bool flagsRow(const CompareRow& row) { return !row.module && stageInfo(row.stage).flags; }

// Cells of a small map as JSON rows (−∞ as the string "-inf"), for tests to hold against traces.
nlohmann::json cellsJson(const StageMap& m) {
  nlohmann::json out = nlohmann::json::array();
  for (Eigen::Index i = 0; i < m.rows(); ++i) {
    nlohmann::json r = nlohmann::json::array();
    for (Eigen::Index j = 0; j < m.cols(); ++j) {
      const float v = m(i, j);
      if (std::isfinite(v))
        r.push_back(v);
      else
        r.push_back(v < 0 ? "-inf" : "nan");
    }
    out.push_back(std::move(r));
  }
  return out;
}
constexpr Eigen::Index kDumpCellsUpTo = 256;  // maps up to 16 × 16 carry their numbers in the dump

// A map's column labels on side s: a head's own columns (display/map_look.h headFirstColumn) for a
// head's Q, K, V, context and W, the inputs' d0 … otherwise.
const std::vector<std::string>& dimsOf(const Snapshot& s, bool module, int head) {
  return module || head < 0 || head >= static_cast<int>(s.head_dims.size())
             ? s.dims
             : s.head_dims[static_cast<std::size_t>(head)];
}

// A token by its position (from 1, as the views count) and its text: a trained model's text has
// many "Ġ" and "the", and the text alone did not say which.
std::string tokenOr(const Snapshot& s, bool tokens, int index, const std::vector<std::string>& dims) {
  if (!tokens)
    return index < static_cast<int>(dims.size()) ? dims[static_cast<std::size_t>(index)] : "d" + std::to_string(index);
  return std::to_string(index + 1) +
         (index < s.tokenCount() ? " '" + s.tokens()[static_cast<std::size_t>(index)] + "'" : std::string());
}

}  // namespace

void CompareView::follow(const Snapshot& a, const Snapshot& b) {
  if (pair_ == std::make_pair(a.serial, b.serial)) return;
  pair_ = {a.serial, b.serial};
  differences_.clear();
  workspace_differences_ = workspaceDifferences(*a.inputs, *b.inputs);  // 786 k cells for GPT-2: not per frame
  token_difference_ = tokenDifference(a.tokens(), b.tokens());          // up to 1024² pairs: not per frame
  same_tokens_ = a.tokens() == b.tokens(), same_dims_ = a.dims == b.dims;  // rows' names shared: not per row
  names_size_ = 0;                                                         // their widths measured anew (draw)
  // The same trained model over a text with tokens inserted or removed: its maps compare by the
  // tokens both texts have (the same token, the same embedding: a chapter's or given maps' labels
  // say nothing of that).
  const std::vector<int>& a_of_b = token_difference_.a_of_b;
  aligned_ = a.model && b.model && a.model->model && a.model->model == b.model->model && token_difference_.shifted &&
             std::any_of(a_of_b.begin(), a_of_b.end(), [](int k) { return k >= 0; });
  // The chapter's texts alike, where they differ in their text alone (a token inserted with
  // "+ token" or removed): "tokens 6 → 7 · token 6 'step' → 'small' · …" had read as every later
  // token changed, and B − A was not drawn.
  chapter_text_ = !a.model && !b.model && token_difference_.shifted && differsInTextAlone(*a.inputs, *b.inputs, a_of_b);
  if (chapter_text_) {
    aligned_ = true;
    // Dropout's masks are one stream over every cell: a text of another length draws them all anew,
    // which B − A of the dropped weights shows beside the text's own change.
    const bool masks_anew = b.trace->dropout_active && a.tokenCount() != b.tokenCount();
    workspace_differences_ = {
        "its text: " + token_difference_.said + " (B − A has B's tokens" +
        (masks_anew ? "; dropout's masks drawn anew for " + std::to_string(b.tokenCount()) + " tokens)" : ")")};
  }
  b_own_ = std::any_of(a_of_b.begin(), a_of_b.end(), [](int k) { return k < 0; });
}

bool CompareView::alignable(const StageMap& a, const StageMap& b, bool token_rows, bool token_cols) const {
  if (!aligned_ || a.size() == 0 || b.size() == 0 || !(token_rows || token_cols)) return false;
  const Eigen::Index n = static_cast<Eigen::Index>(token_difference_.a_of_b.size());
  return (token_rows ? b.rows() == n : a.rows() == b.rows()) && (token_cols ? b.cols() == n : a.cols() == b.cols());
}

std::shared_ptr<const MapDifference> CompareView::difference(int head_a, int head, int map, const StageMap& a,
                                                             const StageMap& b, bool token_rows, bool token_cols) {
  auto& slot = differences_[{head_a, head, map}];
  if (!slot)
    slot = std::make_shared<const MapDifference>(
        alignable(a, b, token_rows, token_cols)
            ? alignedDifference(a, b, token_difference_.a_of_b, token_rows, token_cols)
            : mapDifference(a, b));
  return slot;
}

void CompareView::draw(const PanelContext& ctx) {
  const Snapshot* b = beginMainTab(ctx, "compare");
  if (!b) return;
  const ViewState& view = ctx.view;
  nlohmann::json& state = layout().state()["compare"];
  state = {{"pinned", static_cast<bool>(ctx.pinned)}};
  if (!ctx.pinned) {
    ImGui::PushTextWrapPos(ImGui::GetContentRegionAvail().x);
    // What can change depends on what is shown: a model's weights are read-only (the chapter's
    // "the seed, dropout, num_heads" named nothing a model's user can change), a run moves on.
    enum class Kind { Chapter, Model, Given, Run };
    const Kind kind = ctx.learn != nullptr && ctx.learn->open() && ctx.modelOpen() && ctx.model->isRun() ? Kind::Run
                      : ctx.showing() == Showing::Model                                                  ? Kind::Model
                      : ctx.showing() == Showing::GivenMaps                                              ? Kind::Given
                                                            : Kind::Chapter;
    static const char* const kWhat[] = {
        "Compare two settings: pin the result on screen as A, then change anything — the seed, dropout, num_heads, "
        "a cell of the inputs. This tab then shows every map of A and of B (the current settings) side by side, and "
        "B − A, with the largest change and where it is.",
        "Compare two texts, layers or heads: pin the result on screen as A, then change the text (a word, or append "
        "a token), or pick another layer or head in the Layers tab. This tab then shows A's maps and B's (what is "
        "shown now) side by side, and B − A where they have the same tokens, with the largest change and where it "
        "is.",
        "Compare two layers or heads: pin the result on screen as A, then pick another layer or head in the Layers "
        "tab. This tab then shows A's maps and B's side by side, and B − A, with the largest change and where it is.",
        "Compare two steps of the run: pin the result on screen as A, then let it train on or show another step. "
        "This tab then shows A's maps and B's (the step shown now) side by side, and B − A, with the largest change "
        "and where it is."};
    static const char* const kName[] = {"chapter", "model", "given", "run"};
    ImGui::TextUnformatted(kWhat[static_cast<int>(kind)]);
    state["empty_text"] = kName[static_cast<int>(kind)];
    ImGui::PopTextWrapPos();
    if (ImGui::Button("Pin as A  (Ctrl+P)")) ctx.commands.push("pin");
    layout().widget("compare_pin");
    return;
  }
  const Snapshot& a = *ctx.pinned;
  const Trace& ta = *a.trace;
  const Trace& tb = *b->trace;
  // Trained models' layers, a head chosen on both sides: A's is the one chosen when it was pinned,
  // B's the one chosen now — layer 2's head 4 against layer 1's head 6. (It showed head 6 of both
  // layers under "A: layer 2", the pinned head gone without a word.) Else the same head on both.
  const bool own_heads = a.model && b->model && ctx.pinned_head >= 0 && view.head >= 0 &&
                         ctx.pinned_head < static_cast<int>(a.shown().heads.size());
  const auto headName = [](int h) { return h >= 0 ? ", head " + std::to_string(h + 1) : std::string(); };

  // ---- header: what A and B are, what differs, the buttons -------------------------------------
  follow(a, *b);
  const std::vector<std::string>& differs = workspace_differences_;
  if (ImGui::Button("Swap A ⇄ B")) ctx.commands.push("swap");
  layout().widget("compare_swap");
  ImGui::SameLine();
  if (ImGui::Button("Unpin A")) ctx.commands.push("unpin");
  layout().widget("compare_unpin");
  std::string line;
  for (const std::string& d : differs) line += (line.empty() ? "" : " · ") + d;
  line = differs.empty() ? "B computes the same as A: change a setting or a cell to see what it does"
         : chapter_text_ ? "B differs from A in " + line
                         : "B differs from A in: " + line;
  if (a.model && b->model && a.model->model && b->model->model) {
    // Trained models' layers: which model and layer each is (their inputs and weights are the
    // models', not edits: a list of what differs would read "W_key.weight edited").
    const std::string& text = token_difference_.said;
    const std::string a_is = modelName(*a.model->model) + ", layer " + std::to_string(a.layer + 1) +
                             headName(own_heads ? ctx.pinned_head : view.head);
    const std::string b_is = modelName(*b->model->model) + ", layer " + std::to_string(b->layer + 1) +
                             headName(view.head);
    line = (a_is == b_is ? "A and B: " + a_is : "A: " + a_is + "  ·  B: " + b_is) +
           (!text.empty() ? "  ·  B's text differs: " + text +
                                (a.tokens().size() == b->tokens().size() || aligned_ ? " (B − A has B's tokens)" : "")
            : differs.empty() ? "  ·  the same maps"
                              : "");
    state["text_difference"] = text;
    state["a_model"] = modelName(*a.model->model);
    state["heads"] = {own_heads ? ctx.pinned_head : view.head, view.head};  // A's and B's (−1: every head)
    state["b_model"] = modelName(*b->model->model);
  }
  if (ctx.computing) line += "  (computing B…)";
  // Beside the buttons where it takes at most two lines there; else under them, the whole width (at
  // 200 % text on 1280 × 720 it stood six lines tall beside them, and pushed the maps out of view).
  ImGui::SameLine();
  std::string wrapped = wrapAtSpaces(line, ImGui::GetContentRegionAvail().x);  // never inside "0.5500"
  if (std::count(wrapped.begin(), wrapped.end(), '\n') >= 2) {
    ImGui::NewLine();
    wrapped = wrapAtSpaces(line, ImGui::GetContentRegionAvail().x);
  }
  ImGui::TextUnformatted(wrapped.c_str());
  state["differences"] = differs;
  state["a_version"] = a.version;
  state["b_version"] = b->version;

  // ---- the rows: the shown stages of the heads shown, then the module's shown maps ---------------
  std::vector<CompareRow> rows;
  const int heads = std::max(static_cast<int>(a.shown().heads.size()), static_cast<int>(b->shown().heads.size()));
  for (int h = 0; h < heads; ++h) {
    if (view.head >= 0 && view.head != h) continue;
    for (const StageInfo& s : stageTable())
      if (s.heatmap && view.show[static_cast<int>(s.stage)] &&
          (!stageMissingFrom(ta, s.stage) || !stageMissingFrom(tb, s.stage)))
        rows.push_back({h, own_heads ? ctx.pinned_head : h, false, s.stage, ModuleMap::Output});
  }
  for (const ModuleMapInfo& m : moduleMapTable())
    if (view.show_module[static_cast<int>(m.map)] &&
        (!moduleMapMissingFrom(ta, m.map) || !moduleMapMissingFrom(tb, m.map)))
      rows.push_back({-1, -1, true, Stage::Weights, m.map});

  state["lines"] = nlohmann::json::array();  // each row's line as drawn ("\n" where it wraps)
  ImGui::BeginChild("##compare_rows", ImVec2(0, 0), false);
  const ImGuiStyle& style = ImGui::GetStyle();
  const float gap = style.ItemSpacing.x * 2;
  const float avail_w = ImGui::GetContentRegionAvail().x;
  const float fs = fonts().small->FontSize;
  // A cell wide enough for a compact signed label (the label policy's last resort), so the book's
  // sizes show their numbers: where three such maps do not fit side by side, B − A goes below.
  const float signed_cell = heatmapCellFor(fonts().small->CalcTextSizeA(fs, FLT_MAX, 0, "−.00").x);
  const float unsigned_cell = heatmapCellFor(fonts().small->CalcTextSizeA(fs, FLT_MAX, 0, ".00").x);
  if (names_size_ != fs) {
    names_size_ = fs;
    for (const bool numbered : {false, true})
      names_w_[numbered] = std::max(widestAxisName(a.tokens(), 0, a.tokenCount(), numbered, fs),
                                    widestAxisName(b->tokens(), 0, b->tokenCount(), numbered, fs));
  }
  const float label_w = names_w_[0];
  // The row names' band: up to 90 px, or 40 where that keeps a row's maps side by side in view
  // (fitRowWhole, below); where the rows are thinned, as wide as their names with their positions
  // (a 58-token A named rows 20, 30 … ".", "n", "H": which they were, only the Heatmaps tab said).
  const float left_most = std::min(label_w, px(90)) + px(4), left_least = std::min(label_w, px(40)) + px(4);
  const float left_numbered = std::min(names_w_[1], px(90)) + px(4);
  const float title_h = ImGui::GetTextLineHeight();
  // Under the cells: the colorbar, and B − A's legend on a line of its own where the bar is narrow.
  const float bar_bottom = heatmapColorbarHeight() + std::max(0.0f, fs + 2 - px(4));
  const std::string delta_legend = "blue: B < A · red: B > A";
  const float visible_h = ImGui::GetWindowHeight();
  const int selected = std::clamp(view.token, 0, std::max(0, b->tokenCount() - 1));
  float largest = -1;
  // Rows whose maps are equal: a line each, no maps, after the rows that changed (dropout's four
  // unchanged stages above its masks had filled the view at 1280 × 720 and 200 %).
  std::vector<std::string> unchanged, unchanged_lines;
  std::string largest_where;
  for (const CompareRow& row : rows) {
    CompareRow row_a = row;  // A's side of it
    row_a.head = row.head_a;
    const StageMap va = rowValues(a, row_a), vb = rowValues(*b, row);
    const Eigen::Index R = std::max(va.rows(), vb.rows()),
                       C = std::max<Eigen::Index>(std::max(va.cols(), vb.cols()), 1);
    // Maps small enough to show every cell's number, within the cap on their cells below.
    const auto numbered = [](Eigen::Index rows, Eigen::Index cols) { return rows <= 12 && cols <= 64; };
    const bool labelled = numbered(R, C);
    const bool tokens_cols = !row.module && stageInfo(row.stage).square;
    const bool token_rows = row.module ? !moduleMapInfo(row.map).parameter : !stageInfo(row.stage).parameter;
    // A, B and B − A; maps of different shapes have no B − A, and A and B then stand side by side —
    // but a text's maps with tokens inserted or removed, whose B − A (B's shape) compares the cells
    // of the tokens both have.
    const bool aligned = alignable(va, vb, token_rows, tokens_cols);
    const int maps = (va.rows() == vb.rows() && va.cols() == vb.cols()) || aligned ? 3 : 2;
    // Room for the numbers of all three: B − A is signed whatever A and B are (A's and B's weights
    // had shown theirs at 28-px cells beside a B − A of none), and a value too small for two
    // decimals prints as "−7e−4", wider than "−.00" (a seed's B − A has many). (Measured for the
    // longest such label only: a tiny label's width is its length's.)
    const bool negative = maps == 3 || rowRange(a, row_a).lo < 0 || rowRange(*b, row).lo < 0 || flagsRow(row);
    float label_cell = negative ? signed_cell : unsigned_cell;
    std::string longest;
    const auto longestTiny = [&](const StageMap& m, const std::function<bool(int, int)>& blank) {
      for (Eigen::Index i = 0; i < m.rows(); ++i)
        for (Eigen::Index j = 0; j < m.cols(); ++j)
          if (const float v = m(i, j); !std::isinf(v) && std::fabs(v) < 0.005f && v != 0 &&
                                       !(blank && blank(static_cast<int>(i), static_cast<int>(j))))
            if (std::string text = cellLabel(v, CellFormat::Compact); text.size() > longest.size())
              longest = std::move(text);
    };
    if (labelled && !flagsRow(row)) {
      longestTiny(va, nullptr), longestTiny(vb, nullptr);
      // (A small map's difference: worked out now, once; the cache serves its drawing below.)
      if (maps == 3)
        if (const auto d = difference(row.head_a, row.head, row.key(), va, vb, token_rows, tokens_cols); d->comparable)
          longestTiny(StageMap(d->delta), [&d](int i, int j) { return d->blank(i, j) != 0; });
    }
    if (!longest.empty())
      label_cell = std::max(label_cell,
                            heatmapCellFor(fonts().small->CalcTextSizeA(fs, FLT_MAX, 0, longest.c_str()).x));
    // The column labels' band above the cells: across where every label fits its cell, else upright.
    float col_w = tokens_cols ? label_w : 0;
    if (!tokens_cols)
      for (const auto& [s, head] : {std::pair<const Snapshot*, int>{&a, row.head_a}, {b, row.head}}) {
        const std::vector<std::string>& dims = dimsOf(*s, row.module, head);
        for (std::size_t j = 0; j < dims.size() && j < static_cast<std::size_t>(C); ++j)
          col_w = std::max(col_w, fonts().small->CalcTextSizeA(fs, FLT_MAX, 0, dims[j].c_str()).x);
      }
    // Upright names take up to 48 px, or up to the rows' band's 90 where the row's maps are as large
    // with them (bound by the width: "Ġtomor…" had stood over 80 px of room below the maps).
    const float across = title_h + fs + px(4), upright_least = title_h + std::min(col_w, px(48)) + px(6),
                upright_whole = title_h + std::min(col_w, px(90)) + px(6);
    float upright = upright_least;
    const auto labelsTop = [&](float cell) { return C > 1 && col_w + 6 > cell ? upright : across; };
    float left = left_most;
    // The colorbars below the cells, or beside each map (`right`: its band) where that makes them
    // larger: at 1280 × 720 and 200 % a trained model's A, B and B − A were 122-px maps, a bar, its
    // labels and B − A's two legend lines under each taking 90 px of a row short of height, and
    // 180 px of each tile's width empty. Beside, B − A's legend stays below its cells.
    bool beside = false;
    float right = 0, under = bar_bottom;  // the band beside a map's cells; below them, before a legend's lines
    float bottom = bar_bottom;  // B − A's legend on a second line where its tile is narrow: below
    const float rows_f = static_cast<float>(R), cols_f = static_cast<float>(C);
    const float cap = labelled ? label_cell * 2 : FLT_MAX;  // numbers' cells: no larger than twice theirs
    // A map is readable from 96 px of the screen on its longer side (the grid's least map in a row:
    // 16-px cells for the book's 6 tokens); in a row that scrolls, from 64.
    const float longer = std::max(rows_f, cols_f);
    const auto readable = [&](float cell) { return cell * longer >= 96; };
    const auto tileW = [&](int per_line) {
      return (avail_w - static_cast<float>(per_line - 1) * gap) / static_cast<float>(per_line);
    };
    // A and B of the same tokens (and B − A, theirs): the rows' names only left of a line's first map,
    // as plots sharing an axis (three bands of "starts" had taken 255 of 585 px at 1280 × 720 and
    // 200 %: the book's 6 × 6 maps drawn at 14-px cells, no numbers).
    const bool share_rows = maps == 3 && !aligned && (token_rows ? same_tokens_ : same_dims_);
    const float shared_left = px(4);         // the band of a map without names (drawHeatmap's)
    const auto cellsW = [&](int per_line) {  // the width of each map's cells
      if (!share_rows) return tileW(per_line) - left - right;
      const float n = static_cast<float>(per_line);
      return (avail_w - (n - 1) * (gap + shared_left) - left) / n - right;
    };
    const auto tileWidth = [&](int per_line, int side) {  // side's tile: its band of names, its cells
      return share_rows ? cellsW(per_line) + right + (side % per_line == 0 ? left : shared_left) : tileW(per_line);
    };
    struct Fit {
      int per_line = 1;
      float cell = 0;
    };
    // The row's maps `per_line` side by side: the largest cells the width allows, and those with
    // which the row — its line, then its maps (`whole`: with their colorbars) — is in the view.
    const auto cellWide = [&](int per_line) { return std::min(cap, cellsW(per_line) / cols_f); };
    const auto cellTall = [&](int per_line, float line_h, bool whole) {
      const int lines = (maps + per_line - 1) / per_line;
      const float h = (visible_h - line_h) / static_cast<float>(lines) - gap - (whole ? bottom : 0);
      const float wide = (h - across) / rows_f;  // labels across where they fit such cells, else upright
      return C == 1 || wide >= col_w + 6 ? wide : (h - upright) / rows_f;
    };
    // Where the row's maps go, the first of: numbers on every map, all of them in view, as many side
    // by side as that allows; all in view whole and readable, the largest; their cells in view (the
    // colorbars below the fold), the largest; the view scrolling, as many side by side as are 64 px
    // wide, 96 px where the width allows; one a line. At 1280 × 800 and 175 % a trained model's
    // 45-token B − A had stood under A, below the fold, as A and B took the width (and at 200 % they
    // were cut too); the book's numbers kept with B − A below the fold had the same effect.
    const auto fitRow = [&](float line_h) {
      if (labelled)
        for (int p = maps; p >= 1; --p)
          if (const float c = std::min(cellWide(p), cellTall(p, line_h, true)); c >= label_cell) return Fit{p, c};
      for (const bool whole : {true, false}) {
        Fit best;
        for (int p = maps; p >= 1; --p)
          if (const float c = std::min(cellWide(p), cellTall(p, line_h, whole)); readable(c) && c > best.cell)
            best = {p, c};
        if (best.cell > 0) return best;
      }
      for (int p = maps; p >= 1; --p)
        if (cellWide(p) * longer >= 64) return Fit{p, std::min(cellWide(p), 96 / longer)};
      return Fit{1, std::max(0.05f, std::min(cellWide(1), std::max(cellTall(1, line_h, true), 0.05f)))};
    };
    const auto rowHeight = [&](const Fit& f, float line_h) {
      const int lines = (maps + f.per_line - 1) / f.per_line;
      return line_h + static_cast<float>(lines) * (labelsTop(f.cell) + f.cell * rows_f + bottom + gap);
    };
    // B − A's legend in two lines where its tile is narrower than it ("blue: B < A" over "red: B >
    // A"; at 1280 × 800 and 150 % it was cut to "blue: B < …"), the row fitted again with their room
    // (drawHeatmap breaks it where one line from the tile's edge does not hold it).
    // Aligned maps' B − A says what its dark grey cells are (0 is light grey): the tokens B alone
    // has, and on the masked scores the cells masked in both (−∞ − −∞; the weights there are 0 in
    // both, a light grey 0, which "dark grey: masked" had misnamed).
    const bool b_own = aligned && b_own_;
    const bool masked_cells = !row.module && row.stage == Stage::MaskedScores;
    const std::string legend = !b_own ? delta_legend
                                      : delta_legend + (masked_cells ? " · dark grey: masked, or B's own tokens"
                                                                     : " · dark grey: B's own tokens");
    const int legend_most = b_own ? 3 : 2;
    const auto legendLines = [&](const Fit& f) {
      return maps == 3 ? heatmapLegendLines(legend, tileWidth(f.per_line, 2), legend_most).size() : std::size_t{1};
    };
    // The row fitted with room for as many lines as its legend then takes (a fit with the room may
    // set more maps a line, narrower, whose legend takes more lines: fitted again with those).
    const auto fitRowWithLegend = [&](float line_h) {
      std::size_t reserved = 1;
      Fit fit;
      for (int k = 0; k < legend_most; ++k) {
        bottom = under + static_cast<float>(reserved - 1) * (fs + 2);
        fit = fitRow(line_h);
        const std::size_t needed = legendLines(fit);
        if (needed <= reserved) break;
        reserved = needed;
      }
      bottom = under + static_cast<float>(legendLines(fit) - 1) * (fs + 2);  // wider: less of it needed
      return fit;
    };
    const auto fitRowNames = [&](float line_h) {  // … and its upright names whole where that costs nothing
      upright = upright_least;
      const Fit least = fitRowWithLegend(line_h);
      if (upright_whole <= upright_least || labelsTop(least.cell) != upright_least) return least;
      const float least_bottom = bottom;
      upright = upright_whole;
      const Fit whole = fitRowWithLegend(line_h);
      if (whole.per_line == least.per_line && whole.cell >= least.cell && rowHeight(whole, line_h) <= visible_h)
        return whole;
      upright = upright_least;
      bottom = least_bottom;
      return least;
    };
    // … and its row names in a narrower band where only that keeps A, B and B − A side by side,
    // readable, their cells in view (at 1280 × 800 and 175 % a 47-token Compare's "40 Ġrepresentation"
    // took 157 px of each tile: A and B stood at 96 px, B − A below the fold).
    bool numbered_rows = false;  // the fit's band holds the thinned rows' names with their positions
    const auto fitRowWhole = [&](float line_h) {
      left = left_most, numbered_rows = false;
      const Fit wide = fitRowNames(line_h);
      // Their cells in view at least (as fitRow's second choice), from 80 px: B − A beside A and B
      // a little under 96 px reads better than B − A below the fold (1280 × 720 and 200 %: 94 px).
      const auto together = [&](const Fit& f) {
        return f.per_line == maps && f.cell * longer >= 80 && rowHeight(f, line_h) - bottom <= visible_h;
      };
      if (together(wide) || left_least >= left_most) {
        // Thinned rows' names with their positions where that costs the cells at most numberedNamesShare (the
        // grid's rule) and keeps the maps a line as they were, side by side if they were.
        if (token_rows && wide.cell < fs + 1 && left_numbered > left_most) {
          left = left_numbered;
          const float wide_upright = upright, wide_bottom = bottom;
          const Fit numbered = fitRowNames(line_h);
          if (numbered.per_line == wide.per_line && numbered.cell >= numberedNamesShare(fs, wide.cell) * wide.cell &&
              (together(numbered) || !together(wide))) {
            numbered_rows = true;
            return numbered;
          }
          left = left_most, upright = wide_upright, bottom = wide_bottom;
        }
        return wide;
      }
      const float wide_upright = upright, wide_bottom = bottom;
      left = left_least;
      const Fit narrow = fitRowNames(line_h);
      if (together(narrow)) return narrow;
      // … or side by side at the cells that keep theirs in view, where the fit chose larger cells
      // two a line (1280 × 800, 175 %, the head statistics open: a 48-token B − A below the fold).
      if (const Fit side{maps, std::min(cellWide(maps), cellTall(maps, line_h, false))}; maps == 3 && together(side))
        return side;
      left = left_most, upright = wide_upright, bottom = wide_bottom;
      return wide;
    };
    // B − A's colours: coolwarm centred on 0, its largest |B − A| at the ends. Per row, each query's
    // changes show however small beside another's (GPT-2: one row's 0.25 would leave the rest white);
    // log has no meaning for signed differences.
    const auto deltaLook = [&](float max_abs) {
      MapLook look;
      look.colormap = Colormap::Coolwarm;
      look.scale = view.colour_scale == ColourScale::Row ? ColourScale::Row : ColourScale::Linear;
      look.range = max_abs > 0 ? ValueRange{-max_abs, max_abs} : ValueRange{-1, 1};
      return look;
    };
    // The band a colorbar beside the row's maps takes: the widest of A's, B's (on one range or each
    // its own) and B − A's (`max_abs`: its range), its legend below.
    const ValueRange range_a = rowRange(a, row_a), range_b = rowRange(*b, row);
    const auto bandWidth = [&](float max_abs) {
      float w = 0;
      for (const ValueRange& r : {merge(range_a, range_b), range_a, range_b})
        w = std::max(w, heatmapColorbarBeside(colouredBy(r, flagsRow(row), lookChoices(view)), 1, false).width);
      if (maps == 3) w = std::max(w, heatmapColorbarBeside(deltaLook(max_abs), 1, false).width);
      return w;
    };
    // The colorbars below the cells, or beside them where that makes the cells a tenth larger with as
    // many maps a line (and the cells as tall as the bar's end labels).
    const auto fitRowBar = [&](float line_h, float band) {
      const auto fitWith = [&](bool side) {
        beside = side, right = side ? band : 0;
        under = !side ? bar_bottom : maps == 3 ? px(6) + fs : px(4);
        return fitRowWhole(line_h);
      };
      const Fit below = fitWith(false);
      const auto below_state = std::tuple(beside, right, under, left, upright, bottom, numbered_rows);
      if (const Fit side = fitWith(true);
          side.per_line >= below.per_line && side.cell >= 1.1f * below.cell && side.cell * rows_f >= 2 * fs + px(4))
        return side;
      std::tie(beside, right, under, left, upright, bottom, numbered_rows) = below_state;
      return below;
    };
    const bool alike = alikeRanges(range_a, range_b);  // one colour scale serves both
    const std::string who = row.module              ? std::string("the module's ") + row.label()
                            : row.head_a != row.head ? "A's head " + std::to_string(row.head_a + 1) + " against B's head " +
                                                           std::to_string(row.head + 1) + ", " + row.label()
                                                     : "head " + std::to_string(row.head + 1) + "'s " + row.label();
    // Large rows out of view take their space only: their differences are worked out once scrolled
    // to. Small ones are laid out (not drawn) like the grid's, so the layout dump lists every map.
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    // Its line as a typical one wraps (the line itself is known only once its difference is).
    const std::string typical = who + ": largest |B − A| = 0.0000 at query 000 'token', key 000 'token', 00000 of " +
                                "the " + std::to_string(R * C) + " unmasked cells changed: 00000 masked (−∞) in B only";
    const auto lineHeight = [&](const std::string& text) {
      return ImGui::CalcTextSize(wrapAtSpaces(text, avail_w).c_str()).y + style.ItemSpacing.y;
    };
    if (R * C > kDumpCellsUpTo * 16) {
      const float line_h = lineHeight(typical);
      const ValueRange both = merge(range_a, range_b);  // B − A's range unknown yet: A's and B's span
      const float row_h = rowHeight(fitRowBar(line_h, bandWidth(both.hi - both.lo)), line_h);
      if (!ImGui::IsRectVisible(origin, ImVec2(origin.x + avail_w, origin.y + row_h))) {
        ImGui::Dummy(ImVec2(avail_w, row_h));
        continue;
      }
    }
    const std::shared_ptr<const MapDifference> d = difference(row.head_a, row.head, row.key(), va, vb, token_rows,
                                                              tokens_cols);
    std::string summary;
    if (va.size() == 0 || vb.size() == 0)
      summary = who + ": " + (va.size() == 0 ? "none in A" : "none in B");
    else if (!d->comparable)
      summary = who + ": A is " + std::to_string(va.rows()) + "×" + std::to_string(va.cols()) + ", B is " +
                std::to_string(vb.rows()) + "×" + std::to_string(vb.cols()) + " — no cell-by-cell difference; " +
                (alike ? "one colour scale for both" : "each coloured by its own range");
    else if (d->changed == 0)
      summary = who + (d->aligned ? ": the cells A and B share are unchanged, bit for bit"
                                  : ": unchanged (B = A, bit for bit)");
    else {
      // (Named only where some cell has a |B − A|: with none, row and col are −1.)
      std::string where;
      if (d->valuesChanged()) {
        const std::string r = tokenOr(*b, token_rows, d->row, b->dims),
                          c = tokenOr(*b, tokens_cols, d->col, dimsOf(*b, row.module, row.head));
        where = token_rows && tokens_cols ? "query " + r + ", key " + c : "(" + r + ", " + c + ")";
      }
      // Of a map a causal mask empties above its diagonal in A and in B (−∞ or 0 in both), the cells
      // on and below it: "62 of 121 cells changed" had counted 55 that cannot change.
      const bool emptied_above = !row.module && R == C && emptiedAboveDiagonal(ta.model, row.stage) &&
                                 emptiedAboveDiagonal(tb.model, row.stage);
      // Cells masked on one side only have no |B − A|: counted in words (switching the causal mask
      // on read "largest |B − A| = 0.0000 …, 15 of 36 cells changed", as if nothing had).
      summary = who + ": ";
      if (d->valuesChanged()) summary += "largest |B − A| = " + formatFixed(d->max_abs) + " at " + where + ", ";
      // Aligned: of the cells of the tokens both texts have (B's own have nothing to be against).
      summary += std::to_string(d->changed) + " of " +
                 (emptied_above ? "the " + std::to_string(d->compared_lower) + " unmasked cells"
                  : d->aligned  ? "the " + std::to_string(d->compared) + " cells"
                                : std::to_string(va.size()) + " cells") +
                 (d->aligned ? " A and B share" : "") + " changed";
      std::vector<std::string> masks;
      if (d->masked_in_b > 0) masks.push_back(std::to_string(d->masked_in_b) + " masked (−∞) in B only");
      if (d->masked_in_a > 0) masks.push_back(std::to_string(d->masked_in_a) + " masked (−∞) in A only");
      for (std::size_t k = 0; k < masks.size(); ++k) summary += (k == 0 ? ": " : ", ") + masks[k];
      if (d->valuesChanged() && d->max_abs > largest) largest = d->max_abs, largest_where = who + " at " + where;
    }
    // Wrapped at spaces (at 200 % its numbers were cut; ImGui's wrapping split "0.2620" after "0.").
    const std::string wrapped = wrapAtSpaces(summary, avail_w);
    // The Heatmaps tab shows it; the rows that changed matter here (aligned maps stay: B's own tokens
    // are news, and a causal model's rows before them unchanged is the point).
    if (d->comparable && d->changed == 0 && !d->aligned) {
      unchanged.push_back(row.id());
      unchanged_lines.push_back(wrapped);
      continue;
    }
    ImGui::TextUnformatted(wrapped.c_str());
    state["lines"].push_back(wrapped);
    const ImVec2 tiles = ImGui::GetCursorScreenPos();
    const Fit fit = fitRowBar(ImGui::CalcTextSize(wrapped.c_str()).y + style.ItemSpacing.y,
                              bandWidth(d->comparable ? d->max_abs : 0));
    const int per_line = fit.per_line, lines = (maps + per_line - 1) / per_line;
    const float cell = fit.cell, cells_top = labelsTop(cell);
    const float tile_h = cells_top + cell * rows_f + bottom;

    // A and B: one colour range over both, when their cells compare or their ranges are alike (the
    // same model's texts of other lengths: 0–0.57 beside 0–0.61 had read as the same yellow for
    // other values); else (GPT-2 against the book's six tokens) each its own, or the smaller would
    // be one flat colour.
    const bool shared = va.size() > 0 && vb.size() > 0 && (d->comparable || alike);
    auto look = [&](const Snapshot& s) {  // as the grid colours the map (display/map_look.h)
      const ValueRange r = shared ? merge(rowRange(a, row_a), rowRange(*b, row)) : rowRange(s, &s == &a ? row_a : row);
      return colouredBy(r, flagsRow(row), lookChoices(view));
    };
    const std::string base = std::string("b") + std::to_string(b->batch) +
                             (row.module ? "m" : "h" + std::to_string(row.head)) + row.id();
    float tile_x = tiles.x;
    for (int side = 0; side < 3; ++side) {
      if (side % per_line == 0) tile_x = tiles.x;
      const float tile_w = tileWidth(per_line, side);
      ImGui::SetCursorScreenPos(ImVec2(tile_x, tiles.y + static_cast<float>(side / per_line) * (tile_h + gap)));
      tile_x += tile_w + gap;
      const Snapshot& s = side == 0 ? a : *b;
      const StageMap& values = side == 0 ? va : vb;
      const int head = side == 0 ? row.head_a : row.head;
      HeatmapSpec spec;
      const char* which = side == 0 ? "A" : side == 1 ? "B" : "diff";
      spec.id = std::string("compare_") + which + "_" + base;
      spec.dump = {
          {"compare", which}, {"head", head}, {"stage", row.id()}, {"module", row.module}, {"batch", s.batch}};
      spec.row_labels = share_rows && side % per_line != 0 ? nullptr : token_rows ? &s.tokens() : &s.dims;
      spec.col_labels = tokens_cols ? &s.tokens() : &dimsOf(s, row.module, head);
      spec.token_rows = token_rows, spec.token_cols = tokens_cols;
      // B's token k on this side: on an aligned row's A, A's of the same token (−1: B's own).
      const std::vector<int>& a_of_b = token_difference_.a_of_b;
      const bool to_a = side == 0 && aligned;
      const auto here = [&](int k) { return to_a ? a_of_b[static_cast<std::size_t>(k)] : k; };
      spec.selected_row = token_rows && !ctx.capture.hides_selection ? here(selected) : -1;
      // The tokens A and B differ in, then the largest change's query and key, named whatever
      // the thinning ("Ġhe" of a 47-token text had no name in any of the three maps).
      const std::vector<int>& differing = side == 0 ? token_difference_.in_a : token_difference_.in_b;
      if (token_rows) spec.named_rows = differing;
      if (tokens_cols) spec.named_cols = differing;
      if (d->comparable && d->valuesChanged()) {  // (B's cell)
        if (token_rows) spec.named_rows.push_back(here(d->row));
        if (tokens_cols) spec.named_cols.push_back(here(d->col));
      }
      if (side < 2) {
        if (values.size() == 0) {
          ImGui::TextDisabled("%s: none", which);
          continue;
        }
        // Its size goes where the title would be cut ("A  weights  1…": the row's line says the
        // map, the size is what is left out).
        spec.title = std::string(which) + (row.head_a != row.head ? " head " + std::to_string(head + 1) : "") + "  " +
                     row.label();
        if (const std::string sized = spec.title + "  " + std::to_string(values.rows()) + "×" +
                                      std::to_string(values.cols());
            ImGui::CalcTextSize(sized.c_str()).x <= tile_w)
          spec.title = sized;
        spec.values = values;
        if (shared) spec.label_peers = {side == 0 ? vb : va};  // A's and B's numbers in one format
        spec.owner = side == 0 ? ctx.pinned : ctx.snapshot;
        spec.version = row.module ? s.outputs_serial : s.head_serial[static_cast<std::size_t>(head)];
        spec.look = look(s);
        if (values.size() <= kDumpCellsUpTo) spec.dump["values"] = cellsJson(values);
      } else {
        if (!d->comparable) continue;  // the row's line says why there is none
        spec.title = "B − A";          // its largest |Δ| is the row's line; its range, the colorbar's
        // Masked in both: nothing was subtracted. Masked in one only, "−∞" stays: the mask changed.
        // Aligned, B's own tokens' cells too: nothing to be against.
        spec.blank = [d](int i, int j) { return d->blank(i, j) != 0; };
        spec.values = StageMap(d->delta);
        spec.owner = d;
        spec.version = a.serial * 1000003u + b->serial;
        spec.look = deltaLook(d->max_abs);
        spec.look.legend = legend;  // (rows whose maps are equal show none)
        spec.legend_lines = legend_most;
        spec.legend_below = true;  // the bar's centre, 0, keeps its tick label (row's room: `bottom`)
        spec.dump["max_abs_delta"] = d->max_abs;
        spec.dump["argmax"] = {d->row, d->col};
        spec.dump["changed"] = d->changed;
        spec.dump["aligned"] = d->aligned;
        if (d->delta.size() <= kDumpCellsUpTo) spec.dump["values"] = cellsJson(StageMap(d->delta));
      }
      spec.colorbar_beside = beside;
      spec.cell = cell;            // the row's fit, the same in its three maps …
      if (numbered_rows) spec.name_positions = 1;
      spec.cells_top = cells_top;  // … and their cells level (A's tokens may be narrower than B's)
      if ((!d->comparable || d->aligned) && values.size() > 0) {
        // Maps of other shapes, side by side without B − A (or with B − A of B's shape, aligned): each as large as its
        // own shape lets it in the row's tile, within the cap on numbers' cells, not at the larger one's cells (a
        // 5-token B beside a 94-token A was a 40-px thumbnail in a tile of 700).
        const float own_rows = static_cast<float>(values.rows()), own_cols = static_cast<float>(values.cols());
        float own = std::min((tile_w - left - right) / own_cols, cell * rows_f / own_rows);
        if (numbered(values.rows(), values.cols())) own = std::min(own, label_cell * 2);
        spec.cell = std::max(cell, own);
      }
      if (flagsRow(row))           // 0/1 masks, and their difference −1, 0, +1: integers, as torch prints them
        spec.look.cell_text = [](float v) { return v > 0.5f ? std::string("1") : v < -0.5f ? "−1" : "0"; };
      const HeatmapHit hit = drawHeatmap(ctx.textures, spec, ImVec2(tile_w, tile_h));
      if (hit.clicked_row >= 0 && token_rows) {  // B's token (on an aligned A, B's of the same token)
        const auto at = std::find(a_of_b.begin(), a_of_b.end(), hit.clicked_row);
        const int index = to_a ? (at != a_of_b.end() ? static_cast<int>(at - a_of_b.begin()) : -1) : hit.clicked_row;
        if (index >= 0) ctx.commands.push("select_token", {{"index", index}});
      }
    }
    ImGui::SetCursorScreenPos(ImVec2(tiles.x, tiles.y + static_cast<float>(lines) * (tile_h + gap)));
    ImGui::Dummy(ImVec2(avail_w, 0));
  }
  for (const std::string& line : unchanged_lines) {
    ImGui::TextUnformatted(line.c_str());
    state["lines"].push_back(line);
  }
  if (rows.empty()) ImGui::TextDisabled("No maps shown: switch some on in the Heatmaps tab's header.");
  ImGui::EndChild();
  state["unchanged"] = unchanged;
  state["largest"] = largest;
  state["largest_where"] = largest_where;
}

}  // namespace attnscope
