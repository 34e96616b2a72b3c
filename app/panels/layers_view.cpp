#include "panels/layers_view.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "display/map_look.h"
#include "lm/head_scores.h"
#include "widgets/fonts.h"
#include "widgets/heatmap.h"
#include "widgets/layout_dump.h"
#include "widgets/text.h"
#include "widgets/theme.h"

namespace attnscope {

namespace {

// A score as the table and the tooltip print it: "—" where the text gives it nothing to measure.
std::string scoreText(const HeadScores& s, const HeadLabelInfo& info) {
  if (info.has != nullptr && !(s.*info.has)) return "—";
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.2f", static_cast<double>(s.*info.score));
  return buf;
}

void selectHead(const PanelContext& ctx, int layer, int head) {
  ctx.commands.push("select_layer", {{"layer", layer}, {"head", head}});
}

// "Layer 6, head 2  (L5H1 in TransformerLens)" and every score.
void headTooltip(const HeadThumbnail& t, int layer, int head) {
  ImGui::BeginTooltip();
  ImGui::Text("Layer %d, head %d   (L%dH%d, as TransformerLens numbers from 0)", layer + 1, head + 1, layer, head);
  for (const HeadLabelInfo& info : headLabelTable())
    ImGui::Text("%-14s %s", info.title, scoreText(t.scores, info).c_str());
  ImGui::Text("%-14s %.2f", "entropy", static_cast<double>(t.scores.mean_entropy));
  ImGui::TextDisabled("Click: show this head in every view");
  ImGui::EndTooltip();
}

}  // namespace

// The least width the scores table takes beside the grid (px at 100 %): its seven columns' titles.
constexpr float kTableBeside = 380;

void LayersView::draw(const PanelContext& ctx, const BesideGrid& beside) {
  const Snapshot* snap = beginMainTab(ctx, "layers");
  if (!ctx.modelOpen()) {
    ImGui::TextWrapped(
        "Open a trained model to see its attention on your own text: every layer's heads at once, what each one "
        "does, and the next tokens it predicts. File › Open model… takes a Hugging Face GPT-2 folder (the README "
        "says how to download gpt2) or the book's own GPTModel saved with torch.save.");
    if (ImGui::Button("Open model…")) ctx.commands.push("dialog", {{"which", "open_model"}});
    layout().widget("layers_open_model");
    return;
  }
  if (snap == nullptr) return;
  if (passShown(snap, *ctx.model) == nullptr) {  // another model's result until this one's comes
    drawWaiting(ctx);
    return;
  }
  gridAndTable(ctx, *snap, beside);
}

// The column beside the grid for the text and the next tokens (0: none), where the Text panel is
// hidden: what the grid as tall as the tab leaves, at least kBesideLeast and at most kBesideMost;
// else kBesideLeast taken from the grid's width, where its thumbnails keep kBesideKeeps of their
// side or kBesideThumbnail px (2 layers of 6 heads, which the width bounds, at 1920 × 1080 and
// 175 % had left no column and 290 px blank under the grid).
constexpr float kBesideLeast = 230, kBesideMost = 320, kBesideThumbnail = 64;  // px at 100 %
constexpr float kBesideKeeps = 0.75f;
float LayersView::besideWidth(const PanelContext& ctx, const ModelPass& pass) {
  if (ctx.view.inputsShown() || ctx.givenMaps()) return 0;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float above = ImGui::GetFrameHeightWithSpacing();  // the buttons' line
  const float spacing = ImGui::GetStyle().ItemSpacing.x, least = std::floor(px(kBesideLeast));
  const GridMetrics g = gridMetrics(pass, ImVec2(avail.x, avail.y - above));
  const float grid_w = g.label_w + static_cast<float>(pass.headsPerLayer()) * (g.cell + g.gap);
  const float spare = std::floor(avail.x - grid_w - spacing);
  if (spare >= least) return std::min(spare, std::floor(px(kBesideMost)));
  // As tall as the tab, or above the table (gridAndTable): either height the grid may get. Never
  // thumbnails under 12 px for it (gridMetrics's least, 4 px, kept "three quarters" of 5).
  if (avail.x - least - spacing < g.label_w + static_cast<float>(pass.headsPerLayer()) * px(12)) return 0;
  for (float share : {1.0f, 0.64f}) {
    const float h = (avail.y - above) * share;
    const float with = gridMetrics(pass, ImVec2(avail.x - least - spacing, h)).cell;
    if (with >= px(12) &&
        with >= std::min(kBesideKeeps * gridMetrics(pass, ImVec2(avail.x, h)).cell, px(kBesideThumbnail)))
      return least;
  }
  return 0;
}

// The buttons' line, the grid and the scores table, in the room the window's content has, and
// the column beside them.
void LayersView::gridAndTable(const PanelContext& ctx, const Snapshot& s, const BesideGrid& beside) {
  const Snapshot* snap = &s;
  const ModelPass& pass = *snap->model;
  // Presented (the Text panel hidden, F10), the text's tokens and the next tokens stand beside the
  // grid, below the buttons' line, where the grid as tall as the tab leaves them room: a lecture's
  // audience had the heads and no word of what the model reads or predicts, half the tab empty
  // (1280 × 720, 250 %). The grid and the table share what the column leaves.
  const float beside_w = beside ? besideWidth(ctx, pass) : 0.0f;
  layout().state()["layers_text_beside"] = beside_w > 0;
  const float beside_room = beside_w > 0 ? beside_w + ImGui::GetStyle().ItemSpacing.x : 0.0f;
  // Above the grid: the button that makes induction show (a model's text; given maps have none to
  // change), and what a thumbnail is.
  if (!ctx.givenMaps() && !ctx.model->isRun()) {  // a run reads its probe, repeated already
    const bool fits_twice = ctx.model->canRepeat();
    ImGui::BeginDisabled(!fits_twice);
    // Off, it says why on its face: greyed with only a tooltip, a projector's audience saw no reason.
    const char* repeat = fits_twice ? "Repeat the text" : "Repeat: twice would not fit";
    if (ImGui::SmallButton(repeat)) ctx.commands.push("repeat_text");
    layout().state()["layers_repeat_label"] = repeat;
    ImGui::EndDisabled();
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) {
      ImGui::BeginTooltip();
      ImGui::PushTextWrapPos(ImGui::GetFontSize() * 28);  // a paragraph, not one line across the screen
      ImGui::TextUnformatted(fits_twice ? "The text's tokens twice over: its second half is predictable, and induction "
                                          "heads light up. The copy follows the last token with no space between "
                                          "(\"…on the logthe cat sat…\"): the same tokens again, not the text retyped."
                                        : "Twice the text would pass the model's context");
      ImGui::PopTextWrapPos();
      ImGui::EndTooltip();
    }
    layout().widget("layers_repeat");
  } else {
    ImGui::AlignTextToFramePadding();
    ImGui::TextDisabled(ctx.model->isRun() ? "on the probe:" : "as they came:");
  }
  // The grid and the table both where the grid above the table keeps thumbnails of 40 px, or loses
  // nothing to it (12 heads a layer are as small in the whole tab: the width bounds them; at 1280 ×
  // 800 and 150 % two such layers took 117 of 725 px and the table was behind a button).
  const ImVec2 avail(ImGui::GetContentRegionAvail().x - beside_room, ImGui::GetContentRegionAvail().y);
  const GridMetrics above = gridMetrics(pass, ImVec2(avail.x, avail.y * 0.64f));
  const float above_cell = above.cell;
  // (And where the table holds its header and three rows below the grid, or beside it as tall as
  // the tab (gridOrTable): at 1280 × 720 and 250 % the room under 2 layers of 6 heads had held
  // none, left blank, with no button to show it.)
  const float under = avail.y - above.label_h - static_cast<float>(pass.layers()) * (above.cell + above.gap);
  const float table_beside = px(kTableBeside) + ImGui::GetStyle().ItemSpacing.x;
  const bool table_rows = under >= 4 * ImGui::GetFrameHeight() + ImGui::GetFrameHeightWithSpacing() ||
                          (avail.x > table_beside &&
                           gridMetrics(pass, ImVec2(avail.x - table_beside, avail.y)).cell >= above_cell);
  const bool both = table_rows && (above_cell >= px(40) || above_cell >= gridMetrics(pass, avail).cell);
  if (!both) {  // one or the other, by a button, in a form that fits beside "Repeat the text" (its
                // whole label had run off the tab at 1280 × 720 and 200 %), else below it
    const std::vector<std::string> forms = table_instead_
                                               ? std::vector<std::string>{"Show the thumbnails", "Thumbnails"}
                                               : std::vector<std::string>{"Show the scores table", "Scores table"};
    const float padding = ImGui::GetStyle().FramePadding.x * 2;
    ImGui::SameLine();
    if (ImGui::CalcTextSize(forms.back().c_str()).x + padding > ImGui::GetContentRegionAvail().x) ImGui::NewLine();
    if (ImGui::SmallButton(firstFitting(forms, ImGui::GetContentRegionAvail().x, padding).c_str()))
      table_instead_ = !table_instead_;
    layout().widget("layers_swap");
  }
  // What a thumbnail is: on the buttons' line where it fits, else on hover.
  const int T = static_cast<int>(pass.ids.size());
  // Thumbnails too small for a tag ("induct") show its letter, and this line the letters' key where
  // some head has a label (at 1280 × 800 and 175 % the 41-px thumbnails showed none, the tab's point).
  {
    const GridMetrics g = gridMetrics(pass, both ? ImVec2(avail.x, avail.y * 0.64f) : avail);
    const bool any = std::any_of(pass.heads.begin(), pass.heads.end(),
                                 [](const HeadThumbnail& t) { return headLabel(t.scores) != nullptr; });
    // The grid draws the form chosen here, from these measures (its own, a line lower, can differ
    // by a pixel: the key without letters, or neither form, at the thresholds).
    form_ = !any || !(both || !table_instead_) ? LabelForm::None  // (no label under kLabelMinTokens)
            : tagsFit(g)                       ? LabelForm::Tag
            : letterPx(g) > 0                  ? LabelForm::Letter
                                               : LabelForm::None;
  }
  const bool letters = form_ == LabelForm::Letter;  // … whose key this line gives
  std::string key;
  for (const HeadLabelInfo& info : headLabelTable())
    key += std::string(key.empty() ? "" : " · ") + info.letter + " " + info.tag;
  layout().state()["layers_key"] = letters ? key : "";
  char about[400];
  std::snprintf(about, sizeof about,
                "%s · each thumbnail is a head's weights (rows: queries, columns: keys), "
                "0 → its largest below the first row%s",
                countOf(T, "token").c_str(), pass.cells < T ? ", in blocks of their largest" : "");
  if (T < kLabelMinTokens)
    std::snprintf(about + std::strlen(about), sizeof about - std::strlen(about),
                  " · heads are labelled (prev, sink, …) from %d tokens on: on fewer, a head that spreads its "
                  "attention evenly scores as high",
                  kLabelMinTokens);
  ImGui::PushFont(fonts().small);
  const std::string brief = countOf(T, "token") + (T < kLabelMinTokens ? ", too few for labels" : "") +
                            (letters ? " · " + key : "") + " (?)";
  if (letters) std::snprintf(about + std::strlen(about), sizeof about - std::strlen(about), " · %s", key.c_str());
  const float room = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x - ImGui::GetItemRectMax().x -
                     ImGui::GetStyle().ItemSpacing.x;  // after the last button, on its line
  if (ImGui::CalcTextSize(about).x <= room) {
    ImGui::SameLine();
    ImGui::AlignTextToFramePadding();
    ImGui::TextDisabled("%s", about);
  } else {
    if (ImGui::CalcTextSize(brief.c_str()).x <= room) ImGui::SameLine();
    ImGui::TextDisabled("%s", brief.c_str());
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", about);
  }
  ImGui::PopFont();
  const ImVec2 at = ImGui::GetCursorScreenPos(), below = ImGui::GetContentRegionAvail();
  if (beside_w > 0) {
    ImGui::SetCursorScreenPos(ImVec2(at.x + below.x - beside_w, at.y));
    beside(ctx, ImVec2(beside_w, below.y));
    ImGui::SetCursorScreenPos(at);
  }
  // One child window with the column or without: the scores table (its ID the child's) keeps its
  // sorting and scroll when F10 brings the column or takes it away.
  ImGui::BeginChild("##grid_and_table", ImVec2(below.x - beside_room, below.y), false,
                    ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
  gridOrTable(ctx, s, both);
  ImGui::EndChild();
}

// Below the buttons' line: the grid, the table, or both (`both`: gridAndTable's choice).
void LayersView::gridOrTable(const PanelContext& ctx, const Snapshot& s, bool both) {
  const Snapshot* snap = &s;
  const ModelPass& pass = *snap->model;
  const ImVec2 rest = ImGui::GetContentRegionAvail();
  // Few heads a layer: the grid as tall as the tab and the table beside it, where that makes the
  // thumbnails larger than above the table (4 heads of 6 layers used a third of the tab's width at
  // 1920 × 1080, the rest empty), or costs them at most a tenth and shows more of the table's rows
  // (2 layers of 4 heads at 1280 × 720 and 150 %: 157-px thumbnails above the table, which showed 6
  // of the 8 heads, 2.3 the strongest induction head cut, and 560 px empty beside them; 152 px
  // beside it, every head listed). The table keeps at least kTableBeside of the width.
  const float spacing = ImGui::GetStyle().ItemSpacing.x;
  if (both && !ctx.givenMaps()) {
    const float above_h = std::floor(rest.y * 0.64f);
    const GridMetrics above = gridMetrics(pass, ImVec2(rest.x, above_h));
    const GridMetrics tall = gridMetrics(pass, ImVec2(rest.x - px(kTableBeside) - spacing, rest.y));
    const float row_h = ImGui::GetTextLineHeight() + 2 * ImGui::GetStyle().CellPadding.y;
    const auto rowsShown = [&](float h) {  // below the header row
      return std::clamp(static_cast<int>(std::floor(h / row_h)) - 1, 0, pass.layers() * pass.headsPerLayer());
    };
    const bool more_rows = rowsShown(rest.y) > rowsShown(rest.y - above_h - ImGui::GetStyle().ItemSpacing.y);
    if (tall.cell > above.cell || (more_rows && tall.cell >= 0.9f * above.cell)) {
      const float grid_w = tall.label_w + static_cast<float>(pass.headsPerLayer()) * (tall.cell + tall.gap);
      const ImVec2 origin = ImGui::GetCursorScreenPos();
      grid(ctx, *snap, ImVec2(grid_w, rest.y));
      ImGui::SetCursorScreenPos(ImVec2(origin.x + grid_w + spacing, origin.y));
      scoresTable(ctx, *snap, ImVec2(rest.x - grid_w - spacing, rest.y));
      layout().state()["layers_table_beside"] = true;
      return;
    }
  }
  layout().state()["layers_table_beside"] = false;
  if (both || !table_instead_) grid(ctx, *snap, ImVec2(rest.x, both ? std::floor(rest.y * 0.64f) : rest.y));
  if (!(both || table_instead_)) return;
  // Given maps have no Heatmaps tab (no stages but the weights): the picked head's map is here,
  // beside the table.
  const ImVec2 below = ImGui::GetContentRegionAvail();
  const bool map = ctx.givenMaps() && ctx.view.head >= 0 && below.x > px(500);
  const float table_w = map ? std::floor(below.x * 0.45f) : below.x;
  scoresTable(ctx, *snap, ImVec2(table_w, below.y));
  if (map) {
    ImGui::SameLine();
    givenHead(ctx, ImVec2(below.x - table_w - ImGui::GetStyle().ItemSpacing.x, below.y));
  }
}

// The picked head of given maps, whole, with its tokens (the layer's weights as they came).
void LayersView::givenHead(const PanelContext& ctx, ImVec2 size) {
  const GivenAttention& g = *ctx.model->given();
  const int layer = ctx.model->layer(), head = ctx.view.head;
  if (head < 0 || head >= g.heads) return;
  if (!head_map_ || shown_given_ != ctx.model->given() || shown_layer_ != layer || shown_head_ != head) {
    auto m = std::make_shared<Matrix>(Eigen::Map<const Matrix>(g.map(layer, head), g.tokens, g.tokens));
    head_range_ = finiteRange(*m);
    head_map_ = std::move(m);
    shown_given_ = ctx.model->given();
    shown_layer_ = layer;
    shown_head_ = head;
    ++head_version_;
  }
  HeatmapSpec spec;
  spec.id = "layers_given_head";
  spec.title = "layer " + std::to_string(layer + 1) + " · head " + std::to_string(head + 1) +
               "  weights as they came  " + std::to_string(g.tokens) + "×" + std::to_string(g.tokens);
  spec.values = *head_map_;
  spec.owner = head_map_;
  LookChoices choices = lookChoices(ctx.view);
  choices.scale = ColourScale::Linear;
  spec.look = colouredBy(ValueRange{0.0f, std::max(head_range_.hi, 1e-30f)}, false, choices);
  spec.row_labels = &ctx.model->tokens();
  spec.col_labels = &ctx.model->tokens();
  spec.token_rows = spec.token_cols = true;
  spec.selected_row = std::clamp(ctx.view.token, 0, g.tokens - 1);
  spec.version = head_version_;
  spec.dump = {{"given_head", head}};
  const HeatmapHit hit = drawHeatmap(ctx.textures, spec, size);
  if (hit.clicked_row >= 0) ctx.commands.push("select_token", {{"index", hit.clicked_row}});
}

// The grid's measures in a room of `size`: the labels' room (in the small font) and square
// thumbnails as large as both directions allow.
LayersView::GridMetrics LayersView::gridMetrics(const ModelPass& pass, ImVec2 size) {
  GridMetrics g;
  ImGui::PushFont(fonts().small);
  g.label_w = std::ceil(ImGui::CalcTextSize("layer 00").x + px(6));  // whole pixels: thumbnails texel for pixel
  g.label_h = std::ceil(ImGui::GetTextLineHeightWithSpacing());
  g.tag_w = ImGui::CalcTextSize("induct").x;
  g.small_px = ImGui::GetFontSize();
  ImGui::PopFont();
  g.gap = std::max(2.0f, std::floor(px(3)));
  g.cell = std::floor(
      std::max(4.0f,
               std::min((size.x - g.label_w) / pass.headsPerLayer(), (size.y - g.label_h) / pass.layers()) - g.gap));
  return g;
}

bool LayersView::tagsFit(const GridMetrics& g) { return g.cell >= g.tag_w * 0.9f; }

// A letter in the thumbnail's top right, above a causal map's diagonal: at most the small font's
// size and 42 % of the thumbnail, at least 11 px (a projector's audience reads no smaller); 0: none.
float LayersView::letterPx(const GridMetrics& g) {
  const float size = std::min(g.small_px, std::floor(g.cell * 0.42f));
  return size >= 11 ? size : 0;
}

void LayersView::grid(const PanelContext& ctx, const Snapshot& s, ImVec2 size) {
  const ModelPass& pass = *s.model;
  const int L = pass.layers(), H = pass.headsPerLayer();
  const ImVec2 cursor = ImGui::GetCursorScreenPos(), origin(std::floor(cursor.x), std::floor(cursor.y));
  const GridMetrics g = gridMetrics(pass, size);
  const float cell = g.cell, gap = g.gap, label_w = g.label_w, label_h = g.label_h;
  const bool tags = form_ == LabelForm::Tag;  // a label's tag inside a thumbnail …
  const float letter_px =                     // … else its letter (0: none)
      form_ == LabelForm::Letter ? std::max(letterPx(g), std::min(g.small_px, 11.0f)) : 0;
  ImGui::PushFont(fonts().small);
  // Labels every k-th row and column where small thumbnails leave no room for each.
  const int row_step = static_cast<int>(std::ceil(ImGui::GetTextLineHeight() / (cell + gap)));
  const int col_step = static_cast<int>(std::ceil((ImGui::CalcTextSize("00").x + px(4)) / (cell + gap)));
  // Texel for pixel where the thumbnail is smaller than its cells (ThumbnailAtlas).
  const int side = static_cast<int>(std::floor(cell * ImGui::GetIO().DisplayFramebufferScale.x));
  const ImTextureID texture = atlas_.texture(s, ctx.view.colormap, side);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const Theme& th = theme();
  const int selected_layer = ctx.model->layer(), selected_head = ctx.view.head;
  int labelled = 0;  // thumbnails with a tag or letter
  draw->AddText(origin, th.text_dim, "head →");
  for (int h = 0; h < H; ++h) {  // head numbers along the top, centred on their column
    if (h % col_step != 0 && h != selected_head) continue;
    const std::string n = std::to_string(h + 1);
    const float x = origin.x + label_w + h * (cell + gap) + (cell - ImGui::CalcTextSize(n.c_str()).x) * 0.5f;
    draw->AddText(ImVec2(x, origin.y), h == selected_head ? th.selection : th.text_dim, n.c_str());
  }
  for (int l = 0; l < L; ++l) {
    const float y = origin.y + label_h + l * (cell + gap);
    const std::string n = "layer " + std::to_string(l + 1);
    if (l % row_step == 0 || l == selected_layer)
      draw->AddText(ImVec2(origin.x, y + (cell - ImGui::GetTextLineHeight()) * 0.5f),
                    l == selected_layer ? th.selection : th.text_dim, n.c_str());
    for (int h = 0; h < H; ++h) {
      const ImVec2 p0(origin.x + label_w + h * (cell + gap), y), p1(p0.x + cell, p0.y + cell);
      ImGui::SetCursorScreenPos(p0);
      ImGui::PushID(l * H + h);
      if (ImGui::InvisibleButton("##head", ImVec2(cell, cell))) selectHead(ctx, l, h);
      const bool hovered = ImGui::IsItemHovered();
      layout().widget("layer_" + std::to_string(l) + "_head_" + std::to_string(h));
      ImGui::PopID();
      ImVec2 uv0, uv1;
      atlas_.uv(l, h, &uv0, &uv1);
      if (texture) draw->AddImage(texture, p0, p1, uv0, uv1);
      const HeadThumbnail& t = pass.head(l, h);
      // The tag in the top right corner: above a causal map's diagonal, where no key is visible
      // (bottom right, it hid the diagonal's end, where a previous-token head shows). Given maps of
      // a model that reads both ways (BERT) have weights there: the tag is small and translucent.
      if (const HeadLabelInfo* label = tags || letter_px > 0 ? headLabel(t.scores) : nullptr) {
        const char* text = tags ? label->tag : label->letter;
        const float size = tags ? ImGui::GetFontSize() : letter_px;
        const ImVec2 ts = fonts().small->CalcTextSizeA(size, FLT_MAX, 0, text);
        const float pad = tags ? px(1.5f) : std::max(1.0f, std::floor(size * 0.15f));
        const ImVec2 q0(p1.x - ts.x - 2 * pad, p0.y), q1(p1.x, p0.y + ts.y + px(1));
        draw->AddRectFilled(q0, q1, IM_COL32(0, 0, 0, 170));
        draw->AddText(fonts().small, size, ImVec2(q0.x + pad, q0.y), IM_COL32(255, 255, 255, 255), text);
        ++labelled;
      }
      // Outlines in the gap around the map, not on it: at 200 % the selected head's hid its first
      // key column (a sink's) and its last query row.
      const auto outline = [&](ImU32 colour, float width) {
        const float w = std::min(width, gap), o = w / 2;
        draw->AddRect(ImVec2(p0.x - o, p0.y - o), ImVec2(p1.x + o, p1.y + o), colour, 0, 0, w);
      };
      const bool selected = l == selected_layer && (selected_head == h || selected_head < 0);
      if (selected) outline(th.selection, selected_head == h ? px(2.5f) : px(1));
      if (hovered) {
        outline(th.hover, px(1.5f));
        headTooltip(t, l, h);
      }
    }
  }
  ImGui::PopFont();
  layout().state()["layers_labels"] = {{"form", tags            ? "tag"
                                                : letter_px > 0 ? "letter"
                                                                : "none"},
                                       {"shown", labelled},
                                       {"letter_px", letter_px}};
  layout().panel("layers_grid", origin,
                 ImVec2(origin.x + label_w + H * (cell + gap), origin.y + label_h + L * (cell + gap)));
  ImGui::SetCursorScreenPos(ImVec2(origin.x, origin.y + std::min(size.y, label_h + L * (cell + gap)) + gap));
}

void LayersView::scoresTable(const PanelContext& ctx, const Snapshot& s, ImVec2 size) {
  const ModelPass& pass = *s.model;
  const int L = pass.layers(), H = pass.headsPerLayer();
  const auto& labels = headLabelTable();
  const int columns = 3 + static_cast<int>(labels.size());
  // Where the scores' titles do not fit side by side (large text on a projector), the columns and
  // the "does" cells take the thumbnails' tags (prev, sink, dup, induct) rather than cut words, and
  // each column is as wide as what it holds.
  float titles = ImGui::CalcTextSize("layer.head").x + ImGui::CalcTextSize("entropy").x, widest = 0;
  for (const HeadLabelInfo& info : labels) {
    titles += ImGui::CalcTextSize(info.title).x;
    widest = std::max(widest, ImGui::CalcTextSize(info.title).x);
  }
  // Each sortable column's header keeps room for its sort arrow, as ImGui lays it out.
  titles += widest + (columns - 1) * (ImGui::GetFontSize() + ImGui::GetStyle().ItemInnerSpacing.x) +
            columns * 2 * ImGui::GetStyle().CellPadding.x + ImGui::GetStyle().ScrollbarSize;
  const bool tags = titles > size.x;
  // With the tags, each column as wide as what it holds, and only the column sorted by keeps room
  // for the arrow (ImGui keeps it in every sortable header: 150 px at 200 %). The cells are padded
  // as the room allows, ImGui's 4 px (7 at 175 %) down to 1 px. Where that is still wider than the
  // room the table scrolls sideways, the head's name kept in view.
  // Where every score column can keep it at ImGui's padding, each does: sorting then moves no header.
  const float arrow = ImGui::GetFontSize();  // a header's sort arrow and its spacing, about
  bool arrow_everywhere = false;
  const auto tagWidth = [&](const char* name, int c) {
    return std::max(ImGui::CalcTextSize(name).x, ImGui::CalcTextSize("0.00").x) +
           (arrow_everywhere || c == sorted_column_ ? arrow : 0.0f);
  };
  float padding = ImGui::GetStyle().CellPadding.x;
  if (tags) {
    const auto natural = [&] {
      float widest_tag = ImGui::CalcTextSize("does").x, sum = ImGui::GetStyle().ScrollbarSize;
      for (std::size_t k = 0; k < labels.size(); ++k) {
        widest_tag = std::max(widest_tag, ImGui::CalcTextSize(labels[k].tag).x);
        sum += tagWidth(labels[k].tag, 2 + static_cast<int>(k));
      }
      return sum + ImGui::CalcTextSize("head").x + arrow + widest_tag + tagWidth("H", columns - 1);
    };
    arrow_everywhere = true;  // natural() as wide as with every column's arrow: does that fit?
    arrow_everywhere = natural() + 2.0f * columns * (padding + 1) <= size.x;
    padding = std::clamp((size.x - natural()) / (2.0f * columns) - 1, px(1), padding);
  }
  const ImGuiTableFlags flags = ImGuiTableFlags_Sortable | ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg |
                                ImGuiTableFlags_BordersInnerV |
                                (tags ? ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_ScrollX
                                      : ImGuiTableFlags_SizingStretchProp);
  ImGui::PushStyleVar(ImGuiStyleVar_CellPadding, ImVec2(padding, ImGui::GetStyle().CellPadding.y));
  const bool open = size.y >= ImGui::GetFrameHeight() * 3 && ImGui::BeginTable("head_scores", columns, flags, size);
  ImGui::PopStyleVar();
  if (!open) return;
  ImGui::TableSetupScrollFreeze(tags ? 1 : 0, 1);
  // Side by side, the head's name and what it does are as wide as they need (with the sort arrow's
  // room), and the scores share the rest: stretched by their titles alone, "does" was cut to "inducti".
  ImGui::TableSetupColumn(tags ? "head" : "layer.head",
                          ImGuiTableColumnFlags_DefaultSort | (tags ? 0 : ImGuiTableColumnFlags_WidthFixed),
                          tags ? 0.0f : ImGui::CalcTextSize("layer.head").x + arrow);
  ImGui::TableSetupColumn("does", ImGuiTableColumnFlags_NoSort | (tags ? 0 : ImGuiTableColumnFlags_WidthFixed),
                          tags ? 0.0f : widest);
  const auto scoreColumn = [&](const char* name, int c) {
    const ImGuiTableColumnFlags fixed = ImGuiTableColumnFlags_WidthFixed | ImGuiTableColumnFlags_NoHeaderWidth;
    ImGui::TableSetupColumn(name, ImGuiTableColumnFlags_PreferSortDescending | (tags ? fixed : 0),
                            tags ? tagWidth(name, c) : 0.0f);
  };
  for (const HeadLabelInfo& info : labels)
    scoreColumn(tags ? info.tag : info.title, 2 + static_cast<int>(&info - labels.data()));
  scoreColumn(tags ? "H" : "entropy", columns - 1);
  // The headers one by one, so that a tag says its score's whole name when hovered.
  ImGui::TableNextRow(ImGuiTableRowFlags_Headers);
  for (int c = 0; c < columns; ++c) {
    if (!ImGui::TableSetColumnIndex(c)) continue;
    if (tags && c >= 2) {  // ImGui cuts a sortable header's name short of the arrow's room, sorted or not:
      const ImVec2 at = ImGui::GetCursorScreenPos();  // the name drawn whole, the header gives click and arrow
      ImGui::PushID(c);
      ImGui::TableHeader("##score");
      ImGui::PopID();
      ImGui::GetWindowDrawList()->AddText(at, ImGui::GetColorU32(ImGuiCol_Text), ImGui::TableGetColumnName(c));
    } else {
      ImGui::TableHeader(ImGui::TableGetColumnName(c));
    }
    layout().widget("layers_header_" + std::to_string(c));
    if (!tags || !ImGui::IsItemHovered()) continue;
    if (c >= 2 && c < columns - 1)
      ImGui::SetTooltip("%s score", labels[static_cast<std::size_t>(c - 2)].title);
    else if (c == columns - 1)
      ImGui::SetTooltip("entropy: the mean over rows of −Σ w log w (nats)");
  }
  ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs();
  if (order_.size() != static_cast<std::size_t>(L * H) || sorted_for_ != s.serial || (specs && specs->SpecsDirty)) {
    order_.resize(static_cast<std::size_t>(L * H));
    for (int i = 0; i < L * H; ++i) order_[static_cast<std::size_t>(i)] = i;
    if (specs && specs->SpecsCount > 0) {
      const int column = sorted_column_ = specs->Specs[0].ColumnIndex;
      const bool descending = specs->Specs[0].SortDirection == ImGuiSortDirection_Descending;
      const auto key = [&](int i) -> float {  // undefined scores sort last either way
        const HeadScores& sc = pass.heads[static_cast<std::size_t>(i)].scores;
        if (column == 0) return static_cast<float>(i);
        if (column == columns - 1) return sc.mean_entropy;
        const HeadLabelInfo& info = labels[static_cast<std::size_t>(column - 2)];
        if (info.has != nullptr && !(sc.*info.has)) return descending ? -INFINITY : INFINITY;
        return sc.*info.score;
      };
      std::stable_sort(order_.begin(), order_.end(),
                       [&](int a, int b) { return descending ? key(a) > key(b) : key(a) < key(b); });
      specs->SpecsDirty = false;
    }
    sorted_for_ = s.serial;
  }
  // A head chosen (a thumbnail's click, Tab) has its row brought into view once, where it is not:
  // with 24 rows and more, a click on 2.4 left rows 1.1–2.2 in view.
  const int chosen = ctx.view.head >= 0 && ctx.view.head < H ? ctx.model->layer() * H + ctx.view.head : -1;
  const bool bring = chosen != table_brought_;
  table_brought_ = chosen;
  const auto chosen_row = std::find(order_.begin(), order_.end(), chosen);
  ImGuiListClipper clipper;
  clipper.Begin(L * H);
  if (bring && chosen_row != order_.end()) {
    const int r = static_cast<int>(chosen_row - order_.begin());
    clipper.ForceDisplayRangeByIndices(r, r + 1);
  }
  while (clipper.Step())
    for (int row = clipper.DisplayStart; row < clipper.DisplayEnd; ++row) {
      const int i = order_[static_cast<std::size_t>(row)], l = i / H, h = i % H;
      const HeadScores& sc = pass.heads[static_cast<std::size_t>(i)].scores;
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      const std::string name = std::to_string(l + 1) + "." + std::to_string(h + 1);
      const bool selected = l == ctx.model->layer() && h == ctx.view.head;
      if (selected && bring) {  // where it is not whole in view (a click on it leaves it where it is)
        const float top = ImGui::GetCursorScreenPos().y, bottom = top + ImGui::GetTextLineHeightWithSpacing();
        const float first = ImGui::GetWindowPos().y + ImGui::GetFrameHeight();  // under the frozen header row
        if (top < first || bottom > ImGui::GetWindowPos().y + ImGui::GetWindowHeight()) ImGui::SetScrollHereY(0.5f);
      }
      if (ImGui::Selectable(name.c_str(), selected, ImGuiSelectableFlags_SpanAllColumns)) selectHead(ctx, l, h);
      if (selected) layout().widget("layers_scores_chosen");  // tests: the chosen head's row
      ImGui::TableNextColumn();
      const HeadLabelInfo* label = headLabel(sc);
      if (label) {
        ImGui::TextUnformatted(tags ? label->tag : label->title);
      } else {  // none of the patterns: said, not a blank that looks like a missing value
        ImGui::TextDisabled("—");
        if (ImGui::IsItemHovered())
          ImGui::SetTooltip("None of these patterns: no score reaches its threshold, or the text is too short to tell");
      }
      for (const HeadLabelInfo& info : labels) {
        ImGui::TableNextColumn();
        // A mean over too few rows to label the head by, dimmed, and why on hover.
        const int rows = labelRows(sc, info);
        if (rows > 0 && rows < std::min(kLabelMinTokens, sc.rows)) {
          ImGui::TextDisabled("%s", scoreText(sc, info).c_str());
          if (ImGui::IsItemHovered())
            ImGui::SetTooltip(
                "A mean over %s: a label needs %d (Repeat the text gives every token of its second "
                "half a copy before it)",
                countOf(rows, "row").c_str(), kLabelMinTokens);
        } else if (sc.*info.score >= info.threshold && !aboveEven(sc, info)) {
          // Over its threshold only because the text repeats so much: an even head scores as high.
          ImGui::TextDisabled("%s", scoreText(sc, info).c_str());
          if (ImGui::IsItemHovered())
            ImGui::SetTooltip(
                "On this text a head that spreads its attention evenly would score %.2f (that share of "
                "the keys %s): a label needs %.0f times that",
                static_cast<double>(sc.*info.even),
                info.score == &HeadScores::induction ? "follow an earlier copy of the token"
                                                     : "are earlier copies of the token",
                static_cast<double>(kLabelOverEven));
        } else {
          ImGui::TextUnformatted(scoreText(sc, info).c_str());
        }
      }
      ImGui::TableNextColumn();
      ImGui::Text("%.2f", static_cast<double>(sc.mean_entropy));
    }
  layout().state()["layers_scores_scroll_x"] = ImGui::GetScrollMaxX();  // tests: 0 where every column fits
  layout().state()["layers_sorted_column"] = sorted_column_;
  ImGui::EndTable();
  layout().widget("layers_scores");
}

}  // namespace attnscope
