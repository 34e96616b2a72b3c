// Controller: the app's state and everything done to it, with no window (docs/DESIGN.md §3.1). It
// holds the document being edited, the view settings, the snapshot on screen, the open lesson and
// the prompts. Panels, menus, keys and scripts push Command values; update() applies them once per
// frame, in one place, before anything is drawn, and sends the document to the engine worker when
// it changed. What it needs of the window and the panels (a file dialog, a screenshot, the
// clipboard) it asks through ControllerHooks, each optional: the unit tests run it with none.
//
// The shell's App owns one and draws it (shell/app.h); tests/unit/controller_test.cpp drives it alone.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "editing/document.h"
#include "formats/atomic_file.h"
#include "formats/export.h"
#include "state/capture_targets.h"
#include "state/command_queue.h"
#include "state/engine_worker.h"
#include "state/learn_session.h"
#include "state/lesson_check.h"
#include "state/lesson_session.h"
#include "state/model_session.h"
#include "state/off_thread.h"
#include "state/session_files.h"
#include "state/toast.h"
#include "state/view_state.h"

namespace attnscope {

// A command of a --commands file (or a lesson's step run by one) that could not apply.
struct CommandFailure {
  int index;            // its position in the file (0-based)
  std::string name;     // its "do"
  std::string message;  // why
};

// The questions the controller asks the user and waits for an answer to, as a command: the
// unsaved-changes prompt (answered by `unsaved`) and the last session's recovery offer (`recovery`).
struct Prompts {
  std::string unsaved_action;  // the command that asked ("quit", "open", …); "" for no prompt
  std::string unsaved_doing;   // … what it does ("quitting", "opening x.json")
  std::string unsaved_what;    // … what would be lost ("the changes to w.json", "the model's typed text (in w.json)")
  std::string recovery_kept;   // the last session's unsaved changes, kept here; "" for no offer
  std::string recovery_file;   // … to this file
  bool any() const { return !unsaved_action.empty() || !recovery_kept.empty(); }
};

// What the controller asks of the window and the panels; unset, each does nothing (or says "no
// window" where the command needs one).
struct ControllerHooks {
  // the window
  std::function<void()> theme_changed;      // fonts and style again
  std::function<void()> text_size_changed;  // fonts rasterized again, between frames
  std::function<void(const std::string&)> set_clipboard;
  std::function<std::string()> clipboard_text;         // "" when none
  std::function<std::string(bool on)> set_fullscreen;  // "" or why not
  std::function<bool()> fullscreen;
  // the panels
  std::function<void()> document_replaced;                     // forget what belonged to the old workspace
  std::function<void()> unpinned;                              // the Compare tab forgets its differences
  std::function<void(int first, int last, int tokens)> go_to;  // zoom the heatmaps to these tokens
  std::function<std::vector<int>()> visible_heads;             // the heads on screen, computed first
  std::function<bool()> layout_settled;                        // the lesson's step is laid out as it stays
  std::function<bool()> cramped;                               // the side panels give way to the main area
  std::function<std::string(const CaptureSpec&, const std::string& path)> capture;  // "" or why not
  // the file dialogs
  std::function<void(const std::string& which, const std::string& stage, int head, const std::string& format)>
      open_dialog;
  std::function<void(const std::string& path)> ask_overwrite;  // the file changed on disk: Overwrite, Save as, Cancel
  std::function<bool()> saving;                                // a Save as dialog or that prompt is up
  std::function<void(const std::string& path)> file_used;      // opened or saved: recent files
  // A model the user chose was read: why it could not be opened, or "" (it is open). True if the
  // dialog it was chosen in is back, saying why (then no toast says it again).
  std::function<bool(const std::string& path, const std::string& why)> model_read;
};

class Controller {
 public:
  Controller(Document document, ViewState view, bool interactive, ControllerHooks hooks = {});
  // The app's limits for a memory budget (--memory-budget; docs/DESIGN.md §2.4 "What the app
  // holds"): the maps of the element shown are held twice, the snapshot on screen and the one
  // computing; everything the app opens is checked against them, and a pinned result adds what it
  // holds. The controller keeps the document's limits at construction as its base.
  // budget_bounds_models: the budget was given, and bounds a model opened too (Limits::max_model_bytes).
  static Limits limits(std::int64_t memory_budget_bytes = Limits{}.max_memory_bytes, bool budget_bounds_models = false);
  static std::int64_t pinnedBytes(const Snapshot& a);  // what pinning `a` holds (Limits::held_bytes)

  // ---- set up at start
  // View fields given on the command line (`--text-size`, `--theme`; the view's JSON names): the
  // last session's autosave, restored at start, does not override them.
  void keepFromCommandLine(nlohmann::json fields) { command_line_view_ = std::move(fields); }
  // Interactive sessions autosave to their instance's file (state/session_files.h); off by default.
  void autosaveTo(const std::string& path) { autosave_ = Autosave(path); }
  // Unsaved changes of the last session to `file`, newer than it and kept in `kept`: asked about
  // at start (Restore them, or keep the file as it was saved).
  void offerRecovery(const std::string& kept, const std::string& file) {
    prompts_.recovery_kept = kept;
    prompts_.recovery_file = file;
  }
  // A message for the user at start (a recovered autosave), shown longer than a toast.
  // A note shown for 12 s; the hint to make room (hintIfCramped), while it shows, stays after it.
  void notify(const std::string& text, double now);
  // The hint to make room (F10, F11) when the text size leaves the side panels narrow: after a
  // larger text size is chosen, and once at start; `after_toast`: after a message showing (the
  // start's notes), not in its place.
  void hintIfCramped(double now, bool after_toast);

  // ---- each frame
  CommandQueue& commands() { return queue_; }
  const CommandQueue& commands() const { return queue_; }
  // Every queued command applied, and the steps a run was asked for trained.
  bool idle() const { return queue_.empty() && !model_load_.busy() && !learn_.stepping(); }
  // Before drawing: applies the queued commands (one that waits for the result waits for the
  // newest), sends the document to the engine when it changed, takes finished results.
  void update(double now);
  // After the frame: autosave, the end of a drag gesture; `typing`: a text field has the keyboard;
  // `draw_ms`: how long building, rendering and presenting the frame took (the commands before it not
  // counted), which sets how long the next edit's frame may wait for its result (holdMs).
  void endFrame(double now, bool mouse_down, bool typing, double draw_ms);
  // A key's command, or the window's quit: queued — but `typing` (a text field has the keyboard, as
  // for Ctrl+S, F10, Ctrl+Q …) it waits until the field has committed its value, so that it saves,
  // quits about, shows or hides the value as typed (a hidden field's value was lost).
  void pushAfterTyping(Command c, bool typing);
  // The field being typed into lets go of the keyboard next frame, its value applied (Tab).
  void commitTyping() { commit_typing_ = true; }
  // True once after pushAfterTyping while typing (or a save from the menu then): this frame must take the
  // field's focus away (a click outside it, as the user would), so that the field commits its value
  // before what waits for it, which endFrame queues.
  bool takeCommitTyping() { return std::exchange(commit_typing_, false); }
  // How long the window may sleep before the next frame unless woken (input, a result): 0 while
  // commands wait, until a message ends, at most `longest` seconds.
  double idleTimeout(double now, double longest) const;
  // How long the next frame that sends the engine a request (too large for the 5 ms wait) waits for
  // its result, in ms (docs/DESIGN.md §3.3 "Holding a frame"): eight times the median drawing time of
  // the last 8 frames, at most 100; 0 while a button is down (a drag) and before any frame was drawn.
  double holdMs() const;
  // What the last request sent to the engine was expected to take, in ms, when it was sent
  // (expectedEngineMs, below).
  double expectedMsOfLastRequest() const { return expected_ms_; }
  std::vector<CommandFailure> takeFailures() { return std::exchange(failures_, {}); }

  // ---- what there is
  // The snapshot on screen answers the newest document version, view batch and engine options
  // (or the engine refused them), and a lesson's step is laid out.
  bool settled() const;
  // Only a thread's wake-up can move things on: the engine computing, a lesson's check, a model's
  // read or a run's steps (each wakes the window when it is done).
  bool waitingForWorkers() const;
  bool computing() const { return computing_; }
  bool quitRequested() const { return quit_; }
  const Document& document() const { return doc_; }
  const ViewState& view() const { return view_; }
  // The head a figure of one map shows when none is named: the one selected (ViewState::head), the
  // first while every head is shown. A figure of "the" map had shown head 1 whatever was selected.
  int selectedHead() const { return view_.head >= 0 ? view_.head : 0; }
  const ExecutionOptions& exec() const { return exec_; }
  const Snapshot* snapshot() const { return snapshot_.get(); }
  const std::shared_ptr<const Snapshot>& shared() const { return snapshot_; }
  // What the views draw: the newest result, unless it is not of what is shown — the chapter's or
  // another model's while a model (given maps, a run) is open, a model's after it closed — then
  // none (the views wait, or say the engine's refusal). A model whose pass failed had the
  // chapter's six tokens in the Inspector and the status bar under the model's name.
  const std::shared_ptr<const Snapshot>& shown() const;
  const std::shared_ptr<const Snapshot>& pinned() const { return pinned_; }
  int pinnedHead() const { return pinned_head_; }  // the head chosen when A was pinned (−1: all)
  const std::string& engineError() const { return engine_error_; }
  const LessonSession& lesson() const { return lesson_; }
  const ModelSession& model() const { return model_; }  // the trained model open, if any
  const LearnSession& learn() const { return learn_; }  // a model training, if any
  // The step whose maps the views show (-1: the newest, as it trains).
  int learnStepShown() const { return learn_follow_ ? -1 : learn_step_; }
  // The step the run is shown as it was at (learn_to behind or at the step trained: the charts end
  // there); −1: as trained.
  int learnHorizon() const { return learn_horizon_; }
  const std::string& modelLoadError() const { return model_load_error_; }  // the last model_open's refusal, or
  // What the views show: the model's text and layer while a model is open, else the document.
  int tokenCount() const;
  int headsShown() const;
  // The view as the chapter's workspace is saved with it: while a model is open, the selection
  // (token, key, head, batch element, tab) as it was before the model, the rest as it is now.
  ViewState chapterView() const;
  // The open model as a saved workspace keeps it beside the chapter's view ("trained_model":
  // ModelSession::saved and the head shown), or null; opening such a workspace opens it again.
  nlohmann::json savedModel() const;
  // The model's text field as the user left it: typed and not applied, for the opening `lineage`
  // (ModelSession::lineage; "" when it shows the model's text). The panel says it each frame it is
  // drawn; the autosave keeps it in its trained_model ("draft"), and a restore gives it back
  // (modelDraft) for the field to show, unapplied. A saved workspace keeps the applied text only:
  // a save applies a field being typed into first, and a text held in the field (refused, or
  // restored and not applied yet) is the autosave's alone.
  void setModelDraft(std::uint64_t lineage, const std::string& text);
  const std::string* modelDraft() const;  // the open model's, or null
  nlohmann::json autosavedModel() const;  // savedModel with the draft
  static nlohmann::json modelText(const nlohmann::json& entry);
  bool modelTextUnsaved() const;  // the model's text changed since it was opened or saved
  const Prompts& prompts() const { return prompts_; }
  const Toast& toast() const { return toast_; }
  const std::string& lastScreenshot() const { return last_screenshot_; }
  // The command waiting for the unsaved-changes prompt's answer, and the one waiting for the save
  // that answer asked for ("" for none).
  std::string promptedCommand() const { return pending_ ? pending_->name : ""; }
  std::string commandAfterSave() const { return after_save_ ? after_save_->name : ""; }
  std::string windowTitle() const;
  // Whether quitting or replacing the workspace would lose work: the document's edits since it was
  // opened or saved, or a trained model's text changed since it was opened or saved (a workspace
  // keeps it: savedModel).
  bool unsaved() const;

 private:
  void apply(const Command& c, double now);  // throws InputError
  // The document's limits with `held` bytes held besides (a pinned result), or none; InputError
  // "Not pinned: …" when the workspace does not fit them, and nothing changes.
  void holdBeside(std::int64_t held);
  void applyDocument(const Command& c, double now);
  void applyView(const Command& c, double now);
  void applyApp(const Command& c, double now);
  void applyLesson(const Command& c, double now);  // lesson_open, lesson_step, lesson_next, …
  void applyModel(const Command& c, double now);   // model_open, text, select_layer, …
  void closeModel(double now, bool say = true);    // the chapter's workspace again (`say`: a message says so)
  const Command* askedModelOpen() const;           // the newest model_open waiting or being read, or null
  bool openingSavedModel() const;                  // that one is a workspace's model (saved_model_), still to open
  // A model read off the UI thread: shown now, or its command's failure.
  struct ModelLoad {
    Command command;  // the model_open that asked
    std::shared_ptr<const GptModel> model;
    std::string error;  // when model is null
    FileStamp stamp;    // its weights file as it was read (View › Reload on change)
  };
  void openLoadedModel(ModelLoad loaded, double now);
  void openGivenAttention(const Command& c, double now);  // the attention command
  void applyLearn(const Command& c, double now);          // learn, learn_play, learn_step, …
  void updateLearning(double now);                        // the run's results, each frame
  void showLearnSnapshot(double now);
  void showWeightsAlone();  // a trained model's Heatmaps: each head's weights, the rest toggled on // its model (newest
                            // or asked for) in the views
  void endLearning();       // no run, its model no longer shown
  // attention.json of the layer shown (a model's or given maps'): its heads' labels, scores, weights.
  void exportAttention(const std::string& path, double now);
  void unpin();                                        // drop A (the unpin command, and a model's change)
  void applyToDocument(const Command& c, double now);  // applyDocument once the model allows it
  // What the views show: the model's text and layer while a model is open, else the document.

  // A lesson checked off the UI thread: open it at the step asked for (or say why not).
  void openCheckedLesson(LessonChecker::Result checked, double now);
  void applyOpenLesson(const Command& c, double now);  // lesson_close, lesson_step, next, back
  // Applies step `number` (1-based) of the open lesson: its commands through apply(), then its maps.
  void goToStep(int number, int script_index, double now);
  void save(const Command& c, double now);
  void swap(const Command& c, double now);
  // paste_embeddings, paste_parameters: the clipboard's text when the command has none, one edit.
  void paste(const Command& c, double now);
  void replaced(const Command& c, double now);  // another workspace: reset what belonged to the old one
  // quit, open, new, preset and a lesson would drop unsaved changes: ask first (the user, never a
  // script — except quit, which a script's session left open asks about too).
  static bool asksBeforeApplying(const Command& c);  // else once what it opens is read or checked
  bool asksFirst(const Command& c) const;
  void askUnsaved(const Command& c);
  void applyAnswered(const Command& c, double now);
  static void notApplied(const Command& c, const std::string& why);
  std::string actionText(const Command& c) const;  // "quitting", "opening …" for the prompt
  void clampView();
  // The view changed: fonts for its text size and style for its theme, when they changed.
  void viewChanged(const ViewState& before);
  void fail(const Command& c, const std::string& message, double now);  // a script's failure, or a toast
  void applied(const Command& c, bool started);  // started: apply() returned (else: finished later)
  void showToast(const std::string& text, bool error, double now);
  void endProgress();
  std::string toastNote() const;  // the toast's text without the hint to make room (kHintSeparator)
  // The model being read is given up, `why` ("another model_open (…) came before it was read"), for
  // the command `by`: a script or a message that sent its model_open hears it was not opened (a
  // notebook waited 600 s for a reply), unless `by` is its own later command.
  void stopModelLoad(const std::string& why, double now, const Command* by = nullptr);
  void appendHint(const std::string& hint);
  void updateEngine();
  void watchFiles(double now);  // View › Reload on change

  Document doc_;
  // View › Reload on change: when the files were last looked at, the document's stamp last sent to
  // `reload` (a file half written is tried again only once it changes again), the model's weights.
  double next_watch_ = 0;
  FileStamp reload_tried_;
  std::string watched_model_;
  FileStamp watched_model_stamp_;
  Limits base_limits_;  // the document's at start: the budget, nothing held besides
  ViewState view_;
  ExecutionOptions exec_;
  bool interactive_;
  ControllerHooks hooks_;
  CommandQueue queue_;

  EngineWorker worker_;
  std::shared_ptr<const Snapshot> snapshot_;  // what the views draw
  std::shared_ptr<const Snapshot> pinned_;    // A of the Compare tab (`pin`); null: nothing pinned
  int pinned_head_ = -1;                      // view_.head when A was pinned
  std::string engine_error_;                  // the engine refused the newest inputs
  struct RequestKey {
    std::uint64_t version = 0;
    int batch = -1;
    bool parallel = false;
    int threads = 0;
    std::uint64_t model_version = 0;  // a trained model's text and layer (0: none open) …
    int position = -1;                // … and the selected token, whose next tokens are shown
    bool operator==(const RequestKey& o) const {
      return version == o.version && batch == o.batch && parallel == o.parallel && threads == o.threads &&
             model_version == o.model_version && position == o.position;
    }
  };
  RequestKey currentKey() const;
  RequestKey requested_;        // the newest request sent to the worker
  bool small_request_ = false;  // … is small enough to wait for in its frame
  bool computing_ = false;
  // A new pass over the model's text shows the model view's thumbnails and next tokens before the
  // layer's maps (ModelJob::thumbnails_first): while the Layers tab is on screen and the maps are
  // large. Such a pass keeps its layer's outputs alone (KeptLayer::Outputs).
  bool thumbnailsFirst() const;
  // What the request being sent should take, in ms: a trained model's text edit at the fastest time
  // per row a pass of that model computed, times the rows it computes; anything else at the last
  // result's time; ∞ before a result. A frame is held (holdMs) only for a result expected within
  // the hold. (The last pass's time per row foretold a new text of 64 tokens after typing at the end
  // at 20 × its time: a pass of one row is mostly the reading of the weights.)
  double expectedEngineMs() const;
  double expected_ms_ = 0;  // … of the last request sent
  // After a result: the model pass it brought counted in fastest_row_ms_ (once a pass).
  void noteRowTime();
  double fastest_row_ms_ = 0;                  // ms per row computed, the fastest pass of …
  const GptModel* row_time_model_ = nullptr;   // … this model (0: none counted)
  const ModelPass* row_timed_pass_ = nullptr;  // the last pass counted
  std::array<double, 8> draw_ms_{};            // the last frames' drawing times (endFrame), a ring
  std::size_t draw_next_ = 0;                  // where the next one goes
  std::size_t draws_ = 0;                      // how many it holds (at most 8)
  bool mouse_down_ = false;                    // a button was down in the last frame: a drag, never held

  LessonSession lesson_;
  ModelSession model_;
  LearnSession learn_;
  bool in_lesson_step_ = false;  // applying a lesson step's commands (goToStep)
  bool learn_showing_ = false;   // the views show the run's model (ModelSession::isRun)
  bool learn_follow_ = true;     // … at its newest snapshot (else at learn_step_)
  bool learn_announce_ = false;  // a new run: its first model shown says so
  int learn_step_ = 0;
  int learn_horizon_ = -1;                                 // learnHorizon
  std::shared_ptr<const std::vector<float>> learn_shown_;  // the parameters of the snapshot the views show
  OffThread<ModelLoad> model_load_;                        // model_open's reading and packing
  std::optional<Command> model_loading_;                   // the model_open model_load_ reads for
  std::string model_load_error_;                           // why the last model read failed ("" once one opened)
  bool restoring_offer_ = false;  // the start's offer answered Restore: the autosave's model comes back too
  // The model a workspace being opened names (replaced), until its model_open is read or refused:
  // taken whole by openLoadedModel, so nothing of it outlives that opening.
  struct SavedModelPending {
    std::string path;                   // its model_open's path
    bool unsaved = false;               // its text is an autosave's unsaved work (restore)
    std::vector<std::string> left_out;  // its damaged fields, said once it is open (readSavedModel)
    std::string draft;                  // its field's text typed and not applied (an autosave's)
    std::string autosave;               // the autosave it comes from (restore): kept aside if the model is gone
  } saved_model_;
  std::string model_open_note_;      // said with the next model's opening (an autosave kept aside for it)
  nlohmann::json model_text_saved_;  // modelText of the open model when it was opened or last saved
  // The open model's field: its text typed and not applied, for that opening (ModelSession::lineage).
  struct ModelDraft {
    std::uint64_t lineage = 0;
    std::string text;
  } model_draft_;
  ViewState chapter_view_;                                 // the view when the model was opened (chapterView)
  LessonChecker lesson_check_;                             // a lesson being checked before it opens
  Prompts prompts_;
  Autosave autosave_;
  Toast toast_;
  std::uint64_t messages_shown_ = 0;  // toasts shown (showToast, notify): did a command say something?
  std::string last_screenshot_;
  bool quit_ = false;
  std::optional<Command> pending_;     // waits for the answer to the unsaved-changes prompt
  std::optional<Command> after_save_;  // goes on once the save that answer asked for succeeded
  bool typing_ = false;                // a text field had the keyboard in the last frame
  bool commit_typing_ = false;         // takeCommitTyping
  std::vector<Command> after_typing_;  // waiting for the field being typed into to commit (pushAfterTyping)
  std::vector<CommandFailure> failures_;
  nlohmann::json command_line_view_ = nlohmann::json::object();  // keepFromCommandLine
};

}  // namespace attnscope
