#include "pipeline_view.h"

#include <algorithm>
#include <string>
#include <vector>

#include "heatmap.h"
#include "layout_dump.h"
#include "theme.h"

namespace attnscope {

namespace {

struct Step {
  const char* id;            // layout name, and which step is enlarged
  std::string title;         // "scores"
  std::string op;            // the operation on the arrow into this step
  const Matrix* values;      // null when the variant lacks the step
  std::string absent;        // why it is missing
  const std::vector<std::string>* cols;
};

std::string shape(const Matrix& m) { return std::to_string(m.rows()) + "×" + std::to_string(m.cols()); }

// The colour range of m, remembered per matrix until the trace changes (no per-frame scans).
ValueRange rangeFor(const Matrix& m, Colormap* cmap, const ViewState& v, std::uint64_t version) {
  static std::uint64_t cached_version = ~0ull;
  static std::vector<std::pair<const Matrix*, ValueRange>> cache;
  if (cached_version != version) {
    cache.clear();
    cached_version = version;
  }
  auto it = std::find_if(cache.begin(), cache.end(), [&m](const auto& e) { return e.first == &m; });
  if (it == cache.end()) it = cache.insert(cache.end(), {&m, finiteRange(m)});
  ValueRange r = it->second;
  *cmap = v.colormap;
  if (v.diverging_for_signed && r.lo < 0) {
    *cmap = Colormap::Coolwarm;
    r = centredOnZero(r);
  }
  return r;
}

}  // namespace

void drawPipeline(AppState& app, ImVec2 size) {
  const ImVec2 top = ImGui::GetCursorScreenPos();
  layout().panel("pipeline", top, ImVec2(top.x + size.x, top.y + size.y));
  if (!app.trace) return;
  const Trace& t = *app.trace;
  const int b = std::clamp(app.view.batch, 0, static_cast<int>(t.batches.size()) - 1);
  const BatchTrace& bt = t.batches[b];
  if (bt.heads.empty()) {
    ImGui::TextUnformatted("computing…");
    return;
  }
  const int head = std::clamp(app.view.head, 0, t.heads - 1);
  const HeadTrace& h = bt.heads[head];
  const ModelConfig& m = t.model;
  const bool simple = m.variant == Variant::Simple;
  static std::vector<std::string> dims_x, dims_h, dims_c, dims_o;
  auto dims = [](std::vector<std::string>& v, long n) {
    v.clear();
    for (long d = 0; d < n; ++d) v.push_back("d" + std::to_string(d));
    return &v;
  };
  const Matrix& x = app.workspace.embeddings;

  std::vector<Step> steps;
  steps.push_back({"inputs", "X  inputs", "", &x, "", dims(dims_x, x.cols())});
  steps.push_back({"queries", simple ? "Q = K = V = X" : "Q  (K, V alike)", simple ? "as is" : "@ W_q",
                   &h.queries, "", dims(dims_h, h.queries.cols())});
  steps.push_back({"scores", "scores", "Q Kᵀ", &h.scores, "", &app.workspace.tokens});
  steps.push_back({"scaled", "scaled", "÷ √dₖ", m.scale == Scale::SqrtDk ? &h.scaled_scores : nullptr,
                   "scale = none: scores go on unscaled", &app.workspace.tokens});
  steps.push_back({"masked", "masked", "−∞ above diagonal", m.causal ? &h.masked_scores : nullptr,
                   simple ? "step 1 has no mask" : "causal is off: every key is visible", &app.workspace.tokens});
  steps.push_back({"weights", m.normalization == Normalization::Sum ? "÷ row sum" : "softmax", "softmax", &h.weights, "",
                   &app.workspace.tokens});
  std::string no_dropout = !hasDropout(m.variant) ? "dropout comes with step 3 (causal)"
                           : !m.training          ? "eval mode: dropout is off"
                                                  : "p = 0: nothing dropped";
  steps.push_back({"dropout", "dropout", "× mask / (1−p)", t.dropout_active ? &h.dropped_weights : nullptr, no_dropout,
                   &app.workspace.tokens});
  steps.push_back({"context", "context", "@ V", &h.context, "", dims(dims_h, h.context.cols())});
  steps.push_back({"concat", "concat heads", "concat", t.heads > 1 ? &bt.context : nullptr,
                   "one head: nothing to concatenate", dims(dims_c, bt.context.cols())});
  steps.push_back({"output", "out_proj", "@ W_oᵀ + b", hasOutProj(m.variant) ? &bt.output : nullptr,
                   "only MultiHeadAttention (4b) has out_proj", dims(dims_o, bt.output.cols())});

  static std::string enlarged = "weights";
  const float arrow_w = px(26);
  const float node_w = std::max(px(70), (size.x - arrow_w * (steps.size() - 1)) / steps.size());
  const float thumb = std::min(node_w - px(6), px(96));
  const float line = ImGui::GetTextLineHeightWithSpacing();
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImVec2 row0 = ImGui::GetCursorScreenPos();
  const ImU32 dim = theme().text_dim;
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const Step& st = steps[k];
    const float x0 = row0.x + k * (node_w + arrow_w);
    if (k > 0) {  // the arrow and its operation
      const float y = row0.y + line * 2 + thumb / 2;
      draw->AddLine(ImVec2(x0 - arrow_w + 3, y), ImVec2(x0 - 5, y), dim, 1.5f);
      draw->AddTriangleFilled(ImVec2(x0 - 5, y - 4), ImVec2(x0 - 5, y + 4), ImVec2(x0 - 1, y), dim);
    }
    ImGui::SetCursorScreenPos(ImVec2(x0, row0.y));
    ImGui::PushStyleColor(ImGuiCol_Text, st.values ? ImGui::GetStyleColorVec4(ImGuiCol_Text)
                                                  : ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TextUnformatted(st.title.c_str());
    ImGui::PopStyleColor();
    ImGui::SetCursorScreenPos(ImVec2(x0, row0.y + line));
    ImGui::TextDisabled("%s", st.values ? (st.op.empty() ? shape(*st.values) : st.op + "  " + shape(*st.values)).c_str()
                                        : st.op.c_str());
    const ImVec2 p(x0, row0.y + line * 2);
    ImGui::SetCursorScreenPos(p);
    if (st.values) {
      HeatmapSpec spec;
      spec.id = std::string("pipe_") + st.id;
      spec.values = st.values;
      spec.range = rangeFor(*st.values, &spec.colormap, app.view, app.trace_version * 1000003u + app.version);
      spec.compact = true;
      spec.version = app.trace_version * 64 + b;
      spec.selected_row = app.view.token;
      const std::string title = st.title;
      spec.describe = [title](int i, int j) { return title + " [" + std::to_string(i) + ", " + std::to_string(j) + "] — click to enlarge"; };
      const HeatmapHit hit = drawHeatmap(spec, ImVec2(thumb, thumb));
      if (hit.clicked_row >= 0) enlarged = st.id;
      if (enlarged == st.id)
        draw->AddRect(ImVec2(p.x - 2, p.y - 2), ImVec2(p.x + thumb + 2, p.y + thumb + 2), theme().selection, 0, 0, 2);
    } else {
      draw->AddRect(p, ImVec2(p.x + thumb, p.y + thumb), dim, 4);
      ImGui::SetCursorScreenPos(ImVec2(p.x + 4, p.y + 4));
      ImGui::PushTextWrapPos(p.x + thumb - 4);
      ImGui::TextDisabled("%s", st.absent.c_str());
      ImGui::PopTextWrapPos();
    }
    layout().widget(std::string("pipeline_") + st.id);
  }
  ImGui::SetCursorScreenPos(ImVec2(row0.x, row0.y + line * 2 + thumb + 12));
  ImGui::Separator();

  // The enlarged step, with labels and values.
  for (const Step& st : steps) {
    if (enlarged != st.id || !st.values) continue;
    HeatmapSpec spec;
    spec.id = std::string("pipe_big_") + st.id;
    spec.title = st.title + "  " + shape(*st.values) + (t.heads > 1 ? "  (head " + std::to_string(head + 1) + ")" : "");
    spec.values = st.values;
    spec.range = rangeFor(*st.values, &spec.colormap, app.view, app.trace_version * 1000003u + app.version);
    spec.row_labels = &app.workspace.tokens;
    spec.col_labels = st.cols;
    spec.selected_row = app.view.token;
    spec.version = app.trace_version * 64 + b;
    spec.dump = {{"pipeline", st.id}};
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float side = std::min(avail.x, avail.y);
    const HeatmapHit hit = drawHeatmap(spec, ImVec2(std::min(avail.x, side * 1.6f), side));
    if (hit.clicked_row >= 0) app.view.token = hit.clicked_row;
  }
}

}  // namespace attnscope
