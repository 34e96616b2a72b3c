#include "panels/lines_header.h"

#include <algorithm>
#include <string>
#include <vector>

#include "panels/lines_view.h"
#include "widgets/flow_layout.h"
#include "widgets/layout_dump.h"
#include "widgets/text.h"
#include "widgets/theme.h"

namespace attnscope {

namespace {

constexpr const char* kMenu = "##lines_options";
// The folded header's button: where dropout acts, it names the stage the lines are of (folded
// away, nothing said whether they were the weights or the weights after dropout); where only each
// query's largest keys are drawn, how many (a 58-token text's lines had not said they were some).
std::string foldLabel(const LinesHeaderState& s) {
  const std::string stage = !s.can_drop ? "" : s.dropped ? "after dropout" : "before dropout";
  const std::string keys = s.all_keys ? "" : "top " + std::to_string(s.k) + " keys";
  const std::string said = stage + (stage.empty() || keys.empty() ? "" : ", ") + keys;
  return (said.empty() ? std::string("options") : said) + " ▾###lines_fold";
}
constexpr const char* kIsolateLabel = "only the selected token";
constexpr const char* kSaveLabel = "Save figure…";

// [SECTION] Planning -----------------------------------------------------------------------------

enum class Piece { Stage, HeadsLabel, Head, TopK, Isolate, Save, Fold };
enum class Form { Inline, Folded, Menu };  // the panel's lines; the folded line; the menu's body

struct LinesPiece {
  Piece kind;
  int head = -1;        // Head: which
  float width = 0;      // on screen
  float spacing = 0;    // before it, when beside the last
  float height = 0;     // its line's, at least
  float keep = 0;       // what must fit beside it too (placeFlow)
  bool beside = false;  // placeFlow: on the last piece's line
};

std::string topKText(int k) { return "top " + std::to_string(k) + " keys per query"; }
float buttonWidth(const char* label) {
  return ImGui::CalcTextSize(label, nullptr, true).x + ImGui::GetStyle().FramePadding.x * 2;
}
float checkWidth(const char* label) {  // a radio button's or a checkbox's
  return ImGui::GetFrameHeight() + ImGui::GetStyle().ItemInnerSpacing.x + ImGui::CalcTextSize(label).x;
}
std::string headLabel(int h) { return std::to_string(h + 1) + "##lines_head" + std::to_string(h); }

std::vector<LinesPiece> linesPieces(const LinesHeaderState& s, Form form) {
  const float gap = ImGui::GetStyle().ItemSpacing.x, frame_h = ImGui::GetFrameHeight();
  std::vector<LinesPiece> out;
  if (form != Form::Folded) {
    const float stage = ImGui::CalcTextSize("lines of").x + gap + checkWidth("weights") + gap +
                        checkWidth("after dropout");
    out.push_back({Piece::Stage, -1, stage, gap, frame_h});
  }
  if (s.heads > 1 && form != Form::Menu) {  // the lines' colours: never folded away
    out.push_back(
        {Piece::HeadsLabel, -1, ImGui::CalcTextSize("heads").x, gap, frame_h, gap + buttonWidth(headLabel(0).c_str())});
    for (int h = 0; h < s.heads; ++h) out.push_back({Piece::Head, h, buttonWidth(headLabel(h).c_str()), gap, frame_h});
  }
  if (form == Form::Folded) {
    out.push_back({Piece::Fold, -1, buttonWidth(foldLabel(s).c_str()), gap, frame_h});
    return out;
  }
  if (!s.all_keys)
    out.push_back({Piece::TopK, -1,
                   buttonWidth("−") + px(4) + ImGui::CalcTextSize(topKText(s.k).c_str()).x + px(4) + buttonWidth("+"),
                   gap, frame_h});
  out.push_back({Piece::Isolate, -1, checkWidth(kIsolateLabel), gap, frame_h});
  out.push_back({Piece::Save, -1, buttonWidth(kSaveLabel), gap, frame_h});
  return out;
}

// The pieces of `form`, each beside the last while it fits `width`; in the menu a line apiece (a
// menu reads as a list).
std::vector<LinesPiece> placeLines(const LinesHeaderState& s, Form form, float width) {
  std::vector<LinesPiece> pieces = linesPieces(s, form);
  placeFlow(pieces, width, [form](const LinesPiece&) { return form != Form::Menu; });
  return pieces;
}

// The hint's height, wrapped at `width`, and the spacing after it.
float hintHeight(const std::string& hint, float width) {
  return ImGui::CalcTextSize(hint.c_str(), nullptr, false, width).y + ImGui::GetStyle().ItemSpacing.y;
}

// [SECTION] Drawing ----------------------------------------------------------------------------------

void drawHeadToggle(const PanelContext& ctx, const LinesHeaderState& s, int h) {
  const ViewState& view = ctx.view;
  const Rgb c = headColour(s.layer, h, s.heads);
  // Another head chosen (Tab, a thumbnail's click): this one's lines are not drawn, so its toggle
  // is not lit — twelve lit toggles over one head's lines read as twelve heads attending alike.
  const bool other_chosen = view.head >= 0 && view.head != h;
  const bool on = !linesHeadHidden(view, h) && !other_chosen;
  ImGui::PushStyleColor(ImGuiCol_Button, on ? colourU32(c, 1) : colourU32(c, 0.12f));
  ImGui::PushStyleColor(ImGuiCol_ButtonHovered, colourU32(c, on ? 0.8f : 0.4f));
  ImGui::PushStyleColor(ImGuiCol_ButtonActive, colourU32(c, 0.6f));
  const Rgb text = contrastingText(c);
  ImGui::PushStyleColor(ImGuiCol_Text,
                        on ? IM_COL32(text.r, text.g, text.b, 255) : ImGui::GetColorU32(ImGuiCol_TextDisabled));
  if (ImGui::Button(headLabel(h).c_str())) {
    if (other_chosen) {  // this head chosen instead, and shown if it was hidden
      ctx.commands.push("select_head", {{"index", h}});
      if (linesHeadHidden(view, h)) {
        nlohmann::json hidden = nlohmann::json::array();
        for (int g : view.lines_hidden_heads)
          if (g != h) hidden.push_back(g);
        ctx.commands.push("view", {{"field", "lines_hidden_heads"}, {"value", hidden}});
      }
    } else {
      nlohmann::json hidden = nlohmann::json::array();
      for (int g = 0; g < s.heads; ++g)
        if (g == h ? on : linesHeadHidden(view, g)) hidden.push_back(g);
      ctx.commands.push("view", {{"field", "lines_hidden_heads"}, {"value", hidden}});
    }
  }
  ImGui::PopStyleColor(4);
  layout().widget("lines_head_h" + std::to_string(h + 1));
  layout().state()["lines_head_lit"][std::to_string(h + 1)] = on;  // tests: lit = its lines drawn
  if (ImGui::IsItemHovered()) {
    if (other_chosen)
      ImGui::SetTooltip("head %d: not drawn, head %d is chosen (click to choose this one; Tab: the next head, "
                        "after the last every head)",
                        h + 1, view.head + 1);
    else
      ImGui::SetTooltip("head %d: %s (click to %s)", h + 1, on ? "shown" : "hidden",
                        on ? "hide its lines" : "show them");
  }
}

void drawPlaced(const PanelContext& ctx, const LinesHeaderState& s, const std::vector<LinesPiece>& pieces);

void drawPiece(const PanelContext& ctx, const LinesHeaderState& s, const LinesPiece& p) {
  const ViewState& view = ctx.view;
  CommandQueue& cmd = ctx.commands;
  switch (p.kind) {
    case Piece::Stage: {
      ImGui::AlignTextToFramePadding();
      ImGui::TextUnformatted("lines of");
      ImGui::SameLine();
      if (ImGui::RadioButton("weights", !s.dropped)) cmd.push("view", {{"field", "lines_stage"}, {"value", "weights"}});
      layout().widget("lines_stage_weights");
      ImGui::SameLine();
      ImGui::BeginDisabled(!s.can_drop);
      if (ImGui::RadioButton("after dropout", s.dropped))
        cmd.push("view", {{"field", "lines_stage"}, {"value", "dropped_weights"}});
      ImGui::EndDisabled();
      layout().widget("lines_stage_dropped");
      if (!s.can_drop && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
        ImGui::SetTooltip("%s", s.no_drop_why);
      break;
    }
    case Piece::HeadsLabel:
      ImGui::AlignTextToFramePadding();
      ImGui::TextUnformatted("heads");
      break;
    case Piece::Head: drawHeadToggle(ctx, s, p.head); break;
    case Piece::TopK: {
      ImGui::BeginDisabled(view.lines_top_k <= 1);
      if (ImGui::Button("−##lines_k")) cmd.push("view", {{"field", "lines_top_k"}, {"value", view.lines_top_k - 1}});
      ImGui::EndDisabled();
      layout().widget("lines_k_minus");
      ImGui::SameLine(0, px(4));
      ImGui::TextUnformatted(topKText(s.k).c_str());
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip("%d tokens: above %d only each query's %d largest keys are drawn", s.tokens,
                          kLinesAllKeysUpTo, s.k);
      ImGui::SameLine(0, px(4));
      ImGui::BeginDisabled(view.lines_top_k >= std::min(kLinesMaxTopK, s.tokens));
      if (ImGui::Button("+##lines_k")) cmd.push("view", {{"field", "lines_top_k"}, {"value", view.lines_top_k + 1}});
      ImGui::EndDisabled();
      layout().widget("lines_k_plus");
      break;
    }
    case Piece::Isolate: {
      bool isolate = view.lines_isolate;
      if (ImGui::Checkbox(kIsolateLabel, &isolate)) cmd.push("view", {{"field", "lines_isolate"}, {"value", isolate}});
      layout().widget("lines_isolate");
      break;
    }
    case Piece::Save:  // the figure for a slide: SVG or PDF (text stays text) or PNG, through the save dialog
      if (ImGui::Button(kSaveLabel)) {
        cmd.push("dialog", {{"which", "save_lines"}});
        ImGui::CloseCurrentPopup();  // in the menu: the dialog comes instead (outside one, nothing)
      }
      layout().widget("lines_save_figure");
      break;
    case Piece::Fold: {
      const std::string label = foldLabel(s);
      if (ImGui::Button(label.c_str())) ImGui::OpenPopup(kMenu);
      layout().widget("lines_menu");
      layout().state()["lines_menu_label"] = label.substr(0, label.find("###"));  // as shown
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "The stage, %s\"only the selected token\", Save figure… and how to read the lines: in "
            "this menu, so that at this text size the header leaves the lines their room",
            s.all_keys ? "" : "the top k, ");
      if (beginMenuBelowItem(kMenu, kFoldedMenuWidth)) {
        // Escape closes it, as the heatmaps' menu: ImGui's keyboard navigation is off here.
        if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false)) ImGui::CloseCurrentPopup();
        drawPlaced(ctx, s, placeLines(s, Form::Menu, ImGui::GetContentRegionAvail().x));
        layout().state()["lines_hint_font_px"] = ImGui::GetFontSize();
        textDisabledWrapped("%s", s.hint.c_str());
        ImGui::EndPopup();
      }
      break;
    }
  }
}

void drawPlaced(const PanelContext& ctx, const LinesHeaderState& s, const std::vector<LinesPiece>& pieces) {
  for (const LinesPiece& p : pieces) {
    if (p.beside) ImGui::SameLine(0, p.spacing);
    drawPiece(ctx, s, p);
  }
}

}  // namespace

void drawLinesHeader(const PanelContext& ctx, const LinesHeaderState& s) {
  const ImVec2 region = ImGui::GetContentRegionAvail();
  std::vector<LinesPiece> pieces = placeLines(s, Form::Inline, region.x);
  const bool folded = ImGui::IsPopupOpen(kMenu) || flowHeight(pieces) + hintHeight(s.hint, region.x) > region.y / 4;
  if (folded) pieces = placeLines(s, Form::Folded, region.x);
  drawPlaced(ctx, s, pieces);
  layout().state()["lines_header_folded"] = folded;
  if (!folded) {
    // The hint in the UI's font: at a projector's text size it reads as the rest does.
    layout().state()["lines_hint_font_px"] = ImGui::GetFontSize();
    textDisabledWrapped("%s", s.hint.c_str());
  }
}

}  // namespace attnscope
