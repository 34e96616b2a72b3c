#include "shell/app.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "editing/token_table.h"
#include "engine/errors.h"
#include "formats/atomic_file.h"
#include "formats/export.h"
#include "formats/pytorch_script.h"
#include "widgets/fonts.h"
#include "widgets/layout_dump.h"
#include "state/screenshot_paths.h"
#include "widgets/theme.h"
#include "widgets/heatmap.h"

namespace attnscope {

namespace fs = std::filesystem;

App::App(Document document, ViewState view, bool interactive, WindowHooks hooks)
    : doc_(std::move(document)),
      base_limits_(doc_.limits()),
      view_(std::move(view)),
      exec_{true, 0},  // the parallel path, one thread per processor
      interactive_(interactive),
      hooks_(std::move(hooks)),
      autosave_() {
  if (view_.screenshot_dir.empty()) view_.screenshot_dir = defaultScreenshotFolder();
  clampView();
  applied_text_size_ = view_.text_size;  // main rasterized the fonts for it
}

// What a pinned result holds while B is edited: its maps (one element's, as its trace kept them) and,
// at most, a difference map of every T × T stage of every head beside them in the Compare tab.
std::int64_t App::pinnedBytes(const Snapshot& a) {
  const Workspace& in = *a.inputs;
  const int T = static_cast<int>(in.embeddings.rows()), d_in = static_cast<int>(in.embeddings.cols());
  std::int64_t square_stages = 0;
  for (const StageInfo& s : stageTable())  // the tril route's own maps only on that route
    square_stages += s.square && s.heatmap && (!s.tril_route || trilRoute(in.model)) ? 1 : 0;
  return estimateCost(in.model, T, d_in, 1).map_bytes +
         square_stages * headCount(in.model) * static_cast<std::int64_t>(T) * T * static_cast<std::int64_t>(sizeof(float));
}

Limits App::limits(std::int64_t memory_budget_bytes) {
  Limits l;
  l.traced_elements = 2;
  l.max_memory_bytes = memory_budget_bytes;
  return l;
}

void App::holdBeside(std::int64_t held) {
  Limits l = base_limits_;
  l.held_bytes = held;
  try {
    doc_.setLimits(l);
  } catch (const InputError& e) {
    throw InputError(std::string("Not pinned: holding this result as A as well would pass the memory budget (") +
                     e.what() + ")");
  }
}

void App::syncTextSize() {
  if (view_.text_size == applied_text_size_) return;
  applied_text_size_ = view_.text_size;
  if (hooks_.capture.set_scale) hooks_.capture.set_scale(uiScale());  // between frames: fonts and style again
}

// ---- applying commands -------------------------------------------------------------------

void App::update(double now) {
  // The hint to make room is void once the side panels are gone (a lesson opened in presentation
  // after the start's hint, or F10 pressed): it asked for exactly that.
  if (view_.presentation && toast_.hint_room) toast_ = {};
  // A lesson checked off the UI thread: it opens now, before the commands queued behind it.
  if (auto checked = lesson_check_.poll()) {
    if (toast_.text.rfind("Checking the lesson ", 0) == 0) toast_ = {};  // the progress is over
    const int script_index = checked->command.script_index;
    const std::string name = checked->command.name;
    try {
      openCheckedLesson(std::move(*checked), now);
    } catch (const InputError& e) {
      if (script_index >= 0)
        failures_.push_back({script_index, name, e.what()});
      else
        showToast(e.what(), true, now);
    }
  }
  if (lesson_check_.busy())  // what is being checked, and how far it got
    toast_ = {"Checking the lesson " + lesson_check_.file() + " … step " + std::to_string(lesson_check_.step() + 1) +
                  "  (File › Close lesson stops it)",
              false, now + 0.5};
  // Only the commands queued before this call: a capture draws frames, and panels push more.
  for (std::size_t n = queue_.size(); n > 0 && !queue_.empty(); --n) {
    const CommandId next = queue_.front().id();
    if (commandInfo(next).has(kWaitsForResult) && !settled()) break;  // for the newest, complete result
    // While a lesson is checked, what comes after its lesson_open waits for it (a script's next
    // step, a key); another lesson or closing stops the check.
    if (lesson_check_.busy() && next != CommandId::LessonOpen && next != CommandId::LessonClose) break;
    const Command c = queue_.pop();
    try {
      apply(c, now);
    } catch (const InputError& e) {
      if (c.script_index >= 0)
        failures_.push_back({c.script_index, c.name, e.what()});
      else
        showToast(e.what(), true, now);
    }
    updateEngine();  // a screenshot right behind an edit waits for that edit's result
  }
  if (after_save_ && queue_.empty() && !after_typing_ && !dialogs_.saving()) {  // the save dialog was cancelled
    showToast("Not saved, so not " + actionText(*after_save_) + ": the changes are still here", true, now);
    after_save_.reset();
  }
  updateEngine();
}

bool App::asksFirst(const Command& c) const {
  const CommandInfo& info = c.info();
  if (!info.has(kAsksFirst)) return false;
  if (!interactive_ || !doc_.dirty() || (c.has("discard") && c.flag("discard"))) return false;
  return info.has(kAsksScripts) || c.script_index < 0;  // scripts run unattended
}

std::string App::actionText(const Command& c) const {
  switch (c.id()) {
    case CommandId::Open: return "opening " + fs::path(c.text("path")).filename().string();
    case CommandId::New: return "starting over with the book's example";
    case CommandId::Preset: return "loading the preset " + c.text("name");
    case CommandId::LessonOpen: return "opening the lesson " + fs::path(c.text("path")).filename().string();
    default: return "quitting";
  }
}

void App::apply(const Command& c, double now) {
  // A lesson asks once it is checked (openCheckedLesson): a damaged one never asks.
  if (c.id() != CommandId::LessonOpen && asksFirst(c)) {  // the prompt's answer (the `unsaved` command) carries on with it
    pending_ = c;
    dialogs_.askUnsaved(c.name, actionText(c));
    return;
  }
  switch (c.info().target) {
    case CommandTarget::Document:
      if (c.id() == CommandId::Restore) {  // an autosave that cannot be read is kept aside, never overwritten
        try {
          doc_.apply(c);
        } catch (const InputError& e) {
          const std::string kept = moveAside(c.text("path"));
          throw InputError(std::string("The last session's autosave could not be read (") + e.what() + ")" +
                           (kept.empty() ? "" : "; it is kept as " + kept));
        }
        replaced(c, now);
        clampView();
        return;
      }
      if (c.id() == CommandId::Open && doc_.dirty() && interactive_ && !(c.has("discard") && c.flag("discard"))) {
        // A script's open in a session the user sees is not asked about. Opening starts a new
        // history, so the unsaved work would be gone (and the autosave overwritten): it is
        // written to the state folder first, and the user told where.
        const std::string kept = keepUnsaved(doc_, view_);
        try {
          doc_.apply(c);
        } catch (const InputError&) {  // not opened: the work is still on screen
          if (!kept.empty()) std::remove(kept.c_str());
          throw;
        }
        replaced(c, now);
        clampView();
        if (!kept.empty()) notify("Opened " + c.text("path") + ". The unsaved changes before it are kept in " + kept, now);
        return;
      }
      if (c.id() == CommandId::PasteEmbeddings || c.id() == CommandId::PasteParameters) return paste(c, now);
      if (doc_.apply(c) == DocumentChange::Replaced) replaced(c, now);
      if (!doc_.note().empty()) showToast(doc_.note(), false, now);  // num_heads or seed moved
      clampView();
      return;
    case CommandTarget::View:
      applyView(c, now);
      return;
    case CommandTarget::App:
      applyApp(c, now);
      return;
  }
}

void App::paste(const Command& c, double now) {
  Command filled = c;
  if (!c.has("text")) {  // Edit › Paste, Ctrl+Shift+V, or a script asking for the real clipboard
    const std::string text = hooks_.clipboard_text ? hooks_.clipboard_text() : "";
    if (text.find_first_not_of(" \t\r\n") == std::string::npos)
      throw InputError(c.id() == CommandId::PasteParameters
                           ? "Nothing pasted: the clipboard holds no text. Copy what print(m.state_dict()) shows in your "
                             "notebook, then Edit › Paste parameters"
                           : "Nothing pasted: the clipboard holds no text. Copy what print(x) shows in your notebook, "
                             "then Edit › Paste embeddings (Ctrl+Shift+V)");
    filled.args["text"] = text;
    filled.from_clipboard = true;  // refusals name the clipboard
  }
  try {
    doc_.apply(filled);
  } catch (const InputError& e) {  // the table is as it was
    throw InputError(std::string("Nothing pasted: ") + e.what());
  }
  showToast(doc_.note(), false, now);
  clampView();
}

void App::replaced(const Command& c, double now) {
  const ViewState before = view_;
  const bool light = view_.light_theme;
  const std::string folder = view_.screenshot_dir;
  view_ = viewFromJson(doc_.workspace().view);  // the view the workspace was saved with
  view_.screenshot_dir = folder;                // the machine's folder, not the file's
  const bool fresh = c.id() == CommandId::Preset || c.id() == CommandId::New;
  if (fresh) view_.light_theme = light;  // a preset keeps the theme
  // The window as it is set up for the room — text size, panels shown — stays: always for a preset
  // or New, and for a file that does not say otherwise.
  const nlohmann::json& saved = doc_.workspace().view;
  auto keep = [&](const char* field, auto ViewState::*member) {
    if (fresh || !saved.is_object() || !saved.contains(field)) view_.*member = before.*member;
  };
  keep("text_size", &ViewState::text_size);
  keep("model_panel", &ViewState::show_model);
  keep("inputs_panel", &ViewState::show_inputs);
  keep("inspector", &ViewState::show_inspector);
  keep("status_bar", &ViewState::show_status);
  keep("statistics", &ViewState::show_statistics);
  keep("presentation", &ViewState::presentation);
  keep("weights_range", &ViewState::weights_fixed);  // a lesson's, or the user's choice
  view_.highlight = before.highlight;  // the open lesson's step, not the workspace's
  if (c.id() == CommandId::Restore)  // the autosave's view yields to what this session was started with
    for (const auto& [field, value] : command_line_view_.items()) setViewField(view_, field, value);
  syncTextSize();
  if (view_.light_theme != light && hooks_.theme_changed) hooks_.theme_changed();
  heatmap_grid_.reset();
  pipeline_.reset();
  lines_.reset();
  weights_.reset();
  inputs_panel_.reset();
  if (c.id() == CommandId::Open) {
    dialogs_.remember(c.text("path"));
    showToast("Opened " + c.text("path"), false, now);
  }
}

void App::clampView() {
  const Workspace& ws = doc_.workspace();
  const int T = static_cast<int>(ws.tokens.size());
  view_.token = std::clamp(view_.token, 0, T - 1);
  if (view_.key >= T) view_.key = -1;
  if (view_.head >= headCount(ws.model)) view_.head = -1;
  view_.batch = std::clamp(view_.batch, 0, ws.model.batch_size - 1);
}

namespace {

// `index` within [lo, count) or an InputError naming it.
int indexIn(const Command& c, int lo, int count, const char* what) {
  const int i = c.integer("index");
  if (i < lo || i >= count)
    throw InputError("index: no " + std::string(what) + " " + std::to_string(i) + " (there are " + std::to_string(count) +
                     ", numbered from 0" + (lo < 0 ? "; −1 = none" : "") + ")");
  return i;
}

}  // namespace

void App::applyView(const Command& c, double now) {
  const Workspace& ws = doc_.workspace();
  const int T = static_cast<int>(ws.tokens.size()), H = headCount(ws.model);
  using Id = CommandId;
  switch (c.id()) {
  case Id::SelectToken: {
    view_.token = c.has("index") ? indexIn(c, 0, T, "token") : std::clamp(view_.token + (c.has("step") ? c.integer("step") : 0), 0, T - 1);
    break;
  }
  case Id::SelectKey: {
    view_.key = indexIn(c, -1, T, "token");
    break;
  }
  case Id::SelectHead: {  // stepping cycles: all heads → 1 → 2 → … → all heads
    if (c.has("index")) view_.head = indexIn(c, -1, H, "head");
    else view_.head = ((view_.head + 1 + (c.has("step") ? c.integer("step") : 0)) % (H + 1) + (H + 1)) % (H + 1) - 1;
    break;
  }
  case Id::GoTo: {  // a token or a range of a long input: zoomed to, the first selected
    std::pair<int, int> range;
    if (c.has("text")) {
      range = findTokens(ws.tokens, c.text("text"));
    } else {
      if (!c.has("index")) throw InputError("go_to: give `text` or `index`");
      range.first = range.second = indexIn(c, 0, T, "token");
      if (c.has("to")) {
        const int to = c.integer("to");
        if (to < 0 || to >= T) throw InputError("to: no token " + std::to_string(to) + " (there are " + std::to_string(T) + ")");
        range = {std::min(range.first, to), std::max(range.first, to)};
      }
    }
    view_.token = range.first;
    if (view_.tab != "heatmaps" && view_.tab != "compare") view_.tab = "heatmaps";
    heatmap_grid_.goTo(range.first, range.second, T);
    break;
  }
  case Id::SelectBatch: {
    view_.batch = indexIn(c, 0, ws.model.batch_size, "batch element");
    break;
  }
  case Id::View: {
    const bool light = view_.light_theme;
    const int text_size = view_.text_size;
    setViewField(view_, c.text("field"), c.args["value"]);
    if (c.text("field") == "lock_range") view_.locked_heads.clear();  // updateEngine keeps the ranges on screen
    syncTextSize();
    if (view_.light_theme != light && hooks_.theme_changed) hooks_.theme_changed();
    clampView();
    if (view_.text_size > text_size) hintIfCramped(now, false);
    break;
  }
  default:
    break;
  }
}

void App::applyApp(const Command& c, double now) {
  using Id = CommandId;
  switch (c.id()) {
  case Id::LessonOpen:
  case Id::LessonStep:
  case Id::LessonNext:
  case Id::LessonBack:
  case Id::LessonClose:
    return applyLesson(c, now);
  case Id::Engine: {
    if (c.has("parallel")) {
      exec_.parallel = c.flag("parallel");
    }
    if (c.has("threads")) {
      const int threads = c.integer("threads");
      if (threads < 0 || threads > 256) throw InputError("threads: must be between 0 (all cores) and 256");
      exec_.threads = threads;
    }
    break;
  }
  case Id::Screenshot: {
    CaptureSpec spec{static_cast<float>(c.has("scale") ? c.number("scale") : view_.screenshot_scale),
                     c.has("panel") ? c.text("panel") : "", c.has("head") ? c.integer("head") : 0, view_.caption};
    std::string error, path = c.text("path");
    if (path.empty()) path = timestampedPath(view_.screenshot_dir, &error);
    if (error.empty()) error = capture(spec, path);
    if (!error.empty()) throw InputError("screenshot failed: " + error);
    last_screenshot_ = path;
    showToast("Saved " + path, false, now);
    break;
  }
  case Id::Pin: {  // the newest result (update() waited for it)
    if (!snapshot_) throw InputError("nothing computed yet: nothing to pin");
    // A holds its maps while B is edited, and Compare draws B − A beside them: that is counted
    // against the budget from now on, so every edit while pinned is checked with it.
    holdBeside(pinnedBytes(*snapshot_));
    pinned_ = snapshot_;
    view_.tab = "compare";
    showToast("Pinned as A: change anything, the Compare tab shows A, B and B − A", false, now);
    break;
  }
  case Id::Unpin: {
    if (!pinned_) throw InputError("nothing is pinned");
    pinned_.reset();
    compare_.reset();
    holdBeside(0);
    if (view_.tab == "compare") view_.tab = "heatmaps";
    break;
  }
  case Id::Swap: {  // A's settings become the document's, B is pinned in its place
    if (!pinned_) throw InputError("nothing is pinned: pin a result as A first");
    if (!snapshot_) throw InputError("nothing computed yet");
    const std::shared_ptr<const Snapshot> b = snapshot_;
    // A's workspace must fit beside what B will hold once pinned (the totals differ from B's
    // beside A's): checked first, so a refused swap changes nothing.
    Limits swapped = base_limits_;
    swapped.held_bytes = pinnedBytes(*b);
    try {
      validateWorkspace(*pinned_->inputs, swapped);
    } catch (const InputError& e) {
      throw InputError(std::string("Not swapped: A's settings beside B pinned would pass the memory budget (") +
                       e.what() + ")");
    }
    const Limits before = doc_.limits();
    doc_.setLimits(base_limits_);  // B fits the budget alone; A is loaded against it …
    Command load = makeCommand("workspace", {{"json", workspaceToJson(*pinned_->inputs)}});
    load.script_index = c.script_index;
    try {
      apply(load, now);
    } catch (...) {
      doc_.setLimits(before);
      throw;
    }
    pinned_ = b;
    doc_.setLimits(swapped);  // … and held with B beside it from now on
    view_.tab = "compare";
    break;
  }
  case Id::Save: {
    // Ctrl+S while typing: the typed value first. (A save with a path comes from the Save as
    // dialog, whose name field was typed into: that is the save's own name, nothing to commit.)
    if (typing_ && c.script_index < 0 && !c.has("path") && !after_typing_) {
      after_typing_ = c;
      commit_typing_ = true;
      return;
    }
    std::string path = c.has("path") ? c.text("path") : doc_.file();
    if (path.empty()) {  // untitled: ask where
      if (c.script_index >= 0) throw InputError("path: this workspace is untitled: give a path");
      dialogs_.begin("save_as");
      return;
    }
    // Another program wrote the file since it was opened or saved here: saving would destroy that
    // without a word. The user chooses (Overwrite, Save as…, Cancel); a script says `overwrite`.
    if (doc_.fileChangedOnDisk() && documentPath(path) == doc_.file() && !(c.has("overwrite") && c.flag("overwrite"))) {
      if (c.script_index < 0 && interactive_) {
        dialogs_.askOverwrite(path);
        return;
      }
      const std::string so = after_save_ ? ", so not " + actionText(*after_save_) : "";
      after_save_.reset();
      throw InputError("Not saved" + so + ": " + path + " changed on disk since it was opened or saved (another program " +
                       "wrote it); save with \"overwrite\": true to replace it, or save under another name");
    }
    Workspace ws = doc_.workspace();
    ws.view = savedView(view_, ws.view);
    try {
      saveWorkspace(path, ws);
    } catch (const InputError& e) {  // and what waited for the save does not happen
      const std::string so = after_save_ ? ", so not " + actionText(*after_save_) : "";
      after_save_.reset();
      throw InputError("Not saved" + so + ": " + e.what());
    }
    doc_.markSaved(path);
    dialogs_.remember(path);
    showToast("Saved " + path, false, now);
    if (after_save_) {  // the prompt's "Save": now quit, open, … as asked
      const Command next = std::move(*after_save_);
      after_save_.reset();
      apply(next, now);
    }
    break;
  }
  case Id::ExportTrace:
  case Id::ExportMap: {
    if (!snapshot_) throw InputError("nothing computed yet");
    ExportFormat format;
    if (!parseExportFormat(c.text("format"), &format)) throw InputError("format: expected csv, json or npy");
    const std::string path = c.text("path");
    if (!snapshot_->complete) throw InputError("the maps are still being computed: export again in a moment");
    if (c.id() == Id::ExportTrace) {
      const int files = exportTrace(*snapshot_->inputs, *snapshot_->trace, path, format);
      showToast("Wrote " + std::to_string(files) + " file" + (files == 1 ? "" : "s") + " to " + path, false, now);
      return;
    }
    Stage stage;
    if (!parseStage(c.text("stage"), &stage)) throw InputError("stage: unknown stage '" + c.text("stage") + "'");
    const int head = c.integer("head");
    if (head < 0 || head >= static_cast<int>(snapshot_->shown().heads.size())) throw InputError("head: no such head");
    // CSV with the tokens as a header row and first column, as attnscope-cli writes it (formats/export.h).
    writeFileAtomically(path, exportMap(*snapshot_->trace, snapshot_->shown().heads[head], stage, snapshot_->tokens(), format));
    showToast("Saved " + path, false, now);
    break;
  }
  case Id::SavePytorch:
  case Id::CopyPytorch: {
    const std::string script = pytorchScript(doc_.workspace(), doc_.file().empty() ? "untitled" : doc_.file());
    if (c.id() == Id::CopyPytorch) {
      if (hooks_.clipboard) hooks_.clipboard(script);
      showToast("PyTorch code copied: paste it into a notebook or run it with /usr/bin/python3", false, now);
    } else {
      writeFileAtomically(c.text("path"), script);
      showToast("Saved " + c.text("path") + "  (run: /usr/bin/python3 " + fs::path(c.text("path")).filename().string() + ")",
                false, now);
    }
    break;
  }
  case Id::Dialog: {
    dialogs_.begin(c.text("which"), c.has("stage") ? c.text("stage") : "", c.has("head") ? c.integer("head") : 0,
                   c.has("format") ? c.text("format") : "csv");
    break;
  }
  case Id::Fullscreen: {
    const bool on = c.has("on") ? c.flag("on") : !isFullscreen();
    const std::string error = hooks_.set_fullscreen ? hooks_.set_fullscreen(on) : "no window";
    if (!error.empty()) throw InputError("full-screen: " + error);
    break;
  }
  case Id::Quit: {
    quit_ = true;  // unsaved changes were asked about in apply()
    break;
  }
  case Id::Recovery: {  // the answer to the start's offer (FileDialogs::offerRecovery)
    const std::string choice = c.text("choice");
    if (choice != "restore" && choice != "keep") throw InputError("choice: expected restore or keep, got \"" + choice + "\"");
    const std::string kept = dialogs_.recoveryOffered();
    if (kept.empty()) throw InputError("no unsaved changes of the last session are offered");
    dialogs_.closeRecovery();
    if (choice == "restore") {
      Command restore = makeCommand("restore", {{"path", kept}});
      restore.script_index = c.script_index;
      apply(restore, now);
    } else {
      showToast("The last session's changes stay in " + kept, false, now);
    }
    break;
  }
  case Id::Unsaved: {  // the answer to the prompt: go on with the command that asked
    const std::string choice = c.text("choice");
    if (choice != "save" && choice != "discard" && choice != "cancel")
      throw InputError("choice: expected save, discard or cancel, got \"" + choice + "\"");
    if (!pending_) throw InputError("no unsaved-changes prompt is open");
    Command next = std::move(*pending_);
    pending_.reset();
    dialogs_.closeUnsaved();
    if (choice == "discard") {
      next.args["discard"] = true;
      apply(next, now);
    } else if (choice == "save") {  // untitled: the save dialog first; `save` goes on when it is done
      after_save_ = std::move(next);
      apply(makeCommand("save"), now);
    }
    break;
  }
  default:
    break;
  }
}

// ---- lessons (docs/DESIGN.md §3.7) ---------------------------------------------------------

void App::applyLesson(const Command& c, double now) {
  if (c.id() == CommandId::LessonOpen) {
    // Checked whole — the file, then every step rehearsed on a copy — before anything changes: a
    // damaged lesson is one message, and the work and the view stay as they are. The check runs
    // off the UI thread (state/lesson_check.h); openCheckedLesson goes on when it is done.
    lesson_check_.start(c, doc_.workspace(), doc_.limits());
    return;
  }
  if (c.id() == CommandId::LessonClose && lesson_check_.busy()) {
    lesson_check_.cancel();
    if (!lesson_.open()) return showToast("Stopped checking the lesson: it is not opened", false, now);
  }
  if (!lesson_.open()) throw InputError("no lesson is open (File › Open lesson)");
  applyOpenLesson(c, now);
}

void App::openCheckedLesson(LessonChecker::Result checked, double now) {
  if (!checked.lesson) throw InputError(checked.error);
  const Command& c = checked.command;
  const int number = c.has("step") ? c.integer("step") : 1;
  checkLessonStep(*checked.lesson, number);
  if (asksFirst(c)) {
    pending_ = c;  // its steps load presets over the work: ask first, as a preset does
    dialogs_.askUnsaved(c.name, actionText(c));
    return;
  }
  const bool first = !lesson_.open();
  lesson_.begin(std::move(*checked.lesson), view_);
  if (first) {
    view_.presentation = true;  // the maps and the lesson, large; F10 brings back the side panels
    view_.weights_fixed = true; // weights as the probabilities they are (View › Weights on a fixed 0–1 scale)
  }
  try {
    goToStep(number, c.script_index, now);
  } catch (const InputError&) {  // rehearsed from step 1, so only a step that needs the ones before it
    view_ = lesson_.close(view_);
    clampView();
    throw;
  }
}

void App::applyOpenLesson(const Command& c, double now) {
  if (c.id() == CommandId::LessonClose) {
    const bool light = view_.light_theme;
    view_ = lesson_.close(view_);
    syncTextSize();
    if (view_.light_theme != light && hooks_.theme_changed) hooks_.theme_changed();
    clampView();
    return;
  }
  const int count = static_cast<int>(lesson_.lesson().steps.size());
  int number = lesson_.step();
  if (c.id() == CommandId::LessonNext) {
    if (number >= count) return showToast("That was the last step: File › Close lesson ends it", false, now);
    ++number;
  } else if (c.id() == CommandId::LessonBack) {
    if (number <= 1) return showToast("This is the first step", false, now);
    --number;
  } else {
    number = c.integer("step");
    checkLessonStep(lesson_.lesson(), number);
  }
  goToStep(number, c.script_index, now);
}

void App::goToStep(int number, int script_index, double now) {
  const LessonStep& step = lesson_.lesson().steps[static_cast<std::size_t>(number - 1)];
  for (std::size_t i = 0; i < step.commands.size(); ++i) {
    Command c = step.commands[i];
    c.script_index = script_index;
    // The lesson was asked about when it opened: its presets go on (and stay undoable).
    for (const CommandArg& a : c.info().args)
      if (std::string(a.name) == "discard") c.args["discard"] = true;
    try {
      apply(c, now);
    } catch (const InputError& e) {
      throw InputError("step " + std::to_string(number) + ": command " + std::to_string(i + 1) + " (" + c.name + "): " + e.what());
    }
  }
  lesson_.setStep(number);
  view_.highlight = step.maps;
}

void App::hintIfCramped(double now, bool unless_toast) {
  int w = 0, h = 0;
  if (hooks_.size) hooks_.size(&w, &h);
  if (w <= 0 || (unless_toast && !toast_.text.empty() && now < toast_.until)) return;
  // Larger text in a window too small for it beside the side panels: say how to make room.
  if (sideWidths(static_cast<float>(w), view_.modelShown() || view_.inputsShown(), view_.inspectorShown()).squeeze < 0.8f) {
    showToast("Text size " + std::to_string(view_.text_size) + " %: the side panels are narrow in this window. "
              "View › Presentation (F10) hides them, F11 goes full screen.", false, now);
    toast_.hint_room = true;
  }
}

void App::showToast(const std::string& text, bool error, double now) {
  toast_ = {text, error, now + (error ? 6.0 : 3.0)};
}

// ---- the engine ---------------------------------------------------------------------------

// Above this many T × T cells per element (12 heads of 1024², 4 of 512²) the maps of the heads off
// screen are computed after the first snapshot is shown; below it, everything comes at once.
constexpr double kSplitCells = 1 << 20;
// Below this many cells (every element traced) the UI thread waits up to 5 ms for the result.
constexpr double kWaitCells = 1 << 14;

App::RequestKey App::currentKey() const {
  return {doc_.version(), view_.batch, exec_.parallel, exec_.threads};
}

void App::updateEngine() {
  const RequestKey key = currentKey();
  if (!(key == requested_)) {
    EngineRequest r;
    r.inputs = std::make_shared<const Workspace>(doc_.workspace());
    r.version = key.version;
    r.batch = key.batch;
    r.exec = exec_;
    r.limits = base_limits_;  // the engine checks what the document was checked with (no pin: one trace)
    // Large maps (GPT-2: 12 heads of 1024 × 1024) come in two parts: the heads on screen (or the
    // one chosen) with the outputs first, the others just after (docs/DESIGN.md §3.3).
    const Workspace& ws = doc_.workspace();
    const double cells = static_cast<double>(headCount(ws.model)) * ws.embeddings.rows() * ws.embeddings.rows();
    if (cells >= kSplitCells) {
      if (view_.head >= 0)
        r.first_heads = {view_.head};
      else
        r.first_heads = heatmap_grid_.visibleHeads().empty() ? std::vector<int>{0} : heatmap_grid_.visibleHeads();
    }
    small_request_ = cells < kWaitCells;
    worker_.request(std::move(r));
    requested_ = key;
  }
  // A small input (the book's 6 tokens take 0.05 ms) is waited for, so an edit's result is drawn
  // in the frame that applied it; a large one never holds the frame.
  if (auto result = worker_.poll(small_request_ ? std::chrono::milliseconds(5) : std::chrono::milliseconds(0))) {
    if (result->snapshot) {
      snapshot_ = std::move(result->snapshot);
      // A pinned while its heads off screen were computing gets them when they come.
      if (pinned_ && !pinned_->complete && snapshot_->version == pinned_->version && snapshot_->batch == pinned_->batch)
        pinned_ = snapshot_;
      engine_error_.clear();
    } else {
      engine_error_ = result->error;  // the last good snapshot stays on screen
    }
  }
  // Locked colour ranges: those of the result on screen when the lock was set (or of the first
  // result, locked before there was one).
  if (view_.lock_range && view_.locked_heads.empty() && snapshot_) {
    view_.locked_heads = snapshot_->ranges;
    view_.locked_module = snapshot_->module_ranges;
  }
  computing_ = worker_.busy();
}

bool App::settled() const {
  return !worker_.busy() && currentKey() == requested_ && !lesson_check_.busy() &&
         (!lesson_.open() || lesson_.layoutSettled());
}

// ---- drawing ------------------------------------------------------------------------------

std::string App::windowTitle() const {
  const std::string name = doc_.file().empty() ? "untitled" : fs::path(doc_.file()).filename().string();
  return "attnscope — " + name + (doc_.dirty() ? " •" : "");
}

void App::draw(double now, const CaptureFrame& capture) {
  layout().beginFrame();
  const float caption_h = capture.caption_h, caption_x = capture.caption_x, caption_w = capture.caption_w;
  PanelContext context{doc_, view_, snapshot_, computing_, engine_error_, exec_, toast_, queue_, now, frame_ms_, pinned_,
                       heatmap_grid_.setAside(), heatmap_grid_.roundingNote(), {}, capture.state};
  // A lesson step's maps menu (in its panel): the heatmaps' header, which the step's maps have the lines of.
  if (lesson_.open() && lesson_.step() > 0 && !view_.highlight.empty())
    context.maps_menu = [this, &context] { heatmap_grid_.drawMapsMenu(context); };
  const PanelContext& ctx = context;
  menu_.draw(ctx, dialogs_.settings().recent, isFullscreen(), lesson_.open());
  drawPanels(ctx, caption_h);
  if (caption_h > 0) {
    ImGui::SetNextWindowPos(ImVec2(caption_x, ImGui::GetMainViewport()->Size.y - caption_h));
    ImGui::SetNextWindowSize(ImVec2(caption_w, caption_h));
    ImGui::PushStyleVar(ImGuiStyleVar_WindowBorderSize, 0);
    // Close under the figure: the crop's margin is the gap (a window's padding added a second one).
    ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImVec2(ImGui::GetStyle().WindowPadding.x, ImGui::GetStyle().WindowPadding.y * 0.25f));
    ImGui::Begin("##caption", nullptr, ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoSavedSettings);
    ImGui::PushFont(fonts().small);
    ImGui::TextWrapped("%s", caption_.c_str());
    layout().widget("caption_text");  // the capture crops its strip to it
    ImGui::PopFont();
    ImGui::End();
    ImGui::PopStyleVar(2);
  }
  if (!capturing_) dialogs_.draw(ctx);
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
  ImGuiViewport vp = *ImGui::GetMainViewport();
  vp.Size.y -= caption_h;  // a screenshot's caption strip sits below everything
  const bool lesson = lesson_.open() && lesson_.step() > 0;  // the lesson takes the inspector's column
  const bool model = view_.modelShown(), inputs = view_.inputsShown(), inspector = view_.inspectorShown() && !lesson;
  const float menu_h = ImGui::GetFrameHeight();
  // A lesson presented: its panel says where we are, the maps take the status bar's line too.
  const bool status = view_.show_status && !(lesson && view_.presentation);
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
    const HeatmapGrid::FocusNeed need = view_.tab == "heatmaps" ? heatmap_grid_.focusNeed() : HeatmapGrid::FocusNeed{};
    const float narrowest = std::min(right_w, ImGui::CalcTextSize("n").x * 28 + ImGui::GetStyle().WindowPadding.x * 2 +
                                                  ImGui::GetStyle().ScrollbarSize);
    const float most = vp.Size.x - left_w - narrowest;  // the widest the main area may be
    // Four decimals where the column can give that much, else three, else three a little smaller
    // (the grid fits them), else as much as it can.
    float want = 0;
    for (float w : {need.best, need.least, need.smallest})
      if (w > 0 && w <= most) {
        want = w;
        break;
      }
    if (want == 0 && need.smallest > 0) want = most;
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
  if (model) model_panel_.draw(ctx, top, ImVec2(left_w, model_h));
  if (inputs) inputs_panel_.draw(ctx, ImVec2(top.x, top.y + model_h), ImVec2(left_w, body_h - model_h));

  // The main area: the heatmap grid or the pipeline, as tabs; the head statistics under it.
  const float statistics_h = view_.statisticsShown() ? HeadStatisticsPanel::height(ctx, body_h) : 0.0f;
  const ImVec2 main_pos(top.x + left_w, top.y), main_size(vp.Size.x - left_w - right_w, body_h - statistics_h);
  ImGui::SetNextWindowPos(main_pos);
  ImGui::SetNextWindowSize(main_size);
  ImGui::Begin("##main", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoScrollWithMouse |
                   ImGuiWindowFlags_NoSavedSettings);
  layout().panel("main", main_pos, ImVec2(main_pos.x + main_size.x, main_pos.y + main_size.y));
  if (ImGui::BeginTabBar("views")) {
    // The view's tab is selected through ImGui, which shows the change a frame later; a change
    // ImGui shows that was not asked for is the user's click, and becomes a `view` command.
    const bool ask = view_.tab != shown_tab_ && view_.tab != pending_tab_;
    if (ask) pending_tab_ = view_.tab;
    for (const MainTab& tab : mainTabs()) {
      const ImGuiTabItemFlags flags = ask && view_.tab == tab.id ? ImGuiTabItemFlags_SetSelected : 0;
      const std::string id = tab.id;
      const bool open = ImGui::BeginTabItem(tab.title, nullptr, flags);
      layout().widget("tab_" + id);
      if (open) {
        if (pending_tab_ == id) pending_tab_.clear();  // what was asked for
        else if (!shown_tab_.empty() && shown_tab_ != id && view_.tab != id)
          queue_.push("view", {{"field", "tab"}, {"value", id}});  // a click
        shown_tab_ = id;
        if (id == "heatmaps") heatmap_grid_.draw(ctx);
        else if (id == "pipeline") pipeline_.draw(ctx, ImGui::GetContentRegionAvail());
        else if (id == "lines") lines_.draw(ctx, ImGui::GetContentRegionAvail());
        else if (id == "parameters") weights_.draw(ctx);
        else compare_.draw(ctx);
        ImGui::EndTabItem();
      }
    }
    ImGui::EndTabBar();
  }
  ImGui::End();
  if (statistics_h > 0)
    statistics_.draw(ctx, ImVec2(main_pos.x, main_pos.y + main_size.y), ImVec2(main_size.x, statistics_h));
  if (inspector) inspector_.draw(ctx, ImVec2(top.x + vp.Size.x - right_w, top.y), ImVec2(right_w, body_h));
  if (lesson) lesson_.draw(ctx, ImVec2(top.x + vp.Size.x - right_w, top.y), ImVec2(right_w, body_h));
  if (status)
    status_bar_.draw(ctx, ImVec2(vp.Pos.x, vp.Pos.y + vp.Size.y - status_h), ImVec2(vp.Size.x, status_h));
  else  // confirmations and errors still show: over the bottom of the main area
    StatusBar::drawToast(ctx, ImVec2(main_pos.x + main_size.x, main_pos.y + main_size.y), main_size.x);
}

void App::endFrame(double now, bool mouse_down, bool typing, double frame_ms) {
  if (!mouse_down && !typing) doc_.endGesture();  // a drag or a typed value ended: a new undo step next
  typing_ = typing;
  if (after_typing_ && !commit_typing_) {  // the field lost its focus in this frame and pushed its value:
    queue_.push(std::move(*after_typing_));  // the save comes after it (and does not wait again)
    after_typing_.reset();
    typing_ = false;
  }
  autosave_.update(doc_, view_, now);
  if (auto message = autosave_.takeMessage()) showToast(message->first, message->second, now);
  frame_ms_ = frame_ms;
}

double App::idleTimeout(double now, double longest) const {
  if (!queue_.empty() && !lesson_check_.busy()) return 0;  // commands behind a lesson's check wait for its wake-up
  double timeout = longest;
  if (!toast_.text.empty() && toast_.until > now) timeout = std::min(timeout, toast_.until - now);
  if (heatmap_grid_.outlinedUntil() > now) timeout = std::min(timeout, 1.0 / 30);  // the outlines fade
  return std::max(timeout, 0.0);
}

// ---- screenshots --------------------------------------------------------------------------

// The caption under a screenshot: what the image shows (the snapshot's inputs).
std::string App::captionText(const CaptureSpec& spec) const {
  if (!snapshot_) return "attnscope";
  const Workspace& in = *snapshot_->inputs;
  const ModelConfig& m = in.model;
  const int T = static_cast<int>(in.embeddings.rows()), H = headCount(m);
  char buf[512];
  // A name and its number stay on one line when the caption wraps ("T 6", never "T" then "6"): a
  // no-break space, which the wrapping does not break at.
  if (isHeatmapStage(spec.panel)) {  // a single map: what it is, compactly
    const std::string head =
        H > 1 ? " · head\u00a0" + std::to_string(spec.head + 1) + "\u00a0of\u00a0" + std::to_string(H) : "";
    std::snprintf(buf, sizeof buf, "%s%s · %s · T\u00a0%d · seed\u00a0%u", describeModel(m).c_str(), head.c_str(),
                  captureSubject(spec.panel, m).c_str(), T, m.seed);  // the stage's title, never its id
  } else {
    std::snprintf(buf, sizeof buf, "attnscope · %s · T\u00a0%d · d_in\u00a0%d · d_out\u00a0%d · seed\u00a0%u",
                  describeModel(m).c_str(), T, static_cast<int>(in.embeddings.cols()), m.d_out, m.seed);
  }
  return buf;
}

std::string App::capture(const CaptureSpec& spec, const std::string& path) {
  if (!hooks_.capture.frame) return "no window to render with";
  Workspace shown = snapshot_ ? *snapshot_->inputs : doc_.workspace();  // the PNG carries what it shows
  shown.view = savedView(view_, shown.view);
  caption_ = spec.caption ? captionText(spec) : "";
  const ViewState saved = view_;
  if (spec.panel != "heatmaps" && isMainTab(spec.panel)) view_.tab = spec.panel;  // that tab's view
  if (isHeatmapStage(spec.panel)) {  // that head alone, so the map is as large as it gets
    view_.head = spec.head;
    view_.highlight.clear();  // and never dimmed by a lesson's step
    view_.tab = "heatmaps";
    Stage stage = Stage::Weights;
    ModuleMap module = ModuleMap::Output;
    if (parseModuleMap(spec.panel, &module)) {
      // A map of the module (the output, …): that map alone, whether or not its column is shown —
      // hidden by default, as the figure's SVG and PDF need no column either.
      view_.show.fill(false);
      view_.show_module.fill(false);
      view_.show_module[static_cast<std::size_t>(module)] = true;
    } else {
      parseStage(spec.panel, &stage);
      heatmap_grid_.reveal(spec.head, stage);  // and in view, where the grid scrolls for the numbers
    }
  }
  int w = 0, h = 0;
  hooks_.size(&w, &h);
  capturing_ = true;
  setHeatmapColouringSynchronous(true);  // every map in colour, no placeholders
  CaptureHooks hooks = hooks_.capture;
  hooks.base_scale = uiScale();  // a figure has the text size of the window, k× larger
  if (isHeatmapStage(spec.panel)) {
    // One map is laid out as at 100 % in a window that much larger: the whole map fits at any text
    // size (in the window itself large text may leave room for part of it only), its text that large.
    w = static_cast<int>(std::lround(w * view_.textScale()));
    h = static_cast<int>(std::lround(h * view_.textScale()));
  }
  const std::string error = capturePng(spec, w, h, hooks, path, dumpWorkspace(shown));
  setHeatmapColouringSynchronous(false);
  capturing_ = false;
  heatmap_grid_.reveal(-1, Stage::Weights);
  view_ = saved;
  caption_.clear();
  return error;
}

void App::recordState() const {
  const Workspace& ws = doc_.workspace();
  const ModelConfig& m = ws.model;
  Workspace saved = ws;
  saved.view = savedView(view_, ws.view);
  nlohmann::json& state = layout().state();
  state.update({{"variant", variantId(m.variant)},
                {"d_out", m.d_out},
                {"num_heads", m.num_heads},
                {"seed", m.seed},
                {"token", view_.token},
                {"batch", view_.batch},
                {"head", view_.head},
                {"theme", view_.light_theme ? "light" : "dark"},
                {"version", doc_.version()},
                {"computing", computing_},
                {"settled", settled()},
                {"engine_error", engine_error_},
                {"last_screenshot", last_screenshot_},
                {"workspace", workspaceToJson(saved)},
                {"file", doc_.file()},
                {"dirty", doc_.dirty()},
                {"can_undo", doc_.history().canUndo()},
                {"history_bytes", doc_.history().bytes()},
                {"pinned", pinned_ != nullptr},
                {"title", windowTitle()},
                {"toast", toast_.text},
                {"toast_error", toast_.error},
                {"prompt", pending_ ? pending_->name : ""},
                {"after_save", after_save_ ? after_save_->name : ""},
                {"text_size", view_.text_size},
                {"ui_scale", uiScale()},
                {"font_px", {{"ui", fonts().ui ? fonts().ui->FontSize : 0.0f}, {"cells", fonts().small ? fonts().small->FontSize : 0.0f}}},
                {"fullscreen", isFullscreen()},
                {"window", {ImGui::GetMainViewport()->Size.x, ImGui::GetMainViewport()->Size.y}},
                {"shown_panels", {{"model", view_.modelShown()},
                                  {"inputs", view_.inputsShown()},
                                  {"inspector", view_.inspectorShown()},
                                  {"status", view_.show_status},
                                  {"statistics", view_.statisticsShown()},
                                  {"presentation", view_.presentation}}}});  // update: panels add their own fields
  state["shown_panels"]["lesson"] = lesson_.open();
  lesson_.recordState(state);  // lesson_step (1-based, 0 = none), lesson_maps, …
  if (!snapshot_) return;
  // What is on screen: the snapshot's tokens, and (small inputs) its numbers, for tests to hold
  // against `attnscope-cli trace`.
  const Snapshot& s = *snapshot_;
  state["tokens"] = s.tokens();
  state["trace_version"] = s.serial;
  state["snapshot_version"] = s.version;
  if (s.tokenCount() <= 64) {
    auto rows = [](const Matrix& mat) {
      nlohmann::json out = nlohmann::json::array();
      for (int i = 0; i < mat.rows(); ++i) out.push_back(std::vector<float>(mat.row(i).data(), mat.row(i).data() + mat.cols()));
      return out;
    };
    nlohmann::json heads = nlohmann::json::array();
    for (const HeadTrace& h : s.shown().heads) heads.push_back({{"weights", rows(h.weights)}, {"context", rows(h.context)}});
    state["trace"] = {{"batch", s.batch}, {"output", rows(s.shown().output)}, {"heads", heads}};
  }
}

}  // namespace attnscope
