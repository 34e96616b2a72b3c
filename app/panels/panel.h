// What a panel sees for one frame (docs/DESIGN.md §3.1). Views draw from `snapshot` only; the
// editors (model and inputs panels) may read `document`, the workspace being edited. Nobody
// writes either: actions go into `commands`.
#pragma once
#include <imgui.h>

#include <functional>
#include <memory>
#include <string>

#include "editing/document.h"
#include "engine/attention.h"
#include "state/capture_targets.h"
#include "state/command_queue.h"
#include "state/learn_session.h"
#include "state/model_session.h"
#include "state/snapshot.h"
#include "state/toast.h"
#include "state/view_state.h"
#include "widgets/heatmap_textures.h"

namespace attnscope {

struct PanelContext {
  const Document& document;  // editors only
  const ViewState& view;
  std::shared_ptr<const Snapshot> snapshot;  // the result on screen; null before the first one
  bool computing;                            // a newer version is on its way
  const std::string& engine_error;           // why the engine refused the newest inputs; empty if fine
  const ExecutionOptions& exec;
  const Toast& toast;
  CommandQueue& commands;
  HeatmapTextures& textures;  // the maps' GL textures (drawHeatmap)
  double now;
  double frame_ms;                         // the last frame's build and render time
  std::shared_ptr<const Snapshot> pinned;  // the result pinned as A for the Compare tab; null: none
  std::string maps_set_aside;  // the maps a lesson step's heatmaps set aside for room, last frame ("scores, masked")
  std::string maps_rounding;   // HeatmapGrid::roundingNote, last frame
  std::function<void()> maps_menu;      // set while a lesson step holds the heatmaps' header (heads, batch element,
                                        // maps shown): draws it into the lesson panel's menu
  CaptureState capture = {};            // on screen, or how a capture sees this frame
  const ModelSession* model = nullptr;  // the trained model open (model->isOpen()), or none
  const LearnSession* learn = nullptr;  // a model training (learn->open()), or none
  int learn_step_shown = -1;            // the run's step whose maps the views show; −1: the newest
  int learn_horizon = -1;  // the step the run is shown as it was at (its charts end there); −1: as trained
  int pinned_head = -1;                 // the head chosen when A was pinned (−1: all)
  bool lesson_step = false;             // a lesson's step is shown (it drives a Learn-tab run)
  // The model's text typed and not applied, as the controller keeps it for the open model
  // (Controller::modelDraft: a restored session's), or null.
  const std::string* model_draft = nullptr;
  bool modelOpen() const { return model != nullptr && model->isOpen(); }
  bool givenMaps() const { return model != nullptr && model->given() != nullptr; }  // maps as they came
  Showing showing() const { return model != nullptr ? model->showing() : Showing::Chapter; }

  const char* waitingText() const;  // what a view shows before its first result: "computing…" or "no result yet"
};

// Where a view has no result to draw: why the engine refused the newest inputs (a model whose
// values overflow, a budget), wrapped in the selection's colour, else the waiting text. A model
// that failed had its views say "no result yet" and "computing…" for ever.
void drawWaiting(const PanelContext& ctx);

// Where a head of the result on screen has no maps (a two-part result, docs/DESIGN.md §3.3 "Two-part
// results"): "computing head N…" while its rest computes; else why they never came — the rest
// failed, or newer inputs were refused and the rest was dropped with them — in the selection's
// colour, wrapped. Such a view said "computing head N…" for ever.
void drawMapsMissing(const PanelContext& ctx, int head);

// The next window tiles the screen at `pos`, `size`: its background is the frame's clear, which has
// its colour (AppWindow::endFrame, captures), so it is not filled again. Under a software renderer
// (llvmpipe under Xvfb) the tiled windows' backgrounds were two thirds of a frame's fragments.
// Begin it with kTiledWindow among its flags.
void tileNextWindow(ImVec2 pos, ImVec2 size);
// A tiled window stays behind the floating ones (Help): brought to the front by a click, it would
// now show them through its content rather than hide them.
constexpr ImGuiWindowFlags kTiledWindow = ImGuiWindowFlags_NoBringToFrontOnFocus;

// A panel's window at `pos`, `size` — titled, fixed in place, tiled — and its rectangle in the
// layout dump under `id`. Ends with ImGui::End().
void beginPanelWindow(const char* title, const char* id, ImVec2 pos, ImVec2 size,
                      ImGuiWindowFlags flags = ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize |
                                               ImGuiWindowFlags_NoCollapse);

// The start of a tab of the main window (Pipeline, Lines): registers the panel `panel` over the
// whole window for the layout dump and captures, and writes the waiting text when there is no
// result yet. Returns the snapshot to draw, or null (then the tab draws nothing more).
const Snapshot* beginMainTab(const PanelContext& ctx, const char* panel);

}  // namespace attnscope
