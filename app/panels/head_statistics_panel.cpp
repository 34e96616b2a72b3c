#include "panels/head_statistics_panel.h"

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <string>
#include <vector>

#include "state/capture_targets.h"
#include "widgets/fonts.h"
#include "widgets/layout_dump.h"
#include "widgets/text.h"
#include "widgets/theme.h"

namespace attnscope {

namespace {

constexpr int kColumns = 5;                           // head, mean entropy, mean weights (two lines each), two charts
constexpr int kTextColumns = 3;                       // the columns without the charts
const ImU32 kBar = IM_COL32(86, 156, 214, 255);       // the inspector's bars
const ImU32 kAboveOne = IM_COL32(232, 150, 62, 255);  // a row that sums to more than 1

// A row of the table: two lines of text (the means), the charts as tall.
float rowHeight() { return std::max(ImGui::GetTextLineHeight() * 2 + ImGui::GetStyle().ItemSpacing.y, px(30)); }

std::string quoted(const Snapshot& snap, int row) { return "'" + snap.tokens()[static_cast<std::size_t>(row)] + "'"; }

// The entropy a row can have at most: ln of the keys it sees (all T, or i + 1 when causal).
float mostEntropy(const Trace& t, int row) { return std::log(static_cast<float>(t.model.causal ? row + 1 : t.tokens)); }

struct ChartHit {
  int hovered = -1;  // the query row under the mouse
  int clicked = -1;
  ImVec2 plot_min, plot_max;  // where the bars are (right of the labels)
};

// A value marked at the chart's left edge: "1" at the line, the top of the scale.
struct Tick {
  float value;
  std::string text;
};

// Bars over the query rows, from 0 (bottom) to `hi` (top): each row's value in blue (orange where
// it passes `line`), in front of its `ceiling` in grey when given, the line at `line` when > 0, the
// selected row outlined, the `ticks` written left of the bars in the small font. More rows than
// pixels: each pixel column shows its rows' largest value lighter and their smallest in full
// colour, so spread stays visible.
ChartHit rowChart(const char* id, const RowVector& values, const RowVector* ceiling, float hi, float line, int selected,
                  ImVec2 size, const std::vector<Tick>& ticks) {
  ChartHit hit;
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton(id, size);
  const bool hovered = ImGui::IsItemHovered();
  const bool clicked = ImGui::IsItemClicked();
  const bool visible = ImGui::IsItemVisible();  // scrolled away (GPT-2's 12 heads): no shapes to build
  ImDrawList* draw = ImGui::GetWindowDrawList();
  ImFont* font = fonts().small ? fonts().small : ImGui::GetFont();
  const float font_size = font->FontSize;
  float gutter = 0;
  for (const Tick& k : ticks)
    gutter = std::max(gutter, font->CalcTextSizeA(font_size, FLT_MAX, 0, k.text.c_str()).x + px(4));
  const ImVec2 p(origin.x + gutter, origin.y);  // the plot: the bars and the line
  const float plot_w = std::max(size.x - gutter, 1.0f);
  hit.plot_min = p;
  hit.plot_max = ImVec2(p.x + plot_w, p.y + size.y);
  draw->AddRectFilled(p, hit.plot_max, ImGui::GetColorU32(ImGuiCol_FrameBg));
  const int n = static_cast<int>(values.size());
  if (n == 0 || !visible) return hit;
  const float bottom = p.y + size.y, top = p.y + 1, span = bottom - top;
  auto y = [&](float v) { return bottom - std::clamp(v / hi, 0.0f, 1.0f) * span; };
  auto colour = [&](float v) { return line > 0 && v > line * (1 + 1e-4f) ? kAboveOne : kBar; };
  std::vector<std::pair<float, float>> taken;  // labels drawn, top and bottom: a later tick that would
  for (const Tick& k : ticks) {                // overlap one is left out (the first ones matter most)
    const ImVec2 text = font->CalcTextSizeA(font_size, FLT_MAX, 0, k.text.c_str());
    const float ty = std::clamp(y(k.value) - text.y / 2, p.y, bottom - text.y);
    if (std::any_of(taken.begin(), taken.end(), [&](const auto& r) { return ty < r.second && ty + text.y > r.first; }))
      continue;
    taken.push_back({ty, ty + text.y});
    draw->AddText(font, font_size, ImVec2(p.x - px(3) - text.x, ty), theme().text_dim, k.text.c_str());
  }
  const ImU32 grey = theme().masked_cell;
  const ImVec2 size_plot(plot_w, size.y);
  if (static_cast<float>(n) <= size_plot.x) {  // a bar per row, a pixel apart when there is room
    const float w = size_plot.x / static_cast<float>(n), gap = w >= 4 ? 1.0f : 0.0f;
    for (int i = 0; i < n; ++i) {
      const float x0 = p.x + i * w, x1 = x0 + w - gap;
      if (ceiling) draw->AddRectFilled(ImVec2(x0, y((*ceiling)(i))), ImVec2(x1, bottom), grey);
      draw->AddRectFilled(ImVec2(x0, y(values(i))), ImVec2(x1, bottom), colour(values(i)));
    }
  } else {  // a pixel column per bucket of rows
    const int columns = static_cast<int>(size_plot.x);
    for (int x = 0; x < columns; ++x) {
      const int r0 = x * n / columns, r1 = std::max(r0 + 1, (x + 1) * n / columns);
      float lo = values(r0), most = values(r0), roof = ceiling ? (*ceiling)(r0) : 0.0f;
      for (int r = r0 + 1; r < r1; ++r) {
        lo = std::min(lo, values(r));
        most = std::max(most, values(r));
        if (ceiling) roof = std::max(roof, (*ceiling)(r));
      }
      const float x0 = p.x + static_cast<float>(x), x1 = x0 + 1;
      if (ceiling) draw->AddRectFilled(ImVec2(x0, y(roof)), ImVec2(x1, bottom), grey);
      draw->AddRectFilled(ImVec2(x0, y(most)), ImVec2(x1, bottom), (colour(most) & 0x00FFFFFF) | 0x90000000);
      draw->AddRectFilled(ImVec2(x0, y(lo)), ImVec2(x1, bottom), colour(lo));
    }
  }
  if (line > 0)
    draw->AddLine(ImVec2(p.x, y(line)), ImVec2(p.x + plot_w, y(line)), ImGui::GetColorU32(ImGuiCol_Text),
                  std::max(1.0f, px(1)));
  if (selected >= 0 && selected < n) {
    const float x0 = p.x + plot_w * static_cast<float>(selected) / static_cast<float>(n);
    const float x1 = std::max(x0 + 2, p.x + plot_w * static_cast<float>(selected + 1) / static_cast<float>(n));
    draw->AddRect(ImVec2(x0 - 1, p.y), ImVec2(x1, bottom), theme().selection, 0, 0, std::max(1.0f, px(1)));
  }
  if (hovered) {
    hit.hovered = std::clamp(static_cast<int>((ImGui::GetIO().MousePos.x - p.x) / plot_w * static_cast<float>(n)), 0,
                             n - 1);
    if (clicked) hit.clicked = hit.hovered;
  }
  return hit;
}

// A chart's tooltip for one query row; the layout dump has it too (tests).
void tooltip(const std::string& chart, int row, const std::string& text) {
  ImGui::SetTooltip("%s", text.c_str());
  layout().state()["tooltip"] = {{"chart", chart}, {"row", row}, {"text", text}};
}

nlohmann::json floats(const RowVector& v) { return std::vector<float>(v.data(), v.data() + v.size()); }

// Whether `text` is wider than the cell it is about to be drawn in (the layout dump lists those).
bool clipped(const std::string& text) {
  return ImGui::CalcTextSize(text.c_str()).x > ImGui::GetContentRegionAvail().x + 0.5f;
}

// A column header that explains itself on hover.
void header(const char* label, const char* help, nlohmann::json& cut) {
  if (clipped(label)) cut.push_back(label);
  ImGui::TableHeader(label);
  if (ImGui::IsItemHovered()) {
    ImGui::BeginTooltip();
    ImGui::PushTextWrapPos(px(420));
    ImGui::TextUnformatted(help);
    ImGui::PopTextWrapPos();
    ImGui::EndTooltip();
  }
}

// Lines of text, vertically centred in the row; recorded for the layout dump (in `cut` too when
// wider than their column).
void cellLines(const std::vector<std::string>& lines, nlohmann::json& cells, nlohmann::json& cut,
               bool disabled = false) {
  const ImGuiStyle& style = ImGui::GetStyle();
  const float h = static_cast<float>(lines.size()) * ImGui::GetTextLineHeight() +
                  static_cast<float>(lines.size() - 1) * style.ItemSpacing.y;
  ImGui::SetCursorPosY(ImGui::GetCursorPosY() + std::max(0.0f, (rowHeight() - h) / 2));
  for (const std::string& text : lines) {
    if (clipped(text)) cut.push_back(text);
    if (disabled)
      ImGui::TextDisabled("%s", text.c_str());
    else
      ImGui::TextUnformatted(text.c_str());
    cells.push_back(text);
  }
}

}  // namespace

std::string rowStatisticsText(const Snapshot& snap, int head, int row, bool row_sum) {
  const HeadStatistics* s = snap.statisticsOf(head);
  if (!s || row < 0 || row >= s->rows()) return "";
  const Trace& t = *snap.trace;
  const int key = s->argmax[static_cast<std::size_t>(row)];
  std::string text = "row " + quoted(snap, row) + ": entropy " + formatFixed(s->entropy(row), 3) + " nats ≈ " +
                     formatFixed(s->effective_tokens(row), 2) + " tokens\nlargest weight " +
                     formatFixed(s->max_weight(row)) + " on " + quoted(snap, key);
  if (row_sum)
    text += "\nrow sum after dropout " + formatFixed(s->row_sum_after_dropout(row)) +
            (t.dropout_active ? "  (kept weights × " + formatFixed(t.dropout_scale, 2) + ")" : "  (no dropout)");
  return text;
}

float HeadStatisticsPanel::height(const PanelContext& ctx, float column_h) {
  const int heads = ctx.snapshot ? ctx.snapshot->trace->heads : headCount(ctx.document.workspace().model);
  const ImGuiStyle& style = ImGui::GetStyle();
  const float table_header = ImGui::GetTextLineHeight() + 2 * style.CellPadding.y;
  const float row = rowHeight() + 2 * style.CellPadding.y;
  const float frame = ImGui::GetFrameHeight() + 2 * style.WindowPadding.y + table_header + px(2);
  // None where a quarter of the column holds no whole row (a projector's 200 % text at 1280 × 720):
  // half a row said nothing and took the maps' room (Compare showed no map at all).
  if (frame + row > std::floor(column_h / 4)) return 0;
  return std::floor(std::min(frame + static_cast<float>(heads) * row, column_h / 4));
}

void HeadStatisticsPanel::draw(const PanelContext& ctx, ImVec2 pos, ImVec2 size) {
  const Snapshot* snap = ctx.snapshot.get();
  const std::string title = snap && snap->inputs->model.batch_size > 1
                                ? "Head statistics  ·  batch element " + std::to_string(snap->batch + 1) +
                                      "###statistics"
                                : std::string("Head statistics###statistics");
  beginPanelWindow(title.c_str(), "statistics", pos, size);
  if (!snap) {
    drawWaiting(ctx);
    ImGui::End();
    return;
  }
  const Trace& t = *snap->trace;
  const int T = t.tokens, selected = std::clamp(ctx.view.token, 0, T - 1);
  nlohmann::json dump = {{"batch", snap->batch}, {"token", selected}, {"heads", nlohmann::json::array()}};
  const int outlined = ctx.capture.hides_selection ? -1 : selected;  // the charts' outlined row
  nlohmann::json cut = nlohmann::json::array();  // texts wider than their column: none, or the layout fails
  const ImGuiTableFlags flags = ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV |
                                ImGuiTableFlags_ScrollY | ImGuiTableFlags_PadOuterX;
  // The cells of the mean columns. The mean weights say over which rows where there is room (below);
  // the header's tooltip says it always.
  const auto entropyLines = [](const HeadStatistics& s) {
    const float tokens = std::exp(s.mean_entropy);
    return std::vector<std::string>{formatFixed(s.mean_entropy, 3) + " nats",
                                    "≈ " +
                                        formatFixed(tokens, tokens >= 100  ? 0
                                                            : tokens >= 10 ? 1
                                                                           : 2) +
                                        " tokens"};
  };
  const auto weightLines = [T](const HeadStatistics& s, bool rows_said) {
    auto rows = [T, rows_said](int from) {
      return !rows_said  ? std::string()
             : from == T ? " (row " + std::to_string(T) + ")"
                         : " (rows " + std::to_string(from) + "–" + std::to_string(T) + ")";
    };
    return std::vector<std::string>{"previous " +
                                        (s.has_previous ? formatFixed(s.mean_previous, 3) + rows(2) : std::string("—")),
                                    "first " + formatFixed(s.mean_first, 3) + rows(1)};
  };
  // The text columns as wide as their widest text, set here so that this frame knows what the
  // charts get: what is left, shared evenly.
  const int heads_shown = static_cast<int>(snap->shown().heads.size());
  const auto widest = [](const std::vector<std::string>& lines, float w) {
    for (const std::string& l : lines) w = std::max(w, ImGui::CalcTextSize(l.c_str()).x);
    return w;
  };
  float head_w = std::max(ImGui::CalcTextSize("head").x,
                          ImGui::CalcTextSize(("head " + std::to_string(heads_shown)).c_str()).x);
  float entropy_w = widest({"mean entropy", "computing…"}, 0), said_w = ImGui::CalcTextSize("mean weight").x;
  float unsaid_w = said_w;
  // Each head's cells, made once: measured here, drawn below.
  std::vector<std::vector<std::string>> entropy_cells(heads_shown), said_cells(heads_shown), unsaid_cells(heads_shown);
  for (int h = 0; h < heads_shown; ++h)
    if (const HeadStatistics* s = snap->statisticsOf(h)) {
      const auto k = static_cast<std::size_t>(h);
      entropy_cells[k] = entropyLines(*s);
      said_cells[k] = weightLines(*s, true);
      unsaid_cells[k] = weightLines(*s, false);
      entropy_w = widest(entropy_cells[k], entropy_w);
      said_w = widest(said_cells[k], said_w);
      unsaid_w = widest(unsaid_cells[k], unsaid_w);
    }
  // What fits, in this order: the charts with the rows of the means said, the charts alone, the
  // means alone (rows said where they fit). A chart is drawn when its bars get three times the
  // text's size beside their scale: narrower (a 1280-pixel window at 150–200 % text left 30–40
  // pixels) it said nothing a lecture could read, and took the means' room.
  const ImGuiStyle& style = ImGui::GetStyle();
  const auto overhead = [&](int columns) {
    return static_cast<float>(columns + 1) * 2 * style.CellPadding.x + static_cast<float>(columns) +
           style.ScrollbarSize;
  };
  const float avail = ImGui::GetContentRegionAvail().x;
  ImFont* small = fonts().small ? fonts().small : ImGui::GetFont();
  const float least_chart = small->CalcTextSizeA(small->FontSize, FLT_MAX, 0, "0.00").x + px(4) +
                            3 * ImGui::GetFontSize();
  // The row sums' chart only where dropout can act: a trained model's pass has none (eval mode),
  // so its every row would read 1; the entropy's chart takes its room.
  const bool sums_chart = !snap->model;
  const int chart_count = sums_chart ? 2 : 1;
  const auto chartWidth = [&](float weight_w) {
    return (avail - overhead(kTextColumns + chart_count) - head_w - entropy_w - weight_w) /
           static_cast<float>(chart_count);
  };
  const bool charts = chartWidth(unsaid_w) >= least_chart;
  const bool rows_said = charts ? chartWidth(said_w) >= least_chart
                                : avail - overhead(kTextColumns) - head_w - entropy_w >= said_w;
  const float weight_w = rows_said ? said_w : unsaid_w;
  const float chart_w = chartWidth(weight_w);
  const int columns = charts ? kTextColumns + chart_count : kTextColumns;
  dump["charts"] = charts;
  dump["row_sums_chart"] = charts && sums_chart;
  dump["rows_said"] = rows_said;
  if (ImGui::BeginTable("heads", columns, flags)) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("head", ImGuiTableColumnFlags_WidthFixed, std::ceil(head_w));
    ImGui::TableSetupColumn("mean entropy", ImGuiTableColumnFlags_WidthFixed, std::ceil(entropy_w));
    ImGui::TableSetupColumn("mean weight",
                            charts ? ImGuiTableColumnFlags_WidthFixed : ImGuiTableColumnFlags_WidthStretch,
                            charts ? std::ceil(weight_w) : 0.0f);
    // The charts' headers: the longest that fits this frame's chart width, down to the symbols of
    // the tooltips' formulas (the headers' tooltips say what they are).
    auto longest = [&](std::initializer_list<const char*> labels) {
      for (const char* label : labels)
        if (ImGui::CalcTextSize(label).x <= chart_w) return label;
      return *(labels.end() - 1);
    };
    if (charts) {
      ImGui::TableSetupColumn(longest({"entropy per row", "entropy", "Hᵢ"}), ImGuiTableColumnFlags_WidthStretch);
      if (sums_chart)
        ImGui::TableSetupColumn(longest({"row sum after dropout", "row sums", "sums", "Σⱼ"}),
                                ImGuiTableColumnFlags_WidthStretch);
    }
    ImGui::TableNextRow(ImGuiTableRowFlags_Headers);
    const std::string ceiling = t.model.causal ? "ln(i + 1) for query i, which sees the keys up to itself" : "ln T";
    const std::string sums =
        t.dropout_active
            ? "Σⱼ of the weights after dropout: the kept weights × 1/(1 − p) = × " + formatFixed(t.dropout_scale, 2) +
                  ", the dropped ones 0. So a row sums to about 1 on average, not exactly: above the "
                  "line (orange) where more than 1 − p of its weight was kept."
            : "Σⱼ of the weights after dropout: without dropout (p = 0, eval mode, or a step "
              "without dropout) the weights themselves, so every row sums to 1.";
    const std::string entropy_help =
        "Hᵢ = −Σⱼ αᵢⱼ ln αᵢⱼ, the entropy of each query row's weights, in nats (0 ln 0 = 0): 0 when the row "
        "puts all its weight on one key. Grey behind each bar: the most it can be, " +
        ceiling + ", when the row spreads evenly. Hover a bar for its row, click to select it.";
    const std::array<std::string, kColumns> help = {
        "Click a head to show it alone in the heatmaps",
        "The mean over the query rows of the entropy of their weights, in nats; below it exp(mean entropy): "
        "as if each row attended evenly to this many tokens",
        "previous: the mean weight a query puts on the token just before it, over rows 2 … T; first: the mean "
        "weight a query puts on the first token, over all rows 1 … T — row 1 included, whose only weight under "
        "the causal mask is the first token's 1",
        entropy_help, sums + " The line marks 1."};
    for (int c = 0; c < columns; ++c) {
      ImGui::TableSetColumnIndex(c);
      header(ImGui::TableGetColumnName(c), help[static_cast<std::size_t>(c)].c_str(), cut);
    }

    RowVector most(T);  // the entropy charts' grey: the most each row can have
    for (int i = 0; i < T; ++i) most(i) = mostEntropy(t, i);
    const float entropy_hi = std::max(std::log(static_cast<float>(T)), std::log(2.0f));
    const float sums_hi = 1.1f * std::max(1.0f, t.dropout_scale);
    std::vector<Tick> entropy_ticks = {{0.0f, "0"}};  // and the top: ln T, a row spread evenly over every key
    if (T > 1)
      entropy_ticks.push_back({std::log(static_cast<float>(T)), formatFixed(std::log(static_cast<float>(T)), 2)});
    // A head chosen (a thumbnail, Tab, the head selector) has its row brought into view, where it is
    // not: GPT-2's twelve rows in a quarter of the column showed head 1 and half of head 2. The
    // table's first frames place its rows before its scroll range is known (GPT-2's head 12 chosen
    // as the app opened stayed below the edge, head 8 cut under the header): the row is brought on
    // over the next frames until it is whole in view where it stays; then left to the user.
    if (ctx.view.head != bringing_) bringing_ = ctx.view.head, brought_ = false, bring_frames_ = 0, brought_top_ = -1;
    if (bringing_ >= heads_shown) brought_ = true;  // no row of its own here
    drawn_at_ = ctx.now;
    const bool bring = !brought_ && bringing_ >= 0;
    for (int h = 0; h < heads_shown; ++h) {
      ImGui::TableNextRow(0, rowHeight());
      ImGui::PushID(h);
      nlohmann::json cells = nlohmann::json::array();
      ImGui::TableSetColumnIndex(0);
      const bool chosen = ctx.view.head == h;
      if (chosen && bring) {  // where it is not whole in view: its top under the frozen header row
        // (SetScrollHereY put it behind); the cursor's y is in the content's coordinates
        const float pad = ImGui::GetStyle().CellPadding.y, header_h = ImGui::GetTextLineHeight() + 2 * pad;
        const float top = ImGui::GetCursorPosY() - 2 * pad, bottom = top + rowHeight() + 2 * pad;
        const float scroll = ImGui::GetScrollY();
        // The rows are final once nothing computes (a head's statistics in, its cells two lines tall):
        // then whole in view at the same place two frames running, or kBringFrames frames, ends it.
        const bool final = !ctx.computing;
        const bool whole = top >= scroll + header_h - 0.5f && bottom <= scroll + ImGui::GetWindowHeight() + 0.5f;
        if (final && ((whole && top == brought_top_) || ++bring_frames_ >= kBringFrames)) brought_ = true;
        brought_top_ = top;
        if (!whole) {
          // Past the end of the scroll a last row would stop short of the header, the row above it
          // cut in half under it: scrolled by whole rows instead, the cut row the one below.
          // (The table's scroll range is known a frame late: its rows are counted instead.)
          const float pitch = rowHeight() + 2 * pad;
          const float most = header_h + static_cast<float>(heads_shown) * pitch - ImGui::GetWindowHeight();
          float want = top - header_h;
          if (most > 0 && want > most) {
            const float aligned = want - std::ceil((want - most) / pitch) * pitch;
            if (bottom - aligned <= ImGui::GetWindowHeight()) want = aligned;
          }
          ImGui::SetScrollY(std::max(0.0f, want));
        }
      }
      ImGui::SetCursorPosY(ImGui::GetCursorPosY() + (rowHeight() - ImGui::GetTextLineHeight()) / 2);
      const std::string name = "head " + std::to_string(h + 1);
      if (clipped(name)) cut.push_back(name);
      if (ImGui::Selectable(name.c_str(), chosen)) ctx.commands.push("select_head", {{"index", chosen ? -1 : h}});
      layout().widget("statistics_head_h" + std::to_string(h + 1));
      cells.push_back(name);
      const HeadStatistics* s = snap->statisticsOf(h);
      // A two-part result's second part (GPT-2): its maps come in a moment — or never, when it
      // failed or newer inputs were refused (drawMapsMissing says why in the views of one head).
      nlohmann::json entry = {{"head", h},
                              {"computing", s == nullptr && ctx.computing},
                              {"not_computed", s == nullptr && !ctx.computing}};
      if (!s) {
        ImGui::TableSetColumnIndex(1);
        cellLines({ctx.computing ? "computing…" : "not computed"}, cells, cut, true);
      } else {
        const float tokens = std::exp(s->mean_entropy);
        ImGui::TableSetColumnIndex(1);
        cellLines(entropy_cells[static_cast<std::size_t>(h)], cells, cut);
        ImGui::TableSetColumnIndex(2);
        // Over which rows each mean is taken, said in the cell where there is room: the first's
        // includes row 1, whose only weight under the causal mask is the first token's forced 1.
        cellLines((rows_said ? said_cells : unsaid_cells)[static_cast<std::size_t>(h)], cells, cut);
        entry.update(
            {{"mean_entropy", s->mean_entropy},
             {"tokens", tokens},
             {"mean_weight_previous_token", s->has_previous ? nlohmann::json(s->mean_previous) : nlohmann::json()},
             {"mean_weight_first_token", s->mean_first}});
        if (charts) {
          ImGui::TableSetColumnIndex(3);
          const ChartHit e = rowChart("entropy", s->entropy, &most, entropy_hi, 0, outlined,
                                      ImVec2(std::max(ImGui::GetContentRegionAvail().x, px(40)), rowHeight()),
                                      entropy_ticks);
          layout().widget("statistics_entropy_h" + std::to_string(h + 1));
          if (e.hovered >= 0)
            tooltip("statistics_entropy_h" + std::to_string(h + 1), e.hovered,
                    "head " + std::to_string(h + 1) + "  ·  " + rowStatisticsText(*snap, h, e.hovered, false) +
                        "\n(at most " + formatFixed(most(e.hovered), 3) + " here: " +
                        (t.model.causal ? std::to_string(e.hovered + 1) + " keys visible)" : "every key visible)"));
          if (e.clicked >= 0) ctx.commands.push("select_token", {{"index", e.clicked}});
          entry["entropy_chart"] = {{"plot", rectJson(e.plot_min, e.plot_max)}, {"range", {0.0f, entropy_hi}}};
          if (sums_chart) {
            ImGui::TableSetColumnIndex(4);
            std::vector<Tick> sum_ticks = {{1.0f, "1"}};
            if (t.dropout_active) sum_ticks.push_back({t.dropout_scale, formatShort(t.dropout_scale)});
            const ChartHit r = rowChart("sums", s->row_sum_after_dropout, nullptr, sums_hi, 1.0f, outlined,
                                        ImVec2(std::max(ImGui::GetContentRegionAvail().x, px(40)), rowHeight()),
                                        sum_ticks);
            layout().widget("statistics_row_sums_h" + std::to_string(h + 1));
            if (r.hovered >= 0)
              tooltip("statistics_row_sums_h" + std::to_string(h + 1), r.hovered,
                      "head " + std::to_string(h + 1) + "  ·  " + rowStatisticsText(*snap, h, r.hovered, true));
            if (r.clicked >= 0) ctx.commands.push("select_token", {{"index", r.clicked}});
            entry["row_sums_chart"] = {{"plot", rectJson(r.plot_min, r.plot_max)},
                                       {"range", {0.0f, sums_hi}},
                                       {"line", 1.0f}};
          }
        }
        if (T <= 64) {  // the charts' numbers, for tests to hold against attnscope-cli trace
          entry["entropy"] = floats(s->entropy);
          entry["row_sum_after_dropout"] = floats(s->row_sum_after_dropout);
          entry["most_entropy"] = floats(most);
        }
      }
      entry["cells"] = cells;
      dump["heads"].push_back(entry);
      ImGui::PopID();
    }
    ImGui::EndTable();
  }
  dump["clipped"] = cut;
  layout().state()["head_statistics"] = dump;
  ImGui::End();
}

}  // namespace attnscope
