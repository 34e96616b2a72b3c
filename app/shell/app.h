// App: the controller (state/controller.h) with its panels and its window (docs/DESIGN.md §3.1).
// The controller holds the document, the view, the snapshot on screen, the lesson and the prompts,
// and applies every command; the App draws one frame of it (draw), renders screenshots of it
// (capture) and answers what the controller asks of the window and the panels (its hooks). Its
// features are split over files as Tracy splits its View: app.cpp the frame and the layout,
// app_capture.cpp screenshots and the layout dump's state.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "panels/compare_view.h"
#include "panels/file_dialogs.h"
#include "panels/head_statistics_panel.h"
#include "panels/heatmap_grid.h"
#include "panels/inputs_panel.h"
#include "panels/inspector_panel.h"
#include "panels/layers_view.h"
#include "panels/learn_view.h"
#include "panels/lesson_panel.h"
#include "panels/lines_view.h"
#include "panels/main_menu.h"
#include "panels/model_panel.h"
#include "panels/model_text_panel.h"
#include "panels/pipeline_view.h"
#include "panels/status_bar.h"
#include "panels/weights_panel.h"
#include "shell/capture.h"
#include "state/controller.h"

namespace attnscope {

// What the app needs from the window it runs in (shell/app_window.h); unset, each does nothing.
struct WindowHooks {
  // One offscreen ImGui frame of `frame`'s size: a new frame, `ui`, rendered (screenshots).
  std::function<void(const CaptureFrame& frame, const std::function<void()>& ui)> offscreen_frame;
  std::function<void(float ui_scale, bool light)> set_style;  // fonts rasterized at ui_scale, and the theme
  float monitor_scale = 1;                                    // the window's own scale
  bool selection = false;                                     // --selection: every capture keeps the selection outlined
  std::function<void(int* w, int* h)> size;                   // the window's size in pixels at 1×
  std::function<void(const std::string&)> clipboard;          // set the clipboard text
  std::function<std::string()> clipboard_text;                // the clipboard's text ("" when none)
  // Full-screen on the monitor the window is on (true), or back to the window's old place and size;
  // "" or why it could not. `fullscreen` says whether the window covers a monitor now.
  std::function<std::string(bool on)> set_fullscreen;
  std::function<bool()> fullscreen;
};

class App {
 public:
  App(Document document, ViewState view, bool interactive, WindowHooks hooks);
  App(const App&) = delete;
  App& operator=(const App&) = delete;

  Controller& controller() { return ctl_; }
  const Controller& controller() const { return ctl_; }
  // One frame of the UI for the current ImGui display (or a capture's offscreen one).
  void draw(double now, const CaptureFrame& capture = {});
  // After the frame: the controller's autosave and gestures; `frame_ms`: how long the frame took
  // with its commands (the status bar shows it; a sleeping window has no frame rate), `draw_ms`:
  // of that, building, rendering and presenting it.
  void endFrame(double now, bool mouse_down, bool typing, double frame_ms, double draw_ms);
  // How long the window may sleep before the next frame unless woken: the controller's, and while
  // the outlines of a jump fade.
  double idleTimeout(double now, double longest) const;
  // The keys a lesson and a dialog take over (shell/key_bindings.h).
  bool lessonOpen() const { return ctl_.lesson().open(); }
  bool dialogOpen() const { return dialogs_.open() || ctl_.prompts().any(); }
  // The tokens the heatmaps are zoomed to (rows 0: not zoomed): a figure of a map shows what it shows.
  CellWindow zoomWindow() const;
  // Saves `spec` to `path` (PNG with the workspace inside); "" or the reason.
  std::string capture(const CaptureSpec& spec, const std::string& path);
  // Writes the layout dump's "state" (tests): what the window shows.
  void recordState() const;

 private:
  ControllerHooks controllerHooks();
  const ViewState& view() const { return capture_view_ ? *capture_view_ : ctl_.view(); }  // the one drawn
  float uiScale() const { return hooks_.monitor_scale * ctl_.view().textScale(); }
  void restyle();  // fonts and theme for the view's text size and theme
  std::string vectorFigure(const CaptureSpec& spec, const std::string& path) const;  // .svg, .pdf
  bool isFullscreen() const { return hooks_.fullscreen && hooks_.fullscreen(); }
  void drawPanels(const PanelContext& ctx, float caption_h);
  std::vector<const MainTab*> drawTabList(const std::vector<const MainTab*>& tabs);
  // The widths of the left column and the inspector in a window `window_w` wide; `squeeze` < 1
  // when they had to give way to the main area (large text in a small window).
  struct SideWidths {
    float left = 0, right = 0, squeeze = 1;
  };
  static SideWidths sideWidths(float window_w, bool left, bool right);
  std::string captionText(const CaptureSpec& spec) const;

  WindowHooks hooks_;
  HeatmapTextures textures_;  // before the controller: the maps' textures go after its worker
  Controller ctl_;
  std::optional<ViewState> capture_view_;  // while capturing: what it shows, in place of the controller's view
  std::string caption_;                    // drawn under a screenshot while capturing
  double now_ = 0;                         // the last frame's time: a capture's frames draw at it
  double frame_ms_ = 0;                    // the last frame's build and render time

  MainMenu menu_;
  ModelPanel model_panel_;
  InputsPanel inputs_panel_;
  ModelTextPanel model_text_;  // the left column while a trained model is open
  LayersView layers_;
  HeatmapGrid heatmap_grid_;
  PipelineView pipeline_;
  LinesView lines_;       // the Lines tab
  CompareView compare_;   // the Compare tab
  LearnView learn_;       // the Learn tab
  WeightsPanel weights_;  // the Weights tab: the parameters, editable
  InspectorPanel inspector_;
  HeadStatisticsPanel statistics_;  // under the main area
  LessonPanel lesson_;              // the open lesson, shown in the inspector's column
  StatusBar status_bar_;
  FileDialogs dialogs_;
  std::map<std::string, std::function<void(const PanelContext&)>> tab_views_;  // by MainTab id
  std::string shown_tab_;                                                      // the tab ImGui showed last frame
  std::string asked_tab_;                                                      // a tab asked of ImGui last frame
  std::size_t first_tab_ = 0;  // where the tabs do not all fit: the first of those shown (drawTabList)
};

}  // namespace attnscope
