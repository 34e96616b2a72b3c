#include "shell/app.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "panels/panel.h"
#include "widgets/fonts.h"
#include "widgets/heatmap.h"
#include "widgets/layout_dump.h"
#include "widgets/theme.h"
#include "widgets/typed_number.h"

namespace attnscope {

App::App(Document document, ViewState view, bool interactive, WindowHooks hooks)
    : hooks_(std::move(hooks)),
      ctl_(std::move(document), std::move(view), interactive, controllerHooks()),
      lesson_(ctl_.lesson()) {
  // The main area's views, one per tab of mainTabs() (state/view_state.h), which orders and titles them.
  tab_views_ = {
      {"layers",
       [this](const PanelContext& ctx) {
         layers_.draw(ctx, [this](const PanelContext& c, ImVec2 size) {
           model_text_.drawBeside(c, size);
           ctl_.setModelDraft(c.model->lineage(), model_text_.draft());  // typed there: kept by the autosave too
         });
       }},
      {"heatmaps", [this](const PanelContext& ctx) { heatmap_grid_.draw(ctx); }},
      {"pipeline", [this](const PanelContext& ctx) { pipeline_.draw(ctx); }},
      {"lines", [this](const PanelContext& ctx) { lines_.draw(ctx, ImGui::GetContentRegionAvail()); }},
      {"parameters", [this](const PanelContext& ctx) { weights_.draw(ctx); }},
      {"compare", [this](const PanelContext& ctx) { compare_.draw(ctx); }},
      {"learn", [this](const PanelContext& ctx) { learn_.draw(ctx); }},
  };
  for (const MainTab& tab : mainTabs())
    if (!tab_views_.count(tab.id)) std::fprintf(stderr, "attnscope: internal error: no view for the tab %s\n", tab.id);
}

// What the controller asks of the window and the panels.
ControllerHooks App::controllerHooks() {
  ControllerHooks h;
  h.theme_changed = [this] { restyle(); };
  h.text_size_changed = [this] { restyle(); };  // between frames: fonts and style again
  h.set_clipboard = hooks_.clipboard;
  h.clipboard_text = hooks_.clipboard_text;
  h.set_fullscreen = hooks_.set_fullscreen;
  h.fullscreen = hooks_.fullscreen;
  h.document_replaced = [this] {
    heatmap_grid_.replaced();
    pipeline_.reset();
    lines_.reset();
    weights_.reset();
    inputs_panel_.reset();
    model_text_.reset();
  };
  h.unpinned = [this] { compare_.reset(); };
  h.go_to = [this](int first, int last, int tokens) { heatmap_grid_.goTo(first, last, tokens); };
  h.visible_heads = [this] { return heatmap_grid_.visibleHeads(); };
  h.layout_settled = [this] { return lesson_.layoutSettled(); };
  h.cramped = [this] {
    int w = 0, h = 0;
    if (hooks_.size) hooks_.size(&w, &h);
    const ViewState& v = ctl_.view();
    return w > 0 &&
           sideWidths(static_cast<float>(w), v.modelShown() || v.inputsShown(), v.inspectorShown()).squeeze < 0.8f;
  };
  h.capture = [this](const CaptureSpec& spec, const std::string& path) { return capture(spec, path); };
  h.open_dialog = [this](const std::string& which, const std::string& stage, int head, const std::string& format) {
    dialogs_.begin(which, stage, head, format);
  };
  h.ask_overwrite = [this](const std::string& path) { dialogs_.askOverwrite(path); };
  h.saving = [this] { return dialogs_.saving(); };
  h.file_used = [this](const std::string& path) { dialogs_.remember(path); };
  h.model_read = [this](const std::string& path, const std::string& why) { return dialogs_.modelRead(path, why); };
  return h;
}

void App::restyle() {
  if (hooks_.set_style) hooks_.set_style(uiScale(), ctl_.view().light_theme);
}

CellWindow App::zoomWindow() const {
  const Snapshot* snap = ctl_.shown().get();
  return snap ? heatmap_grid_.zoomWindow(snap->trace->tokens) : CellWindow{};
}

void App::endFrame(double now, bool mouse_down, bool typing, double frame_ms, double draw_ms) {
  ctl_.endFrame(now, mouse_down, typing, draw_ms);
  textures_.endFrame();
  frame_ms_ = frame_ms;
}

double App::idleTimeout(double now, double longest) const {
  double timeout = ctl_.idleTimeout(now, longest);
  if (heatmap_grid_.outlinedUntil() > now) timeout = std::min(timeout, 1.0 / 30);  // the outlines fade
  if (!ctl_.computing() && statistics_.bringing(now))  // a chosen head's row scrolls into view
    timeout = std::min(timeout, 1.0 / 60);
  return timeout;
}

// [SECTION] the frame -----------------------------------------------------------------------

void App::draw(double now, const CaptureFrame& capture) {
  now_ = now;
  layout().beginFrame();
  const float caption_h = capture.caption_h, caption_x = capture.caption_x, caption_w = capture.caption_w;
  const ViewState& view = this->view();
  PanelContext context{ctl_.document(),
                       view,
                       ctl_.shown(),
                       ctl_.computing(),
                       ctl_.engineError(),
                       ctl_.exec(),
                       ctl_.toast(),
                       ctl_.commands(),
                       textures_,
                       now,
                       frame_ms_,
                       ctl_.pinned(),
                       heatmap_grid_.setAside(),
                       shown_tab_ == "heatmaps" ? heatmap_grid_.roundingNote() : std::string(),  // its maps on screen
                       {},
                       capture.state,
                       &ctl_.model(),
                       &ctl_.learn(),
                       ctl_.learnStepShown()};
  context.pinned_head = ctl_.pinnedHead();
  context.learn_horizon = ctl_.learnHorizon();
  context.lesson_step = ctl_.lesson().open() && ctl_.lesson().step() > 0;
  context.model_draft = ctl_.modelDraft();
  // A lesson step's maps menu (in its panel): the heatmaps' header, which the step's maps have the lines of.
  if (ctl_.lesson().open() && ctl_.lesson().step() > 0 && !view.highlight.empty())
    context.maps_menu = [this, &context] { heatmap_grid_.drawMapsMenu(context); };
  const PanelContext& ctx = context;
  menu_.draw(ctx, dialogs_.settings().recent, isFullscreen(), ctl_.lesson().open());
  drawPanels(ctx, caption_h);
  if (caption_h > 0) {
    ImGui::SetNextWindowPos(ImVec2(caption_x, ImGui::GetMainViewport()->Size.y - caption_h));
    ImGui::SetNextWindowSize(ImVec2(caption_w, caption_h));
    ImGui::PushStyleVar(ImGuiStyleVar_WindowBorderSize, 0);
    // Close under the figure: the crop's margin is the gap (a window's padding added a second one).
    ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding,
                        ImVec2(ImGui::GetStyle().WindowPadding.x, ImGui::GetStyle().WindowPadding.y * 0.25f));
    ImGui::Begin("##caption", nullptr, ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoSavedSettings);
    ImGui::PushFont(fonts().small);
    ImGui::TextWrapped("%s", caption_.c_str());
    layout().widget("caption_text");  // the capture crops its strip to it
    ImGui::PopFont();
    ImGui::End();
    ImGui::PopStyleVar(2);
  }
  if (!capture_view_) dialogs_.draw(ctx, ctl_.prompts());  // a capture shows the work, never a dialog
  commitTypedNumberIfGone();  // a cell typed into and no longer drawn: its value, not lost
}

// Side panels at their designed widths, which grow with the text size; the main area keeps at
// least half the window, so at a large text size on a projector's 1280 px they give way.
App::SideWidths App::sideWidths(float window_w, bool left, bool right) {
  SideWidths w;
  w.left = left ? std::clamp(window_w * 0.225f, px(300), px(380)) : 0.0f;
  w.right = right ? std::clamp(window_w * 0.21f, px(280), px(380)) : 0.0f;
  const float most = window_w * 0.5f;
  if (w.left + w.right > most) {
    w.squeeze = most / (w.left + w.right);
    w.left = std::floor(w.left * w.squeeze);
    w.right = std::floor(w.right * w.squeeze);
  }
  return w;
}

// The window's layout: menu bar; model and inputs on the left; heatmaps or pipeline; inspector
// on the right; status bar. Every panel but the menu bar may be hidden (the view's fields, or
// presentation for all side panels at once); the main area takes the room they leave.
void App::drawPanels(const PanelContext& ctx, float caption_h) {
  const ViewState& v = view();
  ImGuiViewport vp = *ImGui::GetMainViewport();
  vp.Size.y -= caption_h;  // a screenshot's caption strip sits below everything
  const bool lesson = ctl_.lesson().open() && ctl_.lesson().step() > 0;  // the lesson takes the inspector's column
  // Given maps have no stages to work through by hand: no inspector.
  const bool model = v.modelShown(), inputs = v.inputsShown(),
             inspector = v.inspectorShown() && !lesson && !ctx.givenMaps();
  const float menu_h = ImGui::GetFrameHeight();
  // A lesson presented: its panel says where we are, the maps take the status bar's line too.
  const bool status = v.show_status && !(lesson && v.presentation);
  const float status_h = status ? StatusBar::height() : 0.0f;
  layout().panel("menu_bar", vp.Pos, ImVec2(vp.Pos.x + vp.Size.x, vp.Pos.y + menu_h));
  const SideWidths sides = sideWidths(vp.Size.x, model || inputs, inspector);
  float left_w = sides.left, right_w = sides.right;
  // The lesson: wider than the inspector, for the notebook's lines, yet narrow enough that at
  // 1280 px three 6×6 maps keep the notebook's four decimals (measured: a main area of 934 px
  // shows them, 928 px three; 26.5 % leaves 941). The lesson's code and print-out shrink a little
  // to fit instead (lesson_panel.cpp). The main area keeps half.
  if (lesson) {
    right_w = std::clamp(vp.Size.x * 0.265f, px(320), px(560));
    if (left_w + right_w > vp.Size.x * 0.5f) {
      const float k = vp.Size.x * 0.5f / (left_w + right_w);
      left_w = std::floor(left_w * k);
      right_w = std::floor(right_w * k);
    }
    // … and narrower still where the step's maps need the room to be whole with their numbers
    // (docs/DESIGN.md §3.7 "Focus"), down to a column of some 28 characters of its text. Only the
    // heatmaps need it; the width they ask for does not depend on the width they get.
    const HeatmapGrid::FocusNeed need = v.tab == "heatmaps" ? heatmap_grid_.focusNeed() : HeatmapGrid::FocusNeed{};
    const float narrowest = std::min(right_w, ImGui::CalcTextSize("n").x * 28 + ImGui::GetStyle().WindowPadding.x * 2 +
                                                  ImGui::GetStyle().ScrollbarSize);
    const float most = vp.Size.x - left_w - narrowest;  // the widest the main area may be
    // Four decimals where the column can give that much, else three, else three a little smaller
    // (the grid fits them), else two, else as much as it can.
    float want = 0;
    for (float w : {need.best, need.least, need.smallest, need.compact})
      if (w > 0 && w <= most) {
        want = w;
        break;
      }
    if (want == 0 && (need.smallest > 0 || need.compact > 0)) want = most;
    if (want > vp.Size.x - left_w - right_w) right_w = std::floor(vp.Size.x - left_w - want);
  }
  const ImVec2 top(vp.Pos.x, vp.Pos.y + menu_h);
  const float body_h = std::max(vp.Size.y - menu_h - status_h, 1.0f);
  // The model panel as tall as its controls (measured in the last frame), between 30 and 52 % of
  // the column when the inputs share it: the inputs need room for their table.
  float model_h = 0;
  if (model && inputs) {
    const float want = model_panel_.contentHeight() > 0 ? model_panel_.contentHeight()
                                                        : 24.0f * ImGui::GetFrameHeightWithSpacing();
    model_h = std::floor(std::clamp(want, body_h * 0.30f, body_h * 0.52f));
  } else if (model) {
    model_h = body_h;
  }
  if (ctx.modelOpen()) {  // a trained model: what it is, then its text and next tokens
    // As tall as its lines (measured in the last frame): the text's panel holds the next tokens.
    // Over 30 % of the column the layer's explanation becomes its slider's tooltip, and the compact
    // form takes up to half (its notes wrapped: at 1280 × 720 and 200 % the no-tokenizer note's five
    // lines had scrolled the layer's row out of a panel of 40 %). No taller: a floor of 18 % left
    // 68–83 px blank under the compact panel's one row at 1920 × 1080 and 175–200 %, while the next
    // tokens under it scrolled.
    bool compact = false;
    if (model && inputs) {
      compact = model_text_.modelHeight() > body_h * 0.3f;
      const float want = compact ? model_text_.compactModelHeight() : model_text_.modelHeight();
      model_h = want > 0 ? std::min(std::ceil(want), std::floor(body_h * 0.5f)) : std::floor(body_h * 0.3f);
    }
    if (model) model_text_.drawModel(ctx, top, ImVec2(left_w, model_h), compact);
    if (inputs) {
      model_text_.drawText(ctx, ImVec2(top.x, top.y + model_h), ImVec2(left_w, body_h - model_h));
      ctl_.setModelDraft(ctx.model->lineage(), model_text_.draft());  // kept by the autosave
    }
  } else {
    if (model) model_panel_.draw(ctx, top, ImVec2(left_w, model_h));
    if (inputs) inputs_panel_.draw(ctx, ImVec2(top.x, top.y + model_h), ImVec2(left_w, body_h - model_h));
  }

  // The main area: the heatmap grid or the pipeline, as tabs; the head statistics under it.
  // (Not under the Layers tab: its own table scores every head of every layer; nor under Learn: its charts do.)
  const bool statistics_asked = v.statisticsShown() && v.tab != "layers" && v.tab != "learn";
  const float statistics_h = statistics_asked ? HeadStatisticsPanel::height(ctx, body_h) : 0.0f;
  layout().state()["statistics_no_room"] = statistics_asked && statistics_h <= 0;
  const ImVec2 main_pos(top.x + left_w, top.y), main_size(vp.Size.x - left_w - right_w, body_h - statistics_h);
  tileNextWindow(main_pos, main_size);
  ImGui::Begin("##main", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoScrollWithMouse |
                   ImGuiWindowFlags_NoSavedSettings | kTiledWindow);
  layout().panel("main", main_pos, ImVec2(main_pos.x + main_size.x, main_pos.y + main_size.y));
  // The tabs there now: the Learn tab in a lesson only while the lesson trains a run (its steps are
  // the chapter's otherwise).
  std::vector<const MainTab*> tabs;
  for (const MainTab& tab : mainTabs())
    if (tab.shown(ctx.showing()) && (tab.in_lessons || !ctl_.lesson().open() || ctl_.model().isRun()))
      tabs.push_back(&tab);
  const float content_x = ImGui::GetCursorPosX();
  // Tabs keep their whole names at any text size (a projector's 200 %): where they do not all fit,
  // those that do, whole, the current one among them, and drawTabList's list has every view.
  const std::vector<const MainTab*> tabs_shown = drawTabList(tabs);
  if (ImGui::BeginTabBar("views", ImGuiTabBarFlags_FittingPolicyScroll)) {
    // The view's tab is selected through ImGui, which shows a tab asked for the frame after; a change
    // ImGui shows that was not asked for is the user's click, and becomes a `view` command. The tab
    // asked last frame is the one ImGui shows now: a model opening on Layers and a script's
    // Pipeline the frame after read as a click on Layers, which undid the Pipeline.
    const std::string asked_before = std::exchange(asked_tab_, std::string());
    const std::string& showing = asked_before.empty() ? shown_tab_ : asked_before;
    const bool listed = std::any_of(tabs.begin(), tabs.end(), [&](const MainTab* t) { return v.tab == t->id; });
    const bool ask = listed && v.tab != showing;
    if (ask) asked_tab_ = v.tab;
    for (const MainTab* tab : tabs_shown) {
      const ImGuiTabItemFlags flags = ask && v.tab == tab->id ? ImGuiTabItemFlags_SetSelected : 0;
      const std::string id = tab->id;
      const bool open = ImGui::BeginTabItem(tab->title, nullptr, flags);
      layout().widget("tab_" + id);
      if (open) {
        ImGui::SetCursorPosX(content_x);  // under the list's button too: the bar starts after it
        if (id != asked_before && !shown_tab_.empty() && shown_tab_ != id && v.tab != id)
          ctl_.commands().push("view", {{"field", "tab"}, {"value", id}});  // a click
        shown_tab_ = id;
        tab_views_.at(id)(ctx);
        ImGui::EndTabItem();
      }
    }
    ImGui::EndTabBar();
  }
  // A view off screen holds nothing large: Compare's differences of two 1024-token results are
  // ~100 MB (worked out again, once, when the tab is back).
  if (shown_tab_ != "compare") compare_.reset();
  ImGui::End();
  if (statistics_h > 0)
    statistics_.draw(ctx, ImVec2(main_pos.x, main_pos.y + main_size.y), ImVec2(main_size.x, statistics_h));
  if (inspector) inspector_.draw(ctx, ImVec2(top.x + vp.Size.x - right_w, top.y), ImVec2(right_w, body_h));
  if (lesson) lesson_.draw(ctx, ImVec2(top.x + vp.Size.x - right_w, top.y), ImVec2(right_w, body_h));
  if (status)
    status_bar_.draw(ctx, ImVec2(vp.Pos.x, vp.Pos.y + vp.Size.y - status_h), ImVec2(vp.Size.x, status_h),
                     statistics_asked && statistics_h <= 0);
  else  // confirmations and errors still show: over the bottom of the main area
    StatusBar::drawToast(ctx, ImVec2(main_pos.x + main_size.x, main_pos.y + main_size.y), main_size.x);
}

// When the tabs' names do not all fit (1280 wide at 175–200 % text), a "▾ N more" button before
// them lists every view, and the bar shows the tabs that fit whole, a run that holds the current
// one: ImGui's scrolling bar had cut the last one in half ("Weigh", "C") beside its arrows. The run
// moves only as far as a view chosen from the list asks. A choice is a `view` command, as a click
// on its tab. Nothing when they fit: every tab is shown.
std::vector<const MainTab*> App::drawTabList(const std::vector<const MainTab*>& tabs) {
  const ImGuiStyle& style = ImGui::GetStyle();
  std::vector<float> widths;  // as ImGui 1.86 sizes a tab without a close button
  float names_w = 0;
  for (const MainTab* tab : tabs) {
    widths.push_back(ImGui::CalcTextSize(tab->title).x + style.FramePadding.x * 2 + 1);
    names_w += widths.back();
  }
  names_w += style.ItemInnerSpacing.x * static_cast<float>(tabs.size() > 0 ? tabs.size() - 1 : 0);
  const bool listed = names_w > ImGui::GetContentRegionAvail().x;
  layout().state()["tabs_listed"] = listed;
  if (!listed) return tabs;
  const std::string& current = ctl_.view().tab;
  const auto at = std::find_if(tabs.begin(), tabs.end(), [&](const MainTab* t) { return t->id == current; });
  const std::size_t now = at == tabs.end() ? std::min(first_tab_, tabs.size() - 1)
                                           : static_cast<std::size_t>(at - tabs.begin());
  // The run [first, end) that fits `room`, from `first` on.
  const auto runEnd = [&](std::size_t first, float room) {
    std::size_t end = first;
    for (float used = 0; end < tabs.size(); ++end) {
      used += widths[end] + (end > first ? style.ItemInnerSpacing.x : 0);
      if (used > room) break;
    }
    return std::max(end, first + 1);  // the current tab at least, however wide
  };
  // The button's label counts the views not shown, which the run's room depends on: a count of
  // one digit is as wide as any other (at most nine views).
  const std::string probe = "▾ 0 more";
  const float room = ImGui::GetContentRegionAvail().x - ImGui::CalcTextSize(probe.c_str()).x -
                     style.FramePadding.x * 2 - style.ItemInnerSpacing.x - 2;  // (a hair: ImGui's sums round)
  std::size_t first = std::min(first_tab_, now);
  while (runEnd(first, room) <= now) ++first;
  while (first > 0 && runEnd(first - 1, room) == tabs.size()) --first;  // no room left unused at the end
  first_tab_ = first;
  const std::vector<const MainTab*> shown(tabs.begin() + static_cast<std::ptrdiff_t>(first),
                                          tabs.begin() + static_cast<std::ptrdiff_t>(runEnd(first, room)));
  const std::string label = "▾ " + std::to_string(tabs.size() - shown.size()) + " more##tab_list";
  if (ImGui::Button(label.c_str())) ImGui::OpenPopup("tab_list");
  layout().widget("tab_list");
  if (ImGui::IsItemHovered()) {
    std::string names;
    for (const MainTab* tab : tabs) names += std::string(names.empty() ? "" : ", ") + tab->title;
    ImGui::SetTooltip("Every view: %s", names.c_str());
  }
  if (ImGui::BeginPopup("tab_list")) {
    for (const MainTab* tab : tabs) {
      if (ImGui::Selectable(tab->title, current == tab->id) && current != tab->id)
        ctl_.commands().push("view", {{"field", "tab"}, {"value", tab->id}});
      layout().widget(std::string("tab_list_") + tab->id);
    }
    ImGui::EndPopup();
  }
  ImGui::SameLine(0, style.ItemInnerSpacing.x);
  return shown;
}

}  // namespace attnscope
