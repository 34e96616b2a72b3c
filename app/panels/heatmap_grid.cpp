#include "panels/heatmap_grid.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "shell/fonts.h"
#include "widgets/heatmap.h"
#include "shell/layout_dump.h"
#include "widgets/text.h"
#include "shell/theme.h"

namespace attnscope {

namespace {

const Matrix& stageMatrix(const HeadTrace& h, Stage s) {
  switch (s) {
    case Stage::Scores: return h.scores;
    case Stage::Scaled: return h.scaled_scores;
    case Stage::Masked: return h.masked_scores;
    case Stage::Weights: return h.weights;
    case Stage::Dropped: return h.dropped_weights;
    case Stage::Context: return h.context;
    case Stage::DropoutMask: break;
  }
  return h.weights;
}

// Per-trace data the maps point into: the dropout masks as floats, the column labels of context,
// and each map's value range (scanning 1024 × 1024 maps every frame would cost the frame rate).
struct GridData {
  std::uint64_t version = ~0ull;
  int batch = -1;
  std::vector<Matrix> keep;             // per head: 1 kept, 0 dropped
  std::vector<std::string> dims;        // "d0", "d1", … for T × w maps
  std::vector<std::array<ValueRange, kStageCount>> ranges;  // per head and stage
};

GridData& gridData(const AppState& app) {
  static GridData data;
  if (data.version == app.trace_version && data.batch == app.view.batch) return data;
  data.version = app.trace_version;
  data.batch = app.view.batch;
  const BatchTrace& bt = app.trace->batches[app.view.batch];
  data.keep.clear();
  for (const HeadTrace& h : bt.heads) data.keep.push_back(h.dropout_mask.cast<float>());
  data.dims.clear();
  for (int d = 0; d < app.trace->head_width; ++d) data.dims.push_back("d" + std::to_string(d));
  data.ranges.assign(bt.heads.size(), {});
  for (std::size_t h = 0; h < bt.heads.size(); ++h)
    for (int s = 0; s < kStageCount; ++s)
      data.ranges[h][s] = static_cast<Stage>(s) == Stage::DropoutMask ? ValueRange{0, 1}
                                                                        : finiteRange(stageMatrix(bt.heads[h], static_cast<Stage>(s)));
  return data;
}

// The tooltip of cell (i, j): how the number came about.
std::string describeCell(const AppState& app, const HeadTrace& h, Stage stage, int i, int j) {
  const Trace& t = *app.trace;
  const auto& tok = app.workspace.tokens;
  const std::string q = tok[i], k = stage == Stage::Context ? "" : tok[j];
  std::string s;
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
    case Stage::Scaled:
      if (t.model.scale == Scale::SqrtDk)
        s = formatFixed(h.scores(i, j)) + " ÷ √" + std::to_string(t.head_width) + " (" +
            formatFixed(t.scale_divisor) + ") = " + formatFixed(h.scaled_scores(i, j));
      else
        s = "no scaling: " + formatFixed(h.scaled_scores(i, j));
      break;
    case Stage::Masked:
      if (h.mask(i, j))
        s = "'" + k + "' comes after '" + q + "': masked to −∞,\nso softmax gives it weight 0";
      else
        s = "'" + k + "' is visible to '" + q + "': " + formatFixed(h.masked_scores(i, j));
      break;
    case Stage::Weights:
      if (t.model.normalization == Normalization::Sum)
        s = formatFixed(h.masked_scores(i, j)) + " ÷ row sum = " + formatFixed(h.weights(i, j));
      else if (h.mask(i, j))
        s = "softmax of −∞ = 0 (masked)";
      else
        s = "score q" + std::to_string(i + 1) + "·k" + std::to_string(j + 1) + " = " + formatFixed(h.scores(i, j)) +
            (t.model.scale == Scale::SqrtDk ? "\n÷ √" + std::to_string(t.head_width) + " → " + formatFixed(h.scaled_scores(i, j)) : "") +
            "\nsoftmax over the row of '" + q + "':\nexp(" + formatFixed(h.masked_scores(i, j)) + " − row max) ÷ Σ exp(…) = " +
            formatFixed(h.weights(i, j));
      break;
    case Stage::DropoutMask:
      if (!t.dropout_active)
        s = "no dropout here (p = 0, eval mode, or a variant without dropout): kept";
      else if (h.dropout_mask(i, j))
        s = "kept: weight × 1/(1 − p) = × " + formatFixed(t.dropout_scale, 3);
      else
        s = "dropped: weight → 0";
      break;
    case Stage::Dropped:
      if (!t.dropout_active)
        s = "no dropout: " + formatFixed(h.dropped_weights(i, j));
      else if (h.dropout_mask(i, j))
        s = formatFixed(h.weights(i, j)) + " × " + formatFixed(t.dropout_scale, 3) + " = " + formatFixed(h.dropped_weights(i, j));
      else
        s = formatFixed(h.weights(i, j)) + " dropped → 0";
      break;
    case Stage::Context:
      s = "context z" + std::to_string(i + 1) + "[" + std::to_string(j) + "] = Σₖ αₖ·v_k[" +
          std::to_string(j) + "] = " + formatFixed(h.context(i, j));
      break;
  }
  return s;
}

std::string stageHeading(const Trace& t, Stage s) {
  const std::string n = std::to_string(t.tokens);
  const std::string tt = "  " + n + "×" + n;
  switch (s) {
    case Stage::Scaled:
      return t.model.scale == Scale::SqrtDk ? "scaled  ÷ √" + std::to_string(t.head_width) + tt
                                            : "scaled: none" + tt;
    case Stage::Masked:
      return t.model.causal ? std::string("causal mask → −∞") + tt : "mask: none (not causal)" + tt;
    case Stage::DropoutMask:
      return t.dropout_active ? "dropout mask  p = " + formatFixed(static_cast<float>(t.model.dropout), 2) + tt
                              : "dropout mask: off" + tt;
    case Stage::Context:
      return std::string(stageTitle(s)) + "  " + n + "×" + std::to_string(t.head_width);
    default:
      return stageTitle(s) + tt;
  }
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
// possible; when even the best is tiny the grid keeps a readable size and scrolls.
Arrangement arrange(int H, int S, int rows, int cols, float width, float height, float header,
                    float gap, Margins m) {
  Arrangement best;
  for (int c = 1; c <= H; ++c)
    for (int s = 1; s <= S; ++s) {
      const int r = (S + s - 1) / s, R = (H + c - 1) / c;
      const float tile_w = width / (c * s) - gap - m.left;
      const float tile_h = (height - R * header) / (R * r) - gap - m.top - m.bottom;
      const float cell = std::min(tile_w / cols, tile_h / rows);
      if (cell > best.cell) best = {c, s, cell};
    }
  const float min_map = px(96);  // below this, scroll rather than shrink
  if (best.cell * std::max(rows, cols) < min_map) {
    best = {1, S, 0};
    best.cell = std::max((width / S - gap - m.left) / cols, min_map / std::max(rows, cols));
  }
  best.cell = std::min(best.cell, px(72));  // a 1-token map need not fill the screen
  return best;
}

// The window of cells every map shows at the current zoom (linked across maps, so the same
// query and key rows stay side by side from scores to weights).
CellWindow zoomWindow(const ViewState& v, int T) {
  CellWindow w;
  if (v.zoom <= 1) return w;
  const int n = std::clamp(static_cast<int>(std::ceil(T / v.zoom)), 1, T);
  const float cr = v.center_row < 0 ? T / 2.0f : v.center_row;
  const float cc = v.center_col < 0 ? T / 2.0f : v.center_col;
  w.rows = w.cols = n;
  w.row0 = std::clamp(static_cast<int>(std::lround(cr - n / 2.0f)), 0, T - n);
  w.col0 = std::clamp(static_cast<int>(std::lround(cc - n / 2.0f)), 0, T - n);
  return w;
}

// Wheel zooms about the cell under the mouse; a right-button drag pans.
void applyZoom(ViewState& v, const HeatmapHit& hit, int T) {
  if (v.center_row < 0) v.center_row = v.center_col = T / 2.0f;
  if (hit.wheel != 0 && hit.hover_row >= 0) {
    const float factor = std::pow(1.25f, hit.wheel);
    const float zoom = std::clamp(v.zoom * factor, 1.0f, static_cast<float>(T));
    const float f = v.zoom / zoom;
    v.center_row = hit.hover_row + (v.center_row - hit.hover_row) * f;
    v.center_col = hit.hover_col + (v.center_col - hit.hover_col) * f;
    v.zoom = zoom;
  }
  v.center_row = std::clamp(v.center_row + hit.pan_rows, 0.0f, static_cast<float>(T));
  v.center_col = std::clamp(v.center_col + hit.pan_cols, 0.0f, static_cast<float>(T));
  if (v.zoom <= 1) v.center_row = v.center_col = T / 2.0f;
}

void drawHeader(AppState& app) {
  ViewState& v = app.view;
  const ModelConfig& m = app.workspace.model;
  const int heads = headCount(m);
  if (heads > 1) {
    ImGui::SetNextItemWidth(px(130));
    const std::string current = v.head < 0 ? "all heads" : "head " + std::to_string(v.head + 1);
    if (ImGui::BeginCombo("##head", current.c_str())) {
      if (ImGui::Selectable("all heads", v.head < 0)) v.head = -1;
      for (int h = 0; h < heads; ++h)
        if (ImGui::Selectable(("head " + std::to_string(h + 1)).c_str(), v.head == h)) v.head = h;
      ImGui::EndCombo();
    }
    layout().widget("head");
    ImGui::SameLine();
  }
  if (m.batch_size > 1) {
    ImGui::SetNextItemWidth(px(110));
    int b = v.batch + 1;
    if (ImGui::SliderInt("batch element", &b, 1, m.batch_size)) {
      v.batch = b - 1;
      app.changed();  // the trace keeps only the shown element's intermediates
    }
    layout().widget("batch_element");
    ImGui::SameLine();
  }
  ImGui::Checkbox("shared scale", &v.shared_scale);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("One colour range per kind of map across all heads, so heads compare directly");
  layout().widget("shared_scale");
  ImGui::SameLine();
  if (ImGui::Button("columns…")) ImGui::OpenPopup("columns");
  if (ImGui::BeginPopup("columns")) {
    for (int s = 0; s < kStageCount; ++s) ImGui::Checkbox(stageTitle(static_cast<Stage>(s)), &v.show[s]);
    ImGui::EndPopup();
  }
}

// Whether stage s means something for this configuration: others would repeat their neighbour.
const char* missingStage(const Trace& t, Stage s) {
  if (s == Stage::Scaled && t.model.scale == Scale::None) return "scaling";
  if (s == Stage::Masked && !t.model.causal) return "mask";
  if ((s == Stage::DropoutMask || s == Stage::Dropped) && !t.dropout_active) return "dropout";
  return nullptr;
}

std::vector<Stage> visibleStages(const AppState& app, const Trace& t) {
  std::vector<Stage> out;
  for (int s = 0; s < kStageCount; ++s)
    if (app.view.show[s] && !missingStage(t, static_cast<Stage>(s))) out.push_back(static_cast<Stage>(s));
  return out;
}

// "scaling, mask, dropout": what the shown columns leave out (the pipeline shows why).
std::string skippedStages(const AppState& app, const Trace& t) {
  std::string out;
  for (int s = 0; s < kStageCount; ++s) {
    const char* why = missingStage(t, static_cast<Stage>(s));
    if (app.view.show[s] && why && out.find(why) == std::string::npos) out += (out.empty() ? "" : ", ") + std::string(why);
  }
  return out;
}

// One line of notes under the header: the preset's description (in full on hover), zoom, where
// dropout masks come from, and the maps this step has none of.
void drawNotes(AppState& app, const Trace& t, const std::string& skipped) {
  ViewState& v = app.view;
  std::vector<std::string> notes;
  if (v.zoom <= 1 && t.tokens > 24) notes.push_back("wheel over a map: zoom · right-drag: pan");
  if (t.dropout_active) notes.push_back("dropout masks: PyTorch's CPU generator, Debian build (no MKL)");
  if (!skipped.empty()) notes.push_back("no " + skipped + " in this step");
  const nlohmann::json& view = app.workspace.view;
  const std::string about = view.contains("preset") && view["preset"].is_object() ? view["preset"].value("description", "") : "";
  if (v.zoom > 1) {
    const CellWindow w = zoomWindow(v, t.tokens);
    ImGui::Text("zoom ×%.1f: queries %d–%d, keys %d–%d", v.zoom, w.row0 + 1, w.row0 + w.rows, w.col0 + 1, w.col0 + w.cols);
    ImGui::SameLine();
    if (ImGui::SmallButton("reset zoom")) v.zoom = 1;
    layout().widget("reset_zoom");
    ImGui::SameLine(0, px(16));
  }
  std::string line;
  for (const std::string& n : notes) line += (line.empty() ? "" : "  ·  ") + n;
  if (!about.empty()) line = about + (line.empty() ? "" : "  ·  " + line);
  if (line.empty()) return;
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
}

}  // namespace

void drawHeatmapGrid(AppState& app) {
  const ImVec2 top = ImGui::GetCursorScreenPos(), region = ImGui::GetContentRegionAvail();
  layout().panel("heatmaps", top, ImVec2(top.x + region.x, top.y + region.y));
  drawHeader(app);

  if (!app.engine_error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, theme().selection);
    ImGui::TextWrapped("The engine refused these settings: %s%s", app.engine_error.c_str(),
                       app.trace ? "  (showing the last valid result)" : "");
    ImGui::PopStyleColor();
  }
  if (!app.trace) {
    ImGui::TextUnformatted(app.computing ? "computing…" : "no result yet");
    return;
  }
  const Trace& t = *app.trace;
  const std::vector<Stage> stages = visibleStages(app, t);
  drawNotes(app, t, skippedStages(app, t));
  // While the mouse is over a map the wheel zooms it, so it must not also scroll the grid.
  static bool wheel_on_map = false;
  ImGui::BeginChild("grid", ImVec2(0, 0), false,
                    ImGuiWindowFlags_HorizontalScrollbar | (wheel_on_map ? ImGuiWindowFlags_NoScrollWithMouse : 0));
  wheel_on_map = false;
  const int batch = std::clamp(app.view.batch, 0, static_cast<int>(t.batches.size()) - 1);
  const BatchTrace& bt = t.batches[batch];
  if (bt.heads.empty()) {  // the shown element changed and its trace is on its way
    ImGui::TextUnformatted("computing…");
    ImGui::EndChild();
    return;
  }
  GridData& data = gridData(app);

  if (stages.empty()) {
    ImGui::TextUnformatted("All columns are hidden: choose some under \"columns…\".");
    ImGui::EndChild();
    return;
  }
  // Which heads: all, or the one chosen in the header.
  std::vector<int> heads;
  for (int h = 0; h < t.heads; ++h)
    if (app.view.head < 0 || app.view.head == h) heads.push_back(h);
  if (heads.empty()) heads.push_back(0);
  const int H = static_cast<int>(heads.size()), S = static_cast<int>(stages.size());
  const ImGuiStyle& style = ImGui::GetStyle();
  const float header = ImGui::GetTextLineHeightWithSpacing() + 4;
  const float gap = style.ItemSpacing.x * 2;
  const float fs = fonts().small->FontSize;
  float label_w = 0;
  for (const std::string& tok : app.workspace.tokens)
    label_w = std::max(label_w, fonts().small->CalcTextSizeA(fs, FLT_MAX, 0, tok.c_str()).x);
  const Margins margins{std::min(label_w, px(90)) + px(4),
                        ImGui::GetTextLineHeight() + std::min(label_w, px(48)) + px(6),
                        heatmapColorbarHeight()};
  const int rows = t.tokens, cols = std::max(t.tokens, 1);
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const Arrangement a = arrange(H, S, rows, cols, avail.x - style.ScrollbarSize, avail.y, header, gap, margins);
  const float tile_w = std::max(a.cell * cols + margins.left, avail.x / (a.card_cols * a.stage_cols) - gap);
  const float tile_h = a.cell * rows + margins.top + margins.bottom;
  const float stride_w = tile_w + gap;

  // Colour ranges: per map, or shared per stage across heads.
  auto rangeOf = [&](Stage s, int h) {
    ValueRange r = data.ranges[h][static_cast<int>(s)];
    if (app.view.shared_scale)
      for (int o = 0; o < t.heads; ++o) r = merge(r, data.ranges[o][static_cast<int>(s)]);
    return r;
  };

  const ImVec2 grid_origin = ImGui::GetCursorScreenPos();
  const int stage_rows = (S + a.stage_cols - 1) / a.stage_cols;
  const float card_w = a.stage_cols * stride_w, card_h = header + stage_rows * (tile_h + gap);
  for (int n = 0; n < H; ++n) {
    const int h = heads[n];
    const int cr = n / a.card_cols, cc = n % a.card_cols;
    const ImVec2 card(grid_origin.x + cc * card_w, grid_origin.y + cr * card_h);
    ImGui::SetCursorScreenPos(card);
    ImGui::Text("Head %d of %d  ·  head width %d  ·  Q, K, V: %d×%d", h + 1, t.heads, t.head_width,
                t.tokens, t.head_width);
    for (int k = 0; k < S; ++k) {
      const Stage stage = stages[k];
      const ImVec2 tile(card.x + (k % a.stage_cols) * stride_w, card.y + header + (k / a.stage_cols) * (tile_h + gap));
      ImGui::SetCursorScreenPos(tile);
      HeatmapSpec spec;
      spec.id = std::string("b") + std::to_string(batch) + "h" + std::to_string(h) + stageId(stage);
      spec.title = stageHeading(t, stage);
      spec.values = stage == Stage::DropoutMask ? &data.keep[h] : &stageMatrix(bt.heads[h], stage);
      spec.range = rangeOf(stage, h);
      spec.colormap = app.view.colormap;
      if (app.view.diverging_for_signed && stage != Stage::DropoutMask && spec.range.lo < 0) {
        spec.colormap = Colormap::Coolwarm;
        spec.range = centredOnZero(spec.range);
      }
      spec.row_labels = &app.workspace.tokens;
      spec.col_labels = stage == Stage::Context ? &data.dims : &app.workspace.tokens;
      spec.selected_row = app.view.token;
      if (stage != Stage::Context) spec.selected_col = app.view.key;
      spec.window = zoomWindow(app.view, t.tokens);
      if (stage == Stage::Context) spec.window.col0 = spec.window.cols = 0;  // keys zoom, dims stay
      spec.version = app.trace_version * 64 + static_cast<std::uint64_t>(batch);
      const HeadTrace& head = bt.heads[h];
      spec.describe = [&app, &head, stage](int i, int j) { return describeCell(app, head, stage, i, j); };
      if (stage == Stage::DropoutMask) {
        const std::string kept = t.dropout_active ? "×" + formatFixed(t.dropout_scale, 1) : "1";
        spec.cell_text = [kept](float v) { return v > 0.5f ? kept : std::string("0"); };
        spec.legend = t.dropout_active ? "kept ×" + formatFixed(t.dropout_scale, 2) + " · dropped 0" : "all kept";
      } else if (stage == Stage::Masked && t.model.causal) {
        spec.legend = "▨ −∞ masked";
      }
      spec.dump = {{"head", h}, {"stage", stageId(stage)}, {"batch", batch}};
      HeatmapHit hit = drawHeatmap(spec, ImVec2(tile_w, tile_h));
      if (hit.clicked_row >= 0) app.view.token = hit.clicked_row;
      if (hit.hover_row >= 0) wheel_on_map = true;
      const std::string menu = spec.id + "##menu";
      if (hit.context_menu) ImGui::OpenPopup(menu.c_str());
      if (ImGui::BeginPopup(menu.c_str())) {
        const std::string name = std::string(stageId(stage)) + "_b" + std::to_string(batch + 1) + "_h" + std::to_string(h + 1);
        ImGui::TextDisabled("%s", name.c_str());
        for (const char* format : {"csv", "json", "npy"})
          if (ImGui::MenuItem((std::string("Export as .") + format + "…").c_str()))
            app.pending_export = AppState::MatrixExport{*spec.values, name, format};
        if (ImGui::MenuItem("Save this map as PNG")) {
          app.pending_capture_panel = stageId(stage);
          app.pending_capture_head = h;
        }
        ImGui::EndPopup();
      }
      if (stage == Stage::Context) hit.hover_col = hit.pan_cols = 0;
      if (hit.wheel != 0 || hit.pan_rows != 0 || hit.pan_cols != 0) applyZoom(app.view, hit, t.tokens);
    }
  }
  // Reserve the grid's full extent so the child scrolls when it is larger than the panel.
  const int card_rows = (H + a.card_cols - 1) / a.card_cols;
  ImGui::SetCursorScreenPos(grid_origin);
  ImGui::Dummy(ImVec2(a.card_cols * card_w, card_rows * card_h));
  ImGui::EndChild();
}

}  // namespace attnscope
