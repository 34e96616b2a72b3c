#include "panels/lesson_panel.h"

#include <algorithm>
#include <cfloat>
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "engine/errors.h"
#include "widgets/flow_layout.h"
#include "widgets/fonts.h"
#include "widgets/layout_dump.h"
#include "widgets/text.h"
#include "widgets/theme.h"

namespace attnscope {

namespace {

// One line of a code or print-out box as drawn: where its text starts (from the box's text
// column), the text, the line number to its left ("" for none or a wrapped continuation), and
// whether it is one of the lines the step is about.
struct Row {
  float x = 0;
  std::string text;
  std::string number;
  bool marked = false;
};

std::size_t leadingSpaces(const std::string& s) {
  std::size_t n = 0;
  while (n < s.size() && s[n] == ' ') ++n;
  return n;
}

// `body` wrapped at spaces only — ImGui's own wrapping also breaks after '.', which splits a
// number ("0.\n3190") — into rows: the first at `indent`, the rest `hang` further in. A word wider
// than the room stands on a row of its own.
void wrapInto(std::vector<Row>& rows, ImFont* font, float size, const std::string& body, float indent, float hang,
              float width, const std::string& number, bool marked) {
  auto textWidth = [&](const std::string& s) { return font->CalcTextSizeA(size, FLT_MAX, 0, s.c_str()).x; };
  std::string line;
  bool first = true;
  auto emit = [&] {
    while (!line.empty() && line.back() == ' ') line.pop_back();
    rows.push_back({first ? indent : indent + hang, line, first ? number : "", marked});
    first = false;
    line.clear();
  };
  for (std::size_t at = 0; at < body.size();) {
    const std::size_t space = body.find(' ', at);
    const std::size_t end = space == std::string::npos ? body.size() : space + 1;
    const std::string word = body.substr(at, end - at);
    const float room = width - (first ? indent : indent + hang);
    if (!line.empty() && textWidth(line + word) > room) emit();
    line += word;
    at = end;
  }
  emit();
}

// A box's text is read best line by line as written: at the largest size, from the cells' font
// down to kSmallestBoxText of it, that takes no more rows than the smallest does — every line that
// can fit whole does, and one too long even then wraps (never clipped) without making the others
// smaller. `rowsAt(s)`: the box's rows at size s (fewer or as many as s shrinks).
constexpr float kSmallestBoxText = 0.85f;

// The largest size in [lo, hi] at which fits(size) holds (to 1/1024 of the span), given that it
// holds at lo and, once it fails, fails at every larger size.
template <class Fits>
float largestFitting(float lo, float hi, const Fits& fits) {
  if (fits(hi)) return hi;
  for (int k = 0; k < 10; ++k) {
    const float mid = (lo + hi) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

template <class RowsAt>
float fittedSize(float size, const RowsAt& rowsAt) {
  const std::size_t fewest = rowsAt(size * kSmallestBoxText).size();
  return largestFitting(size * kSmallestBoxText, size, [&](float s) { return rowsAt(s).size() == fewest; });
}

// A box of lines — the notebook's code, its print-out — as it can be drawn: its rows and its line
// numbers' column at any text size, and the size it reads best at.
struct LineBox {
  std::function<std::vector<Row>(float)> rows_at;
  std::function<float(float)> number_w;  // the line numbers' column at a size; 0 without numbers
  float height(float size) const { return static_cast<float>(rows_at(size).size()) * (size + px(3)) + px(12); }
};

// Draws rows in a framed box `width` wide: line numbers (if any) in a column of their own, marked
// rows on the selection colour with a bar at the left edge.
void drawBox(const std::vector<Row>& rows, ImFont* font, float size, float number_w, float width, const char* id) {
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  const float pad = px(6), line_h = size + px(3);
  const float height = rows.size() * line_h + pad * 2;
  draw->AddRectFilled(p0, ImVec2(p0.x + width, p0.y + height), ImGui::GetColorU32(ImGuiCol_FrameBg), px(3));
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text), dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  const ImU32 mark_bg = ImGui::GetColorU32(ImGuiCol_TextSelectedBg), mark_bar = ImGui::GetColorU32(ImGuiCol_CheckMark);
  float y = p0.y + pad;
  for (const Row& r : rows) {
    if (r.marked) {
      draw->AddRectFilled(ImVec2(p0.x, y - px(1)), ImVec2(p0.x + width, y + line_h - px(1)), mark_bg);
      draw->AddRectFilled(ImVec2(p0.x, y - px(1)), ImVec2(p0.x + px(3), y + line_h - px(1)), mark_bar);
    }
    if (!r.number.empty()) {
      const float w = font->CalcTextSizeA(size, FLT_MAX, 0, r.number.c_str()).x;
      draw->AddText(font, size, ImVec2(p0.x + pad + number_w - px(8) - w, y), r.marked ? text : dim, r.number.c_str());
    }
    draw->AddText(font, size, ImVec2(p0.x + pad + number_w + r.x, y), text, r.text.c_str());
    y += line_h;
  }
  ImGui::Dummy(ImVec2(width, height));
  layout().widget(id);
}

// The notebook's lines: numbered, indentation kept (one digit's width per space, less the range's
// common indentation), longer lines wrapped with a hanging indent, the step's lines marked.
LineBox codeBox(const LessonCode& code, ImFont* font, float box_w) {
  std::size_t common = std::string::npos;
  for (const std::string& l : code.lines)
    if (leadingSpaces(l) < l.size()) common = std::min(common, leadingSpaces(l));
  if (common == std::string::npos) common = 0;
  std::vector<std::string> lines;
  for (std::string line : code.lines) {
    for (std::size_t t; (t = line.find('\t')) != std::string::npos;) line.replace(t, 1, "    ");
    lines.push_back(line);
  }
  const float digits = static_cast<float>(std::to_string(code.last).size());
  LineBox box;
  box.number_w = [=](float size) { return font->CalcTextSizeA(size, FLT_MAX, 0, "0").x * digits + px(8); };
  box.rows_at = [=, number_w = box.number_w](float size) {
    const float digit = font->CalcTextSizeA(size, FLT_MAX, 0, "0").x;
    std::vector<Row> rows;
    for (std::size_t k = 0; k < lines.size(); ++k) {
      const int number = code.first + static_cast<int>(k);
      const bool marked = std::find(code.highlight.begin(), code.highlight.end(), number) != code.highlight.end();
      const std::size_t lead = leadingSpaces(lines[k]);
      const float indent = digit * static_cast<float>(lead > common ? lead - common : 0);
      wrapInto(rows, font, size, lines[k].substr(lead), indent, digit * 4, box_w - px(12) - number_w(size),
               std::to_string(number), marked);
    }
    return rows;
  };
  return box;
}

// What the notebook prints, as it prints it. A line indented under a tensor's first line starts
// where that many characters of the first line end, so "        [0.4656, …" stands under
// "tensor([[0.2899, …" as in the notebook, in a proportional font.
LineBox printsBox(const std::string& prints, ImFont* font, float box_w) {
  struct Line {
    std::string text;    // without its indentation
    std::string before;  // the characters of the reference line its indentation stands under
  };
  std::vector<Line> lines;
  std::string reference;  // the last line that was not indented
  for (std::size_t at = 0; at <= prints.size();) {
    std::size_t end = prints.find('\n', at);
    if (end == std::string::npos) end = prints.size();
    const std::string line = prints.substr(at, end - at);
    at = end + 1;
    const std::size_t lead = leadingSpaces(line);
    if (lead == 0) reference = line;
    lines.push_back({line.substr(lead), lead <= reference.size() ? reference.substr(0, lead) : std::string(lead, ' ')});
    if (end == prints.size()) break;
  }
  LineBox box;
  box.number_w = [](float) { return 0.0f; };
  box.rows_at = [=](float size) {
    auto width = [&](const std::string& s) { return font->CalcTextSizeA(size, FLT_MAX, 0, s.c_str()).x; };
    std::vector<Row> rows;
    for (const Line& l : lines)
      wrapInto(rows, font, size, l.text, width(l.before), width("0") * 2, box_w - px(12), "", false);
    return rows;
  };
  return box;
}

// Text wrapped at spaces only (never inside "0.3190") into lines at most `width` wide, in the
// current font and colour; "\n" starts a new line.
void textWrapped(const std::string& text, float width) {
  ImFont* font = ImGui::GetFont();
  const float size = ImGui::GetFontSize();
  std::vector<Row> rows;
  for (std::size_t at = 0; at <= text.size();) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    wrapInto(rows, font, size, text.substr(at, end - at), 0, 0, width, "", false);
    at = end + 1;
  }
  for (const Row& r : rows) ImGui::TextUnformatted(r.text.c_str());
}

// Between the step's parts: a third of the usual spacing more (ImGui::Spacing adds all of it), as
// the dim captions set them apart too — at 1280 × 720 a step fits its column with little to spare.
void sectionGap() { ImGui::SetCursorPosY(ImGui::GetCursorPosY() + ImGui::GetStyle().ItemSpacing.y / 3); }

// A map id in words: "masked_scores" → "masked scores" (a title would say "softmax" where the step
// divides by the row sum).
std::string mapTitle(const std::string& id) {
  if (id == "dropped_weights") return "weights after dropout";
  std::string words = id;
  std::replace(words.begin(), words.end(), '_', ' ');
  return words;
}

}  // namespace

void LessonPanel::recordState(nlohmann::json& state) const {
  const int step = session_.step();
  state["lesson_step"] = session_.open() ? step : 0;
  state["lesson_maps"] = session_.open() && step > 0 ? session_.current().maps : std::vector<std::string>{};
  if (!session_.open()) {
    state["lesson"] = nullptr;
    return;
  }
  const Lesson& open = session_.lesson();
  nlohmann::json lesson = {{"title", open.title}, {"file", open.path}, {"steps", open.steps.size()}};
  if (step > 0) {
    const LessonStep& s = session_.current();
    lesson["step_title"] = s.title;
    lesson["prints"] = s.prints;
    const bool fitted = box_fit_.step == &s;  // the sizes the step was drawn at, fitted to the column
    lesson["prints_font_px"] = fitted && !s.prints.empty() ? box_fit_.prints_px : 0.0f;
    lesson["code_font_px"] = fitted && s.code ? box_fit_.code_px : 0.0f;
    lesson["prints_wrapped_rows"] = prints_wrapped_;  // rows added by lines too wide even so
    lesson["body_overflow_px"] = body_overflow_;      // > 0: the step needs scrolling to be read whole
    lesson["text_in_view"] = text_in_view_;           // its words on screen whole
    lesson["more_below"] = more_below_;               // the body goes on below the column's edge (faded)
    lesson["text_fits"] = text_fits_;                 // … as they could be: not taller than the column
    lesson["commands"] = s.commands.size();
    if (s.code)
      lesson["code"] = {{"file", s.code->file},
                        {"lines", {s.code->first, s.code->last}},
                        {"highlight", s.code->highlight}};
  }
  state["lesson"] = std::move(lesson);
}

void LessonPanel::draw(const PanelContext& ctx, ImVec2 pos, ImVec2 size) {
  beginPanelWindow("##lesson", "lesson", pos, size,
                   ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoSavedSettings);
  const int step = session_.step();
  if (!session_.open() || step < 1) {
    ImGui::TextDisabled("no lesson");
    ImGui::End();
    return;
  }
  CommandQueue& cmd = ctx.commands;
  const LessonStep& s = session_.current();
  const int n = static_cast<int>(session_.lesson().steps.size());
  const float avail = ImGui::GetContentRegionAvail().x;
  ImFont* small = fonts().small;
  const float fs = small->FontSize;

  // The lesson, where we are in it, and the way on.
  ImGui::PushFont(small);
  ImGui::TextDisabled("%s", fitText(session_.lesson().title, avail).c_str());
  ImGui::PopFont();
  textWrapped(s.title, avail);
  ImGui::AlignTextToFramePadding();
  ImGui::TextDisabled("step %d of %d", step, n);
  const ImGuiStyle& style = ImGui::GetStyle();
  const char* back = "◀ Back";
  const char* next = "Next ▶";
  const char* close = "×";
  auto buttonW = [&](const char* label) { return ImGui::CalcTextSize(label).x + style.FramePadding.x * 2; };
  const float buttons = buttonW(back) + buttonW(next) + buttonW(close) + style.ItemSpacing.x * 2;
  ImGui::SameLine(std::max(ImGui::GetCursorPosX(), ImGui::GetWindowContentRegionMax().x - buttons));
  ImGui::BeginDisabled(step <= 1);
  if (ImGui::Button(back)) cmd.push("lesson_back");
  ImGui::EndDisabled();
  layout().widget("lesson_back");
  ImGui::SameLine();
  ImGui::BeginDisabled(step >= n);
  if (ImGui::Button(next)) cmd.push("lesson_next");
  ImGui::EndDisabled();
  layout().widget("lesson_next");
  ImGui::SameLine();
  if (ImGui::Button(close)) cmd.push("lesson_close");
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Close the lesson (File › Close lesson): back to your own view");
  layout().widget("lesson_close");
  ImGui::Separator();

  // The step: its words, the notebook's lines, what the notebook prints, the maps. It scrolls
  // when it is longer than the column; a new step starts at its top.
  const float footer = fs + style.ItemSpacing.y * 2 + px(2);
  ImGui::BeginChild("##lesson_body", ImVec2(0, -footer), false);
  if (drawn_step_ != step || drawn_serial_ != session_.serial()) ImGui::SetScrollY(0);
  drawn_step_ = step;
  drawn_serial_ = session_.serial();
  // The body is laid out as if its scrollbar were shown, shown or not: a layout that depended on
  // it would flicker between two (wider, so taller, so a scrollbar; narrower, so shorter, so none).
  const float body_w = ImGui::GetWindowWidth() - style.ScrollbarSize - 2 * ImGui::GetWindowContentRegionMin().x;
  std::optional<LineBox> code_box, prints_box;
  if (s.code) code_box = codeBox(*s.code, small, body_w);
  if (!s.prints.empty()) prints_box = printsBox(s.prints, small, body_w);
  // The boxes at the sizes they read best at; where that leaves the step taller than the column,
  // both at most a common size, down to the smallest, so that the step is seen whole. The rest of
  // the step (measured last frame) does not depend on it: one size, frame after frame. Worked out
  // again only when what it depends on changes: it wraps the boxes' lines some fifty times.
  const BoxFit key{&s, body_w, fs, ImGui::GetWindowHeight() - 1, rest_h_};
  fit_settled_ = box_fit_.sameAs(key);
  if (!fit_settled_) {
    box_fit_ = key;
    const float code_fitted = code_box ? fittedSize(fs, code_box->rows_at) : 0;
    const float prints_fitted = prints_box ? fittedSize(fs, prints_box->rows_at) : 0;
    auto sizes = [&](float most) {
      return std::make_pair(std::max(std::min(code_fitted, most), fs * kSmallestBoxText),
                            std::max(std::min(prints_fitted, most), fs * kSmallestBoxText));
    };
    auto fits = [&](float most) {
      const auto [code_px, prints_px] = sizes(most);
      return rest_h_ + (code_box ? code_box->height(code_px) : 0) + (prints_box ? prints_box->height(prints_px) : 0) <=
             key.room;
    };
    std::tie(box_fit_.code_px, box_fit_.prints_px) = sizes(largestFitting(fs * kSmallestBoxText, fs, fits));
  }
  float boxes_h = 0;
  ImGui::BeginGroup();
  textWrapped(s.text, body_w);
  ImGui::EndGroup();
  layout().widget("lesson_text");
  {  // the step's words, read without scrolling (when they fit the column at all)
    const float body_top = ImGui::GetWindowPos().y, body_bottom = body_top + ImGui::GetWindowHeight();
    text_in_view_ = ImGui::GetItemRectMin().y >= body_top - 0.5f && ImGui::GetItemRectMax().y <= body_bottom + 0.5f;
    text_fits_ = ImGui::GetItemRectSize().y <= ImGui::GetWindowHeight();
  }
  if (!ctx.maps_rounding.empty()) {  // beside the words that quote 4 decimals, the maps' 3 explained
    ImGui::PushFont(small);
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    textWrapped("The maps' " + ctx.maps_rounding + ".", body_w);
    ImGui::PopStyleColor();
    ImGui::PopFont();
    layout().widget("lesson_rounding");
  }
  prints_wrapped_ = 0;
  if (code_box) {
    sectionGap();
    ImGui::PushFont(small);
    const std::string where = s.code->first == s.code->last
                                  ? "line " + std::to_string(s.code->first)
                                  : "lines " + std::to_string(s.code->first) + "–" + std::to_string(s.code->last);
    ImGui::TextDisabled("%s", fitText(s.code->file + ", " + where, body_w).c_str());
    const float code_px = box_fit_.code_px;
    drawBox(code_box->rows_at(code_px), small, code_px, code_box->number_w(code_px), body_w, "lesson_code");
    boxes_h += ImGui::GetItemRectSize().y;
    ImGui::PopFont();
  }
  if (prints_box) {
    sectionGap();
    ImGui::PushFont(small);
    ImGui::TextDisabled("The notebook prints");
    const float prints_px = box_fit_.prints_px;
    const std::vector<Row> rows = prints_box->rows_at(prints_px);
    prints_wrapped_ = static_cast<int>(rows.size()) -
                      static_cast<int>(std::count(s.prints.begin(), s.prints.end(), '\n')) - 1;
    drawBox(rows, small, prints_px, 0, body_w, "lesson_prints");
    boxes_h += ImGui::GetItemRectSize().y;
    // The text's own extent, for the layout dump: tests hold it inside the box.
    const ImVec2 box = ImGui::GetItemRectMin();
    float right = 0;
    for (const Row& r : rows)
      right = std::max(right, r.x + small->CalcTextSizeA(prints_px, FLT_MAX, 0, r.text.c_str()).x);
    layout().rect("lesson_prints_text", ImVec2(box.x + px(6), box.y + px(6)),
                  ImVec2(box.x + px(6) + right, box.y + px(6) + static_cast<float>(rows.size()) * (prints_px + px(3))));
    ImGui::PopFont();
  }
  if (!s.maps.empty()) {
    sectionGap();
    std::string names;
    for (const std::string& m : s.maps) names += (names.empty() ? "" : ", ") + mapTitle(m);
    ImGui::PushFont(small);
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    textWrapped("This step's maps: " + names +
                    (ctx.maps_set_aside.empty() ? "" : ". For room, set aside: " + ctx.maps_set_aside),
                body_w);
    ImGui::PopStyleColor();
    // The heatmaps' header is here while a step chose the maps: their lines are the maps'.
    if (ctx.maps_menu) {
      if (ImGui::SmallButton("maps, heads, batch ▾")) ImGui::OpenPopup("##lesson_maps");
      layout().widget("columns_menu");
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip("The maps shown, the head and the batch element: this step chose them");
    }
    ImGui::SetNextWindowSize(ImVec2(px(kFoldedMenuWidth), 0));
    if (ImGui::BeginPopup("##lesson_maps")) {
      ImGui::PopFont();  // the menu in the UI's font
      ctx.maps_menu();
      ImGui::PushFont(small);
      ImGui::EndPopup();
    }
    ImGui::PopFont();
  }
  rest_h_ = ImGui::GetCursorPosY() - style.ItemSpacing.y - boxes_h;
  body_overflow_ = ImGui::GetScrollMaxY();
  // More below the fold: the last line seen fades out, so that a line cut by the column's edge
  // reads as "it goes on" (at 1280 × 720 and 200 % a step's last visible line was half a line).
  more_below_ = ImGui::GetScrollY() < body_overflow_ - 0.5f;
  if (more_below_) {
    const ImVec2 min = ImGui::GetWindowPos();
    const float right = min.x + ImGui::GetWindowWidth() - style.ScrollbarSize;
    const float bottom = min.y + ImGui::GetWindowHeight(), fade = ImGui::GetTextLineHeight() * 1.5f;
    ImVec4 bg = ImGui::GetStyleColorVec4(ImGuiCol_WindowBg);
    const ImU32 solid = ImGui::GetColorU32(bg);
    bg.w = 0;
    const ImU32 clear = ImGui::GetColorU32(bg);
    ImGui::GetWindowDrawList()->AddRectFilledMultiColor(ImVec2(min.x, bottom - fade), ImVec2(right, bottom), clear,
                                                        clear, solid, solid);
  }
  ImGui::EndChild();
  ImGui::PushFont(small);
  ImGui::TextDisabled("%s", fitText("Space, →, PageDown: next  ·  ←, PageUp: back", avail).c_str());
  ImGui::PopFont();
  ImGui::End();
}

}  // namespace attnscope
