#include "panels/inspector_panel.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "engine/stages.h"
#include "widgets/fonts.h"
#include "widgets/layout_dump.h"
#include "widgets/text.h"
#include "widgets/theme.h"

namespace attnscope {

namespace {

// "[0.1, 0.2, …]": at most `most` components, so wide heads stay on one line.
std::string vec(const Eigen::Ref<const RowVector>& v, int decimals = 4, Eigen::Index most = 8) {
  std::string s = "[";
  for (Eigen::Index k = 0; k < std::min(v.size(), most); ++k) s += (k ? ", " : "") + formatFixed(v(k), decimals);
  return s + (v.size() > most ? ", …]" : "]");
}

std::string shape(long r, long c) { return std::to_string(r) + "×" + std::to_string(c); }

// Text wrapped at spaces only — ImGui's wrapping also breaks after '.', which would split a number
// ("0.\n5500") — within the width left from the cursor, or on a line of its own when a word would
// not fit beside what the line holds (the token arrows at large text sizes). `disabled`: the
// dimmed colour of notes.
void wrapped(const std::string& text, bool disabled = false) {
  float widest_word = 0;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t space = std::min(text.find(' ', at), text.size());
    widest_word = std::max(widest_word, ImGui::CalcTextSize(text.c_str() + at, text.c_str() + space).x);
    at = space + 1;
  }
  if (ImGui::GetCursorPosX() > ImGui::GetCursorStartPos().x + 1 && widest_word > ImGui::GetContentRegionAvail().x)
    ImGui::NewLine();  // beside another item, and a word would not fit: start below it
  const std::string out = wrapAtSpaces(text, std::max(ImGui::GetContentRegionAvail().x, ImGui::GetFontSize() * 4));
  if (disabled) ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  ImGui::TextUnformatted(out.c_str());
  if (disabled) ImGui::PopStyleColor();
}

// One labelled bar per key token: its name, a bar of the value (centred at 0 for signed rows),
// the number, right-aligned so that the decimal points line up. Masked keys are grey and say −∞.
// Clicking a name selects that key column. The numbers keep their room whatever the panel's width
// and the text size: the bars give way first, then the names (which ImGui clips), never a digit.
void barRow(const PanelContext& ctx, const char* id, const Eigen::Ref<const RowVector>& values, bool with_mask) {
  const auto& tokens = ctx.snapshot->tokens();
  float lo = 0, hi = 0;
  for (Eigen::Index j = 0; j < values.size(); ++j)
    if (std::isfinite(values(j))) {
      lo = std::min(lo, values(j));
      hi = std::max(hi, values(j));
    }
  const float span = std::max(hi - lo, 1e-12f);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const int shown = static_cast<int>(std::min<Eigen::Index>(values.size(), 64));  // long rows: first 64
  const auto isMasked = [&](int j) { return with_mask && std::isinf(values(j)) && values(j) < 0; };  // −∞: a masked key
  std::vector<std::string> numbers(static_cast<std::size_t>(shown));
  float num_w = 0;
  for (int j = 0; j < shown; ++j) {
    numbers[static_cast<std::size_t>(j)] = isMasked(j) ? "−∞" : formatFixed(values(j));
    num_w = std::max(num_w, ImGui::CalcTextSize(numbers[static_cast<std::size_t>(j)].c_str()).x);
  }
  const float gap = px(8), min_bar = px(24), min_name = px(36);
  const float avail = ImGui::GetContentRegionAvail().x;
  // The names as wide as the widest needs, up to 40 % of the row (a trained model's "<|endoftext|>"
  // ran under its bar at 70 px); a longer one ends in "…", whole in its tooltip.
  float widest = 0;
  for (int j = 0; j < shown; ++j) widest = std::max(widest, ImGui::CalcTextSize(tokens[j].c_str()).x);
  float name_w = std::max(px(70), std::min(widest + px(4), avail * 0.4f));
  float bar_w = avail - name_w - num_w - 2 * gap;
  if (bar_w < min_bar) {  // a narrow panel or large text: the names give up room for the bar
    name_w = std::max(min_name, name_w - (min_bar - bar_w));
    bar_w = avail - name_w - num_w - 2 * gap;
  }
  const bool bars = bar_w >= px(12);  // else numbers only, beside the names
  const float h = ImGui::GetTextLineHeight();
  const float left = ImGui::GetCursorPosX();  // the rows' left edge, in window coordinates
  const float num_x = left + name_w + gap + (bars ? bar_w + gap : 0.0f);
  for (int j = 0; j < shown; ++j) {
    ImGui::PushID(id);
    ImGui::PushID(j);
    const bool masked = isMasked(j);
    const bool selected = ctx.view.key == j;
    // Drawn apart from the item: a token's "##" (GPT-2 has "##", "###") would be read as its id.
    const ImVec2 at = ImGui::GetCursorScreenPos();
    if (ImGui::Selectable("##name", selected, 0, ImVec2(name_w, h)))
      ctx.commands.push("select_key", {{"index", selected ? -1 : j}});
    const std::string name = fitText(tokens[j], name_w - px(2));
    draw->AddText(at, ImGui::GetColorU32(ImGuiCol_Text), name.c_str());
    if (name != tokens[j] && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tokens[j].c_str());
    ImGui::PopID();
    ImGui::PopID();
    if (bars) {
      ImGui::SameLine(left + name_w + gap);
      const ImVec2 p = ImGui::GetCursorScreenPos();
      const float zero = p.x + bar_w * (-lo / span);
      if (masked) {
        draw->AddRectFilled(ImVec2(p.x, p.y + 2), ImVec2(p.x + bar_w, p.y + h - 2), theme().masked_cell);
      } else {
        const float x = p.x + bar_w * ((values(j) - lo) / span);
        const ImU32 col = values(j) >= 0 ? IM_COL32(86, 156, 214, 255) : IM_COL32(214, 110, 86, 255);
        draw->AddRectFilled(ImVec2(std::min(zero, x), p.y + 2), ImVec2(std::max(zero, x) + 1, p.y + h - 2), col);
      }
      ImGui::Dummy(ImVec2(bar_w, h));
    }
    const std::string& number = numbers[static_cast<std::size_t>(j)];
    ImGui::SameLine(num_x + num_w - ImGui::CalcTextSize(number.c_str()).x);
    ImGui::TextUnformatted(number.c_str());
    if (j < 12) layout().widget(std::string("inspector_") + id + "_" + std::to_string(j));  // tests: within the panel
  }
  if (values.size() > shown) ImGui::TextDisabled("… %d more keys", static_cast<int>(values.size() - shown));
}

void section(const char* title, const std::string& shape_note) {
  ImGui::Spacing();
  wrapped(title);
  if (!shape_note.empty()) {  // beside the title while it fits, else under it
    ImGui::SameLine();
    if (ImGui::CalcTextSize(shape_note.c_str()).x > ImGui::GetContentRegionAvail().x) ImGui::NewLine();
    wrapped(shape_note, true);
  }
}

// zᵢ = Σⱼ αᵢⱼ vⱼ, one term per visible key, then the sum.
void contextTerms(const PanelContext& ctx, const HeadTrace& h, int i, const RowVector& dropped, bool simple) {
  const auto& tokens = ctx.snapshot->tokens();
  const int T = static_cast<int>(h.weights.cols());
  // In the UI's font, as the rest of the panel: a projector's text size makes it wider than the
  // panel, and then it scrolls sideways (a smaller font read as 65–80 % of the text around it).
  layout().state()["inspector_terms_font_px"] = ImGui::GetFontSize();
  const int shown = std::min(T, 64);
  std::vector<std::array<std::string, 3>> rows;
  std::array<float, 3> widest{};
  for (int j = 0; j < shown; ++j) {
    const float a = dropped(j);
    rows.push_back({tokens[j], formatFixed(a, 3) + " × " + vec(h.values.row(j), 2, 3), vec(a * h.values.row(j), 3, 3)});
    for (int k = 0; k < 3; ++k) widest[k] = std::max(widest[k], ImGui::CalcTextSize(rows.back()[k].c_str()).x);
  }
  // Wider than the panel (a large text size, wide heads): the table scrolls sideways.
  const ImGuiStyle& style = ImGui::GetStyle();
  const bool scroll = widest[0] + widest[1] + widest[2] + 6 * style.CellPadding.x > ImGui::GetContentRegionAvail().x;
  const float row_h = ImGui::GetTextLineHeight() + 2 * style.CellPadding.y;
  const ImVec2 outer = scroll ? ImVec2(0, (shown + 1) * row_h + style.ScrollbarSize + 2 * style.CellPadding.y)
                              : ImVec2(0, 0);
  if (ImGui::BeginTable("terms", 3,
                        ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_RowBg | (scroll ? ImGuiTableFlags_ScrollX : 0),
                        outer)) {
    ImGui::TableSetupColumn("key");
    ImGui::TableSetupColumn(simple ? "α × x" : "α × v");
    ImGui::TableSetupColumn("= term");
    ImGui::TableHeadersRow();
    for (int j = 0; j < shown; ++j) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      if (ctx.view.key == j) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, ImGui::GetColorU32(ImGuiCol_Header));
      ImGui::TextUnformatted(rows[static_cast<std::size_t>(j)][0].c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(rows[static_cast<std::size_t>(j)][1].c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(rows[static_cast<std::size_t>(j)][2].c_str());
    }
    ImGui::EndTable();
  }
  wrapped("z" + std::to_string(i + 1) + " = Σ = " + vec(h.context.row(i)));
}

}  // namespace

void InspectorPanel::draw(const PanelContext& ctx, ImVec2 pos, ImVec2 size) {
  beginPanelWindow("Inspector", "inspector", pos, size);
  const Snapshot* snap = ctx.snapshot.get();
  if (!snap) {
    ImGui::TextUnformatted(ctx.computing ? "computing…" : "no result");
    ImGui::End();
    return;
  }
  const Trace& t = *snap->trace;
  const BatchTrace& bt = snap->shown();
  const int i = std::clamp(ctx.view.token, 0, t.tokens - 1);
  const bool simple = t.model.variant == Variant::Simple;
  const int head = std::clamp(ctx.view.head, 0, t.heads - 1);
  const HeadTrace& h = bt.heads[head];
  const auto& tokens = snap->tokens();
  if (!h.hasMaps()) {  // the chosen head comes first (a model's long text: just after the thumbnails)
    drawMapsMissing(ctx, head);
    ImGui::End();
    return;
  }

  if (ImGui::ArrowButton("##prev", ImGuiDir_Left) && i > 0) ctx.commands.push("select_token", {{"index", i - 1}});
  layout().widget("token_prev");
  ImGui::SameLine();
  if (ImGui::ArrowButton("##next", ImGuiDir_Right) && i + 1 < t.tokens)
    ctx.commands.push("select_token", {{"index", i + 1}});
  layout().widget("token_next");
  ImGui::SameLine();
  wrapped("query " + std::to_string(i + 1) + ": \"" + tokens[i] + "\"  (x" + std::to_string(i + 1) + ")");
  if (snap->model)  // a trained model's: which layer and head, picked in the Layers grid or the Heatmaps header
    wrapped("layer " + std::to_string(snap->layer + 1) + " · head " + std::to_string(head + 1) + " of " +
                std::to_string(t.heads) + " (pick another in the Layers tab or the Heatmaps header)",
            true);
  else if (t.heads > 1)
    wrapped("head " + std::to_string(head + 1) + " of " + std::to_string(t.heads) + " (choose in the heatmap header)",
            true);

  // A trained model's layer reads the residual stream through its first LayerNorm, not embeddings.
  section(snap->model ? "input  LayerNorm₁ of the residual stream" : "input", "xᵢ, 1×" + std::to_string(t.d_in));
  wrapped("x" + std::to_string(i + 1) + " = " + vec(inputOf(*snap->inputs, snap->batch).row(i)));

  if (simple) {
    section("scores  ωᵢⱼ = xᵢ · xⱼ",
            shape(t.tokens, t.d_in) + " @ " + shape(t.d_in, t.tokens) + " → " + shape(t.tokens, t.tokens));
  } else {
    const int w = t.head_width;
    const std::string proj = shape(t.tokens, t.d_in) + " @ " +
                             shape(t.d_in, t.model.variant == Variant::MultiHead ? t.model.d_out : w) + " → " +
                             shape(t.tokens, t.model.variant == Variant::MultiHead ? t.model.d_out : w);
    section("query", "qᵢ = xᵢ W_q" + std::string(t.model.qkv_bias ? " + b" : "") + "   " + proj);
    wrapped("q" + std::to_string(i + 1) + " = " + vec(h.queries.row(i)));
    if (t.model.variant == Variant::MultiHead) {
      textDisabledWrapped("this head's %d of the %d columns: head_dim = d_out / num_heads", w, t.model.d_out);
    }
    section("scores  qᵢ · kⱼ", shape(t.tokens, w) + " @ " + shape(w, t.tokens) + " → " + shape(t.tokens, t.tokens));
  }
  barRow(ctx, "scores", h.scores.row(i), false);
  // The notebook's order: mask the raw scores, then divide by √d_k.
  if (t.model.causal && !trilRoute(t.model)) {
    section("masked  −∞ for later tokens", "");
    barRow(ctx, "masked", StageMap(t, h, Stage::MaskedScores).row(i), true);
  }
  if (t.model.scale == Scale::SqrtDk) {
    section(("scaled  ÷ √" + std::to_string(t.head_width)).c_str(), "");
    barRow(ctx, "scaled", StageMap(t, h, Stage::ScaledScores).row(i), true);
  }
  if (trilRoute(t.model)) {  // cells [26]–[28]: softmax over every key, × tril, ÷ the row's sum
    section("softmax over every key", "");
    barRow(ctx, "unmasked", StageMap(t, h, Stage::UnmaskedWeights).row(i), false);
    section("× tril  later keys → 0", "");
    barRow(ctx, "tril", StageMap(t, h, Stage::TrilWeights).row(i), false);
  }
  section(trilRoute(t.model)                            ? "weights  ÷ the row's sum, which sums to 1"
          : t.model.normalization == Normalization::Sum ? "weights  ÷ row sum"
                                                        : "weights  softmax, the row sums to 1",
          "");
  barRow(ctx, "weights", h.weights.row(i), false);
  // The row's sum as a number, as the notebooks print it (attn_weights.sum(dim=-1)).
  const auto rowSum = [](const auto& row) {
    double sum = 0;
    for (Eigen::Index j = 0; j < row.size(); ++j) sum += row(j);
    return static_cast<float>(sum);
  };
  nlohmann::json& sums = layout().state()["inspector_row_sums"];
  sums = {{"weights", rowSum(h.weights.row(i))}};
  wrapped("row sum Σⱼ = " + formatFixed(sums["weights"].get<float>(), 4), true);
  if (t.tokens <= 16) {  // every row's, as attn_weights.sum(dim=-1) prints them
    std::string all;
    nlohmann::json every = nlohmann::json::array();
    for (int r = 0; r < t.tokens; ++r) {
      const float v = rowSum(h.weights.row(r));
      every.push_back(v);
      all += (r ? ", " : "") + formatFixed(v, 4);
    }
    sums["every_row"] = every;
    wrapped("every row's sum: [" + all + "]", true);
  }
  if (t.dropout_active) {
    section(("after dropout  kept × " + formatFixed(t.dropout_scale, 2) + ", dropped → 0").c_str(), "");
    const auto dropped = StageMap(t, h, Stage::DroppedWeights).row(i);
    barRow(ctx, "dropped", dropped, false);
    sums["dropped_weights"] = rowSum(dropped);
    wrapped("row sum Σⱼ = " + formatFixed(sums["dropped_weights"].get<float>(), 4) + "  (1 on average, not exactly)",
            true);
  }
  section(simple ? "context  zᵢ = Σⱼ αᵢⱼ xⱼ" : "context  zᵢ = Σⱼ αᵢⱼ vⱼ",
          shape(t.tokens, t.tokens) + " @ " + shape(t.tokens, t.head_width) + " → " + shape(t.tokens, t.head_width));
  contextTerms(ctx, h, i, StageMap(t, h, Stage::DroppedWeights).row(i), simple);
  layout().state()["inspector_context"] = std::vector<float>(h.context.row(i).data(),
                                                             h.context.row(i).data() + h.context.cols());

  if (t.heads > 1 || hasOutProj(t.model.variant)) {
    section("all heads", "");
    wrapped("concat of " + std::to_string(t.heads) + " heads, " + shape(t.tokens, bt.context.cols()), true);
    wrapped(vec(bt.context.row(i)));
    if (hasOutProj(t.model.variant)) {
      wrapped("out_proj: " + shape(t.tokens, t.model.d_out) + " @ " + shape(t.model.d_out, t.model.d_out) +
                  " + b → output",
              true);
      wrapped(vec(bt.output.row(i)));
    }
  }
  ImGui::End();
}

}  // namespace attnscope
