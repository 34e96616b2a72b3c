#include "panels/pipeline_view.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "engine/stages.h"
#include "widgets/fonts.h"
#include "widgets/heatmap.h"
#include "widgets/layout_dump.h"
#include "widgets/text.h"
#include "widgets/theme.h"

namespace attnscope {

namespace {

struct Step {
  const char* id;                  // layout name, and which step is enlarged
  std::string title;               // "scores"
  std::string op;                  // the operation on the arrow into this step
  std::optional<StageMap> values;  // none when the variant lacks the step
  const ValueRange* range;         // the snapshot's colour range of this map
  std::string absent;              // why it is missing
  const std::vector<std::string>* cols;
  std::string op_short = {};  // the operation where `op` does not fit its node (200 % on 1280 wide)
};

std::string shape(const StageMap& m) { return std::to_string(m.rows()) + "×" + std::to_string(m.cols()); }

// A step's colours, from the range the snapshot computed for it (display/map_look.h): the view's
// colormap, on a linear scale (the colour scale is the heatmap grid's setting).
MapLook lookFor(const ValueRange& known, const ViewState& v) {
  LookChoices choices = lookChoices(v);
  choices.scale = ColourScale::Linear;
  return colouredBy(known, false, choices);
}

// The key to the thumbnails' colours, in the small font above them: each colormap the steps use as
// a ramp between its words, masked grey where a step has −∞ cells, and that each map has a range of
// its own (the thumbnails have no colorbars: nothing on the tab had said what a signed step's blues
// and reds were). Its parts wrap whole onto a second line; the last, the longest form that fits.
void drawColourKey(const std::vector<Step>& steps, const ViewState& view, float width) {
  std::vector<MapLook> looks;  // one per colormap, in the steps' order
  bool masked = false;
  for (const Step& st : steps) {
    if (!st.values) continue;
    const MapLook look = lookFor(*st.range, view);
    if (std::none_of(looks.begin(), looks.end(), [&](const MapLook& l) { return l.colormap == look.colormap; }))
      looks.push_back(look);
    masked = masked || std::string(st.id) == "masked";
  }
  if (looks.empty()) return;
  ImFont* small = fonts().small;
  const float fs = small->FontSize, ramp_w = px(32), gap = px(5), part_gap = px(14), line_h = fs + px(4);
  const auto textW = [&](const std::string& t) { return small->CalcTextSizeA(fs, FLT_MAX, 0, t.c_str()).x; };
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImVec2 at = ImGui::GetCursorScreenPos();
  const ImU32 dim = theme().text_dim;
  float x = at.x, y = at.y, right = at.x;
  std::string said;
  const auto place = [&](float w) {  // a part `w` wide: on this line, or at the next one's start
    if (x > at.x && x + w > at.x + width) x = at.x, y += line_h;
    right = std::max(right, x + w);
  };
  const auto word = [&](const std::string& text) {
    draw->AddText(small, fs, ImVec2(x, y), dim, text.c_str());
    x += textW(text);
  };
  for (const MapLook& l : looks) {
    const bool signed_map = l.colormap == Colormap::Coolwarm;
    const std::string lo = signed_map ? "negative" : "low", hi = signed_map ? "positive (pale: 0)" : "high";
    place(textW(lo) + ramp_w + textW(hi) + 2 * gap);
    word(lo);
    MapLook ramp = l;
    ramp.range = {-1, 1};  // the whole ramp, whatever the map's own range
    drawColourRamp(draw, ramp, ImVec2(x + gap, y + (fs - px(8)) / 2), ImVec2(ramp_w, px(8)));
    x += ramp_w + 2 * gap;
    word(hi);
    x += part_gap;
    said += (said.empty() ? "" : " · ") + lo + " → " + hi;
  }
  if (masked) {
    const std::string text = "−∞ masked";
    place(fs + 2 + textW(text));
    x = drawMaskedSwatch(draw, x, y, fs);
    word(text);
    x += part_gap;
    said += " · " + text;
  }
  ImGui::PushFont(small);
  const std::vector<std::string> forms = {"each map on a range of its own · click one for its numbers",
                                          "each map on a range of its own"};
  std::string tail = firstFitting({forms[0], forms[1], ""}, at.x + width - x);
  if (tail.empty()) tail = firstFitting({forms[0], forms[1], ""}, width);  // a line of its own
  ImGui::PopFont();
  if (!tail.empty()) {
    place(textW(tail));
    word(tail);
    said += " · " + tail;
  }
  ImGui::Dummy(ImVec2(width, y + line_h - at.y + px(2)));
  layout().rect("pipeline_key", at, ImVec2(right, y + fs));
  layout().state()["pipeline_key"] = said;
}

}  // namespace

void PipelineView::draw(const PanelContext& ctx) {
  const Snapshot* snap = beginMainTab(ctx, "pipeline");
  if (!snap) return;
  // In a child of its own, which scrolls (the main window neither scrolls nor has a scrollbar: at
  // 1280 × 800 and 150 % a trained model's last steps and the enlarged map were out of reach).
  ImGui::BeginChild("##pipeline", ImVec2(0, 0), false, ImGuiWindowFlags_NoSavedSettings);
  const ImVec2 clip_min = ImGui::GetWindowDrawList()->GetClipRectMin(),
               clip_max = ImGui::GetWindowDrawList()->GetClipRectMax();
  layout().rect("pipeline_area", clip_min, clip_max);  // what of the steps can be seen
  drawSteps(ctx, *snap, ImGui::GetContentRegionAvail());
  ImGui::EndChild();
}

void PipelineView::drawSteps(const PanelContext& ctx, const Snapshot& snapshot, ImVec2 size) {
  const Snapshot* snap = &snapshot;
  const ViewState& view = ctx.view;
  const Trace& t = *snap->trace;
  const BatchTrace& bt = snap->shown();
  const int head = std::clamp(view.head, 0, t.heads - 1);
  const HeadTrace& h = bt.heads[head];
  if (!h.hasMaps()) {  // the chosen head comes first (a model's long text: just after the thumbnails)
    drawMapsMissing(ctx, head);
    return;
  }
  const auto& r = snap->ranges[head];
  auto range = [&r](Stage s) { return &r[static_cast<int>(s)]; };
  const ModelConfig& m = t.model;
  const bool simple = m.variant == Variant::Simple;
  // Column labels: "d0", "d1", … (the snapshot has enough for every width shown here).
  std::vector<std::string> dims_c(snap->dims), dims_o(snap->dims);
  auto dims = [](std::vector<std::string>& v, long n) {
    v.clear();
    for (long d = 0; d < n; ++d) v.push_back("d" + std::to_string(d));
    return &v;
  };
  const Matrix& x = inputOf(*snap->inputs, snap->batch);  // the shown element's own, in a batch of sequences
  const std::vector<std::string>* tokens = &snap->tokens();
  const std::vector<std::string>* dims_x = &snap->dims;                                       // X's inputs
  const std::vector<std::string>* dims_h = &snap->head_dims[static_cast<std::size_t>(head)];  // the head's columns

  auto stage = [&](Stage s) { return std::optional<StageMap>(StageMap(t, h, s)); };
  auto matrix = [](const Matrix& v) { return std::optional<StageMap>(StageMap(v)); };
  const std::optional<StageMap> none;
  std::vector<Step> steps;
  // A trained model's layer reads the residual stream through its first LayerNorm (as the Inspector says).
  steps.push_back(
      {"inputs", snap->model ? "X  LayerNorm₁" : "X  inputs", "", matrix(x), &snap->inputs_range, "", dims_x});
  steps.push_back({"queries", simple ? "Q = K = V = X" : "Q  (K, V alike)", simple ? "as is" : "@ W_q",
                   stage(Stage::Queries), range(Stage::Queries), "", dims_h});
  steps.push_back(
      {"scores", "scores", simple ? "X Xᵀ" : "Q Kᵀ", stage(Stage::Scores), range(Stage::Scores), "", tokens});
  // The notebook's order: the causal classes mask the raw scores, then divide by √dₖ.
  const bool tril = trilRoute(m);  // cells [26]–[28]: the weights are masked, not the scores
  steps.push_back({"masked", "masked", "−∞ above diagonal", m.causal && !tril ? stage(Stage::MaskedScores) : none,
                   range(Stage::MaskedScores),
                   simple ? "step 1 has no mask"
                   : tril ? "the tril route masks the weights, below"
                          : "causal is off: every key is visible",
                   tokens, "−∞ for j > i"});
  steps.push_back({"scaled", "scaled", "÷ √dₖ", m.scale == Scale::SqrtDk ? stage(Stage::ScaledScores) : none,
                   range(Stage::ScaledScores), "scale = none: scores go on unscaled", tokens});
  if (tril) {
    steps.push_back({"unmasked_weights", "softmax", "every key", stage(Stage::UnmaskedWeights),
                     range(Stage::UnmaskedWeights), "", tokens});
    steps.push_back(
        {"tril_weights", "× tril", "later keys → 0", stage(Stage::TrilWeights), range(Stage::TrilWeights), "", tokens});
  }
  // The weights, by what makes them (the node had read "softmax" over "softmax 10×10").
  steps.push_back({"weights", "weights", tril || m.normalization == Normalization::Sum ? "÷ row sum" : "softmax",
                   stage(Stage::Weights), range(Stage::Weights), "", tokens});
  std::string no_dropout = !hasDropout(m.variant) ? "dropout comes with step 3 (causal)"
                           : !m.training          ? "eval mode: dropout is off"
                                                  : "p = 0: nothing dropped";
  steps.push_back({"dropout", "dropout", "× mask / (1−p)", t.dropout_active ? stage(Stage::DroppedWeights) : none,
                   range(Stage::DroppedWeights), no_dropout, tokens});
  steps.push_back({"context", "context", "@ V", stage(Stage::Context), range(Stage::Context), "", dims_h});
  steps.push_back({"concat", "concat heads", "concat", t.heads > 1 ? matrix(bt.context) : none,
                   &snap->module_ranges[static_cast<int>(ModuleMap::Concat)], "one head: nothing to concatenate",
                   dims(dims_c, bt.context.cols())});
  steps.push_back({"output", "out_proj", "@ W_oᵀ + b", hasOutProj(m.variant) ? matrix(bt.output) : none,
                   &snap->module_ranges[static_cast<int>(ModuleMap::Output)],
                   "only multi-head attention (4b) has out_proj", dims(dims_o, bt.output.cols())});

  // A map's texture is kept while the computation behind it is (a split request's second part
  // keeps the first part's outputs and this head).
  auto serialOf = [&](const Step& st) {
    const std::string id = st.id;
    return id == "inputs" || id == "concat" || id == "output" ? snap->outputs_serial
                                                              : snap->head_serial[static_cast<std::size_t>(head)];
  };

  drawColourKey(steps, view, size.x);
  // Nodes left to right, wrapped into as few rows as keep each node readable.
  // Wrapped, the rows after the first start with "↳" in a margin of their own (drawn left of the
  // first node, it was clipped by the window to a stray tick).
  const float arrow_w = px(26), min_node = px(110), turn_w = ImGui::CalcTextSize("↳").x + px(4);
  const int n = static_cast<int>(steps.size());
  int per_row = n;
  while (per_row > 1 && per_row * min_node + (per_row - 1) * arrow_w + (per_row < n ? turn_w : 0.0f) > size.x)
    per_row = per_row == 2 ? 1 : (per_row + 1) / 2;
  const float margin = per_row < n ? turn_w : 0.0f;
  const float node_w = (size.x - margin - arrow_w * (per_row - 1)) / per_row;
  const float thumb = std::min(node_w - px(6), px(96));
  const float line = ImGui::GetTextLineHeightWithSpacing();
  const float row_h = line * 2 + thumb + px(14);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImVec2 row0 = ImGui::GetCursorScreenPos();
  const ImU32 dim = theme().text_dim;
  // A node's words from px(8) into it to its right edge (node_w − px(4) had run them 4 px into the
  // next column, under the scrollbar at the last: "softmax  10×1").
  const float words_w = node_w - px(8);
  auto fitted = [&](const std::string& text) { return fitText(text, words_w); };  // rest on hover
  for (int k = 0; k < n; ++k) {
    const Step& st = steps[k];
    const float x0 = row0.x + margin + (k % per_row) * (node_w + arrow_w);
    const float y0 = row0.y + (k / per_row) * row_h;
    if (k % per_row > 0) {  // the arrow from the step before
      const float y = y0 + line * 2 + thumb / 2;
      draw->AddLine(ImVec2(x0 - arrow_w + px(3), y), ImVec2(x0 - px(5), y), dim, px(1.5f));
      draw->AddTriangleFilled(ImVec2(x0 - px(5), y - px(4)), ImVec2(x0 - px(5), y + px(4)), ImVec2(x0 - px(1), y), dim);
    } else if (k > 0) {  // a new row continues the last one
      const ImVec2 at(row0.x, y0 + line * 2 + thumb / 2 - line / 2);
      draw->AddText(at, dim, "↳");
      layout().rect("pipeline_turn_" + std::to_string(k / per_row), at,
                    ImVec2(at.x + ImGui::CalcTextSize("↳").x, at.y + ImGui::GetTextLineHeight()));
    }
    const std::string detail = st.values ? (st.op.empty() ? shape(*st.values) : st.op + "  " + shape(*st.values))
                                         : st.op;
    ImGui::SetCursorScreenPos(ImVec2(x0 + px(8), y0));
    ImGui::PushStyleColor(ImGuiCol_Text, st.values ? ImGui::GetStyleColorVec4(ImGuiCol_Text)
                                                   : ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TextUnformatted(fitted(st.title).c_str());
    ImGui::PopStyleColor();
    ImGui::SetCursorScreenPos(ImVec2(x0 + px(8), y0 + line));
    // Where both do not fit, the operation without its shape (the map shows it), then its short
    // form: "−∞ above diagonal  11×11" had been cut to "−∞ above diago…" at every size.
    std::vector<std::string> forms = {detail};
    if (st.values && !st.op.empty()) forms.push_back(st.op);
    if (st.values && !st.op_short.empty())
      forms.insert(forms.end(), {st.op_short + "  " + shape(*st.values), st.op_short});
    const std::string said = fitted(firstFitting(forms, words_w));
    ImGui::TextDisabled("%s", said.c_str());
    layout().state()["pipeline_details"][st.id] = said;
    // Where its words end against the node's right edge (tests: within it).
    layout().state()["pipeline_detail_overrun"][st.id] = ImGui::GetItemRectMax().x - (x0 + node_w);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s: %s", st.title.c_str(), detail.c_str());
    const ImVec2 p(x0 + px(8), y0 + line * 2);
    ImGui::SetCursorScreenPos(p);
    if (st.values) {
      HeatmapSpec spec;
      spec.id = std::string("pipe_") + st.id;
      spec.values = *st.values;
      spec.look = lookFor(*st.range, view);
      spec.compact = true;
      spec.version = serialOf(st);
      spec.owner = ctx.snapshot;
      spec.selected_row = std::clamp(view.token, 0, snap->tokenCount() - 1);
      // A wide map shows its first columns, at most twice as many as it has rows and at least 16:
      // a trained model's 14 × 768 inputs, its concatenated heads and its output were each
      // a 2-px strip of square cells, the text's 14 rows not to be seen. The enlarged map shows all.
      const int rows = static_cast<int>(st.values->rows()), cols = static_cast<int>(st.values->cols());
      const int shown = std::min(cols, std::max(2 * rows, 16));
      if (shown < cols) spec.window = {0, rows, 0, shown};
      const std::string title = st.title;
      // Named as the enlarged map's columns are (a head's: d64… for head 2 of GPT-2's).
      const auto label = [&](int j) {
        return st.cols && j < static_cast<int>(st.cols->size()) ? (*st.cols)[static_cast<std::size_t>(j)]
                                                                : "d" + std::to_string(j);
      };
      // "40 of 64 columns: d256–d295": counted, then named (a head's names are not 0 … 63, so
      // "d256–d295 of 64" read as column 256 of 64).
      const std::string counted = std::to_string(shown) + " of " + std::to_string(cols);
      const std::string which = shown < cols ? counted + " columns: " + label(0) + "–" + label(shown - 1) : "";
      const std::string part = shown < cols ? "; " + which + " shown" : "";
      spec.describe = [title, part](int i, int j) {
        return title + " [" + std::to_string(i) + ", " + std::to_string(j) + "]" + part + " — click to enlarge";
      };
      const HeatmapHit hit = drawHeatmap(ctx.textures, spec, ImVec2(thumb, thumb));
      if (shown < cols) {  // under the cells, in the box's free half: which columns they are
        const float fs = fonts().small->FontSize;
        ImGui::PushFont(fonts().small);  // the longest form that fits: named, counted, or the count alone
        const std::string caption = firstFitting({which, counted + " columns", counted}, thumb);
        ImGui::PopFont();
        draw->AddText(fonts().small, fs, ImVec2(p.x, p.y + thumb * rows / shown + px(3)), dim,
                      fitText(fonts().small, fs, caption, thumb).c_str());
        layout().state()["pipeline_columns"][st.id] = {shown, cols};  // tests: the part a thumbnail shows
      }
      if (hit.clicked_row >= 0) enlarged_ = st.id, scroll_to_enlarged_ = true;
      if (enlarged_ == st.id)
        draw->AddRect(ImVec2(p.x - px(2), p.y - px(2)), ImVec2(p.x + thumb + px(2), p.y + thumb + px(2)),
                      theme().selection, 0, 0, px(2));
    } else {
      draw->AddRect(p, ImVec2(p.x + thumb, p.y + thumb), dim, px(4));
      ImGui::SetCursorScreenPos(ImVec2(p.x + px(4), p.y + px(4)));
      ImGui::PushTextWrapPos(p.x + thumb - px(4) - ImGui::GetWindowPos().x);  // window-local x
      ImGui::PushFont(fonts().small);
      textDisabledWrapped("%s", st.absent.c_str());
      ImGui::PopFont();
      ImGui::PopTextWrapPos();
    }
    layout().widget(std::string("pipeline_") + st.id);
  }
  const int rows = (n + per_row - 1) / per_row;
  ImGui::SetCursorScreenPos(ImVec2(row0.x, row0.y + rows * row_h));
  ImGui::Separator();

  // The enlarged step, with labels and values.
  for (const Step& st : steps) {
    if (enlarged_ != st.id || !st.values) continue;
    HeatmapSpec spec;
    spec.id = std::string("pipe_big_") + st.id;
    spec.title = st.title + "  " + shape(*st.values) + (t.heads > 1 ? "  (head " + std::to_string(head + 1) + ")" : "");
    spec.values = *st.values;
    spec.look = lookFor(*st.range, view);
    spec.row_labels = tokens;
    spec.col_labels = st.cols;
    spec.token_rows = true, spec.token_cols = st.cols == tokens;
    spec.selected_row = std::clamp(view.token, 0, snap->tokenCount() - 1);
    spec.version = serialOf(st);
    spec.owner = ctx.snapshot;
    spec.dump = {{"pipeline", st.id}};
    // A real map, not a thumbnail: whole in what is left below the steps where that keeps the
    // notebook's four decimals, or for a trained model, whose pattern is what its text is about (its
    // 10 × 10 softmax at 1920 × 1080 showed 6 rows, the selected last query below the fold); else as
    // tall as the view, which then scrolls (at 1280 × 800 and 150 % a 0.3-px map).
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float view_h = ImGui::GetWindowHeight();  // the child's: scrolled to, the map fills the view
    const float above = ImGui::GetTextLineHeight() + px(54), below = heatmapColorbarHeight();  // title, keys; colorbar
    const float four_decimals = heatmapCellFor(
        fonts().small->CalcTextSizeA(fonts().small->FontSize, FLT_MAX, 0, "−0.0000").x);
    const bool whole = avail.y >= px(160) &&
                       (snap->model ||
                        (avail.y - above - below) / static_cast<float>(st.values->rows()) >= four_decimals);
    const float tall = whole ? avail.y : std::max(avail.y, view_h);
    const float side = std::min(avail.x, tall);
    if (scroll_to_enlarged_) ImGui::SetScrollHereY(0.0f);
    scroll_to_enlarged_ = false;
    const HeatmapHit hit = drawHeatmap(ctx.textures, spec, ImVec2(std::min(avail.x, side * 1.6f), side));
    if (hit.clicked_row >= 0) ctx.commands.push("select_token", {{"index", hit.clicked_row}});
  }
}

}  // namespace attnscope
