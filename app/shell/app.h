// App: the one owner of the app's state (docs/DESIGN.md §3.1). It holds the document being edited,
// the view settings, the snapshot on screen and the panels. Panels, menus, keys and scripts push
// Command values; update() applies them once per frame, in one place, before anything is drawn,
// and sends the document to the engine worker when it changed. draw() builds one frame from the
// snapshot in hand. main.cpp owns the window and the loop; capture.h renders screenshots.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "editing/document.h"
#include "panels/compare_view.h"
#include "panels/file_dialogs.h"
#include "panels/head_statistics_panel.h"
#include "panels/heatmap_grid.h"
#include "panels/inputs_panel.h"
#include "panels/inspector_panel.h"
#include "panels/lesson_panel.h"
#include "panels/main_menu.h"
#include "panels/model_panel.h"
#include "panels/lines_view.h"
#include "panels/pipeline_view.h"
#include "panels/status_bar.h"
#include "panels/weights_panel.h"
#include "shell/capture.h"
#include "state/command_queue.h"
#include "state/engine_worker.h"
#include "state/lesson_check.h"
#include "state/session_files.h"
#include "state/view_state.h"

namespace attnscope {

// A command of a --commands file that could not apply.
struct CommandFailure {
  int index;            // its position in the file (0-based)
  std::string name;     // its "do"
  std::string message;  // why
};

// What the app needs from the window it runs in.
struct WindowHooks {
  CaptureHooks capture;                                 // render frames offscreen at k×
  std::function<void(int* w, int* h)> size;             // the window's size in pixels at 1×
  std::function<void()> theme_changed;                  // fonts and style again
  std::function<void(const std::string&)> clipboard;    // set the clipboard text
  std::function<std::string()> clipboard_text;          // the clipboard's text ("" when none)
  // Full-screen on the monitor the window is on (true), or back to the window's old place and size;
  // "" or why it could not. `fullscreen` says whether the window covers a monitor now.
  std::function<std::string(bool on)> set_fullscreen;
  std::function<bool()> fullscreen;
};

class App {
 public:
  App(Document document, ViewState view, bool interactive, WindowHooks hooks);
  // The app's limits for a memory budget (--memory-budget; docs/DESIGN.md §2.4 "What the app
  // holds"): the maps of the element shown are held twice, the snapshot on screen and the one
  // computing; everything the app opens is checked against them, and a pinned result adds what it
  // holds. The App keeps the document's limits at construction as its base.
  static Limits limits(std::int64_t memory_budget_bytes = Limits{}.max_memory_bytes);
  static std::int64_t pinnedBytes(const Snapshot& a);  // what pinning `a` holds (Limits::held_bytes)

  CommandQueue& commands() { return queue_; }
  bool idle() const { return queue_.empty(); }  // every queued command applied
  // View fields given on the command line (`--text-size`, `--theme`; the view's JSON names): the
  // last session's autosave, restored at start, does not override them.
  void keepFromCommandLine(nlohmann::json fields) { command_line_view_ = std::move(fields); }
  // Interactive sessions autosave to their instance's file (state/session_files.h); off by default.
  void autosaveTo(const std::string& path) { autosave_ = Autosave(path); }
  // Unsaved changes of the last session to `file`, newer than it and kept in `kept`: asked about
  // at start (Restore them, or keep the file as it was saved).
  void offerRecovery(const std::string& kept, const std::string& file) { dialogs_.offerRecovery(kept, file); }
  // A message for the user at start (a recovered autosave), shown longer than a toast.
  void notify(const std::string& text, double now) { toast_ = {text, false, now + 12.0}; }
  // The hint to make room (F10, F11) when the text size leaves the side panels narrow in this
  // window: after a larger text size is chosen, and once at start (the last session's size, or
  // --text-size); `unless_toast`: not over a message already showing (the recovery note).
  void hintIfCramped(double now, bool unless_toast);
  // Once per frame, before drawing: applies the queued commands (a screenshot waits for the
  // newest result), sends the document to the engine when it changed, takes finished results.
  void update(double now);
  // One frame of the UI for the current ImGui display; `caption_h` pixels at the bottom are the
  // screenshot caption's (from caption_x, caption_w wide).
  void draw(double now, const CaptureFrame& capture = {});
  // After the frame: autosave, the end of a drag gesture. `frame_ms`: how long the frame took to
  // build and render (the status bar shows it; a sleeping window has no frame rate).
  void endFrame(double now, bool mouse_down, bool typing, double frame_ms);
  // True once after Ctrl+S came while a text field was being typed into: this frame must take the
  // field's focus away (a click outside it, as the user would), so that the field commits its value
  // before the save, which waits for it (endFrame).
  bool takeCommitTyping() { return std::exchange(commit_typing_, false); }
  // How long the window may sleep before the next frame unless woken (input, a result): 0 while
  // commands wait, until a message ends, at most `longest` seconds.
  double idleTimeout(double now, double longest) const;

  // The snapshot on screen answers the newest document version, view batch and engine options
  // (or the engine refused them).
  bool settled() const;
  bool quitRequested() const { return quit_; }
  bool lessonOpen() const { return lesson_.open(); }  // the lesson keys (Space, →, ←, PageDown, PageUp) are its
  bool dialogOpen() const { return dialogs_.open(); }  // a file dialog or the unsaved-changes prompt
  std::vector<CommandFailure> takeFailures() { return std::exchange(failures_, {}); }
  std::string windowTitle() const;
  const Document& document() const { return doc_; }
  const ViewState& view() const { return view_; }
  const Snapshot* snapshot() const { return snapshot_.get(); }
  // The tokens the heatmaps are zoomed to (rows 0: not zoomed): a figure of a map shows what it shows.
  CellWindow zoomWindow() const { return snapshot_ ? heatmap_grid_.zoomWindow(snapshot_->trace->tokens) : CellWindow{}; }
  const std::string& engineError() const { return engine_error_; }
  // Saves `spec` to `path` (PNG with the workspace inside); "" or the reason.
  std::string capture(const CaptureSpec& spec, const std::string& path);
  // Writes the layout dump's "state" (tests): what the window shows.
  void recordState() const;

 private:
  void apply(const Command& c, double now);  // throws InputError
  // The document's limits with `held` bytes held besides (a pinned result), or none; InputError
  // "Not pinned: …" when the workspace does not fit them, and nothing changes.
  void holdBeside(std::int64_t held);
  void applyView(const Command& c, double now);
  void applyApp(const Command& c, double now);
  void applyLesson(const Command& c, double now);  // lesson_open, lesson_step, lesson_next, …
  // A lesson checked off the UI thread: open it at the step asked for (or say why not).
  void openCheckedLesson(LessonChecker::Result checked, double now);
  void applyOpenLesson(const Command& c, double now);  // lesson_close, lesson_step, next, back
  // Applies step `number` (1-based) of the open lesson: its commands through apply(), then its maps.
  void goToStep(int number, int script_index, double now);
  // paste_embeddings, paste_parameters: the clipboard's text when the command has none, one edit.
  void paste(const Command& c, double now);
  void replaced(const Command& c, double now);  // another workspace: reset what belonged to the old one
  // quit, open, new and preset would drop unsaved changes: ask first (the user, never a script —
  // except quit, which a script's session left open asks about too).
  bool asksFirst(const Command& c) const;
  std::string actionText(const Command& c) const;  // "quitting", "opening …" for the prompt
  void clampView();
  // Fonts and sizes for the view's text size (monitor scale × text size), when it changed.
  void syncTextSize();
  float uiScale() const { return hooks_.capture.base_scale * view_.textScale(); }
  bool isFullscreen() const { return hooks_.fullscreen && hooks_.fullscreen(); }
  void updateEngine();
  void drawPanels(const PanelContext& ctx, float caption_h);
  // The widths of the left column and the inspector in a window `window_w` wide; `squeeze` < 1
  // when they had to give way to the main area (large text in a small window).
  struct SideWidths {
    float left = 0, right = 0, squeeze = 1;
  };
  static SideWidths sideWidths(float window_w, bool left, bool right);
  void showToast(const std::string& text, bool error, double now);
  std::string captionText(const CaptureSpec& spec) const;

  Document doc_;
  Limits base_limits_;  // the document's at start: the budget, nothing held besides
  ViewState view_;
  ExecutionOptions exec_;
  bool interactive_;
  WindowHooks hooks_;
  CommandQueue queue_;

  EngineWorker worker_;
  std::shared_ptr<const Snapshot> snapshot_;  // what the views draw
  std::string engine_error_;                  // the engine refused the newest inputs
  struct RequestKey {
    std::uint64_t version = 0;
    int batch = -1;
    bool parallel = false;
    int threads = 0;
    bool operator==(const RequestKey& o) const {
      return version == o.version && batch == o.batch && parallel == o.parallel && threads == o.threads;
    }
  };
  RequestKey currentKey() const;
  RequestKey requested_;                      // the newest request sent to the worker
  bool small_request_ = false;                // … is small enough to wait for in its frame
  bool computing_ = false;

  MainMenu menu_;
  ModelPanel model_panel_;
  InputsPanel inputs_panel_;
  HeatmapGrid heatmap_grid_;
  PipelineView pipeline_;
  LinesView lines_;                           // the Lines tab
  CompareView compare_;                       // the Compare tab
  std::shared_ptr<const Snapshot> pinned_;    // A of the Compare tab (`pin`); null: nothing pinned
  WeightsPanel weights_;                      // the Weights tab: the parameters, editable
  InspectorPanel inspector_;
  HeadStatisticsPanel statistics_;            // under the main area
  LessonPanel lesson_;                        // the open lesson, shown in the inspector's column
  LessonChecker lesson_check_;                // a lesson being checked before it opens
  int applied_text_size_ = 100;               // the text size the fonts were last rasterized for
  StatusBar status_bar_;
  FileDialogs dialogs_;
  std::string shown_tab_;                     // the tab ImGui showed last frame
  std::string pending_tab_;                   // a tab asked of ImGui, not shown yet

  Autosave autosave_;
  Toast toast_;
  std::string caption_;                       // drawn under a screenshot while capturing
  bool capturing_ = false;
  std::string last_screenshot_;
  bool quit_ = false;
  std::optional<Command> pending_;     // waits for the answer to the unsaved-changes prompt
  std::optional<Command> after_save_;  // goes on once the save that answer asked for succeeded
  bool typing_ = false;                // a text field had the keyboard in the last frame
  bool commit_typing_ = false;         // takeCommitTyping
  std::optional<Command> after_typing_;  // a save waiting for the field being typed into to commit
  double frame_ms_ = 0;                       // the last frame's build and render time
  std::vector<CommandFailure> failures_;
  nlohmann::json command_line_view_ = nlohmann::json::object();  // keepFromCommandLine
};

}  // namespace attnscope
