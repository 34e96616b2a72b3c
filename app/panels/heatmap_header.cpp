#include "panels/heatmap_header.h"

#include <algorithm>
#include <string>
#include <vector>

#include "engine/stages.h"
#include "panels/heatmap_grid.h"
#include "widgets/flow_layout.h"
#include "widgets/layout_dump.h"
#include "widgets/theme.h"
#include "widgets/typed_number.h"

namespace attnscope {

namespace {

// [SECTION] The pieces and their lines ---------------------------------------------------------------
// The header is a row of pieces; placeHeader decides which goes beside the last and which starts a
// line, from their widths alone, before anything is drawn: the same plan draws the header and
// measures it (drawHeatmapHeader plans the inline header, and the folded one only when that is too tall).

enum class Piece { Head, Batch, Shared, MapsLabel, Column, Fold };

enum class HeaderForm {
  Inline,      // on the panel's lines, each piece beside the last while it fits
  Folded,      // one line: the head and the "maps, batch, scale ▾" button, its menu the rest (FoldedMenu)
  FoldedMenu,  // that menu: the batch element, the shared scale, the maps; a line apiece
  LessonMenu,  // a lesson step's menu: everything, a line apiece
};

struct HeaderPiece {
  Piece kind;
  const GridColumn* column = nullptr;  // Column: which
  float width = 0;                     // on screen
  float spacing = 0;                   // before it, when beside the last
  float height = 0;                    // its line's, at least
  float keep = 0;                      // what must fit beside it too (placeFlow)
  bool beside = false;                 // placeFlow: on the last piece's line
};

// The head combo's and the batch slider's own widths (their labels come beside).
constexpr float kHeadComboWidth = 130, kBatchSliderWidth = 110;

// The toggles' frame: a little narrower than a button's, and one pixel above and below the text.
ImVec2 toggleFramePadding() { return ImVec2(ImGui::GetStyle().FramePadding.x * 0.6f, 1); }

bool columnShown(const GridColumn& c, const Trace* t) {
  // The tril route's own maps only on that route: elsewhere three toggles would only take a line.
  const Stage st = static_cast<Stage>(c.index);
  return !(c.per_head && stageInfo(st).tril_route && (!t || !stageHeld(*t, st)));
}

// The weights, Q K V, the attention maps, the module's maps: a gap between groups.
int columnGroup(const GridColumn& c) {
  const Stage st = static_cast<Stage>(c.index);
  return !c.per_head ? 3 : stageInfo(st).parameter ? 0 : st <= Stage::Values ? 1 : 2;
}

// "maps, batch, scale ▾": what the folded header's menu holds.
std::string foldLabel(const ModelConfig& m) {
  return std::string("maps") + (m.batch_size > 1 ? ", batch" : "") + (headCount(m) > 1 ? ", scale" : "") + " ▾";
}

std::vector<HeaderPiece> headerPieces(const ModelConfig& m, const Trace* t, HeaderForm form) {
  const ImGuiStyle& style = ImGui::GetStyle();
  const float frame_h = ImGui::GetFrameHeight(), gap = style.ItemSpacing.x;
  const bool several = headCount(m) > 1;
  std::vector<HeaderPiece> out;
  if (several && form != HeaderForm::FoldedMenu)
    out.push_back({Piece::Head, nullptr, px(kHeadComboWidth), gap, frame_h});
  if (form == HeaderForm::Folded) {
    const float w = ImGui::CalcTextSize(foldLabel(m).c_str()).x + style.FramePadding.x * 2;
    out.push_back({Piece::Fold, nullptr, w, gap, frame_h});
    return out;
  }
  if (m.batch_size > 1)
    out.push_back({Piece::Batch, nullptr,
                   px(kBatchSliderWidth) + style.ItemInnerSpacing.x + ImGui::CalcTextSize("batch element").x, gap,
                   frame_h});
  // One range per kind of map across heads: nothing to share with one head.
  if (several)
    out.push_back({Piece::Shared, nullptr, frame_h + style.ItemInnerSpacing.x + ImGui::CalcTextSize("shared scale").x,
                   gap, frame_h});
  const float toggle_h = ImGui::GetFontSize() + toggleFramePadding().y * 2;
  out.push_back({Piece::MapsLabel, nullptr, ImGui::CalcTextSize("maps").x, gap, toggle_h});
  int group = -1;
  for (const GridColumn& c : gridColumns()) {
    if (!columnShown(c, t)) continue;
    const int g = columnGroup(c);
    const float w = ImGui::CalcTextSize(c.label).x + toggleFramePadding().x * 2;
    out.push_back({Piece::Column, &c, w, px(3) + (g != group ? px(10) : 0), toggle_h});
    group = g;
  }
  return out;
}

bool isMenu(HeaderForm form) { return form == HeaderForm::FoldedMenu || form == HeaderForm::LessonMenu; }

// The pieces of `form`, each beside the last while it fits `width`: in a menu the controls take a
// line apiece (a menu reads as a list), the maps' toggles flow; "maps" starts the toggles' line.
std::vector<HeaderPiece> placeHeader(const ModelConfig& m, const Trace* t, HeaderForm form, float width) {
  std::vector<HeaderPiece> pieces = headerPieces(m, t, form);
  const bool menu = isMenu(form);
  placeFlow(pieces, width, [menu](const HeaderPiece& p) {
    return p.kind != Piece::MapsLabel && (!menu || p.kind == Piece::Column);
  });
  return pieces;
}

// [SECTION] Drawing ----------------------------------------------------------------------------------

void drawColumnToggle(const HeaderPiece& p, const ViewState& v, CommandQueue& cmd, const Trace* t) {
  const GridColumn& c = *p.column;
  const ImGuiStyle& style = ImGui::GetStyle();
  const Stage st = static_cast<Stage>(c.index);
  const char* missing = !t           ? nullptr
                        : c.per_head ? stageMissingFrom(*t, st)
                                     : moduleMapMissingFrom(*t, static_cast<ModuleMap>(c.index));
  const bool on = v.shows(c);
  // On but not in this step (dropout at p = 0): a faint fill, on which its dim label reads (on the
  // full one it could not be read, and looked as shown as the rest).
  ImVec4 fill = on ? style.Colors[ImGuiCol_ButtonActive] : style.Colors[ImGuiCol_FrameBg];
  if (on && missing) fill.w *= 0.3f;
  ImGui::PushStyleColor(ImGuiCol_Button, fill);
  if (missing) ImGui::PushStyleColor(ImGuiCol_Text, style.Colors[ImGuiCol_TextDisabled]);
  const std::string id = std::string(c.label) + "##col_" + c.id;
  if (ImGui::Button(id.c_str())) cmd.push("view", {{"field", "columns"}, {"value", columnsWith(v, c.id, !on)}});
  if (missing) ImGui::PopStyleColor();
  ImGui::PopStyleColor();
  layout().widget(std::string("column_") + c.id);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("%s%s%s", c.title, on ? " (shown: click to hide)" : " (click to show)",
                      missing ? (std::string("\nnot in this step: no ") + missing).c_str() : "");
}

void drawPlaced(const std::vector<HeaderPiece>& pieces, HeaderForm form, const PanelContext& ctx, const ModelConfig& m,
                int shown_batch, const Trace* t);

void drawPiece(const HeaderPiece& p, const PanelContext& ctx, const ModelConfig& m, int shown_batch, const Trace* t) {
  const ViewState& v = ctx.view;
  CommandQueue& cmd = ctx.commands;
  switch (p.kind) {
    case Piece::Head: {
      ImGui::SetNextItemWidth(px(kHeadComboWidth));
      const std::string current = v.head < 0 ? "all heads" : "head " + std::to_string(v.head + 1);
      if (ImGui::BeginCombo("##head", current.c_str())) {
        if (ImGui::Selectable("all heads", v.head < 0)) cmd.push("select_head", {{"index", -1}});
        for (int h = 0; h < headCount(m); ++h)
          if (ImGui::Selectable(("head " + std::to_string(h + 1)).c_str(), v.head == h))
            cmd.push("select_head", {{"index", h}});
        ImGui::EndCombo();
      }
      layout().widget("head");
      break;
    }
    case Piece::Batch: {
      ImGui::SetNextItemWidth(px(kBatchSliderWidth));
      // The trace keeps only the shown element's intermediates: a recompute.
      sliderIntTyped("batch element", shown_batch + 1, 1, m.batch_size, "%d", 0, cmd, "batch element",
                     [queue = &cmd, selected = v.batch](int b) {
                       if (b - 1 != selected) queue->push("select_batch", {{"index", b - 1}});
                     });
      layout().widget("batch_element");
      break;
    }
    case Piece::Shared: {
      bool shared = v.shared_scale;
      if (ImGui::Checkbox("shared scale", &shared)) cmd.push("view", {{"field", "shared_scale"}, {"value", shared}});
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip("One colour range per kind of map across all heads, so heads compare directly");
      layout().widget("shared_scale");
      break;
    }
    case Piece::MapsLabel: ImGui::TextDisabled("maps"); break;
    case Piece::Column: drawColumnToggle(p, v, cmd, t); break;
    case Piece::Fold: {
      if (ImGui::Button(foldLabel(m).c_str())) ImGui::OpenPopup("##grid_maps");
      layout().widget("maps_menu");
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "The maps shown%s%s: in this menu, so that at this text size the header leaves the "
            "maps their room",
            m.batch_size > 1 ? ", the batch element" : "", headCount(m) > 1 ? ", the shared colour scale" : "");
      if (beginMenuBelowItem("##grid_maps", kFoldedMenuWidth)) {
        drawHeatmapHeaderMenu(ctx, m, shown_batch, t, false);
        ImGui::EndPopup();
      }
      break;
    }
  }
}

void drawPlaced(const std::vector<HeaderPiece>& pieces, HeaderForm form, const PanelContext& ctx, const ModelConfig& m,
                int shown_batch, const Trace* t) {
  const bool menu = isMenu(form);
  bool toggles = false;  // the toggles' frame and spacing pushed
  for (std::size_t k = 0; k < pieces.size(); ++k) {
    const HeaderPiece& p = pieces[k];
    // The maps on screen stay whole until the newer result replaces them: said after the controls.
    if (ctx.computing && !menu && p.kind == Piece::MapsLabel) {
      if (k > 0) ImGui::SameLine();
      ImGui::TextDisabled("computing…");
    }
    if (p.kind == Piece::MapsLabel) {
      ImGui::PushStyleVar(ImGuiStyleVar_FramePadding, toggleFramePadding());
      ImGui::PushStyleVar(ImGuiStyleVar_ItemSpacing, ImVec2(px(3), ImGui::GetStyle().ItemSpacing.y));
      toggles = true;
    }
    if (p.beside) ImGui::SameLine(0, p.spacing);
    drawPiece(p, ctx, m, shown_batch, t);
    if (ctx.computing && p.kind == Piece::Fold) {
      ImGui::SameLine();
      ImGui::TextDisabled("computing…");
    }
  }
  if (toggles) ImGui::PopStyleVar(2);
}

}  // namespace

bool drawHeatmapHeader(const PanelContext& ctx, const ModelConfig& m, int shown_batch, const Trace* t) {
  const ImVec2 region = ImGui::GetContentRegionAvail();
  HeaderForm form = HeaderForm::Inline;
  std::vector<HeaderPiece> pieces = placeHeader(m, t, form, region.x);
  // Folded where it would take over a quarter of the maps' panel; presented (F10), over an eighth:
  // a projector's maps are as tall as the panel lets them be (inline, three rows at 1280 × 800 and
  // 200 % left two maps 240 px where folded at 720 px they had 262).
  if (flowHeight(pieces) > region.y / (ctx.view.presentation ? 8 : 4)) {
    form = HeaderForm::Folded;
    pieces = placeHeader(m, t, form, region.x);
  }
  drawPlaced(pieces, form, ctx, m, shown_batch, t);
  return form == HeaderForm::Folded;
}

void drawHeatmapHeaderMenu(const PanelContext& ctx, const ModelConfig& m, int shown_batch, const Trace* t,
                           bool with_head) {
  // Escape closes the menu, as a menu's Escape does elsewhere: the app keeps ImGui's keyboard
  // navigation, which would, off (arrows and Tab belong to the view).
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false)) ImGui::CloseCurrentPopup();
  const HeaderForm form = with_head ? HeaderForm::LessonMenu : HeaderForm::FoldedMenu;
  drawPlaced(placeHeader(m, t, form, ImGui::GetContentRegionAvail().x), form, ctx, m, shown_batch, t);
}

}  // namespace attnscope
