#include "panels/lines_view.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "display/map_look.h"
#include "engine/stages.h"
#include "panels/lines_header.h"
#include "state/capture_targets.h"
#include "state/model_session.h"
#include "widgets/fonts.h"
#include "widgets/heatmap.h"
#include "widgets/layout_dump.h"
#include "widgets/text.h"
#include "widgets/theme.h"

namespace attnscope {

namespace {

std::string fixed2(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

}  // namespace

std::vector<AttentionLine> attentionLines(const Snapshot& snap, bool dropped, int top_k) {
  std::vector<AttentionLine> out;
  const Trace& t = *snap.trace;
  const BatchTrace& bt = snap.shown();
  const int T = snap.tokenCount();
  std::vector<float> row(static_cast<std::size_t>(T));
  std::vector<int> order;
  for (int h = 0; h < static_cast<int>(bt.heads.size()); ++h) {
    const HeadTrace& head = bt.heads[static_cast<std::size_t>(h)];
    if (!head.hasMaps()) continue;
    const StageMap map(t, head, dropped ? Stage::DroppedWeights : Stage::Weights);
    for (int i = 0; i < T; ++i) {
      map.readRow(i, row.data());
      order.clear();
      for (int j = 0; j < T; ++j)
        if (std::isfinite(row[static_cast<std::size_t>(j)]) && row[static_cast<std::size_t>(j)] > 0) order.push_back(j);
      if (top_k > 0 && static_cast<int>(order.size()) > top_k) {
        auto larger = [&](int a, int b) {
          const float va = row[static_cast<std::size_t>(a)], vb = row[static_cast<std::size_t>(b)];
          return va > vb || (va == vb && a < b);
        };
        std::partial_sort(order.begin(), order.begin() + top_k, order.end(), larger);
        order.resize(static_cast<std::size_t>(top_k));
        std::sort(order.begin(), order.end());
      }
      for (int j : order) out.push_back({i, j, h, row[static_cast<std::size_t>(j)]});
    }
  }
  return out;
}

float lineAlpha(float value, float most, float floor) {
  return most > 0 ? std::clamp(value / most, floor, 1.0f) : 0.0f;
}
float lineWidth(float alpha) { return 1.0f + 4.0f * alpha; }

LinesFigureSpec linesFigure(const Snapshot& snap, const ViewState& view, bool caption) {
  LinesFigureSpec spec;
  const Trace& t = *snap.trace;
  const int T = snap.tokenCount(), H = static_cast<int>(snap.shown().heads.size());
  const int layer = snap.model ? snap.layer : 0;  // the heads' colours count the layers before it
  const bool dropped = view.lines_stage == "dropped_weights" && t.dropout_active;
  const bool all_keys = T <= kLinesAllKeysUpTo;
  const int k = all_keys ? 0 : std::min(view.lines_top_k, T);
  const float most = dropped ? t.dropout_scale : 1.0f;
  const int selected = std::clamp(view.token, 0, std::max(T - 1, 0));
  auto shown = [&](int h) { return (view.head < 0 || view.head == h) && !linesHeadHidden(view, h); };
  std::vector<float> offset(static_cast<std::size_t>(std::max(H, 0)), 0.0f);
  int n = 0, drawn = 0;
  for (int h = 0; h < H; ++h) drawn += shown(h) ? 1 : 0;
  for (int h = 0; h < H; ++h)
    if (shown(h)) {
      offset[static_cast<std::size_t>(h)] = drawn > 1 ? (static_cast<float>(n++) - (drawn - 1) / 2.0f) *
                                                            std::min(0.25f, 0.5f / static_cast<float>(drawn))
                                                      : 0.0f;
      if (H > 1) spec.heads.push_back({"head " + std::to_string(h + 1), headColour(layer, h, H)});
    }
  spec.tokens = snap.tokens();
  for (const AttentionLine& l : attentionLines(snap, dropped, k)) {
    if (!shown(l.head) || (view.lines_isolate && l.i != selected)) continue;
    const float a = lineAlpha(l.value, most, all_keys ? 0.0f : kTopKLeastAlpha);
    spec.lines.push_back(
        {l.i, l.j, a, lineWidth(a), offset[static_cast<std::size_t>(l.head)], headColour(layer, l.head, H)});
  }
  spec.title = std::string("attention as lines: ") + (dropped ? "weights after dropout" : "weights") +
               (all_keys ? "" : " · top " + std::to_string(k) + " keys per query") +
               (view.lines_isolate ? " · query '" + snap.tokens()[static_cast<std::size_t>(selected)] + "'" : "") +
               (snap.model ? " · layer " + std::to_string(snap.layer + 1) : "");  // as a map's figure says it
  spec.legend = dropped ? "opacity and width follow the weight after dropout: opaque at 1/(1−p) = " + fixed2(most)
                        : "opacity and width follow the weight: opaque at 1";
  if (caption) spec.caption = mapsOrigin(snap, " · ") + " · T " + std::to_string(T) + seedPart(snap, " · ");
  return spec;
}

void LinesView::reset() {
  cached_serial_ = 0;
  cached_k_ = -1;
  lines_.clear();
  hover_query_ = hover_key_ = -1;
  scrolled_to_ = -1;
  mouse_moved_ = false;
  dump_key_.clear();
  dump_lines_ = nlohmann::json();
}

ImU32 colourU32(Rgb c, float alpha) {
  return IM_COL32(c.r, c.g, c.b, static_cast<int>(std::lround(std::clamp(alpha, 0.0f, 1.0f) * 255)));
}

void LinesView::draw(const PanelContext& ctx, ImVec2 size) {
  (void)size;
  const Snapshot* snap = beginMainTab(ctx, "lines");
  if (!snap) return;
  const ViewState& view = ctx.view;
  const Trace& t = *snap->trace;
  const BatchTrace& bt = snap->shown();
  const int T = snap->tokenCount(), H = static_cast<int>(bt.heads.size());
  const int layer = snap->model ? snap->layer : 0;  // the heads' colours count the layers before it
  if (T == 0 || H == 0) {
    ImGui::TextDisabled("no tokens");
    return;
  }
  const bool can_drop = t.dropout_active;
  const bool dropped = view.lines_stage == "dropped_weights" && can_drop;
  const bool all_keys = T <= kLinesAllKeysUpTo;
  const int k = all_keys ? 0 : std::min(view.lines_top_k, T);
  if (cached_serial_ != snap->serial || cached_dropped_ != dropped || cached_k_ != k) {
    lines_ = attentionLines(*snap, dropped, k);
    cached_serial_ = snap->serial;
    cached_dropped_ = dropped;
    cached_k_ = k;
  }
  const float most = dropped ? t.dropout_scale : 1.0f;
  const int selected = std::clamp(view.token, 0, T - 1);
  auto headShown = [&](int h) { return (view.head < 0 || view.head == h) && !linesHeadHidden(view, h); };
  // A query's lines of the heads shown, the largest weights first.
  const auto strongestFirst = [&](int query) {
    std::vector<const AttentionLine*> out;
    for (const AttentionLine& l : lines_)
      if (l.i == query && headShown(l.head)) out.push_back(&l);
    std::stable_sort(out.begin(), out.end(),
                     [](const AttentionLine* a, const AttentionLine* b) { return a->value > b->value; });
    return out;
  };

  // ---- the header: stage, heads, k, isolation, the hint (lines_header.h) --------------------------
  LinesHeaderState header;
  header.heads = H;
  header.layer = layer;
  header.can_drop = can_drop;
  header.dropped = dropped;
  header.all_keys = all_keys;
  header.k = k;
  header.tokens = T;
  header.no_drop_why = !hasDropout(t.model.variant) ? "dropout comes with step 3 (causal)"
                       : !t.model.training          ? "eval mode: dropout is off"
                                                    : "p = 0: nothing dropped";
  header.hint = dropped ? "a line's opacity and width follow its weight after dropout: opaque at 1/(1−p) = " +
                              fixed2(most) + "; dropped keys have no line"
                        : "a line's opacity and width follow its weight: opaque at 1";
  header.hint += std::string(all_keys ? ""
                                      : " (at least 8 % opaque: each is among its row's largest) · the other keys "
                                        "are not drawn · the lines of the queries on screen (scroll for the others)") +
                 " · hover a token to isolate its lines, click a query to select it";
  if (view.head >= 0 && H > 1)
    header.hint += " · head " + std::to_string(view.head + 1) + " chosen (Tab: all heads)";
  else if (H > 4 && static_cast<int>(view.lines_hidden_heads.size()) < H - 4)
    header.hint += " · " + std::to_string(H - static_cast<int>(view.lines_hidden_heads.size())) +
                   " heads drawn over each other: click their numbers to hide some, or Tab to one head";
  drawLinesHeader(ctx, header);

  // ---- the canvas: queries | lines | keys ----------------------------------------------------
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  ImGui::BeginChild("##lines_canvas", avail, false, ImGuiWindowFlags_NoSavedSettings);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImVec2 inner = ImGui::GetContentRegionAvail();
  const float heading_h = ImGui::GetTextLineHeightWithSpacing();
  const float room = std::max(inner.y - heading_h - px(8), fonts().small->FontSize + px(3));
  // Rows as tall as the room allows, at most 60 px and at least kLeastLinesPitch: every row in view
  // where they fit, the lists scrolling only past that. Rows shorter than a label are named as a
  // thinned heatmap axis is, every `step`-th with its number ("20 Ġl"), the selected and hovered
  // tokens always: scrolled at a label's height, a repeated text's induction lines (query i to key
  // i − 19) had all left the view at the top, to keys out of sight. Labels line to line where that
  // puts every row in view (at 1280 × 720 and 200 % a model's 11th token was a few pixels below).
  const float pitch = std::clamp(room / static_cast<float>(T), px(kLeastLinesPitch), px(60));
  // The labels in the small font past 24 tokens, or where the rows are shorter than the UI's (20
  // tokens at 1280 × 800 and 150 %: every other row named in the UI's, every row in the small one).
  const bool small = T > 24 || pitch < ImGui::GetFontSize();
  ImFont* font = small ? fonts().small : ImGui::GetFont();
  const float font_size = small ? fonts().small->FontSize : ImGui::GetFontSize();
  const float text_h = font_size + px(3);
  const int step = pitch >= font_size ? 1 : axisNameStep(text_h, pitch, true);
  // Named whatever the step: the selected query, the tokens under the mouse (last frame's) and an
  // isolated query's keys of more than an even share of its weight, the largest first (their
  // values are written after them; the others keep the ruler's names).
  std::vector<int> places = {hover_query_, hover_key_};
  const int isolating = hover_query_ >= 0 ? hover_query_ : hover_key_ < 0 && view.lines_isolate ? selected : -1;
  if (isolating >= 0 && step > 1) {
    places.push_back(isolating);
    const float even = 1.0f / static_cast<float>(t.model.causal ? isolating + 1 : T);
    for (const AttentionLine* l : strongestFirst(isolating))
      if (l->value > even) places.push_back(l->j);
  }
  const std::vector<int> pinned = pinnedAxisNames(ctx.capture.hides_selection ? -1 : selected, places, step);
  const auto named = [&](int i) { return step == 1 || pinnedAxisNamed(i, pinned, step, axisNamed(i, i, step)); };
  const auto rowName = [&](int i) { return axisName(snap->tokens()[static_cast<std::size_t>(i)], i, step); };
  // Every row's name, named or not: the band stays put as the mouse moves (the names pinned change).
  if (const std::tuple<std::uint64_t, float, int> key{snap->serial, font_size, step}; key != names_key_) {
    names_key_ = key;
    names_w_ = widestAxisName(snap->tokens(), 0, T, step > 1, font_size, font);
  }
  float label_w = names_w_;
  // + 1: (w + px(4)) − px(4) rounds below w for some w, and the longest token lost its end
  // ("Ġbecau…" with 200 px to spare).
  label_w = std::min(label_w + px(4) + 1, std::max(px(60), inner.x * 0.18f));
  const float gap = px(10);
  // With a query isolated, each of its lines' values is written after its key, in its head's
  // colour (up to 4 heads, up to kLinesAllKeysUpTo tokens): room for them is kept on the right.
  int drawn_heads = 0;
  for (int h = 0; h < H; ++h) drawn_heads += headShown(h) ? 1 : 0;
  const float value_w = ImGui::CalcTextSize("0.000").x + px(8);
  const bool values_room = all_keys && drawn_heads >= 1 && drawn_heads <= 4;
  const float values_w = values_room ? drawn_heads * value_w + px(6) : 0.0f;
  const float span = std::clamp(inner.x - 2 * (label_w + gap) - values_w - px(16), px(80), px(560));
  const float content_w = 2 * (label_w + gap) + span + values_w;
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float x0 = origin.x + std::max(0.0f, (inner.x - content_w) / 2);
  const float xq = x0 + label_w, xl = xq + gap, xr = xl + span, xk = xr + gap;
  const float rows_h = pitch * static_cast<float>(T);
  const float y0 = origin.y + heading_h + std::max(0.0f, (room - rows_h) / 2);
  auto rowY = [&](int i) { return y0 + (static_cast<float>(i) + 0.5f) * pitch; };
  const ImU32 text_col = ImGui::GetColorU32(ImGuiCol_Text), dim = theme().text_dim;
  const float heading_y = std::max(origin.y, y0 - heading_h);  // just above the first row
  draw->AddText(ImVec2(std::max(origin.x, xq - ImGui::CalcTextSize("queries").x), heading_y), dim, "queries");
  draw->AddText(ImVec2(xk, heading_y), dim, "keys");
  ImGui::Dummy(ImVec2(content_w, heading_h + rows_h + px(8)));

  // What the mouse is on (this frame): a query label on the left, a key label on the right.
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const ImVec2 clip_min = ImGui::GetWindowPos(),
               clip_max(clip_min.x + ImGui::GetWindowSize().x, clip_min.y + ImGui::GetWindowSize().y);
  // A query selected out of sight (in another view, or by a command) is scrolled to the middle,
  // once per selection, so that scrolling by hand is never undone: GPT-2's query 700 stayed below.
  if (selected != scrolled_to_) {
    scrolled_to_ = selected;
    const float y = rowY(selected);
    if (y - pitch < clip_min.y + heading_h || y + pitch > clip_max.y) ImGui::SetScrollFromPosY(y - clip_min.y, 0.5f);
  }
  int hover_q = -1, hover_k = -1;
  // Only a mouse that moved over the canvas hovers: a headless run's pointer rests where the
  // display put it (under Xvfb, the screen's middle), which must not isolate anything.
  const ImVec2 delta = ImGui::GetIO().MouseDelta;
  if (ImGui::IsWindowHovered() && (delta.x != 0 || delta.y != 0)) mouse_moved_ = true;
  if (mouse_moved_ && ImGui::IsWindowHovered() && mouse.y >= y0 && mouse.y < y0 + rows_h) {
    const int row = std::clamp(static_cast<int>((mouse.y - y0) / pitch), 0, T - 1);
    if (mouse.x >= x0 - px(4) && mouse.x < xl)
      hover_q = row;
    else if (mouse.x > xr && mouse.x <= xk + label_w + px(4))
      hover_k = row;
  }
  hover_query_ = hover_q;
  hover_key_ = hover_k;
  const int focus_q = hover_q >= 0 ? hover_q : hover_k < 0 && view.lines_isolate ? selected : -1;
  const int focus_k = hover_k;
  const char* focus_by = hover_q >= 0 || hover_k >= 0 ? "hover" : focus_q >= 0 ? "selection" : nullptr;

  // The lines, every head's, those of hidden heads and of other tokens (when one is isolated) left out.
  std::vector<Rgb> colours;
  for (int h = 0; h < H; ++h) colours.push_back(headColour(layer, h, H));
  const float scale = uiScale();
  // Heads side by side within a row (a few px apart), so heads that agree do not hide each other.
  std::vector<float> offset(static_cast<std::size_t>(H), 0.0f);
  if (drawn_heads > 1) {
    const float step = std::min(px(6), pitch * 0.6f / static_cast<float>(drawn_heads));
    int n = 0;
    for (int h = 0; h < H; ++h)
      if (headShown(h))
        offset[static_cast<std::size_t>(h)] = (static_cast<float>(n++) - (drawn_heads - 1) / 2.0f) * step;
  }
  std::vector<int> per_query(static_cast<std::size_t>(T), 0);
  std::string key = std::to_string(snap->serial) + (dropped ? "d" : "w") + std::to_string(k) + "/" +
                    std::to_string(focus_q) + "/" + std::to_string(focus_k) + "/" + std::to_string(view.head) + "/";
  for (int h : view.lines_hidden_heads) key += std::to_string(h) + ",";
  const bool new_dump = key != dump_key_;
  nlohmann::json dumped = nlohmann::json::array();
  constexpr std::size_t kDumpedLines = 6000;
  std::size_t count = 0;
  std::vector<char> head_drawn(static_cast<std::size_t>(H), 0);
  for (const AttentionLine& l : lines_) {
    if (!headShown(l.head)) continue;
    if ((focus_q >= 0 && l.i != focus_q) || (focus_k >= 0 && l.j != focus_k)) continue;
    const float a = lineAlpha(l.value, most, all_keys ? 0.0f : kTopKLeastAlpha), w = lineWidth(a);
    ++count;
    ++per_query[static_cast<std::size_t>(l.i)];
    head_drawn[static_cast<std::size_t>(l.head)] = 1;
    if (new_dump && dumped.size() < kDumpedLines) dumped.push_back({l.i, l.j, l.head, l.value, a, w});
    const float ya = rowY(l.i), yb = rowY(l.j);
    // The lines of the queries on screen (of the keys on screen while a key is hovered): with the
    // lists scrolled, lines from rows out of sight would cross the view as a web nobody can follow.
    const float y_end = focus_k >= 0 ? yb : ya;
    if (y_end < clip_min.y - pitch || y_end > clip_max.y + pitch) continue;
    const float o = offset[static_cast<std::size_t>(l.head)];
    draw->AddLine(ImVec2(xl, ya + o), ImVec2(xr, yb + o), colourU32(colours[static_cast<std::size_t>(l.head)], a),
                  std::max(1.0f, std::round(w * scale)));
  }

  // After dropout a query may keep no key at all: say so where its lines would start.
  if (dropped && focus_k < 0 && drawn_heads > 0)
    for (int i = 0; i < T; ++i) {
      const float y = rowY(i);
      if (per_query[static_cast<std::size_t>(i)] > 0 || (focus_q >= 0 && i != focus_q) || y < clip_min.y ||
          y > clip_max.y || (!named(i) && i != focus_q))
        continue;
      ImGui::PushFont(fonts().small);
      draw->AddText(ImVec2(xl + px(8), y - fonts().small->FontSize / 2), dim, "every key dropped");
      ImGui::PopFont();
    }

  // The isolated query's values after its keys, one column per head drawn.
  nlohmann::json values_dump = nlohmann::json::array();
  if (values_room && focus_q >= 0 && focus_k < 0) {
    std::vector<int> column(static_cast<std::size_t>(H), 0);
    int n = 0;
    for (int h = 0; h < H; ++h)
      if (headShown(h)) column[static_cast<std::size_t>(h)] = n++;
    // Rows shorter than the text: the largest values first, each written where it clears those of its
    // head already written (the others are on their lines, and in the tooltip of their key).
    std::vector<std::vector<float>> written(static_cast<std::size_t>(H));
    for (const AttentionLine* line : strongestFirst(focus_q)) {
      const AttentionLine& l = *line;
      std::vector<float>& ys = written[static_cast<std::size_t>(l.head)];
      const float y = rowY(l.j);
      if (!named(l.j) ||  // beside its key's name only
          std::any_of(ys.begin(), ys.end(), [&](float o) { return std::abs(o - y) < font_size; }))
        continue;
      ys.push_back(y);
      char text[32];
      std::snprintf(text, sizeof text, "%.3f", l.value);
      const float x = xk + label_w + px(8) + column[static_cast<std::size_t>(l.head)] * value_w;
      draw->AddText(font, font_size, ImVec2(x, rowY(l.j) - font_size / 2),
                    colourU32(colours[static_cast<std::size_t>(l.head)], 1), text);
      values_dump.push_back({l.j, l.head, text});
    }
  }

  // The labels: queries right-aligned on the left, keys on the right; the selected query (and the
  // token under the mouse) stand out; labels too close to read are thinned (every n-th).
  const bool show_selection = !ctx.capture.hides_selection;
  nlohmann::json names_dump = nlohmann::json::array();  // the rows named on screen
  const float dot = std::min(px(2), pitch / 3);         // every row's ends, named or not
  for (int i = 0; i < T; ++i) {
    const float y = rowY(i);
    if (y + pitch < clip_min.y || y - pitch > clip_max.y) continue;
    draw->AddCircleFilled(ImVec2(xl, y), dot, dim);
    draw->AddCircleFilled(ImVec2(xr, y), dot, dim);
    const bool sel = show_selection && i == selected;
    if (!named(i) && !sel && i != hover_q && i != hover_k) continue;
    names_dump.push_back(i);
    const std::string fitted = fitText(font, font_size, rowName(i), label_w - px(4));
    const float tw = font->CalcTextSizeA(font_size, FLT_MAX, 0, fitted.c_str()).x;
    const bool faded_q = focus_q >= 0 && i != focus_q, faded_k = focus_k >= 0 && i != focus_k;
    const ImU32 qc = sel || i == hover_q ? theme().selection : faded_q || focus_k >= 0 ? dim : text_col;
    const ImU32 kc = i == hover_k ? theme().selection : faded_k || (focus_q >= 0 && focus_k < 0) ? dim : text_col;
    draw->AddText(font, font_size, ImVec2(xq - px(4) - tw, y - font_size / 2), qc, fitted.c_str());
    draw->AddText(font, font_size, ImVec2(xk + px(4), y - font_size / 2), kc, fitted.c_str());
  }
  if (hover_q >= 0 || hover_k >= 0) {
    const int r = hover_q >= 0 ? hover_q : hover_k;
    ImGui::SetTooltip("%s %d '%s': %zu line%s%s", hover_q >= 0 ? "query" : "key", r,
                      snap->tokens()[static_cast<std::size_t>(r)].c_str(), count, count == 1 ? "" : "s",
                      hover_q >= 0 ? " · click to select it and keep its lines alone" : "");
  }
  if (hover_q >= 0 && ImGui::IsMouseClicked(ImGuiMouseButton_Left)) {
    ctx.commands.push("select_token", {{"index", hover_q}});
    ctx.commands.push("view", {{"field", "lines_isolate"}, {"value", !(view.lines_isolate && hover_q == selected)}});
  }
  const float first_row = std::clamp(std::floor((clip_min.y - y0) / pitch), 0.0f, static_cast<float>(T - 1));
  const float last_row = std::clamp(std::ceil((clip_max.y - y0) / pitch) - 1, 0.0f, static_cast<float>(T - 1));
  ImGui::EndChild();

  if (new_dump) {
    dump_key_ = key;
    dump_lines_ = std::move(dumped);
  }
  nlohmann::json heads = nlohmann::json::array();
  for (int h = 0; h < H; ++h)
    if (head_drawn[static_cast<std::size_t>(h)]) heads.push_back(h);
  nlohmann::json colours_json = nlohmann::json::array();
  for (const Rgb& c : colours) colours_json.push_back({c.r, c.g, c.b});
  layout().state()["lines"] = {{"stage", dropped ? "dropped_weights" : "weights"},
                               {"top_k", all_keys ? nlohmann::json() : nlohmann::json(k)},
                               {"tokens", T},
                               {"batch", snap->batch},
                               {"heads_drawn", heads},
                               {"hidden_heads", view.lines_hidden_heads},
                               {"head_colours", colours_json},
                               {"isolated",
                                {{"query", focus_q >= 0 ? nlohmann::json(focus_q) : nlohmann::json()},
                                 {"key", focus_k >= 0 ? nlohmann::json(focus_k) : nlohmann::json()},
                                 {"by", focus_by ? nlohmann::json(focus_by) : nlohmann::json()}}},
                               {"opaque_at", most},
                               {"count", count},
                               {"values", values_dump},
                               {"per_query", per_query},
                               {"lines", dump_lines_},
                               {"truncated", count > kDumpedLines},
                               {"geometry",
                                {{"query_x", xl},
                                 {"key_x", xr},
                                 {"first_row_y", rowY(0)},
                                 {"pitch", pitch},
                                 {"first_visible", static_cast<int>(first_row)},
                                 {"last_visible", static_cast<int>(last_row)},
                                 {"labels_every", step},
                                 {"named", names_dump},
                                 {"clip", rectJson(clip_min, clip_max)}}}};
}

}  // namespace attnscope
