#include "panels/heatmap_grid.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "formats/export.h"
#include "panels/head_statistics_panel.h"
#include "shell/capture.h"
#include "shell/fonts.h"
#include "widgets/heatmap.h"
#include "shell/layout_dump.h"
#include "widgets/text.h"
#include "shell/theme.h"

namespace attnscope {

namespace {

// The tooltip of cell (i, j): how the number came about.
std::string describeCell(const Snapshot& snap, const HeadTrace& h, Stage stage, int i, int j) {
  const Trace& t = *snap.trace;
  const auto& tok = snap.tokens();
  const std::string q = tok[i], k = stage == Stage::Context ? "" : tok[j];
  std::string s;
  auto at = [&](Stage st) { return StageMap(t, h, st)(i, j); };  // the cell in another stage
  const bool masked = at(Stage::Mask) > 0.5f;
  switch (stage) {
    case Stage::Scores: {
      s = "score(" + q + " → " + k + ") = q" + std::to_string(i + 1) + " · k" + std::to_string(j + 1);
      if (t.head_width <= 4) {
        s += "\n= ";
        for (int d = 0; d < t.head_width; ++d)
          s += (d ? " + " : "") + formatFixed(h.queries(i, d)) + "·" + formatFixed(h.keys(j, d));
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
        s = formatFixed(h.scores(i, j)) + " ÷ √" + std::to_string(t.head_width) + " (" +
            formatFixed(t.scale_divisor) + ") = " + formatFixed(at(Stage::ScaledScores));
      else
        s = "no scaling: " + formatFixed(at(Stage::ScaledScores));
      break;
    case Stage::MaskedScores:
      if (masked)
        s = "'" + k + "' comes after '" + q + "': masked to −∞,\nso softmax gives it weight 0";
      else
        s = "'" + k + "' is visible to '" + q + "': the score stays " + formatFixed(at(Stage::MaskedScores));
      break;
    case Stage::Weights:
      if (t.model.normalization == Normalization::Sum)
        s = formatFixed(at(Stage::ScaledScores)) + " ÷ row sum = " + formatFixed(h.weights(i, j));
      else if (masked)
        s = "softmax of −∞ = 0 (masked)";
      else
        s = "score q" + std::to_string(i + 1) + "·k" + std::to_string(j + 1) + " = " + formatFixed(h.scores(i, j)) +
            (t.model.scale == Scale::SqrtDk ? "\n÷ √" + std::to_string(t.head_width) + " → " + formatFixed(at(Stage::ScaledScores)) : "") +
            "\nsoftmax over the row of '" + q + "':\nexp(" + formatFixed(at(Stage::ScaledScores)) + " − row max) ÷ Σ exp(…) = " +
            formatFixed(h.weights(i, j));
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
        s = formatFixed(h.weights(i, j)) + " × " + formatFixed(t.dropout_scale, 3) + " = " + formatFixed(at(Stage::DroppedWeights));
      else
        s = formatFixed(h.weights(i, j)) + " dropped → 0";
      break;
    case Stage::WQuery:
    case Stage::WKey:
    case Stage::WValue: {
      const char* name = stage == Stage::WQuery ? "W_query" : stage == Stage::WKey ? "W_key" : "W_value";
      const char* out = stage == Stage::WQuery ? "q" : stage == Stage::WKey ? "k" : "v";
      s = std::string(name) + "[d" + std::to_string(i) + ", " + std::to_string(j) + "] = " +
          formatFixed(StageMap(t, h, stage)(i, j)) + ":\nhow much input dimension d" + std::to_string(i) +
          " adds to " + out + "[" + std::to_string(j) + "] of every token";
      break;
    }
    case Stage::Queries:
    case Stage::Keys:
    case Stage::Values: {
      const Matrix& m = stage == Stage::Queries ? h.queries : stage == Stage::Keys ? h.keys : h.values;
      const char* v = stage == Stage::Queries ? "q" : stage == Stage::Keys ? "k" : "v";
      s = std::string(v) + std::to_string(i + 1) + "[" + std::to_string(j) + "] = " + formatFixed(m(i, j)) +
          (t.model.variant == Variant::Simple ? "\n(simple attention: the input x" + std::to_string(i + 1) + " itself)"
                                              : "\n= x" + std::to_string(i + 1) + " · column " + std::to_string(j) + " of this head's W");
      break;
    }
    case Stage::Mask:
      s = masked ? "1: '" + k + "' comes after '" + q + "', hidden" : "0: '" + k + "' is visible to '" + q + "'";
      break;
    case Stage::Context:
      s = "context z" + std::to_string(i + 1) + "[" + std::to_string(j) + "] = Σₖ αₖ·v_k[" +
          std::to_string(j) + "] = " + formatFixed(h.context(i, j));
      break;
  }
  if (stage == Stage::Weights || stage == Stage::DroppedWeights) {  // the row's head statistics (issue 12)
    const std::string row = rowStatisticsText(snap, h.index, i, stage == Stage::DroppedWeights);
    if (!row.empty()) s += "\n\n" + row;
  }
  return s;
}

std::string stageHeading(const Trace& t, Stage s) {
  const std::string n = std::to_string(t.tokens);
  const std::string tt = "  " + n + "×" + n;
  switch (s) {
    case Stage::ScaledScores:
      return t.model.scale == Scale::SqrtDk ? "scaled  ÷ √" + std::to_string(t.head_width) + tt
                                            : "scaled: none" + tt;
    case Stage::MaskedScores:
      return t.model.causal ? std::string("masked  −∞ above the diagonal") + tt : "mask: none (not causal)" + tt;
    case Stage::DropoutMask:
      return t.dropout_active ? "dropout mask  p = " + formatFixed(static_cast<float>(t.model.dropout), 2) + tt
                              : "dropout mask: off" + tt;
    case Stage::Weights:  // the step's own normalization, not always softmax
      return (t.model.normalization == Normalization::Sum ? std::string("weights  ÷ row sum") : std::string("weights (softmax)")) + tt;
    case Stage::Context:
    case Stage::Queries:
    case Stage::Keys:
    case Stage::Values:
      if (t.model.variant == Variant::Simple && s != Stage::Context)
        return std::string(stageInfo(s).label) + " = X  " + n + "×" + std::to_string(t.head_width);
      return std::string(stageInfo(s).title) + "  " + n + "×" + std::to_string(t.head_width);
    case Stage::WQuery:
    case Stage::WKey:
    case Stage::WValue: {  // as X·W uses it; of multihead's one projection, this head's columns
      std::string heading = std::string(stageInfo(s).title) + "  " + std::to_string(t.d_in) + "×" + std::to_string(t.head_width);
      if (t.model.variant == Variant::MultiHead && t.heads > 1) heading += "  (this head's columns)";
      else if (t.model.variant != Variant::SelfAttentionV1) heading += "  (.weightᵀ)";
      return heading;
    }
    default:
      return stageInfo(s).title + tt;
  }
}

// The heading of one of the module's maps.
std::string moduleHeading(const Trace& t, const BatchTrace& bt, ModuleMap m) {
  const std::string n = std::to_string(t.tokens);
  switch (m) {
    case ModuleMap::Concat:
      return "context  " + std::to_string(t.heads) + " heads concatenated  " + n + "×" + std::to_string(bt.context.cols());
    case ModuleMap::OutProj:
      return "out_proj  " + std::to_string(t.model.d_out) + "×" + std::to_string(t.model.d_out) + "  (.weightᵀ)";
    case ModuleMap::Output:
      return std::string(hasOutProj(t.model.variant) ? "output  out_proj(context)  " : "output  = the context  ") + n + "×" +
             std::to_string(bt.output.cols());
  }
  return "";
}

// Why a module map is not there in this configuration, or nullptr.
const char* missingModuleMap(const Trace& t, ModuleMap m) {
  if (m == ModuleMap::Concat && t.heads < 2) return "concatenation";
  if (m == ModuleMap::OutProj && !hasOutProj(t.model.variant)) return "out_proj";
  return nullptr;
}

// Up to this many tokens an edit's changed cells are outlined.
constexpr int kOutlinedTokens = 64;

// The cells whose values differ bit for bit (same shapes, else none).
std::vector<std::pair<int, int>> changedCells(const StageMap& before, const StageMap& now) {
  std::vector<std::pair<int, int>> out;
  if (before.rows() != now.rows() || before.cols() != now.cols()) return out;
  for (Eigen::Index i = 0; i < now.rows(); ++i)
    for (Eigen::Index j = 0; j < now.cols(); ++j) {
      const float a = before(i, j), b = now(i, j);
      if (std::memcmp(&a, &b, sizeof a) != 0) out.emplace_back(static_cast<int>(i), static_cast<int>(j));
    }
  return out;
}

// Up to this many tokens, every map shows its numbers (the book's examples have 6).
constexpr int kAlwaysLabelledTokens = 12;

// A dropout mask's cell: the factor a kept weight is multiplied by, or 0.
std::string dropoutCellText(const Trace& t, float kept) {
  return kept > 0.5f ? (t.dropout_active ? "×" + formatFixed(t.dropout_scale, 1) : "1") : "0";
}

// How a map is coloured and labelled: the grid draws it so, and its figures follow.
struct MapLook {
  ValueRange range;                             // the colours span this …
  Colormap colormap = Colormap::Viridis;        // … of this map
  ColourScale scale = ColourScale::Linear;      // … on this scale
  std::function<std::string(float)> cell_text;  // a mask's labels; empty: the cell-label policy
  std::array<std::string, 2> range_text;        // the colorbar's ends in words; empty: the numbers
  std::string legend;                           // a line under the colorbar
};

// The view's colours for values in `range`: coolwarm centred on 0 when they are signed.
MapLook colouredBy(const ViewState& view, ValueRange range, bool flags) {
  MapLook look;
  look.range = range;
  look.colormap = view.colormap;
  look.scale = flags ? ColourScale::Linear : view.colour_scale;  // a 0/1 mask reads the same on any scale
  if (view.diverging_for_signed && !flags && range.lo < 0) {
    look.colormap = Colormap::Coolwarm;
    look.range = centredOnZero(range);
  }
  return look;
}

// A head's map: its own range, or the stage's across heads with a shared scale.
MapLook stageLook(const Snapshot& snap, const ViewState& view, Stage stage, int head) {
  const Trace& t = *snap.trace;
  // Locked: the ranges of the result on screen when the lock was set (so a small change looks small).
  const bool locked = view.lock_range && static_cast<std::size_t>(t.heads) <= view.locked_heads.size();
  const auto& ranges = locked ? view.locked_heads : snap.ranges;
  ValueRange range = ranges[static_cast<std::size_t>(head)][static_cast<int>(stage)];
  if (view.shared_scale)
    for (int o = 0; o < t.heads; ++o) range = merge(range, ranges[static_cast<std::size_t>(o)][static_cast<int>(stage)]);
  MapLook look = colouredBy(view, range, stageInfo(stage).flags);
  if (stage == Stage::DropoutMask) {
    look.cell_text = [&t](float v) { return dropoutCellText(t, v); };
    look.range_text = {"dropped 0", t.dropout_active ? "kept ×" + formatFixed(t.dropout_scale, 2) : "kept 1"};
  } else if (stage == Stage::Mask) {  // 0/1, as torch.triu(…, diagonal=1) prints it
    look.cell_text = [](float v) { return std::string(v > 0.5f ? "1" : "0"); };
    look.range_text = {"0 visible", "1 masked"};
  } else if ((stage == Stage::MaskedScores || stage == Stage::ScaledScores) && t.model.causal) {
    look.legend = "▨ −∞ masked";
  }
  return look;
}

MapLook moduleLook(const Snapshot& snap, const ViewState& view, ModuleMap map) {
  const bool locked = view.lock_range && !view.locked_heads.empty();
  return colouredBy(view, (locked ? view.locked_module : snap.module_ranges)[static_cast<int>(map)], false);
}

void applyLook(HeatmapSpec& spec, MapLook look) {
  spec.range = look.range;
  spec.colormap = look.colormap;
  spec.scale = look.scale;
  spec.cell_text = std::move(look.cell_text);
  spec.range_text = std::move(look.range_text);
  spec.legend = std::move(look.legend);
}

// A lesson step names the maps it is about: the others recede.
bool dimmedByLesson(const ViewState& view, const char* id) {
  return !view.highlight.empty() && std::find(view.highlight.begin(), view.highlight.end(), id) == view.highlight.end();
}

struct Arrangement {
  int card_cols = 1, stage_cols = 1;
  float cell = 0;  // side of a heatmap cell in pixels
};

// Space around a map's cells: labels on the left, title and labels on top, colorbar below.
struct Margins {
  float left, top, bottom;
};

// Tiles H cards of S maps (rows × cols cells) into width × height so the cells are as large as
// possible; when even the best is tiny the grid keeps a readable size and scrolls. Cells are at
// least `min_cell` (their numbers must fit): then as many maps per row as the width holds, as
// large as the width allows up to `full_cell` (where the notebook's four decimals fit), and the
// grid scrolls down.
Arrangement arrange(int H, int S, int rows, int cols, float width, float height, float header,
                    float gap, Margins m, float min_cell, float full_cell) {
  Arrangement best;
  for (int c = 1; c <= H; ++c)
    for (int s = 1; s <= S; ++s) {
      const int r = (S + s - 1) / s, R = (H + c - 1) / c;
      const float tile_w = width / (c * s) - gap - m.left;
      const float tile_h = (height - R * header) / (R * r) - gap - m.top - m.bottom;
      const float cell = std::min(tile_w / cols, tile_h / rows);
      if (cell > best.cell) best = {c, s, cell};
    }
  if (best.cell < min_cell) {
    const int per_row = std::max(1, static_cast<int>((width + gap) / (min_cell * cols + m.left + gap)));
    if (per_row >= S) {  // whole cards side by side
      best = {std::max(1, std::min(H, per_row / S)), S, min_cell};
    } else {
      best = {1, per_row, min_cell};
    }
    const float fill = (width / (best.card_cols * best.stage_cols) - gap - m.left) / cols;
    best.cell = std::max(min_cell, std::min({fill, full_cell, px(72)}));
    return best;
  }
  const float min_map = px(96);  // below this, scroll rather than shrink
  if (best.cell * std::max(rows, cols) < min_map) {  // as many maps of that size as the width holds
    const int per_row = std::clamp(static_cast<int>((width + gap) / (min_map + m.left + gap)), 1, S);
    best = {1, per_row, 0};
    best.cell = std::max((width / per_row - gap - m.left) / cols, min_map / std::max(rows, cols));
  }
  best.cell = std::min(best.cell, px(72));  // a 1-token map need not fill the screen
  return best;
}

// The window of cells every map shows at the current zoom (linked across maps, so the same
// query and key rows stay side by side from scores to weights).
CellWindow zoomWindow(float zoom, float center_row, float center_col, int T) {
  CellWindow w;
  if (zoom <= 1) return w;
  const int n = std::clamp(static_cast<int>(std::ceil(T / zoom)), std::min(T, HeatmapGrid::kMinZoomCells), T);
  const float cr = center_row < 0 ? T / 2.0f : center_row;
  const float cc = center_col < 0 ? T / 2.0f : center_col;
  w.rows = w.cols = n;
  w.row0 = std::clamp(static_cast<int>(std::lround(cr - n / 2.0f)), 0, T - n);
  w.col0 = std::clamp(static_cast<int>(std::lround(cc - n / 2.0f)), 0, T - n);
  return w;
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

// The next item, `width` pixels wide, beside the last one while it fits the window, else on a new
// line (a narrow main area, a large text size).
void besideIfFits(float width) {
  if (ImGui::GetItemRectMax().x + ImGui::GetStyle().ItemSpacing.x + width <=
      ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x)
    ImGui::SameLine();
}

// Whether stage s means something for this configuration: others would repeat their neighbour.
const char* missingStage(const Trace& t, Stage s) {
  if (stageInfo(s).parameter && t.model.variant == Variant::Simple) return "projection weights";
  if (s == Stage::ScaledScores && t.model.scale == Scale::None) return "scaling";
  if (s == Stage::MaskedScores && !t.model.causal) return "mask";
  if ((s == Stage::DropoutMask || s == Stage::DroppedWeights) && !t.dropout_active) return "dropout";
  return nullptr;
}

// Every map one click away: a toggle per column of the grid, in the notebook's order, wrapped to
// the width. A map this step lacks is greyed, its tooltip says why.
void drawColumnToggles(const ViewState& v, CommandQueue& cmd, const Trace* t) {
  const ImGuiStyle& style = ImGui::GetStyle();
  const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  ImGui::PushStyleVar(ImGuiStyleVar_FramePadding, ImVec2(style.FramePadding.x * 0.6f, 1));
  ImGui::PushStyleVar(ImGuiStyleVar_ItemSpacing, ImVec2(px(3), style.ItemSpacing.y));
  ImGui::TextDisabled("maps");
  int group = -1;
  for (const GridColumn& c : gridColumns()) {
    // Groups: the weights, Q K V, the attention maps, the module's maps.
    const Stage st = static_cast<Stage>(c.index);
    const int g = !c.per_head ? 3 : stageInfo(st).parameter ? 0 : st <= Stage::Values ? 1 : 2;
    const float w = ImGui::CalcTextSize(c.label).x + ImGui::GetStyle().FramePadding.x * 2;
    const float gap = g != group ? px(10) : 0;
    if (ImGui::GetItemRectMax().x + gap + w + px(3) <= right)
      ImGui::SameLine(0, px(3) + gap);
    group = g;
    const char* missing = !t ? nullptr : c.per_head ? missingStage(*t, st) : missingModuleMap(*t, static_cast<ModuleMap>(c.index));
    const bool on = v.shows(c);
    ImGui::PushStyleColor(ImGuiCol_Button, on ? style.Colors[ImGuiCol_ButtonActive] : style.Colors[ImGuiCol_FrameBg]);
    if (missing) ImGui::PushStyleColor(ImGuiCol_Text, style.Colors[ImGuiCol_TextDisabled]);
    const std::string id = std::string(c.label) + "##col_" + c.id;
    if (ImGui::Button(id.c_str())) cmd.push("view", {{"field", "columns"}, {"value", columnsWith(v, c.id, !on)}});
    if (missing) ImGui::PopStyleColor();
    ImGui::PopStyleColor();
    layout().widget(std::string("column_") + c.id);
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("%s%s%s", c.title, on ? " (shown: click to hide)" : " (click to show)",
                        missing ? (std::string("\nnot in this step: no ") + missing).c_str() : "");
  }
  ImGui::PopStyleVar(2);
}

void drawHeader(const PanelContext& ctx, const ModelConfig& m, int shown_batch, const Trace* t) {
  const ViewState& v = ctx.view;
  CommandQueue& cmd = ctx.commands;
  const int heads = headCount(m);
  const ImGuiStyle& style = ImGui::GetStyle();
  const float shared_w = ImGui::GetFrameHeight() + style.ItemInnerSpacing.x + ImGui::CalcTextSize("shared scale").x;
  const float batch_w = px(110) + style.ItemInnerSpacing.x + ImGui::CalcTextSize("batch element").x;
  if (heads > 1) {
    ImGui::SetNextItemWidth(px(130));
    const std::string current = v.head < 0 ? "all heads" : "head " + std::to_string(v.head + 1);
    if (ImGui::BeginCombo("##head", current.c_str())) {
      if (ImGui::Selectable("all heads", v.head < 0)) cmd.push("select_head", {{"index", -1}});
      for (int h = 0; h < heads; ++h)
        if (ImGui::Selectable(("head " + std::to_string(h + 1)).c_str(), v.head == h)) cmd.push("select_head", {{"index", h}});
      ImGui::EndCombo();
    }
    layout().widget("head");
    besideIfFits(m.batch_size > 1 ? batch_w : shared_w);
  }
  if (m.batch_size > 1) {
    ImGui::SetNextItemWidth(px(110));
    int b = shown_batch + 1;  // the trace keeps only the shown element's intermediates: a recompute
    if (ImGui::SliderInt("batch element", &b, 1, m.batch_size) && b - 1 != v.batch)
      cmd.push("select_batch", {{"index", b - 1}});
    layout().widget("batch_element");
    if (heads > 1) besideIfFits(shared_w);
  }
  // One range per kind of map across heads: nothing to share with one head, and a line of the
  // header saved for the maps at 1280 × 720 and large text.
  if (heads > 1) {
    bool shared = v.shared_scale;
    if (ImGui::Checkbox("shared scale", &shared)) cmd.push("view", {{"field", "shared_scale"}, {"value", shared}});
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("One colour range per kind of map across all heads, so heads compare directly");
    layout().widget("shared_scale");
  }
  if (ctx.computing) {  // the maps on screen stay whole until the newer result replaces them
    if (heads > 1 || m.batch_size > 1) ImGui::SameLine();
    ImGui::TextDisabled("computing…");
  }
  drawColumnToggles(v, cmd, t);
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
    if (s.heatmap && v.show[static_cast<int>(s.stage)] && why && out.find(why) == std::string::npos) out += (out.empty() ? "" : ", ") + std::string(why);
  }
  return out;
}

// One line of notes under the header: the preset's description (in full on hover), zoom, where
// dropout masks come from, and the maps this step has none of.
// Returns true when "reset zoom" was pressed.
bool drawNotes(const Snapshot& snap, float zoom, CellWindow w, const std::string& skipped) {
  const Trace& t = *snap.trace;
  bool reset = false;
  std::vector<std::string> notes;
  if (zoom <= 1 && t.tokens > 24) notes.push_back("wheel over a map: zoom · right-drag: pan");
  if (t.dropout_active) notes.push_back("dropout masks: PyTorch's CPU generator, Debian build (no MKL)");
  if (!skipped.empty()) notes.push_back("no " + skipped + " in this step");
  const nlohmann::json& view = snap.inputs->view;
  const std::string about = view.contains("preset") && view["preset"].is_object() ? view["preset"].value("description", "") : "";
  if (zoom > 1) {
    ImGui::Text("zoom ×%.1f: queries %d–%d, keys %d–%d", zoom, w.row0 + 1, w.row0 + w.rows, w.col0 + 1, w.col0 + w.cols);
    ImGui::SameLine();
    reset = ImGui::SmallButton("reset zoom");
    layout().widget("reset_zoom");
    ImGui::SameLine(0, px(16));
  }
  std::string line;
  for (const std::string& n : notes) line += (line.empty() ? "" : "  ·  ") + n;
  if (!about.empty()) line = about + (line.empty() ? "" : "  ·  " + line);
  layout().state()["grid_notes"] = line;  // tests: the preset's note is there, or gone
  if (line.empty()) return reset;
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

// The module's card: its maps (the concatenated context, out_proj's weight, the output) as the
// n-th card of the grid, in tiles of the heads' size.
void drawModuleCard(const PanelContext& ctx, const Snapshot& snap, const std::vector<ModuleMap>& maps, int n,
                    const Arrangement& a, float card_w, float card_h, float tile_w, float tile_h, float left_margin,
                    float header, float gap, ImVec2 grid_origin) {
  const Trace& t = *snap.trace;
  const BatchTrace& bt = snap.shown();
  const ViewState& view = ctx.view;
  const ImVec2 card(grid_origin.x + (n % a.card_cols) * card_w, grid_origin.y + (n / a.card_cols) * card_h);
  ImGui::SetCursorScreenPos(card);
  ImGui::Text("The module: %s%s", variantTitle(t.model.variant),
              t.model.batch_size > 1 ? ("  ·  batch element " + std::to_string(snap.batch + 1)).c_str() : "");
  // The maps are narrow (d_out columns): each tile as wide as its cells and title need, side by
  // side across the card's row of the grid.
  const float row_w = (n % a.card_cols == 0 ? a.card_cols : 1) * card_w;
  float x = 0, y = 0;
  for (std::size_t k = 0; k < maps.size(); ++k) {
    const ModuleMapInfo& info = moduleMapInfo(maps[k]);
    const std::string title = moduleHeading(t, bt, info.map);
    const StageMap values = moduleMapValues(t, bt, info.map);
    const float w = std::min(tile_w, std::max(a.cell * values.cols() + left_margin, ImGui::CalcTextSize(title.c_str()).x + px(8)));
    if (x > 0 && x + w > row_w) x = 0, y += tile_h + gap;
    ImGui::SetCursorScreenPos(ImVec2(card.x + x, card.y + header + y));
    x += w + gap;
    HeatmapSpec spec;
    spec.id = std::string("b") + std::to_string(snap.batch) + "m" + info.id;
    spec.title = title;
    spec.values = values;
    applyLook(spec, moduleLook(snap, view, info.map));
    spec.row_labels = info.parameter ? &snap.dims : &snap.tokens();
    spec.col_labels = &snap.dims;
    spec.selected_row = info.parameter || captureHidesSelection() ? -1 : std::clamp(view.token, 0, snap.tokenCount() - 1);
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
    const HeatmapHit hit = drawHeatmap(spec, ImVec2(w, tile_h));
    if (hit.clicked_row >= 0 && !info.parameter) ctx.commands.push("select_token", {{"index", hit.clicked_row}});
  }
}

}  // namespace

void HeatmapGrid::goTo(int first, int last, int T) {
  const int n = std::max(last - first + 1, std::min(T, kMinZoomCells));
  if (n >= T) return reset();
  zoom_ = static_cast<float>(T) / static_cast<float>(n);
  center_row_ = center_col_ = (static_cast<float>(first) + static_cast<float>(last) + 1) / 2.0f;
}

void HeatmapGrid::draw(const PanelContext& ctx) {
  const ImVec2 top = ImGui::GetCursorScreenPos(), region = ImGui::GetContentRegionAvail();
  layout().panel("heatmaps", top, ImVec2(top.x + region.x, top.y + region.y));
  const Snapshot* snap = ctx.snapshot.get();
  const ViewState& view = ctx.view;
  CommandQueue& cmd = ctx.commands;
  drawHeader(ctx, snap ? snap->inputs->model : ctx.document.workspace().model, snap ? snap->batch : 0,
             snap ? snap->trace.get() : nullptr);

  if (!ctx.engine_error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, theme().selection);
    ImGui::TextWrapped("The engine refused these settings: %s%s", ctx.engine_error.c_str(),
                       snap ? "  (showing the last valid result)" : "");
    ImGui::PopStyleColor();
  }
  if (!snap) {
    ImGui::TextUnformatted(ctx.waitingText());
    return;
  }
  // After an edit (a new document version, same tokens) the cells it changed are outlined for a
  // moment: small maps only, compared bit for bit with the result before.
  if (ctx.snapshot != shown_) {
    if (shown_ && shown_->version != snap->version && shown_->tokenCount() == snap->tokenCount() &&
        snap->tokenCount() <= kOutlinedTokens && shown_->shown().heads.size() == snap->shown().heads.size())
      previous_ = shown_, outline_from_ = ctx.now;
    else if (shown_ && shown_->version != snap->version)
      previous_.reset();
    shown_ = ctx.snapshot;
  }
  if (previous_ && ctx.now >= outline_from_ + kOutlineSeconds) previous_.reset();
  const Trace& t = *snap->trace;
  const int T = snap->tokenCount();
  std::vector<Stage> stages = visibleStages(view, t);
  if (reveal_head_ >= 0 && !missingStage(t, reveal_stage_) &&  // a figure of a map the columns leave out (the mask)
      std::find(stages.begin(), stages.end(), reveal_stage_) == stages.end()) {
    std::vector<Stage> all;
    for (const StageInfo& s : stageTable())
      if (s.stage == reveal_stage_ || std::find(stages.begin(), stages.end(), s.stage) != stages.end()) all.push_back(s.stage);
    stages = all;
  }
  if (T > 24) {  // long inputs: go straight to a token or a range of them
    ImGui::SetNextItemWidth(px(170));
    if (ImGui::InputTextWithHint("##go_to", "go to token, 1–T, a–b", go_to_, sizeof go_to_, ImGuiInputTextFlags_EnterReturnsTrue))
      cmd.push("go_to", {{"text", std::string(go_to_)}});
    layout().widget("go_to");
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("Enter a token's name (t500), its number (500) or a range (400-431): every map zooms to it");
  }
  const CellWindow window = zoomWindow(zoom_, center_row_, center_col_, T);
  if (drawNotes(*snap, zoom_, window, skippedStages(view, t))) reset();
  // While the mouse is over a map the wheel zooms it, so it must not also scroll the grid.
  ImGui::BeginChild("grid", ImVec2(0, 0), false,
                    ImGuiWindowFlags_HorizontalScrollbar | (wheel_on_map_ ? ImGuiWindowFlags_NoScrollWithMouse : 0));
  wheel_on_map_ = false;
  const int batch = snap->batch;
  const BatchTrace& bt = snap->shown();
  // The module's maps this step has, shown as one more card after the heads'.
  std::vector<ModuleMap> module_maps;
  for (const ModuleMapInfo& info : moduleMapTable())
    if (view.show_module[static_cast<int>(info.map)] && !missingModuleMap(t, info.map)) module_maps.push_back(info.map);
  if (stages.empty() && module_maps.empty()) {
    ImGui::TextUnformatted("Every map is hidden: choose some in the row of maps above.");
    ImGui::EndChild();
    return;
  }
  // Which heads: all, or the one chosen in the header (none when only the module's maps are on).
  std::vector<int> heads;
  for (int h = 0; h < t.heads && !stages.empty(); ++h)
    if (view.head < 0 || view.head == h) heads.push_back(h);
  if (heads.empty() && !stages.empty()) heads.push_back(0);
  const int H = static_cast<int>(heads.size()), S = static_cast<int>(stages.size());
  const int M = static_cast<int>(module_maps.size());
  // The module's card is one more card; its maps are narrow and share one row of tiles.
  const int cards = H + (M > 0 ? 1 : 0), tiles = S > 0 ? S : 1;
  const ImGuiStyle& style = ImGui::GetStyle();
  const float header = ImGui::GetTextLineHeightWithSpacing() + 4;
  const float gap = style.ItemSpacing.x * 2;
  const float fs = fonts().small->FontSize;
  float label_w = 0;
  for (const std::string& tok : snap->tokens())
    label_w = std::max(label_w, fonts().small->CalcTextSizeA(fs, FLT_MAX, 0, tok.c_str()).x);
  const Margins margins{std::min(label_w, px(90)) + px(4),
                        ImGui::GetTextLineHeight() + std::min(label_w, px(48)) + px(6),
                        heatmapColorbarHeight()};
  int rows = T, cols = std::max(T, 1);
  if (stages.empty()) {  // the module's card alone (or a figure of one of its maps): tiles its maps' size
    rows = cols = 1;
    for (ModuleMap m : module_maps) {
      const StageMap values = moduleMapValues(t, bt, m);
      rows = std::max(rows, static_cast<int>(values.rows()));
      cols = std::max(cols, static_cast<int>(values.cols()));
    }
  }
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  // The book's sizes always show their numbers: cells as wide as the widest compact label of the
  // T × T maps (the grid scrolls if need be). Larger maps fit the window and zoom instead.
  // Measured once per result and choice of heads and columns, not every frame (a 64-head wrapper
  // has 55 k labels).
  float min_cell = 0, full_cell = 0;
  if (T <= kAlwaysLabelledTokens && !window.rows) {
    std::uint64_t key = snap->serial * 1000003u + static_cast<std::uint64_t>(view.head + 1);
    for (Stage stage : stages) key = key * 31 + static_cast<std::uint64_t>(stage) + 1;
    for (ModuleMap m : module_maps) key = key * 37 + static_cast<std::uint64_t>(m) + 1;
    key = key * 31 + static_cast<std::uint64_t>(fs * 16);
    if (key != label_cells_key_) {
      label_cells_key_ = key;
      label_cells_ = {0, 0};
      // Every shown map of a readable size (a W of GPT-2's 768 inputs is not).
      auto measure = [&](const StageMap& map, bool dropout) {
        if (map.rows() > kAlwaysLabelledTokens || map.cols() > 64) return;
        for (Eigen::Index i = 0; i < map.rows(); ++i)
          for (Eigen::Index j = 0; j < map.cols(); ++j) {
            const float v = map(i, j);
            auto need = [&](CellFormat f) {
              const std::string label = dropout ? dropoutCellText(t, v) : cellLabel(v, f);
              return heatmapCellFor(fonts().small->CalcTextSizeA(fs, FLT_MAX, 0, label.c_str()).x);
            };
            label_cells_[0] = std::max(label_cells_[0], need(CellFormat::Compact));
            label_cells_[1] = std::max(label_cells_[1], need(CellFormat::Decimals4));
          }
      };
      for (int h : heads) {
        if (!bt.heads[h].hasMaps()) continue;
        for (Stage stage : stages) measure(StageMap(t, bt.heads[h], stage), stage == Stage::DropoutMask);
      }
      for (ModuleMap m : module_maps) measure(moduleMapValues(t, bt, m), false);
    }
    min_cell = label_cells_[0];
    full_cell = label_cells_[1];
  }
  const Arrangement a = arrange(cards, tiles, rows, cols, avail.x - style.ScrollbarSize, avail.y, header, gap, margins, min_cell, full_cell);
  const float tile_w = std::max(a.cell * cols + margins.left, avail.x / (a.card_cols * a.stage_cols) - gap);
  const float tile_h = a.cell * rows + margins.top + margins.bottom;
  const float stride_w = tile_w + gap;

  // Colour ranges: per map, or shared per stage across heads.
  const ImVec2 grid_origin = ImGui::GetCursorScreenPos();
  const int stage_rows = (tiles + a.stage_cols - 1) / a.stage_cols;
  const float card_w = a.stage_cols * stride_w, card_h = header + stage_rows * (tile_h + gap);
  const int selected_row = captureHidesSelection() ? -1 : std::clamp(view.token, 0, T - 1);  // figures: no outline
  // Which cards the grid's window shows: their heads are computed first after the next edit.
  const float visible_top = ImGui::GetWindowPos().y, visible_bottom = visible_top + ImGui::GetWindowHeight();
  visible_heads_.clear();
  for (int n = 0; n < H; ++n) {
    const int h = heads[n];
    const int cr = n / a.card_cols, cc = n % a.card_cols;
    const ImVec2 card(grid_origin.x + cc * card_w, grid_origin.y + cr * card_h);
    ImGui::SetCursorScreenPos(card);
    // A head is named only where there are several; 'simple' has no Q, K, V of its own.
    const std::string shapes = t.model.variant == Variant::Simple
                                   ? "Q = K = V = X: " + std::to_string(t.tokens) + "×" + std::to_string(t.head_width)
                                   : "Q, K, V: " + std::to_string(t.tokens) + "×" + std::to_string(t.head_width);
    std::string heading = t.heads > 1 ? "Head " + std::to_string(h + 1) + " of " + std::to_string(t.heads) + "  ·  head width " +
                                            std::to_string(t.head_width) + "  ·  " + shapes
                                      : shapes;
    // Within its card (narrow cards side by side at large text): the shapes, then the width, go first.
    for (std::size_t cut; ImGui::CalcTextSize(heading.c_str()).x > card_w - gap && (cut = heading.rfind("  ·  ")) != std::string::npos;)
      heading.resize(cut);
    ImGui::TextUnformatted(fitText(heading, card_w - gap).c_str());
    layout().widget("card_heading_" + std::to_string(h));
    if (card.y + card_h > visible_top && card.y < visible_bottom) visible_heads_.push_back(h);
    if (!bt.heads[h].hasMaps()) {  // off screen when the edit was made: its maps follow shortly
      ImGui::SetCursorScreenPos(ImVec2(card.x, card.y + header));
      ImGui::TextDisabled("computing the maps of head %d…", h + 1);
      continue;
    }
    for (int k = 0; k < S; ++k) {
      const Stage stage = stages[k];
      const StageInfo& info = stageInfo(stage);
      const ImVec2 tile(card.x + (k % a.stage_cols) * stride_w, card.y + header + (k / a.stage_cols) * (tile_h + gap));
      ImGui::SetCursorScreenPos(tile);
      if (h == reveal_head_ && stage == reveal_stage_) {  // its top (with the title) at the window's
        const float top = ImGui::GetWindowPos().y;
        if (tile.y < top || tile.y + tile_h > top + ImGui::GetWindowHeight())
          ImGui::SetScrollY(ImGui::GetScrollY() + (tile.y - top) - gap);
      }
      const HeadTrace& head = bt.heads[h];
      HeatmapSpec spec;
      spec.id = std::string("b") + std::to_string(batch) + "h" + std::to_string(h) + info.id;
      spec.title = stageHeading(t, stage);
      // A narrow tile (GPT-2's maps at 1280 px) drops the title's last parts — the shape, then the
      // detail — before the widget shortens what is left with "…".
      for (std::size_t cut; ImGui::CalcTextSize(spec.title.c_str()).x > tile_w && (cut = spec.title.rfind("  ")) != std::string::npos;)
        spec.title.resize(cut);
      spec.values = StageMap(t, head, stage);
      applyLook(spec, stageLook(*snap, view, stage, h));
      spec.row_labels = info.parameter ? &snap->dims : &snap->tokens();  // a weight's rows: input dims
      spec.col_labels = info.square ? &snap->tokens() : &snap->dims;
      spec.selected_row = info.parameter ? -1 : selected_row;
      if (info.square && !captureHidesSelection()) spec.selected_col = view.key;
      spec.window = info.parameter ? CellWindow{} : window;
      if (!info.square) spec.window.col0 = spec.window.cols = 0;  // keys zoom, dims stay
      spec.version = snap->head_serial[static_cast<std::size_t>(h)];  // kept by a second part
      spec.owner = ctx.snapshot;
      spec.describe = [snap, &head, stage](int i, int j) { return describeCell(*snap, head, stage, i, j); };
      spec.dump = {{"head", h}, {"stage", info.id}, {"batch", batch}};
      if (previous_ && previous_->batch == batch && previous_->shown().heads[h].hasMaps() && head.hasMaps()) {
        spec.outlined = changedCells(StageMap(*previous_->trace, previous_->shown().heads[h], stage), spec.values);
        spec.outline_alpha = static_cast<float>(1.0 - (ctx.now - outline_from_) / kOutlineSeconds);
      }
      // A lesson step names the maps it is about: the others recede.
      spec.dimmed = dimmedByLesson(view, info.id);
      HeatmapHit hit = drawHeatmap(spec, ImVec2(tile_w, tile_h));
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
  if (M > 0) drawModuleCard(ctx, *snap, module_maps, H, a, card_w, card_h, tile_w, tile_h, margins.left, header, gap, grid_origin);
  // Reserve the grid's full extent so the child scrolls when it is larger than the panel.
  const int card_rows = (cards + a.card_cols - 1) / a.card_cols;
  ImGui::SetCursorScreenPos(grid_origin);
  ImGui::Dummy(ImVec2(a.card_cols * card_w, card_rows * card_h));
  ImGui::EndChild();
}

namespace {

// The first n of the snapshot's dimension labels ("d0", "d1", …), as the grid shows them.
std::vector<std::string> dimsOf(const Snapshot& snap, Eigen::Index n) {
  return std::vector<std::string>(snap.dims.begin(), snap.dims.begin() + std::min<Eigen::Index>(n, static_cast<Eigen::Index>(snap.dims.size())));
}

}  // namespace

FigureSpec heatmapFigure(const Snapshot& snap, const ViewState& view, Stage stage, int head, bool caption) {
  const Trace& t = *snap.trace;
  const HeadTrace& h = snap.shown().heads.at(static_cast<std::size_t>(head));
  const StageInfo& info = stageInfo(stage);
  FigureSpec f;
  f.values = StageMap(t, h, stage);
  f.title = stageHeading(t, stage);
  if (t.heads > 1) f.title += "  ·  head " + std::to_string(head + 1) + " of " + std::to_string(t.heads);
  if (t.model.batch_size > 1) f.title += "  ·  batch " + std::to_string(snap.batch + 1) + " of " + std::to_string(t.model.batch_size);
  f.row_labels = info.parameter ? dimsOf(snap, f.values.rows()) : snap.tokens();  // a weight's rows: input dims
  f.col_labels = info.square ? snap.tokens() : dimsOf(snap, f.values.cols());
  MapLook look = stageLook(snap, view, stage, head);  // the colours as draw() chooses them
  f.range = look.range;
  f.colormap = look.colormap;
  f.scale = look.scale;
  f.cell_text = std::move(look.cell_text);
  f.range_text = std::move(look.range_text);
  f.legend = std::move(look.legend);
  if (caption) {  // the stage by its title, never its id
    f.caption = std::string(variantTitle(t.model.variant)) + "  ·  head " + std::to_string(head + 1) + " of " +
                std::to_string(t.heads) + "  ·  " + captureSubject(info.id, t.model) + "  ·  T " + std::to_string(t.tokens) + "  ·  seed " +
                std::to_string(t.model.seed) +
                (t.dropout_active ? "  ·  dropout p " + formatFixed(static_cast<float>(t.model.dropout), 2) : "");
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
  if (t.model.batch_size > 1) f.title += "  ·  batch " + std::to_string(snap.batch + 1) + " of " + std::to_string(t.model.batch_size);
  f.row_labels = info.parameter ? dimsOf(snap, f.values.rows()) : snap.tokens();
  f.col_labels = dimsOf(snap, f.values.cols());
  const MapLook look = moduleLook(snap, view, map);  // the colours as the module's card chooses them
  f.range = look.range;
  f.colormap = look.colormap;
  f.scale = look.scale;
  if (caption)
    f.caption = std::string(variantTitle(t.model.variant)) + "  ·  " + info.title + "  ·  T " + std::to_string(t.tokens) +
                "  ·  seed " + std::to_string(t.model.seed);
  return f;
}

}  // namespace attnscope

namespace attnscope {

const char* stageMissingFrom(const Trace& t, Stage s) { return missingStage(t, s); }
const char* moduleMapMissingFrom(const Trace& t, ModuleMap m) { return missingModuleMap(t, m); }

}  // namespace attnscope
