// AppState: what the window shows — the workspace, the view settings, and the engine's last trace.
// Panels read it and write only UI state or edits; edits call changed() and the engine reruns
// once, off the UI thread, instead of every frame.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/attention.h"
#include "display/colormap.h"
#include "state/engine_worker.h"
#include "editing/history.h"
#include "formats/workspace.h"

namespace attnscope {

// The maps of a head, left to right as the computation goes.
enum class Stage { Scores, Scaled, Masked, Weights, DropoutMask, Dropped, Context };
constexpr int kStageCount = 7;
const char* stageId(Stage s);     // "weights", for layout dumps and settings
const char* stageTitle(Stage s);  // "weights (softmax)", above each map

struct ViewState {
  Colormap colormap = Colormap::Viridis;  // for maps without negative values
  bool diverging_for_signed = true;       // maps with negative values: coolwarm centred on 0
  bool shared_scale = false;              // one colour range per stage across all heads
  bool light_theme = false;               // light (slides, print) or dark
  int batch = 0;                          // batch element shown
  int head = -1;                          // head shown; −1 = all heads
  int token = 1;                          // selected query token: x² "journey", as the notebook
  int key = -1;                           // key column picked in the inspector; −1 = none
  float zoom = 1;                         // ≥ 1: all maps show T/zoom rows and columns …
  float center_row = -1, center_col = -1; // … around this cell (−1: the middle)
  std::array<bool, kStageCount> show = {true, true, true, true, true, true, false};  // columns
  std::string screenshot_dir;             // where F12 saves; empty = ~/Pictures/attnscope
  int screenshot_scale = 1;               // F12 renders at 1×, 2× or 3×
  bool caption = false;                   // F12 adds a caption line
  std::string tab = "heatmaps";           // the main area's view: "heatmaps" or "pipeline"
  bool show_inspector = true;             // the inspector column on the right
};

nlohmann::json viewToJson(const ViewState& v);
// Reads what it understands of a workspace's "view"; anything else keeps its default.
ViewState viewFromJson(const nlohmann::json& j);

struct AppState {
  Workspace workspace = bookExample();
  ViewState view;
  ExecutionOptions exec{openmpAvailable(), 0};  // OpenMP with one thread per core when built in

  std::shared_ptr<const Trace> trace;  // the last good trace (kept while recomputing or on error)
  std::uint64_t trace_version = 0;     // bumps whenever `trace` changes: textures re-upload
  std::string engine_error;            // why the engine refused the current inputs; empty if fine
  double engine_ms = 0;                // time of the last computeTrace
  bool computing = false;              // a request is running or waiting

  std::string caption;                 // the caption line drawn while capturing, else empty

  // Requests from panels that main carries out after the frame: save a map as PNG, export one.
  struct MatrixExport {
    Matrix values;
    std::string name;  // suggested file name without extension, e.g. "weights_b1_h2"
    std::string format;  // "csv", "json" or "npy"
  };
  std::optional<MatrixExport> pending_export;
  std::string pending_capture_panel;   // a heatmap stage to save as PNG …
  int pending_capture_head = 0;        // … of this head
  std::string toast;                   // a brief confirmation or error in the corner
  bool toast_is_error = false;
  double toast_until = 0;

  History history;                     // undo/redo of inputs and model settings
  std::string file;                    // the workspace file shown; empty = untitled
  bool dirty = false;                  // edits since it was opened or saved

  // Applies an edit to a copy of the workspace; on success it becomes the workspace, the previous
  // one goes to the undo history (edits with the same `tag` in one gesture make one step) and the
  // engine reruns. On InputError nothing changes and the message is shown. Returns success.
  bool edit(const std::string& tag, const std::function<void(Workspace&)>& change, double now = 0);
  void undo();
  void redo();
  // Replaces the workspace (open, preset), as one undoable step.
  void replaceWorkspace(Workspace ws);
  void changed() {
    inputs_changed_ = true;
    ++version;
  }
  std::uint64_t version = 0;           // bumps on every change of the inputs (autosave's cue)
  // Sends changed inputs to the worker and takes its finished results. Once per frame.
  void updateEngine();
  void showToast(const std::string& text, bool error, double now);

 private:
  EngineWorker worker_;
  bool inputs_changed_ = true;
};

}  // namespace attnscope
