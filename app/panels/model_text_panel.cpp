#include "panels/model_text_panel.h"

#include <imgui_internal.h>  // GetItemID: the slider being typed into
#include <imgui_stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iterator>

#include "formats/utf8.h"
#include "widgets/fonts.h"
#include "widgets/layout_dump.h"
#include "widgets/text.h"
#include "widgets/theme.h"
#include "widgets/typed_number.h"

namespace attnscope {

namespace {
constexpr int kNextTokens = 10;     // the list's length

// The text field holds a C string: a NUL (U+0000) in the text (a command's, GPT-2's byte token 188)
// ended it there — the field showed "hel" of "hel\0lo" while the model read all of it, and an edit
// sent "hel…" with the rest gone. The field shows it as ␀ (U+2400) and gives it back as NUL — only
// where the text had NULs and no ␀ of its own, whose meaning an edit must keep ("a␀b" stays so).
// (A text with both keeps its ␀s as they are and its NULs as ␀s: a case no tokenizer makes.)
constexpr const char* kNulShown = "\xE2\x90\x80";  // ␀
std::string replaceAll(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}
std::string fieldText(const std::string& text) { return replaceAll(text, std::string(1, '\0'), kNulShown); }
bool nulsShownAsSymbol(const std::string& text) {
  return text.find('\0') != std::string::npos && text.find(kNulShown) == std::string::npos;
}
// The field's text as the model gets it, the session's text being `session`.
std::string typedText(const std::string& field, const std::string& session) {
  return nulsShownAsSymbol(session) ? replaceAll(field, kNulShown, std::string(1, '\0')) : field;
}
constexpr int kTokensListed = 400;  // the token chips shown at most (a long text's, around the selected one)
// A button showing `label` as it is: ImGui's own would read "##" in a token (GPT-2 has "##",
// "###") as the start of its id and show nothing. At most `max_w` wide (a long label is cut with
// "…"; the tooltip has it whole). Its id comes from the ID stack. A chip is as tall as its text;
// `framed`, as tall as ImGui's buttons.
float chipPadY();
bool tokenButton(const std::string& label, bool selected, bool enabled, float max_w, bool framed = false) {
  const ImGuiStyle& style = ImGui::GetStyle();
  const std::string shown = fitText(label, max_w - style.FramePadding.x * 2);
  const ImVec2 text = ImGui::CalcTextSize(shown.c_str(), nullptr, false);
  const float pad_y = framed ? style.FramePadding.y : chipPadY();
  const ImVec2 size(text.x + style.FramePadding.x * 2, text.y + pad_y * 2);
  const ImVec2 p = ImGui::GetCursorScreenPos();
  ImGui::BeginDisabled(!enabled);
  const bool pressed = ImGui::InvisibleButton("##token", size);
  ImGui::EndDisabled();
  // One that takes no click (a next token while an earlier token is selected) says so by its flat
  // frame, its text as legible as ever: greyed, the predictions a lecturer was pointing at were 2 : 1.
  const ImGuiCol col = !enabled                            ? ImGuiCol_FrameBg
                       : selected || ImGui::IsItemActive() ? ImGuiCol_ButtonActive
                       : ImGui::IsItemHovered()            ? ImGuiCol_ButtonHovered
                                                           : ImGuiCol_Button;
  ImDrawList* draw = ImGui::GetWindowDrawList();
  draw->AddRectFilled(p, ImVec2(p.x + size.x, p.y + size.y), ImGui::GetColorU32(col), style.FrameRounding);
  // A framed button (Append) that takes no click greys its text too, as ImGui's buttons do. On a
  // dark frame the text is white whatever the theme's: the light theme's selected chip, saturated
  // blue, had its black "." all but lost.
  const ImVec4 bg = ImGui::GetStyleColorVec4(col);
  const bool dark_frame = 0.2126f * bg.x + 0.7152f * bg.y + 0.0722f * bg.z < 0.5f && bg.w > 0.5f;
  draw->AddText(ImVec2(p.x + style.FramePadding.x, p.y + pad_y),
                framed && !enabled ? ImGui::GetColorU32(ImGuiCol_TextDisabled)
                : dark_frame       ? IM_COL32_WHITE
                                   : ImGui::GetColorU32(ImGuiCol_Text),
                shown.c_str());
  return pressed && enabled;
}

// ImGui's slider that `slider` draws, as a bar filled up to `fraction` of its range, the number
// over it: ImGui's handle sat on the number ("1.|00", "0 (greedy)" under the temperature's; the
// layer's "5" at 175 %) at every text size. The slider draws its number and takes the mouse as
// ever (the fill ends where its handle's middle would be), with its frame and handle clear; the
// frame and the fill go under it.
void filledSlider(float fraction, const std::function<void()>& slider) {
  ImDrawList* draw = ImGui::GetWindowDrawList();
  ImDrawListSplitter layers;
  layers.Split(draw, 2);
  layers.SetCurrentChannel(draw, 1);
  const ImGuiCol clear[] = {ImGuiCol_FrameBg, ImGuiCol_FrameBgHovered, ImGuiCol_FrameBgActive, ImGuiCol_SliderGrab,
                            ImGuiCol_SliderGrabActive};
  for (ImGuiCol c : clear) ImGui::PushStyleColor(c, IM_COL32(0, 0, 0, 0));
  slider();
  ImGui::PopStyleColor(static_cast<int>(std::size(clear)));
  layers.SetCurrentChannel(draw, 0);
  const ImGuiStyle& style = ImGui::GetStyle();
  const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
  const bool active = ImGui::IsItemActive();
  draw->AddRectFilled(a, b,
                      ImGui::GetColorU32(active                  ? ImGuiCol_FrameBgActive
                                         : ImGui::IsItemHovered() ? ImGuiCol_FrameBgHovered
                                                                  : ImGuiCol_FrameBg),
                      style.FrameRounding);
  // Where ImGui's handle would be centred (SliderBehaviorT: 2 px inside the frame, half the handle).
  const float inset = 2 + style.GrabMinSize / 2;
  if (fraction > 0 && !typingInto(ImGui::GetItemID()))
    draw->AddRectFilled(a, ImVec2(a.x + inset + (b.x - a.x - 2 * inset) * std::min(fraction, 1.0f), b.y),
                        ImGui::GetColorU32(active ? ImGuiCol_SliderGrabActive : ImGuiCol_SliderGrab),
                        style.FrameRounding, ImDrawFlags_RoundCornersLeft);
  layers.Merge(draw);
}

// The layer shown, 1 … layers (select_layer counts from 0).
// One row of token chips (or of next tokens): a tokenButton in the small font, as tall as its
// text and its frame above and below it (chipPadY), and the space under it.
float chipPitch() { return fonts().small->FontSize + 2 * chipPadY() + ImGui::GetStyle().ItemSpacing.y; }
// A chip's frame above and below its text: a pixel at 100 %, two at 200 % (with none, the dot of
// GPT-2's "Ġ", on most of its tokens, and an accent on a capital, "Ď", sat on the chip's edge).
float chipPadY() { return std::round(fonts().small->FontSize * 0.08f); }

// The rows the chips of `tokens` take in a list as wide as the window's content, placed as
// tokenChips places them (with room for its scrollbar: counted without it, a text whose rows end
// within a scrollbar's width of the edge was given a row too few, and a scrollbar once shown stayed,
// the first row scrolled out of view; so a row may be left blank).
int chipRows(const std::vector<std::string>& tokens, int listed) {
  const ImGuiStyle& style = ImGui::GetStyle();
  const float width = ImGui::GetContentRegionAvail().x - style.ScrollbarSize;
  const float size = fonts().small->FontSize;
  std::vector<float> widths;
  for (int t = 0; t < listed; ++t)
    widths.push_back(
        std::min(fonts().small->CalcTextSizeA(size, FLT_MAX, 0, tokens[static_cast<std::size_t>(t)].c_str()).x +
                     style.FramePadding.x * 2,
                 width));
  return wrappedRows(widths, width, style.ItemSpacing.x);
}

// The next tokens' heading, naming the token at `position` (counted from 1, as shown): on one line
// where a form fits, the position dropped first, else the form without it wrapped at the window's
// width. Never cut: at 175–200 % on 1280 × 720 it read "Next token after “Ġun…", then "…", and
// no longer said which token the list is about. `whole` is the form with the position.
struct NextHeading {
  std::string whole, shown;
  bool wraps = false;
  float height = 0;  // with the space under it
};
NextHeading nextHeading(const ModelSession& session, int position) {
  const std::string& after =
      session.tokens()[static_cast<std::size_t>(std::clamp(position, 0, session.tokenCount() - 1))];
  const float width = ImGui::GetContentRegionAvail().x;
  NextHeading h;
  h.whole = "Next token after “" + after + "” (token " + std::to_string(position + 1) + ")";
  h.shown = firstFitting({h.whole, "Next token after “" + after + "”"}, width);
  h.wraps = ImGui::CalcTextSize(h.shown.c_str()).x > width;
  h.height = ImGui::CalcTextSize(h.shown.c_str(), nullptr, false, width).y + ImGui::GetStyle().ItemSpacing.y;
  return h;
}

// The next tokens with `rows` of their rows: the heading (`heading_h`, its lines), the temperature,
// the button, the rows.
float nextTokensHeight(int rows, float heading_h) {
  return heading_h + 2 * ImGui::GetFrameHeightWithSpacing() + static_cast<float>(rows) * chipPitch();
}
constexpr int kNextRowsKept = 3;  // the next tokens' rows the Text panel keeps in view

// The tokens' list above the next tokens: as many whole rows as its chips take, up to four and what
// the room left above kNextRowsKept of the next tokens holds, at least one (scrolled to the
// selected token, a part of a row showed at its top as a token cut in half). `heading_h`: the next
// tokens' heading's (nextHeading).
float chipsAboveNextTokens(const ModelSession& session, float heading_h) {
  const float spacing = ImGui::GetStyle().ItemSpacing.y;
  const float room = ImGui::GetContentRegionAvail().y - spacing - nextTokensHeight(kNextRowsKept, heading_h);
  const int fit = static_cast<int>(std::floor(room / chipPitch()));
  const int needed = chipRows(session.tokens(), std::min(session.tokenCount(), kTokensListed));
  // (Whole pixels: one row is then at least as tall as its font, which tokenChips's scrollbar needs.)
  return std::ceil(static_cast<float>(std::max(std::min({fit, needed, 4}), 1)) * chipPitch() - spacing);
}

// Scrolls the list of chips, `list_h` tall, to show the last item's row whole, as its last row in
// view; at a whole row's offset, never a row cut at the top. (ImGui's SetScrollHereY leaves the item
// spacing under the row, so a list one row tall showed the bottom half of its row.)
void revealRow(float list_h) {
  const float pitch = chipPitch(), scroll = ImGui::GetScrollY();
  const float top = ImGui::GetItemRectMin().y - ImGui::GetWindowPos().y + scroll;  // in the list
  const float bottom = top + ImGui::GetItemRectSize().y;
  if (top >= scroll && bottom <= scroll + list_h) return;  // whole in view
  const float row = std::round(top / pitch);
  const float shown = std::max(1.0f, std::floor((list_h + ImGui::GetStyle().ItemSpacing.y) / pitch));
  ImGui::SetScrollY(std::max(0.0f, row - shown + 1) * pitch);
}

constexpr const char* kBackToText = "Back to the text shown";

// GPT-2's byte-level spellings of white space in its tokens, and what each is: said under the text
// and in the tooltips of the chips and the next tokens (a learner read "Ġthe" as a misspelling, and
// a lecturer's top next tokens were "Ċ" and "ĊĊ", explained nowhere).
struct ByteMark {
  const char* glyph;  // UTF-8
  const char* said;
};
constexpr ByteMark kByteMarks[] = {{"\xC4\xA0", "Ġ: a space before a word"},  // U+0120, byte 0x20
                                   {"\xC4\x8A", "Ċ: a new line"},             // U+010A, byte 0x0A
                                   {"\xC4\x89", "ĉ: a tab"},                  // U+0109, byte 0x09
                                   {"\xC4\x8D", "č: a carriage return"}};     // U+010D, byte 0x0D

bool spells(const std::string& token, const ByteMark& mark) { return token.find(mark.glyph) != std::string::npos; }

// " · Ġ: a space before a word" for each mark `token` spells, else "".
std::string marksSaid(const std::string& token) {
  std::string out;
  for (const ByteMark& m : kByteMarks)
    if (spells(token, m)) out += std::string(" · ") + m.said;
  return out;
}

// " · reads “ café”" after a token GPT-2 spells in its byte characters ("ĠcafÃ©"), else "": the
// chips and the next tokens spell tokens as GPT-2 does, and a learner read "Ã©" as broken text.
std::string readingSaid(const GptModel& model, int id) {
  if (model.tokenizer == nullptr || id < static_cast<int>(model.token_labels.size())) return "";
  const std::string reading = beyondBmpSpelled(tokenReading(*model.tokenizer, id));  // an emoji: U+1F602
  return reading.empty() ? "" : " · " + reading;
}

// A paragraph's height in the small font, wrapped at the window's content width, with the space under it.
float smallTextHeight(const std::string& text) {
  return fonts()
             .small->CalcTextSizeA(fonts().small->FontSize, FLT_MAX, ImGui::GetContentRegionAvail().x, text.c_str())
             .y +
         ImGui::GetStyle().ItemSpacing.y;
}

// The layer slider, `right` px short of the row's end (a button beside it).
void layerSlider(const PanelContext& ctx, int layers, float right = 0) {
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("layer");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(right > 0 ? -right : -1);
  const int layer = ctx.model->layer() + 1;
  filledSlider(layers > 1 ? static_cast<float>(layer - 1) / static_cast<float>(layers - 1) : 0.0f, [&] {
    sliderIntTyped("##layer", layer, 1, layers, "%d", ImGuiSliderFlags_AlwaysClamp, ctx.commands, "layer",
                   [queue = &ctx.commands](int picked) {
                     queue->push("select_layer", {{"layer", picked - 1}});
                   });
  });
  layout().widget("model_layer");
}

}  // namespace

// Given maps (attnscope.show_attention): what they are, the layer, going back. Compact (the app's
// choice where the whole panel would take too much of the column), their name in the title bar
// with what they are on its hover, and Close beside the layer: at 1280 × 720 and 200 % the whole
// panel's Close stood half below it. Each form's height is worked out from the same measures (the
// app picks the form by the whole one's).
void ModelTextPanel::drawGiven(const PanelContext& ctx, ImVec2 pos, ImVec2 size, bool compact) {
  const GivenAttention& g = *ctx.model->given();
  const ImGuiStyle& style = ImGui::GetStyle();
  const std::string name = g.title.empty() ? "Attention maps" : g.title;
  const std::string title = compact ? fitText("Attention maps · " + name, size.x - 2 * style.WindowPadding.x)
                                    : std::string("Attention maps");
  beginPanelWindow((title + "###Attention maps").c_str(), "model", pos, size);
  const std::string about = countOf(g.layers, "layer") + " · " + countOf(g.heads, "head") + " · " +
                            countOf(g.tokens, "token") +
                            " · as they came from a notebook (attnscope.show_attention): nothing recomputed, so only "
                            "the weights are here, no text to change or next tokens";
  if (compact && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", about.c_str());  // the title bar
  const float top = ImGui::GetCursorPosY();
  const float about_h = ImGui::GetTextLineHeightWithSpacing() + smallTextHeight(about) + style.ItemSpacing.y;
  if (!compact) {
    ImGui::TextUnformatted(name.c_str());
    ImGui::PushFont(fonts().small);
    ImGui::TextWrapped("%s", about.c_str());
    ImGui::PopFont();
    ImGui::Separator();
  }
  const auto close = [&] {
    if (ImGui::Button("Close")) ctx.commands.push("model_close");
    layout().widget("model_close");
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("Back to the chapter's workspace, as it was");
  };
  const float close_w = ImGui::CalcTextSize("Close").x + style.FramePadding.x * 2 + style.ItemSpacing.x;
  const float row = ImGui::GetFrameHeightWithSpacing();
  if (g.layers > 1) {
    layerSlider(ctx, g.layers, compact ? close_w : 0.0f);
    if (compact) ImGui::SameLine();
  }
  close();
  const float rows_whole = (g.layers > 1 ? 2 : 1) * row, rows_compact = row;
  const float end = style.WindowPadding.y - style.ItemSpacing.y;
  model_h_ = top + about_h + rows_whole + end;
  model_compact_h_ = top + rows_compact + end;
  ImGui::End();
}

// The tokens as chips, `height` tall (scrolled); a click selects one.
void ModelTextPanel::tokenChips(const PanelContext& ctx, float chips_h) {
  const ModelSession& session = *ctx.model;
  ImGui::PushFont(fonts().small);
  // A long text lists kTokensListed chips around the selected token (its first 400 had never
  // listed GPT-2's appended 1024th token, the one the next tokens are about).
  const int T = session.tokenCount(), listed = std::min(T, kTokensListed);
  const int first = std::clamp(ctx.view.token - listed / 2, 0, T - listed);
  // Its scrollbar drawn whole at one row: ImGui fades out a scrollbar shorter than the font and the
  // frame's padding, and at 1280 × 800 and 200 % a list one row tall had shown 2 of 10 chips with
  // nothing to say there were more (the padding is the scrollbar's to read, in Begin; the chips
  // keep theirs).
  ImGui::PushStyleVar(ImGuiStyleVar_FramePadding, ImVec2(ImGui::GetStyle().FramePadding.x, 0));
  ImGui::BeginChild("tokens", ImVec2(-1, chips_h));
  ImGui::PopStyleVar();
  // The list's own right edge: left of its scrollbar when it has one.
  const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  // A new text or selection shows its selected token (an appended one is on the list's last row).
  // For a few frames: the list's scroll range is last frame's, and the panels around it settle
  // their sizes after a new text, so one request could stop short of a token on a new last row.
  // The list's height changing (the next tokens' list arriving under it) shows it again too: a
  // capture had the selected token one row below the list.
  // So does another list than last frame's (the Text panel's, or the column beside the Layers grid
  // while presenting): each scrolls on its own.
  const ImGuiID list = ImGui::GetCurrentWindow()->ID;
  if (session.version() != chips_version_ || ctx.view.token != chips_token_ || chips_h != chips_h_ ||
      list != chips_list_)
    reveal_frames_ = 3;
  if (list != chips_list_) chip_row_y_ = -1;
  chips_list_ = list;
  const bool reveal = reveal_frames_ > 0;
  reveal_frames_ -= reveal ? 1 : 0;
  chips_version_ = session.version();
  chips_token_ = ctx.view.token;
  chips_h_ = chips_h;
  if (first > 0) ImGui::TextDisabled("%d before …", first);
  for (int t = first; t < first + listed; ++t) {
    const std::string& label = session.tokens()[static_cast<std::size_t>(t)];
    ImGui::PushID(t);
    const float widest = ImGui::GetContentRegionAvail().x;
    const float w = std::min(ImGui::CalcTextSize(label.c_str()).x + ImGui::GetStyle().FramePadding.x * 2, widest);
    if (t > first && ImGui::GetItemRectMax().x + ImGui::GetStyle().ItemSpacing.x + w < right) ImGui::SameLine();
    if (tokenButton(label, t == ctx.view.token, true, widest)) ctx.commands.push("select_token", {{"index", t}});
    if (t == ctx.view.token) {
      // Its row in the list: a scrollbar appearing narrows the list and the chips wrap anew, which
      // moved the selected token a row down after it was shown (it is shown again then).
      const float row_y = ImGui::GetItemRectMin().y - ImGui::GetWindowPos().y + ImGui::GetScrollY();
      if (reveal || row_y != chip_row_y_) revealRow(chips_h);
      if (row_y != chip_row_y_) reveal_frames_ = std::max(reveal_frames_, 2);
      chip_row_y_ = row_y;
      layout().widget("model_token_selected");  // tests: within model_tokens
    }
    if (t < 8) layout().widget("model_token_" + std::to_string(t));
    if (ImGui::IsItemHovered() && tooltipWanted())
      ImGui::SetTooltip("token %d: %s (id %d)%s%s", t + 1, label.c_str(), session.ids()[static_cast<std::size_t>(t)],
                        readingSaid(*session.model(), session.ids()[static_cast<std::size_t>(t)]).c_str(),
                        marksSaid(label).c_str());
    ImGui::PopID();
  }
  if (first + listed < T) ImGui::TextDisabled("… %d more", T - first - listed);
  ImGui::EndChild();
  ImGui::PopFont();
  layout().widget("model_tokens");
}

void ModelTextPanel::drawModel(const PanelContext& ctx, ImVec2 pos, ImVec2 size, bool compact) {
  if (ctx.givenMaps()) {
    drawGiven(ctx, pos, size, compact);
    return;
  }
  const GptModel& m = *ctx.model->model();
  const GptConfig& c = m.config;
  // Compact, the model's name is in the title and the way out beside the layer: one row where the
  // column is short (at 1280 × 720 and 200 % the name's row and the layer's took 120 px the next
  // tokens needed). The model's shape is the title's tooltip; its notes (heads guessed, no
  // tokenizer) stay.
  const std::string shape = std::string(c.layout == "huggingface" ? "GPT-2 (Hugging Face)" : "the book's GPTModel") +
                            " · " + countOf(c.layers, "layer") + " · " + countOf(c.heads, "head") + " of " +
                            std::to_string(c.headWidth()) + " · d = " + std::to_string(c.d_model) + " · vocabulary " +
                            std::to_string(c.vocab_size) + " · context " + std::to_string(c.context_length);
  const std::string title = compact ? fitText("Trained model · " + modelName(m),
                                              size.x - 2 * ImGui::GetStyle().WindowPadding.x)
                                    : std::string("Trained model");
  // No scrollbar: the panel is as tall as its lines (app.cpp), which a scrollbar would narrow and
  // lengthen — a panel at its most, measured with one, kept it (the wrapped notes at 1280 × 720 and
  // 200 % pushed Close off the layer's row). Past its most it scrolls with the wheel.
  beginPanelWindow((title + "###Trained model").c_str(), "model", pos, size,
                   ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoCollapse |
                       ImGuiWindowFlags_NoScrollbar);
  const auto about = [&](bool with_shape) {
    ImGui::SetTooltip("%s\n(weights: %s)%s%s", m.path.c_str(), m.weights_path.c_str(), with_shape ? "\n" : "",
                      with_shape ? shape.c_str() : "");
  };
  if (compact && ImGui::IsItemHovered()) about(true);  // after Begin, the item is the title bar
  const float shape_h = smallTextHeight(shape);
  const bool run = ctx.model->isRun();
  const auto closeButton = [&](const char* label) {
    if (ImGui::Button(label)) ctx.commands.push("model_close");
    layout().widget("model_close");
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("%s", run ? "Stop training and go back to the chapter's workspace, as it was (Save model… "
                                    "first to keep it)"
                                  : "Close the model: back to the chapter's workspace, as it was");
  };
  const char* close = run ? "End the run" : "Close model";
  const float close_w = ImGui::CalcTextSize(close).x + ImGui::GetStyle().FramePadding.x * 2;
  const float close_x = ImGui::GetWindowContentRegionMax().x - close_w;
  // Whole, the way out beside the name, at the top (at large text the panel's lower lines scroll
  // out of view: at 1920 × 1080 and 200 % "Close model" sat half under the Text panel), or under a
  // long name. Either form works the name's rows out alike: the app picks the form by this height.
  const bool close_by_name = ImGui::GetStyle().WindowPadding.x + ImGui::CalcTextSize(modelName(m).c_str()).x +
                                 ImGui::GetStyle().ItemSpacing.x <=
                             close_x;
  const float name_row = close_by_name ? ImGui::GetFrameHeightWithSpacing()
                                       : ImGui::GetTextLineHeightWithSpacing() + ImGui::GetFrameHeightWithSpacing();
  if (!compact) {
    ImGui::TextUnformatted(modelName(m).c_str());
    if (ImGui::IsItemHovered()) about(false);
    if (close_by_name) ImGui::SameLine(close_x);
    closeButton(close);
  }
  // The notes wrapped in either form (cut to a line when compact, "no tokenizer: give token ids, not
  // te…" had lost which files are missing, the half that says what to do): whole, under the shape;
  // compact, under the layer's row, which stays in view where they are long.
  const auto drawNotes = [&] {
    if (m.notes.empty()) return;
    ImGui::PushFont(fonts().small);
    const ImVec2 top = ImGui::GetCursorScreenPos();
    nlohmann::json notes = nlohmann::json::array();
    for (const std::string& note : m.notes) {
      // At spaces only: ImGui's wrapping broke "vocab.bpe" after its dot.
      ImGui::TextUnformatted(wrapAtSpaces("• " + note, ImGui::GetContentRegionAvail().x).c_str());
      notes.push_back({{"text", note}, {"lines", std::lround(ImGui::GetItemRectSize().y / ImGui::GetTextLineHeight())}});
    }
    layout().rect("model_notes", top, ImVec2(top.x + ImGui::GetContentRegionAvail().x, ImGui::GetItemRectMax().y));
    layout().state()["model_notes"] = notes;
    ImGui::PopFont();
  };
  if (!compact) {
    ImGui::PushFont(fonts().small);
    ImGui::TextWrapped("%s", shape.c_str());
    ImGui::PopFont();
    drawNotes();
    ImGui::Separator();
  }
  // Compact, "Close" right of the slider where the slider keeps the width of five digits; else
  // above it, on its own row.
  const char* close_short = run ? "End the run" : "Close";
  const float short_w = ImGui::CalcTextSize(close_short).x + ImGui::GetStyle().FramePadding.x * 2;
  const float slider_least = ImGui::CalcTextSize("00000").x + ImGui::GetStyle().FramePadding.x * 2;
  const bool close_beside = compact && ImGui::CalcTextSize("layer").x + 2 * ImGui::GetStyle().ItemSpacing.x +
                                               slider_least + short_w <=
                                           ImGui::GetContentRegionAvail().x;
  if (compact && !close_beside) {
    ImGui::SetCursorPosX(close_x);
    closeButton(close);
  }
  static constexpr const char* kLayerNote =
      "Every view shows this layer's attention: its input is LayerNorm₁ of the residual stream, its "
      "weights the model's. Click a head in the Layers tab to pick both.";
  layerSlider(ctx, c.layers, close_beside ? short_w + ImGui::GetStyle().ItemSpacing.x : 0.0f);
  if (compact && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", kLayerNote);
  if (close_beside) {
    ImGui::SameLine();
    closeButton(close_short);
  }
  if (compact && !m.notes.empty()) {
    ImGui::Separator();
    drawNotes();
  }
  const float end = ImGui::GetCursorPosY() - ImGui::GetStyle().ItemSpacing.y + ImGui::GetStyle().WindowPadding.y;
  if (!compact) {
    ImGui::PushFont(fonts().small);
    ImGui::TextWrapped("%s", kLayerNote);
    ImGui::PopFont();
  }
  // Each form's height, the other's worked out from this one's (the app picks the form by the whole
  // one's: the two must agree, or the panel flips between them). Whole has the name's row, the
  // shape, a separator and the layer's note; compact has none of them, the way out beside the slider
  // or on a row of its own. Both have the notes, and a separator with them.
  const float separator = 1 + ImGui::GetStyle().ItemSpacing.y;
  const float whole_only = name_row + shape_h + (m.notes.empty() ? separator : 0.0f);
  const float close_row = compact && !close_beside ? ImGui::GetFrameHeightWithSpacing() : 0.0f;
  // (Worked out from the whole form, the compact one's Close is taken to fit beside the slider.)
  model_compact_h_ = compact ? end : end - whole_only;
  model_h_ = (compact ? end - close_row : end) + (compact ? whole_only : 0.0f) + smallTextHeight(kLayerNote);
  layout().state()["model_panel_compact"] = compact;
  ImGui::End();
}

// The field follows the model's text (a command, append, repeat, undo) unless it is being typed
// into; another layer, head or <|endoftext|> keeps what it holds (a layer picked had put the model's
// text over a refused or restored one). A new opening takes the text a restored session had typed
// and not applied (Controller::modelDraft). Without a tokenizer the field shows the ids (it showed
// its "token ids" placeholder over 17 of them). Followed whether the field is drawn or not (the
// column beside the Layers grid reads it while presenting).
void ModelTextPanel::mirror(const PanelContext& ctx) {
  const ModelSession& session = *ctx.model;
  if (session.version() == mirrored_version_ || ImGui::IsAnyItemActive()) return;
  const std::string session_text = fieldText(session.text());
  if (session.model()->tokenizer == nullptr) {
    text_.clear();
    for (int id : session.ids()) text_ += (text_.empty() ? "" : " ") + std::to_string(id);
  } else if (session.lineage() != mirrored_lineage_) {
    text_ = ctx.model_draft != nullptr ? *ctx.model_draft : session_text;
  } else if (session_text != mirrored_text_) {
    text_ = session_text;
  }
  mirrored_text_ = session_text;
  mirrored_version_ = session.version();
  mirrored_lineage_ = session.lineage();
}

// The field holds a text that is not the model's, not being typed: one the model refused, or one a
// session typed and never applied (drawText says so under the field).
bool ModelTextPanel::holdsText(const ModelSession& session) const {
  return session.model()->tokenizer != nullptr && !editing_ && text_ != fieldText(session.text()) &&
         ImGui::GetFrameCount() > sent_at_ + 2;
}

// The field's text when it is not the model's (holdsText), and what is said of it under the field,
// in forms that fit the window's width: why the model refused it, or that it was never applied;
// a too long text's first tokens the model reads, in one click (a lecturer's pasted paragraph had
// only "Back to the text shown"), beside that button where both fit, else above it.
ModelTextPanel::Held ModelTextPanel::heldText(const ModelSession& session) {
  Held h;
  h.back_label = kBackToText;
  h.held = holdsText(session);
  layout().state()["model_text_refused"] = false;
  layout().state()["model_text_restored"] = false;
  if (!h.held) return h;
  if (refused_text_ != text_ || refused_eot_ != session.prependEot() || refused_lineage_ != session.lineage()) {
    const std::string typed = typedText(text_, session.text());
    refused_why_ = session.textRefusal(typed), refused_head_ = session.textHead(typed);
    refused_text_ = text_, refused_eot_ = session.prependEot(), refused_lineage_ = session.lineage();
  }
  h.refused = !refused_why_.empty();
  layout().state()["model_text_refused"] = h.refused;
  layout().state()["model_text_restored"] = !h.refused;
  if (h.refused) {
    const std::string why = refused_why_.rfind("text: ", 0) == 0 ? refused_why_.substr(6) : refused_why_;
    h.note = "Not applied: " + why;
  } else {
    h.note = "Not applied yet: click it, then Enter";
  }
  const ImGuiStyle& style = ImGui::GetStyle();
  const float avail = ImGui::GetContentRegionAvail().x;
  if (h.refused && !refused_head_.empty()) {
    ImGui::PushFont(fonts().small);
    const float pad = 2 * style.FramePadding.x;
    const std::string n = std::to_string(refused_head_.size());
    const std::pair<std::string, std::string> pairs[] = {{"Keep the first " + n + " tokens", kBackToText},
                                                         {"Keep " + n + " tokens", kBackToText},
                                                         {"Keep " + n + " tokens", "Back"},
                                                         {"Keep " + n, "Back"}};
    h.keep_own_line = true;
    for (const auto& [keep, back] : pairs)
      if (ImGui::CalcTextSize(keep.c_str()).x + ImGui::CalcTextSize(back.c_str()).x + 2 * pad + style.ItemSpacing.x <=
          avail) {
        h.keep_label = keep, h.back_label = back, h.keep_own_line = false;
        break;
      }
    if (h.keep_own_line) h.keep_label = firstFitting({pairs[0].first, pairs[1].first, pairs[3].first}, avail - pad);
    ImGui::PopFont();
  }
  h.height = smallTextHeight(h.note) + (h.keep_own_line ? 2 : 1) * (fonts().small->FontSize + style.ItemSpacing.y);
  return h;
}

// The note under the field on a text it holds (heldText), in the toast's colour, and its buttons.
void ModelTextPanel::drawHeld(const PanelContext& ctx, const Held& h) {
  ImGui::PushFont(fonts().small);
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(theme().selection));
  ImGui::TextWrapped("%s", h.note.c_str());
  ImGui::PopStyleColor();
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(h.refused ? "The views show the text before it; the toast said why"
                                : "Typed in the last session, which ended before it was applied: the views show the "
                                  "text before it");
  if (h.refused) layout().state()["model_text_refusal"] = refused_why_;
  if (!h.keep_label.empty()) {
    if (ImGui::SmallButton(h.keep_label.c_str())) {
      ctx.commands.push("text", {{"ids", refused_head_}});
      sent_at_ = ImGui::GetFrameCount();
    }
    layout().widget("model_text_keep_head");
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("The model reads %zu tokens: the text up to there, the rest left out", refused_head_.size());
    if (!h.keep_own_line) ImGui::SameLine();
  }
  if (ImGui::SmallButton(h.back_label.c_str())) text_ = fieldText(ctx.model->text());
  if (ImGui::IsItemHovered() && h.back_label != kBackToText)
    ImGui::SetTooltip("Back to the text shown: the field gives up the text not applied");
  layout().widget("model_text_restore");
  ImGui::PopFont();
}

const char* ModelTextPanel::fieldHint() const {
  return editing_ ? "Enter applies · Ctrl+Enter: a new line" : "click the text to edit it";
}

// The field, `lines` of the font tall: the text wrapped in its frame, as a projector needs it
// (ImGui's multiline field does not wrap), and a click makes it the field to type in, which goes
// back to the wrapped text when it loses the focus; Enter applies it. `hint_as_tooltip`: no room
// for fieldHint under it. `whole_lines`: a text longer than the field shows whole lines only (else
// part of the next one, in the frame's padding). Without a tokenizer it shows the ids the text
// command takes.
void ModelTextPanel::textField(const PanelContext& ctx, float lines, bool hint_as_tooltip, bool whole_lines) {
  const ModelSession& session = *ctx.model;
  const bool tokenizer = session.model()->tokenizer != nullptr;
  const float field_h = ImGui::GetTextLineHeight() * lines + ImGui::GetStyle().FramePadding.y * 2;
  bool apply = false;
  if (editing_ && tokenizer) {
    const bool focusing = focus_field_;
    if (focus_field_) ImGui::SetKeyboardFocusHere(), focus_field_ = false;
    // Enter applies the field's text even unedited (a restored or refused one, as it was).
    const bool entered = inputTextMultilineKept("##text", &text_, field_, ImVec2(-1, field_h),
                                                ImGuiInputTextFlags_CtrlEnterForNewLine |
                                                    ImGuiInputTextFlags_EnterReturnsTrue);
    apply = entered || ImGui::IsItemDeactivatedAfterEdit();
    if (!focusing && !ImGui::IsItemActive()) editing_ = false;
    layout().widget("model_text");
  } else {  // the text wrapped in the field's frame; a click edits it
    editing_ = false;
    ImGui::PushStyleColor(ImGuiCol_ChildBg, ImGui::GetStyleColorVec4(ImGuiCol_FrameBg));
    ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImGui::GetStyle().FramePadding);
    ImGui::BeginChild("##text_shown", ImVec2(-1, field_h), false, ImGuiWindowFlags_AlwaysUseWindowPadding);
    ImGui::PushTextWrapPos(0);
    // An emoji as "U+1F467", as the tokens draw it: ImGui's font has 16-bit characters only, and
    // "I love pizza ??" looked as if the text had been damaged (while typing ImGui shows "?").
    const std::string drawn = beyondBmpSpelled(text_);
    if (text_.empty())
      ImGui::TextDisabled(tokenizer ? "type a text…" : "token ids");
    else if (lines < 2)  // one line: cut with "…", not a wrapped second line half in the frame
      ImGui::TextUnformatted(fitText(drawn.substr(0, drawn.find('\n')), ImGui::GetContentRegionAvail().x).c_str());
    else if (!whole_lines)  // the Text panel's: the part of a line in the padding says there is more
      ImGui::TextUnformatted(drawn.c_str());
    else {  // whole lines, no part of one in the frame's padding (its scrollbar says there is more)
      const float line_h = ImGui::GetTextLineHeight(), pad = ImGui::GetStyle().WindowPadding.y;
      const ImVec2 top = ImGui::GetWindowPos();
      ImGui::PushClipRect(ImVec2(top.x, top.y + pad),
                          ImVec2(top.x + ImGui::GetWindowWidth(), top.y + pad + lines * line_h), true);
      ImGui::TextUnformatted(drawn.c_str());
      ImGui::PopClipRect();
      // A wheel's step is not a line's: scrolled to the nearest whole line.
      if (const float scroll = ImGui::GetScrollY(), at = std::round(scroll / line_h) * line_h; at != scroll)
        ImGui::SetScrollY(std::min(at, ImGui::GetScrollMaxY()));
    }
    layout().rect("model_text_content", ImGui::GetItemRectMin(), ImGui::GetItemRectMax());  // tests: wrapped
    layout().state()["model_field"] = text_;
    ImGui::PopTextWrapPos();
    if (tokenizer && ImGui::IsWindowHovered()) {
      ImGui::SetMouseCursor(ImGuiMouseCursor_TextInput);
      if (ImGui::IsMouseClicked(ImGuiMouseButton_Left)) editing_ = focus_field_ = true;
    }
    ImGui::EndChild();
    ImGui::PopStyleVar();
    ImGui::PopStyleColor();
    layout().widget("model_text");
  }
  if (hint_as_tooltip && ImGui::IsItemHovered() && tooltipWanted())
    ImGui::SetTooltip("%s", tokenizer ? fieldHint()
                                      : "Token ids: without a tokenizer beside the model the text command gives "
                                        "them (a --commands file, or attnscope.command in a notebook)");
  if (apply && text_ != fieldText(session.text())) {
    ctx.commands.push("text", {{"value", typedText(text_, session.text())}});
    sent_at_ = ImGui::GetFrameCount();
  }
}

void ModelTextPanel::drawText(const PanelContext& ctx, ImVec2 pos, ImVec2 size) {
  const ModelSession& session = *ctx.model;
  // The tokens' count in the title, where it takes no row of the panel's (at 1280 × 720 and 200 %
  // the next tokens were below the fold).
  const std::string count = "Text  ·  " + countOf(session.tokenCount(), "token");
  // A full context says so in the longest form that fits whole ("…, the mod…" at 150 % hid why
  // Append and Repeat are off); given maps have no model, and no context to fill.
  const bool full = !ctx.givenMaps() && session.tokenCount() > 0 && session.tokenCount() >= session.maxTokens();
  const float title_w = size.x - 2 * ImGui::GetStyle().WindowPadding.x;
  const std::string title =
      full ? fitText(firstFitting({count + ", the model's whole context", count + ", the whole context",
                                   count + " (full)", "Text  ·  " + std::to_string(session.tokenCount()) + " (full)"},
                                  title_w),
                     title_w)
           : fitText(count, title_w);
  beginPanelWindow((title + "###Text").c_str(), "inputs", pos, size);
  layout().state()["model_text_title"] = title;
  if (ctx.givenMaps()) {  // the tokens they were given with; a click selects one
    tokenChips(ctx, ImGui::GetContentRegionAvail().y - 4);
    ImGui::End();
    return;
  }
  if (session.isRun()) {  // a model training here reads its task's probe, or tokens appended to it
    runText(ctx);
    ImGui::End();
    return;
  }
  const bool tokenizer = session.model()->tokenizer != nullptr;
  const std::string session_text = fieldText(session.text());
  mirror(ctx);
  // A text in the field that is not the model's stays there, the user's to fix or apply: one the
  // model refused (too long, empty, a character it never saw), or one typed in a session that ended
  // before it was applied. Said under the field (after the toast has gone), Append off meanwhile:
  // appending would replace it.
  const Held held = heldText(session);
  // What the panel holds below the field — <|endoftext|>, a row of the tokens and the
  // next tokens with kNextRowsKept of their rows, and a refusal's note — keeps its room (at 1280 ×
  // 800 and 175 % the next tokens were below the fold). Where it is short the field shows two
  // lines, not 3.6, and the hint under it becomes the field's tooltip.
  const ImGuiStyle& style = ImGui::GetStyle();
  const float line_h = ImGui::GetTextLineHeight(), line = ImGui::GetTextLineHeightWithSpacing();
  const float frame = ImGui::GetFrameHeightWithSpacing();
  const float heading_h = nextHeading(session, ctx.view.token).height;  // the next tokens' (the same width below)
  // The checkbox's label on one line where one of its forms fits (two lines took 66 px at 1280 ×
  // 720 and 175 %); its tooltip says what it does. The last, "EOT first", where even the token's name
  // does not fit: at 250 % it had broken in two, "<|endoftex" over "t|>".
  const float eot_box = ImGui::GetFrameHeight() + style.ItemInnerSpacing.x;
  const std::string eot_label = firstFitting({"start with <|endoftext|>", "<|endoftext|> first", "<|endoftext|>",
                                              "EOT first"},
                                             ImGui::GetContentRegionAvail().x, eot_box);
  const bool eot_wraps = ImGui::CalcTextSize(eot_label.c_str()).x + eot_box > ImGui::GetContentRegionAvail().x;
  const float below = (!tokenizer  ? 0.0f
                       : eot_wraps ? frame + line
                                   : frame) +
                      chipPitch() + style.ItemSpacing.y + nextTokensHeight(kNextRowsKept, heading_h) + held.height;
  const float hint_h = tokenizer && !held.held ? fonts().small->FontSize + style.ItemSpacing.y : 0.0f;
  const float room = ImGui::GetContentRegionAvail().y - below - style.ItemSpacing.y - style.FramePadding.y * 2;
  const bool roomy = room - hint_h >= line_h * 3.6f;
  // A refused text's field gives its second line to the note where the room is short (a click
  // edits it at full height): the note and the next tokens stay in view. Without a tokenizer the
  // field takes no typing and shows the ids the chips list: where the room is short there is none,
  // its room the next tokens' (the model panel's note, wrapped, took five lines at 1280 × 720 and
  // 200 %, and left none of them above the fold).
  const bool field = tokenizer || roomy;
  const float field_lines = roomy ? 3.6f : held.held ? 1.0f : 2.0f;
  if (field) textField(ctx, field_lines, !roomy || !tokenizer);
  if (held.held) {
    drawHeld(ctx, held);
  } else if (tokenizer && roomy) {  // without one the field shows ids, and the model panel's note says why
    // What the chips' and the next tokens' "Ġ" and "Ċ" are, each where the line has room for it
    // (else their tooltips say it).
    ImGui::PushFont(fonts().small);
    std::string line = fieldHint();
    nlohmann::json said = nlohmann::json::array();
    for (const ByteMark& m : kByteMarks) {
      const auto in = [&](const std::string& t) { return spells(t, m); };
      const bool spelled = std::any_of(session.tokens().begin(), session.tokens().end(), in) ||
                           std::any_of(next_.begin(), next_.end(),
                                       [&](const NextToken& n) { return in(tokenLabel(*session.model(), n.id)); });
      const std::string longer = line + "  ·  " + m.said;
      if (editing_ || !spelled || ImGui::CalcTextSize(longer.c_str()).x > ImGui::GetContentRegionAvail().x) continue;
      line = longer;
      said.push_back(m.said);
    }
    ImGui::TextDisabled("%s", line.c_str());
    layout().state()["model_marks_said"] = said;
    ImGui::PopFont();
  }
  // Without a tokenizer there is no <|endoftext|> to start with: no checkbox (the model panel's note
  // says there is no tokenizer).
  if (tokenizer) {
    bool eot = session.prependEot();
    const bool has_eot = session.model()->tokenizer->endOfText() >= 0;
    ImGui::BeginDisabled(!has_eot);
    if (checkboxWrapped("model_eot", eot_label.c_str(), &eot)) ctx.commands.push("text", {{"prepend_eot", eot}});
    ImGui::EndDisabled();
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
      ImGui::SetTooltip(has_eot ? "Start the text with <|endoftext|> (EOT, id 50256 in GPT-2): GPT-2 was trained on "
                                  "texts after it, and with it the heads' sink is that token"
                                : "This model's tokenizer has no <|endoftext|>");
    layout().widget("model_eot");
  }

  // The tokens as GPT-2 spells them (Ġ: a space before the word); a click selects one.
  tokenChips(ctx, chipsAboveNextTokens(session, heading_h));
  ImGui::Separator();
  nextTokens(ctx, held.held);
  held_ = tokenizer && text_ != session_text;
  ImGui::End();
}

void ModelTextPanel::drawBeside(const PanelContext& ctx, ImVec2 size) {
  const ModelSession& session = *ctx.model;
  // Scrolled as the Text panel is: the next tokens' rows past kNextRowsKept below the fold.
  ImGui::BeginChild("##text_beside", size);
  layout().panel("layers_beside", ImGui::GetWindowPos(),
                 ImVec2(ImGui::GetWindowPos().x + size.x, ImGui::GetWindowPos().y + size.y));
  if (session.isRun()) {
    runText(ctx);
  } else {
    mirror(ctx);
    // The field above the tokens, where the column keeps a row of them and kNextRowsKept next
    // tokens below it: as many lines as the text takes wrapped, up to four, where a second row of
    // tokens fits too, else one (cut with "…"; a click edits it). A lecturer had to leave the
    // presentation (F10) to type a new sentence. Where even one line does not fit (1280 × 720 at
    // 250 %) the Text panel has it: F10.
    const Held held = heldText(session);
    const ImGuiStyle& style = ImGui::GetStyle();
    const float heading_h = nextHeading(session, ctx.view.token).height;
    const float kept = chipPitch() + style.ItemSpacing.y + nextTokensHeight(kNextRowsKept, heading_h);
    const float spare = ImGui::GetContentRegionAvail().y - kept - 2 * style.FramePadding.y - style.ItemSpacing.y -
                        (held.held ? held.height : 0.0f);
    // (Being edited, as many as when the edit began: ImGui's field does not wrap, and a long line
    // typed had grown it to four lines, three of them blank.)
    const float line_h = ImGui::GetTextLineHeight();
    const float wrap_w = ImGui::GetContentRegionAvail().x - 2 * style.FramePadding.x;
    if (!editing_) {
      const float wrapped = ImGui::CalcTextSize(beyondBmpSpelled(text_).c_str(), nullptr, false, wrap_w).y;
      beside_lines_ = std::clamp(static_cast<int>(std::ceil(wrapped / line_h - 0.01f)), 1, 4);
    }
    float lines = 0;
    if (session.model()->tokenizer != nullptr)
      for (int n = held.held ? 1 : beside_lines_; n > 0; --n)
        if (spare >= static_cast<float>(n) * line_h + (n > 1 ? chipPitch() : 0.0f)) {
          lines = static_cast<float>(n);
          break;
        }
    layout().state()["layers_beside_field_lines"] = lines;
    if (lines > 0) {
      textField(ctx, lines, true, true);
      if (held.held) drawHeld(ctx, held);
    } else {  // no field here: none being edited (the Text panel's would take the keyboard when it comes back)
      editing_ = focus_field_ = false;
    }
    tokenChips(ctx, chipsAboveNextTokens(session, heading_h));
    ImGui::Separator();
    nextTokens(ctx, held.held, lines == 0);
    held_ = session.model()->tokenizer != nullptr && text_ != fieldText(session.text());
  }
  ImGui::EndChild();
}

// A run's text: the probe its head scores read, which the user can grow by the tokens it predicts.
void ModelTextPanel::runText(const PanelContext& ctx) {
  const ModelSession& session = *ctx.model;
  ImGui::PushFont(fonts().small);
  const bool probe = ctx.learn != nullptr && session.ids() == ctx.learn->probe();
  ImGui::TextWrapped(probe ? "The probe: the sequence the head scores are measured on, as the model learns."
                           : "The probe and the tokens appended to it.");
  ImGui::PopFont();
  if (!probe && ctx.learn != nullptr) {
    ImGui::SameLine();
    if (ImGui::SmallButton("The probe again")) ctx.commands.push("text", {{"ids", ctx.learn->probe()}});
    layout().widget("model_probe");
  }
  tokenChips(ctx, chipsAboveNextTokens(session, nextHeading(session, ctx.view.token).height));
  ImGui::Separator();
  nextTokens(ctx);
}

// Transformer Explainer's view: the most likely next tokens at the selected position.
void ModelTextPanel::nextTokens(const PanelContext& ctx, bool held, bool field_hidden) {
  const ModelSession& session = *ctx.model;
  const Snapshot* s = ctx.snapshot.get();
  const int position = ctx.view.token;
  const NextHeading heading = nextHeading(session, position);
  if (heading.wraps)
    ImGui::TextWrapped("%s", heading.shown.c_str());
  else
    ImGui::TextUnformatted(heading.shown.c_str());
  if (heading.shown != heading.whole && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", heading.whole.c_str());
  layout().state()["model_next_heading"] = heading.shown;
  layout().state()["model_next_heading_wraps"] = heading.wraps;
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("temperature");
  ImGui::SameLine();
  const float temperature = static_cast<float>(ctx.view.temperature);
  ImGui::SetNextItemWidth(-1);
  const float hi = static_cast<float>(kMaxTemperature);
  filledSlider(temperature / hi, [&] {
    sliderFloatTyped("##temperature", temperature, 0.0f, hi, temperature == 0 ? "0 (greedy)" : "%.2f", 0, ctx.commands,
                     "temperature", [queue = &ctx.commands](float t) {
                       queue->push("view", {{"field", "temperature"}, {"value", std::round(t * 100) / 100}});
                     });
  });
  layout().widget("model_temperature");
  const float* logits = logitsShown(s, session, position);
  if (logits == nullptr) {
    if (ctx.engine_error.empty())
      ImGui::TextDisabled("computing…");
    else
      drawWaiting(ctx);
    return;
  }
  if (s->serial != next_serial_ || position != next_position_ || ctx.view.temperature != next_temperature_) {
    next_ = topNextTokens(logits, session.model()->config.vocab_size, ctx.view.temperature, kNextTokens);
    next_serial_ = s->serial;
    next_position_ = position;
    next_temperature_ = ctx.view.temperature;
  }
  const bool last = position == session.tokenCount() - 1;
  const bool room = session.tokenCount() < session.maxTokens(), can_append = room && !held;
  const char* why_not = held && field_hidden && ctx.view.presentation
                            ? "The Text panel holds a text not applied (F10 shows it): apply it, or go Back to the "
                              "text shown, to append"
                        : held && field_hidden
                            ? "The Text panel holds a text not applied (View › Inputs panel shows it): apply it, or "
                              "go Back to the text shown, to append"
                        : held
                            ? "The text in the field was not applied: fix it, or go Back to the text shown, to append"
                        : !room ? "The text is as long as the model's context"
                                : nullptr;
  // The button grows the text at its end. With another token selected the list below is not what
  // it appends ("Ġfox 32.5 %" listed, "." appended), so it names the token: the last one's top.
  std::string append = "Append the top token";
  if (const float* end = last ? nullptr : logitsShown(s, session, session.tokenCount() - 1)) {
    if (s->serial != end_serial_) {
      end_top_ = topNextTokens(end, session.model()->config.vocab_size, 1.0, 1)[0].id;
      end_serial_ = s->serial;
    }
    // Where it is too long, "at the end" stays (cut, it read "Append “23” at t…" over a list of
    // another token's next): the token goes first, then the verb.
    const std::string token = "“" + tokenLabel(*session.model(), end_top_) + "”";
    append = firstFitting(
        {"Append " + token + " at the end", "+ " + token + " at the end", "Append at the end", "+ at the end"},
        ImGui::GetContentRegionAvail().x, ImGui::GetStyle().FramePadding.x * 2);
  } else {  // cut, it read "Append the top t…" at 200 % on 1280 × 720
    append = firstFitting({append, "Append top token", "+ the top token", "+ top token"},
                          ImGui::GetContentRegionAvail().x, ImGui::GetStyle().FramePadding.x * 2);
  }
  // Why it takes no click, on its face (as "Repeat: twice would not fit" says): it had looked
  // enabled at the full context and did nothing, its reason in the tooltip alone.
  if (why_not != nullptr)
    append = firstFitting(held ? std::vector<std::string>{"Append: apply the text first", "Apply the text first"}
                               : std::vector<std::string>{"Append: the context is full", "Context full"},
                          ImGui::GetContentRegionAvail().x, ImGui::GetStyle().FramePadding.x * 2);
  // A tokenButton: a token's "##" would end an ImGui button's text.
  if (tokenButton(append, false, can_append, ImGui::GetContentRegionAvail().x, true)) ctx.commands.push("append_token");
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled) && (why_not != nullptr || tooltipWanted()))
    ImGui::SetTooltip("%s", why_not ? why_not
                            : last
                                ? "Appends the most likely token after the last one: grow the text a token at a time"
                                : ("Appends the most likely token after the last token; the list below is for token " +
                                   std::to_string(position + 1))
                                      .c_str());
  layout().widget("model_append");
  layout().state()["model_append_label"] = append;
  layout().state()["model_append_enabled"] = can_append;
  layout().state()["model_append_shown"] =  // as tokenButton cuts it
      fitText(append, ImGui::GetContentRegionAvail().x - ImGui::GetStyle().FramePadding.x * 2);
  // Each row: the token, its probability at the row's end, and under them, in the space between the
  // rows, a bar as long as the row × the probability. The token is what the list is about and the
  // row is its room: a bar of 30 % of the row and "100.0 %" before the token had left it "Ġund…" and
  // "#…" at 200 % on 1280 × 720. A token wider than its room beside the number takes the whole row,
  // the number under it. (A bar behind the row hid a probability under 20 % behind its token.)
  ImGui::PushFont(fonts().small);
  const ImGuiStyle& style = ImGui::GetStyle();
  const float row_w = ImGui::GetContentRegionAvail().x;
  const float row_end = ImGui::GetWindowContentRegionMax().x;  // window coordinates, as SameLine takes
  const float bar_h = std::round(style.ItemSpacing.y / 2), bar_y = std::floor(style.ItemSpacing.y / 4);
  nlohmann::json shown = nlohmann::json::array();
  for (std::size_t i = 0; i < next_.size(); ++i) {
    const NextToken& t = next_[i];
    const std::string label = tokenLabel(*session.model(), t.id);
    const std::string prob_text = formatPercent(t.probability);
    const char* prob = prob_text.c_str();
    const float prob_w = ImGui::CalcTextSize(prob).x;
    const float beside = row_w - prob_w - style.ItemSpacing.x;  // the token's room beside its number
    const bool own_row = ImGui::CalcTextSize(label.c_str()).x + style.FramePadding.x * 2 > beside;
    const float token_w = own_row ? row_w : beside;
    ImGui::PushID(static_cast<int>(i));
    const ImVec2 p = ImGui::GetCursorScreenPos();
    if (tokenButton(label, false, last && can_append, token_w)) ctx.commands.push("append_token", {{"id", t.id}});
    float row_bottom = ImGui::GetItemRectMax().y;
    if (i < kNextRowsKept) layout().widget("model_next_" + std::to_string(i));
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled) && (!(last && can_append) || tooltipWanted())) {
      // Why a row takes no click, where it does not (a lecturer clicked one after token 3 and
      // nothing happened): the text grows at its end only.
      const std::string click = last && can_append ? " · click: append it to the text"
                                : why_not          ? std::string("\n") + why_not
                                                   : "\nAfter token " + std::to_string(position + 1) +
                                                ", not the text's end: select the last token to append from this list";
      ImGui::SetTooltip("%s%s · id %d · logit %.3f%s%s", label.c_str(), readingSaid(*session.model(), t.id).c_str(),
                        t.id, static_cast<double>(t.logit), marksSaid(label).c_str(), click.c_str());
      layout().state()["model_next_tooltip"] = click;  // tests: what a hovered row says of its click
    }
    shown.push_back(fitText(label, token_w - style.FramePadding.x * 2));  // as tokenButton cuts it
    if (own_row) {
      ImGui::SetCursorPosX(row_end - prob_w);
    } else {
      ImGui::SameLine(row_end - prob_w);
      ImGui::SetCursorPosY(ImGui::GetCursorPosY() + chipPadY());  // on the token's line of text
    }
    ImGui::TextUnformatted(prob);
    row_bottom = std::max(row_bottom, ImGui::GetItemRectMax().y);
    const float bar_w = row_w * t.probability, under = row_bottom + bar_y;
    if (bar_w >= 1)  // (thinner, its antialiased edge read as a mark)
      ImGui::GetWindowDrawList()->AddRectFilled(ImVec2(p.x, under), ImVec2(p.x + bar_w, under + bar_h),
                                                theme().selection);
    ImGui::PopID();
  }
  layout().state()["model_next_shown"] = shown;
  ImGui::PopFont();
  layout().widget("model_next_tokens");
}

}  // namespace attnscope
