#include "state/controller.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <functional>
#include <limits>
#include <string_view>

#include <sys/stat.h>

#include "editing/token_table.h"
#include "engine/errors.h"
#include "formats/atomic_file.h"
#include "formats/export.h"
#include "formats/pytorch_script.h"
#include "formats/utf8.h"
#include "formats/workspace_file.h"
#include "formats/zip_archive.h"  // printableText
#include "learn/run_model.h"
#include "lm/model_pass.h"
#include "state/screenshot_paths.h"

namespace attnscope {

// Between a toast's note and the hint to make room after it ("Opened … · Text size 175 %: …").
constexpr std::string_view kHintSeparator = "  ·  ";

namespace fs = std::filesystem;

Controller::Controller(Document document, ViewState view, bool interactive, ControllerHooks hooks)
    : doc_(std::move(document)),
      base_limits_(doc_.limits()),
      view_(std::move(view)),
      exec_{true, 0},  // the parallel path, one thread per processor
      interactive_(interactive),
      hooks_(std::move(hooks)) {
  if (view_.screenshot_dir.empty()) view_.screenshot_dir = defaultScreenshotFolder();
  clampView();
}

// What a pinned result holds while B is edited: its maps (one element's, as its trace kept them) and,
// at most, a difference map of every T × T stage of every head beside them in the Compare tab.
std::int64_t Controller::pinnedBytes(const Snapshot& a) {
  const Workspace& in = *a.inputs;
  const int T = static_cast<int>(in.embeddings.rows()), d_in = static_cast<int>(in.embeddings.cols());
  std::int64_t square_stages = 0;
  for (const StageInfo& s : stageTable())  // the tril route's own maps only on that route
    square_stages += s.square && s.heatmap && (!s.tril_route || trilRoute(in.model)) ? 1 : 0;
  return estimateCost(in.model, T, d_in, 1).map_bytes + square_stages * headCount(in.model) *
                                                            static_cast<std::int64_t>(T) * T *
                                                            static_cast<std::int64_t>(sizeof(float));
}

Limits Controller::limits(std::int64_t memory_budget_bytes, bool budget_bounds_models) {
  Limits l;
  l.traced_elements = 2;
  l.max_memory_bytes = memory_budget_bytes;
  if (budget_bounds_models) l.max_model_bytes = memory_budget_bytes;
  return l;
}

void Controller::holdBeside(std::int64_t held) {
  Limits l = base_limits_;
  l.held_bytes = held;
  try {
    doc_.setLimits(l);
  } catch (const InputError& e) {
    throw InputError(std::string("Not pinned: holding this result as A as well would pass the memory budget (") +
                     e.what() + ")");
  }
}

void Controller::viewChanged(const ViewState& before) {
  if (view_.text_size != before.text_size && hooks_.text_size_changed) hooks_.text_size_changed();
  if (view_.light_theme != before.light_theme && hooks_.theme_changed) hooks_.theme_changed();
}

// [SECTION] applying commands ---------------------------------------------------------------

void Controller::fail(const Command& c, const std::string& message, double now) {
  if (c.listener) c.listener->refused(message);  // the sender hears why; the window shows it too
  if (c.script_index >= 0)
    failures_.push_back({c.script_index, c.name, message});
  else
    showToast(message, true, now);
}

// Tells whoever waits (a channel message) that `c` was applied. model_open and lesson_open tell
// when the model or the lesson is open (openLoadedModel, openCheckedLesson), not when the reading
// or the check starts.
void Controller::applied(const Command& c, bool started) {
  const bool finishes_later = c.id() == CommandId::ModelOpen || c.id() == CommandId::LessonOpen;
  if (c.listener && finishes_later != started) c.listener->applied();
}

void Controller::update(double now) {
  // The hint to make room is void once the side panels are gone (a lesson opened in presentation
  // after the start's hint, or F10 pressed): it asked for exactly that.
  if (view_.presentation && toast_.hint_room != std::string::npos) {
    if (toast_.hint_room == 0)
      toast_ = {};
    else
      toast_.text = toastNote(), toast_.hint_room = std::string::npos;
  }
  // A lesson checked off the UI thread: it opens now, before the commands queued behind it.
  if (auto checked = lesson_check_.poll()) {
    if (toast_.text.rfind("Checking the lesson ", 0) == 0) endProgress();  // the progress is over
    const Command c = checked->command;
    try {
      openCheckedLesson(std::move(*checked), now);
      applied(c, false);
    } catch (const InputError& e) {
      fail(c, e.what(), now);
    }
  }
  if (lesson_check_.busy())  // what is being checked, and how far it got
    toast_ = {"Checking the lesson " + lesson_check_.file() + " … step " + std::to_string(lesson_check_.step() + 1) +
                  "  (File › Close lesson stops it)",
              false, now + 0.5};
  // A model read off the UI thread: it opens now, before the commands queued behind it.
  if (auto loaded = model_load_.poll()) {
    model_loading_.reset();
    if (toast_.text.rfind("Opening the model ", 0) == 0) endProgress();  // the progress is over
    const Command c = loaded->command;
    const bool users_own = c.script_index < 0 && !c.listener && hooks_.model_read;  // perhaps from its dialog
    try {
      if (loaded->model && asksFirst(c)) {  // read whole: now the typed text it would replace is asked about
        askUnsaved(c);                      // (the answer reads it again: the file as it is then)
        model_load_error_.clear();
        if (users_own) hooks_.model_read(c.text("path"), "");
      } else {
        openLoadedModel(std::move(*loaded), now);
        model_load_error_.clear();
        applied(c, false);
        if (users_own) hooks_.model_read(c.text("path"), "");
      }
    } catch (const InputError& e) {
      model_load_error_ = e.what();
      model_open_note_.clear();  // about that model: never said with another's
      if (!users_own || !hooks_.model_read(c.text("path"), e.what())) fail(c, e.what(), now);
    }
  }
  watchFiles(now);
  updateLearning(now);
  for (const std::string& why : queue_.takeRefusals()) {
    showToast(why, true, now);
    toast_.refused_at = now;
  }
  // Only the commands queued before this call: a capture draws frames, and panels push more.
  for (std::size_t n = queue_.size(); n > 0 && !queue_.empty(); --n) {
    const CommandId next = queue_.front().id();
    // A script's (or a message's) command after learn_step waits for those steps; the user's own
    // clicks and the run's controls do not.
    const Command& front = queue_.front();
    if (learn_.stepping() && (front.script_index >= 0 || front.listener) && next != CommandId::LearnPause &&
        next != CommandId::LearnClose && next != CommandId::Quit)
      break;
    if (commandInfo(next).has(kWaitsForResult) && !settled()) {  // for the newest, complete result:
      updateEngine();  // one finished since the last frame is taken now, not a frame later
      if (!settled()) break;
    }
    // While a lesson is checked, what comes after its lesson_open waits for it (a script's next
    // step, a key); another lesson or closing stops the check.
    if (lesson_check_.busy() && next != CommandId::LessonOpen && next != CommandId::LessonClose) break;
    // … and while a model is read, what comes after its model_open waits for it too.
    if (model_load_.busy() && next != CommandId::ModelOpen && next != CommandId::ModelClose) break;
    const Command c = queue_.pop();
    if (c.listener && c.listener->refusedAlready()) continue;  // the message stopped at an earlier command
    // A message says what the last change did: the user's next change of the workspace or model
    // ends it unless it says something itself ("Closed the model" had stood under two presets).
    // A value a panel refused ("1e400") is an error a later change makes old news (not one in the
    // same frame: it would never be seen); other errors stay their time.
    const bool old_refusal = toast_.refused_at >= 0 && now > toast_.refused_at;
    const bool ends_message = c.script_index < 0 && !c.listener && (!toast_.error || old_refusal) &&
                              toast_.hint_room == std::string::npos && !model_load_.busy() && !lesson_check_.busy() &&
                              (c.info().target == CommandTarget::Document || c.info().target == CommandTarget::Model);
    const std::uint64_t messages_before = messages_shown_;
    try {
      const bool asks = asksBeforeApplying(c) && asksFirst(c);  // applied once answered, if it is
      apply(c, now);
      if (ends_message && messages_shown_ == messages_before) toast_ = {};
      if (!asks) applied(c, true);
    } catch (const InputError& e) {
      fail(c, e.what(), now);
    }
    updateEngine();  // a screenshot right behind an edit waits for that edit's result
  }
  const bool saving = hooks_.saving && hooks_.saving();
  if (after_save_ && queue_.empty() && after_typing_.empty() && !saving) {  // the save dialog was cancelled
    showToast("Not saved, so not " + actionText(*after_save_) + ": the changes are still here", true, now);
    notApplied(*after_save_, "the save it waited for was cancelled");
    after_save_.reset();
  }
  updateEngine();
}

// View › Reload on change: the document's file, or the open model's weights, rewritten by another
// program (a notebook saving over it) is taken again — the workspace as one undo step (`reload`,
// queued behind what is queued), a model opened again with its text and layer. Looked at four
// times a second; a file that cannot be read as it stands (a write half done) is refused once and
// tried again at its next change.
void Controller::watchFiles(double now) {
  if (!view_.watch || now < next_watch_ || model_load_.busy()) return;
  next_watch_ = now + 0.25;
  if (model_.given()) return;  // maps as they came: no file of theirs
  if (model_.isOpen()) {
    const FileStamp stamp = fileStamp(watched_model_);
    if (stamp.exists && stamp != watched_model_stamp_) {
      watched_model_stamp_ = stamp;
      nlohmann::json open = {{"path", model_.model()->path}, {"num_heads", model_.model()->config.heads}};
      queue_.push(makeCommand("model_open", open));
      queue_.push(makeCommand("text", {{"ids", model_.ids()}}));
      queue_.push(makeCommand("select_layer", {{"layer", model_.layer()}, {"head", view_.head}}));
    }
    return;
  }
  if (!doc_.fileChangedOnDisk()) return;
  const FileStamp stamp = fileStamp(doc_.file());
  if (stamp == reload_tried_) return;
  reload_tried_ = stamp;
  queue_.push(makeCommand("reload"));
}

// A lesson asks once it is checked (openCheckedLesson), a model once it is read (update): a damaged
// one never asks (File › Open model… of a truncated file had asked Save or Discard, then failed).
bool Controller::asksBeforeApplying(const Command& c) {
  return c.id() != CommandId::LessonOpen && c.id() != CommandId::ModelOpen;
}

bool Controller::asksFirst(const Command& c) const {
  const CommandInfo& info = c.info();
  if (!interactive_ || (c.has("discard") && c.flag("discard"))) return false;
  bool loses = false;
  if (info.has(kAsksFirst)) {
    loses = unsaved();
  } else if (info.has(kAsksModelText) && modelTextUnsaved()) {  // closing the model, or putting another in its place
    // The same file again keeps its text: the one open, or a workspace's queued behind this
    // command, which opens it at its text after it (`attnscope --model M` restoring an autosave of M
    // had asked about M's text before it opened). One already being read is replaced by this one.
    const std::string path = c.id() == CommandId::ModelOpen ? c.text("path") : "";
    const Command* queued = queue_.newest(CommandId::ModelOpen);
    const bool saved_behind = queued != nullptr && openingSavedModel();  // (the newest asked is the queued one)
    loses = path.empty() || !(model_.isAt(path) || (saved_behind && sameModelFile(saved_model_.path, path)));
  }
  return loses && (info.has(kAsksScripts) || c.script_index < 0);  // scripts run unattended
}

void Controller::askUnsaved(const Command& c) {
  // One question at a time: the open one stays, and what asked second is refused (Ctrl+Q over the
  // prompt of an open had put the quit's prompt in its place, the open dropped without a word).
  if (pending_ || after_save_)  // asking, or saving as the answer asked
    throw InputError(c.name + ": not now: the window is asking about the unsaved changes before " +
                     prompts_.unsaved_doing + " (Save, Discard or Cancel first)");
  pending_ = c;  // the prompt's answer (the `unsaved` command) carries on with it
  prompts_.unsaved_action = c.name;
  prompts_.unsaved_doing = actionText(c);
  // The model's typed text said as such: "the changes to this untitled workspace" before a preset
  // had not told that the text would go.
  const std::string name = doc_.file().empty() ? "this untitled workspace" : fs::path(doc_.file()).filename().string();
  const bool text = modelTextUnsaved();
  prompts_.unsaved_what = !text          ? "the changes to " + name
                          : doc_.dirty() ? "the changes to " + name + " and the model's typed text"
                                         : "the model's typed text (in " + name + ")";
}

// What asked first, once answered (Discard, or Save done): applied, and a notebook's message that
// sent it told how it went, as when nothing asks (Controller::update).
void Controller::applyAnswered(const Command& c, double now) {
  try {
    apply(c, now);
  } catch (const InputError& e) {
    if (c.listener) c.listener->refused(e.what());
    throw;
  }
  applied(c, true);
}

// … or not applied (Cancel, a save that did not happen): its message hears why at once (it had
// waited out the channel's 600 s).
void Controller::notApplied(const Command& c, const std::string& why) {
  if (c.listener) c.listener->refused(c.name + ": not applied: " + why);
}

std::string Controller::actionText(const Command& c) const {
  switch (c.id()) {
    case CommandId::Open: return "opening " + fs::path(c.text("path")).filename().string();
    case CommandId::New: return "starting over with the book's example";
    case CommandId::Preset: return "loading the preset " + c.text("name");
    case CommandId::LessonOpen: return "opening the lesson " + fs::path(c.text("path")).filename().string();
    case CommandId::ModelOpen: return "opening the model " + fs::path(c.text("path")).filename().string();
    case CommandId::ModelClose: return "closing the model";
    case CommandId::Learn: return "starting a training run in the model's place";
    case CommandId::Attention: return "showing the notebook's attention maps in the model's place";
    default: return "quitting";
  }
}

void Controller::apply(const Command& c, double now) {
  if (asksBeforeApplying(c) && asksFirst(c)) return askUnsaved(c);
  switch (c.info().target) {
    case CommandTarget::Document: return applyDocument(c, now);
    case CommandTarget::View: return applyView(c, now);
    case CommandTarget::App: return applyApp(c, now);
    case CommandTarget::Model: return applyModel(c, now);
  }
}

void Controller::applyDocument(const Command& c, double now) {
  // An undo or redo takes away the note of the edit it undoes (or redoes: said once is enough),
  // whether it acts on the model's text or on the document; an error stays until it times out.
  if ((c.id() == CommandId::Undo || c.id() == CommandId::Redo) && !toast_.error) toast_ = {};
  if (model_.isOpen()) {
    // Another workspace closes the model once it is in place (a refused one leaves the model
    // open); an edit would change the workspace set aside, unseen.
    switch (c.id()) {
      case CommandId::Open:
      case CommandId::Preset:
      case CommandId::New:
      case CommandId::Restore:
      case CommandId::Workspace:
      case CommandId::BookExample:
        applyToDocument(c, now);
        if (model_.isOpen()) {  // the new workspace's view, not the chapter's before the model
          const ViewState replaced_view = view_;
          closeModel(now, c.id() != CommandId::Restore);  // a restore's "… unsaved work is back" stays
          view_ = replaced_view;
          clampView();
        }
        return;
      case CommandId::Undo:  // the text the model reads is what is edited now
      case CommandId::Redo:
        if (model_.undoTarget() == ModelSession::UndoTarget::Text) {
          c.id() == CommandId::Undo ? model_.undoText() : model_.redoText();
          view_.token = model_.tokenCount() - 1;
          clampView();
          return;
        }
        [[fallthrough]];
      default:
        if (model_.given())
          throw InputError(c.name +
                           ": attention maps as they came are read only — close them (File › Close model) "
                           "to edit the chapter's workspace");
        throw InputError(c.name +
                         ": a trained model's layers are read only — change its text, or close the model "
                         "(File › Close model) to edit the chapter's workspace");
    }
  }
  applyToDocument(c, now);
}

// The selected token is a token, not a row number: an edit that moves rows takes it along (the
// removed token's selection goes to the one after it, clamped as always).
namespace {
int tokenAfterEdit(const Command& c, int token) {
  switch (c.id()) {
    case CommandId::MoveToken: {
      const int from = c.integer("from"), to = c.integer("to");
      if (token == from) return to;
      if (from < token && token <= to) return token - 1;
      if (to <= token && token < from) return token + 1;
      return token;
    }
    case CommandId::RemoveToken: return token > c.integer("index") ? token - 1 : token;
    case CommandId::AddToken: return c.has("at") && c.integer("at") <= token ? token + 1 : token;
    default: return token;
  }
}
}  // namespace

namespace {
// ", autosaved at 14:32" (local time; the day too when it was not today), or "" when unknown.
std::string autosavedAt(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  const std::time_t then = st.st_mtime, now = std::time(nullptr);
  std::tm a{}, b{};
  localtime_r(&then, &a);
  localtime_r(&now, &b);
  char text[32];
  const bool today = a.tm_year == b.tm_year && a.tm_yday == b.tm_yday;
  std::strftime(text, sizeof text, today ? "%H:%M" : "%Y-%m-%d %H:%M", &a);
  return std::string(", autosaved at ") + text;
}
}  // namespace

void Controller::applyToDocument(const Command& c, double now) {
  if (c.id() == CommandId::Restore) {  // an autosave that cannot be read is kept aside, never overwritten
    try {
      doc_.apply(c);
    } catch (const InputError& e) {
      const std::string kept = moveAside(c.text("path"));
      throw InputError(std::string("The last session's autosave could not be read (") + e.what() + ")" +
                       (kept.empty() ? "" : "; it is kept as " + kept));
    }
    replaced(c, now);
    // Work the user never saved, back on screen: said, so it is not taken for what the file holds
    // (a note already shown, such as another window's work kept aside, follows it).
    if (doc_.dirty()) {
      std::string text = "The last session's unsaved work is back (" +
                         (doc_.file().empty() ? std::string("untitled") : fs::path(doc_.file()).filename().string()) +
                         autosavedAt(c.text("path")) + "): Ctrl+S saves it.";
      if (!toast_.text.empty() && now < toast_.until && toast_.hint_room != 0)  // the note, not the hint
        text += " " + toastNote();
      notify(text, now);
      if (saved_model_.unsaved) model_open_note_ = text;  // said again with its model's opening, which follows
    }
    return;
  }
  if (c.id() == CommandId::Open && unsaved() && interactive_ && !(c.has("discard") && c.flag("discard"))) {
    // A script's open in a session the user sees is not asked about. Opening starts a new
    // history, so the unsaved work would be gone (and the autosave overwritten): it is written
    // to the state folder first, and the user told where.
    const std::string kept = keepUnsaved(doc_, chapterView(), savedModel());
    try {
      doc_.apply(c);
    } catch (const InputError&) {  // not opened: the work is still on screen
      if (!kept.empty()) std::remove(kept.c_str());
      throw;
    }
    replaced(c, now);
    if (!kept.empty()) notify("Opened " + c.text("path") + ". The unsaved changes before it are kept in " + kept, now);
    return;
  }
  if (c.id() == CommandId::PasteEmbeddings || c.id() == CommandId::PasteParameters) return paste(c, now);
  if (doc_.apply(c) == DocumentChange::Replaced) return replaced(c, now);
  view_.token = tokenAfterEdit(c, view_.token);
  if (!doc_.note().empty()) showToast(doc_.note(), false, now);  // num_heads or seed moved
  clampView();
}

void Controller::paste(const Command& c, double now) {
  Command filled = c;
  if (!c.has("text")) {  // Edit › Paste, Ctrl+Shift+V, or a script asking for the real clipboard
    const std::string text = hooks_.clipboard_text ? hooks_.clipboard_text() : "";
    if (text.find_first_not_of(" \t\r\n") == std::string::npos)
      throw InputError(
          c.id() == CommandId::PasteParameters
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

// Another workspace (open, new, a preset, restore, swap): the view it was saved with, but what
// belongs to the room stays (docs/DESIGN.md §3.1 "What a new document keeps").
void Controller::replaced(const Command& c, double now) {
  const ViewState before = view_;
  view_ = viewFromJson(doc_.workspace().view);   // the view the workspace was saved with
  view_.screenshot_dir = before.screenshot_dir;  // the machine's folder, not the file's
  const bool fresh = c.id() == CommandId::Preset || c.id() == CommandId::New;
  if (fresh) view_.light_theme = before.light_theme;  // a preset keeps the theme
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
  view_.watch = before.watch;                        // this session's choice: another file is watched as this one was
  keep("weights_range", &ViewState::weights_fixed);  // a lesson's, or the user's choice
  view_.highlight = before.highlight;                // the open lesson's step, not the workspace's
  if (c.id() == CommandId::Restore)                  // the autosave's view yields to what this session was started with
    for (const auto& [field, value] : command_line_view_.items()) setViewField(view_, field, value);
  clampView();
  viewChanged(before);
  if (hooks_.document_replaced) hooks_.document_replaced();
  if (c.id() == CommandId::Open) {
    if (hooks_.file_used) hooks_.file_used(c.text("path"));
    showToast("Opened " + c.text("path"), false, now);
  }
  // The model it was saved with, opened again at its text, layer and head (savedModel). One that is
  // gone is said by model_open's refusal, the workspace kept.
  if ((c.id() == CommandId::Open || c.id() == CommandId::Restore) && saved.is_object() &&
      saved.contains("trained_model")) {
    SavedModelOpening opening;
    try {
      opening = readSavedModel(saved["trained_model"]);
    } catch (const InputError& e) {
      return showToast("The rest of the workspace is open, but " + std::string(e.what()), true, now);
    }
    // The session's start restoring the last one's autosave while the command line opens a model:
    // the same file opens at the autosave's text (it had opened at its first text, and the autosave
    // was overwritten with it); another file is opened as asked, and the autosave, its model's text
    // unsaved, is kept aside and said. The offer's Restore is the user's choice: its model comes back.
    const Command* asking = askedModelOpen();  // else the open model's file
    const std::string asked = asking                                                 ? asking->text("path")
                              : model_.isOpen() && model_.model() && !model_.isRun() ? model_.model()->path
                                                                                     : "";
    if (c.id() == CommandId::Restore && !restoring_offer_ && !asked.empty() &&
        !sameModelFile(asked, opening.args["path"].get<std::string>())) {
      if (holdsUnsavedWork(saved)) {  // said now, and again with the model's opening, which follows
        const std::string kept = moveAside(c.text("path"));
        model_open_note_ = "The last session's text for the model " + opening.args["path"].get<std::string>() +
                           (kept.empty() ? " could not be kept aside"
                                         : " is kept in " + kept + " (File › Open brings it back)");
        notify(model_open_note_, now);
      }
      return;
    }
    saved_model_.path = opening.args["path"].get<std::string>();
    // An autosave's text, unsaved when the session ended, stays unsaved once back.
    saved_model_.unsaved = c.id() == CommandId::Restore && saved.value("dirty", true);
    saved_model_.left_out = std::move(opening.left_out);
    saved_model_.draft = std::move(opening.draft);
    saved_model_.autosave = c.id() == CommandId::Restore ? c.text("path") : std::string();
    opening.args["discard"] = true;  // the model open now goes with the workspace it was asked about
    queue_.push("model_open", std::move(opening.args));
  }
}

const Command* Controller::askedModelOpen() const {
  if (const Command* queued = queue_.newest(CommandId::ModelOpen)) return queued;
  return model_loading_ ? &*model_loading_ : nullptr;
}

int Controller::tokenCount() const {
  return model_.isOpen() ? model_.tokenCount() : static_cast<int>(doc_.workspace().tokens.size());
}

int Controller::headsShown() const {
  if (model_.given()) return model_.given()->heads;
  return model_.isOpen() ? model_.model()->config.heads : headCount(doc_.workspace().model);
}

void Controller::clampView() {
  const int T = tokenCount();
  view_.token = std::clamp(view_.token, 0, T - 1);
  if (view_.key >= T) view_.key = -1;
  if (view_.head >= headsShown()) view_.head = -1;
  if (!mainTabShown(view_.tab, model_.showing())) view_.tab = model_.given() ? "layers" : "heatmaps";
  view_.batch = model_.isOpen() ? 0 : std::clamp(view_.batch, 0, doc_.workspace().model.batch_size - 1);
}

void Controller::applyView(const Command& c, double now) {
  const Workspace& ws = doc_.workspace();
  const int T = tokenCount(), H = headsShown();
  const std::vector<std::string>& tokens = model_.isOpen() ? model_.tokens() : ws.tokens;
  const auto step = [&] { return c.has("step") ? c.integer("step") : 0; };
  switch (c.id()) {
    case CommandId::SelectToken:
      view_.token = c.has("index") ? indexArgument(c, T, "token") : std::clamp(view_.token + step(), 0, T - 1);
      break;
    case CommandId::SelectKey: view_.key = indexArgument(c, T, "token", "none"); break;
    case CommandId::SelectHead:  // stepping cycles: all heads → 1 → 2 → … → all heads
      if (c.has("index"))
        view_.head = indexArgument(c, H, "head", "all heads");
      else
        view_.head = ((view_.head + 1 + step()) % (H + 1) + (H + 1)) % (H + 1) - 1;
      break;
    case CommandId::GoTo: {  // a token or a range of a long input: zoomed to, the first selected
      std::pair<int, int> range;
      if (c.has("text")) {
        range = findTokens(tokens, c.text("text"));
      } else {
        if (!c.has("index")) throw InputError("go_to: give `text` or `index`");
        range.first = range.second = indexArgument(c, T, "token");
        if (c.has("to")) {
          const int to = c.integer("to");
          if (to < 0 || to >= T)
            throw InputError("to: no token " + std::to_string(to) + " (there are " + std::to_string(T) + ")");
          range = {std::min(range.first, to), std::max(range.first, to)};
        }
      }
      view_.token = range.first;
      if (view_.tab != "heatmaps" && view_.tab != "compare") view_.tab = "heatmaps";
      if (hooks_.go_to) hooks_.go_to(range.first, range.second, T);
      break;
    }
    case CommandId::SelectBatch:
      view_.batch = indexArgument(c, model_.isOpen() ? 1 : ws.model.batch_size, "batch element");
      break;
    case CommandId::View: {
      const ViewState before = view_;
      if (c.text("field") == "tab" && c.args["value"].is_string() &&
          !mainTabShown(c.args["value"].get<std::string>(), model_.showing())) {
        const std::string tab = c.args["value"].get<std::string>();
        ViewState probe = view_;
        setViewField(probe, "tab", c.args["value"]);  // an unknown tab is refused there, naming the tabs
        const char* why = model_.isOpen() ? " tab while a trained model is open"
                                          : " tab without a trained model (File › Open model…)";
        throw InputError("view tab: no " + tab + why);
      }
      // The selection's counts are the text's and the model's: a command names one that is there
      // (`view head 9` of 4 heads had been taken and clamped, and said nothing). A saved view's
      // are clamped instead, its text perhaps another.
      checkViewSelection(c, H, T, model_.isOpen() ? 1 : ws.model.batch_size);
      setViewField(view_, c.text("field"), c.args["value"]);
      if (c.text("field") == "lock_range") view_.locked_heads.clear();  // updateEngine keeps the ranges on screen
      clampView();
      viewChanged(before);
      if (view_.text_size > before.text_size) hintIfCramped(now, false);
      break;
    }
    default: break;
  }
}

void Controller::applyApp(const Command& c, double now) {
  using Id = CommandId;
  switch (c.id()) {
    case Id::LessonOpen: return applyLesson(c, now);  // closes a model once checked (openCheckedLesson)
    case Id::LessonStep:
    case Id::LessonNext:
    case Id::LessonBack:
    case Id::LessonClose: return applyLesson(c, now);
    case Id::Engine:
      if (c.has("parallel")) exec_.parallel = c.flag("parallel");
      if (c.has("threads")) {
        const int threads = c.integer("threads");
        if (threads < 0 || threads > 256) throw InputError("threads: must be between 0 (all cores) and 256");
        exec_.threads = threads;
      }
      break;
    case Id::Screenshot: {
      // A lesson's step is about the selected token: its picture keeps the outline (capture.cpp).
      CaptureSpec spec{static_cast<float>(c.has("scale") ? c.number("scale") : view_.screenshot_scale),
                       c.has("panel") ? c.text("panel") : "", c.has("head") ? c.integer("head") : selectedHead(),
                       view_.caption, c.has("selection") ? c.flag("selection") : lesson_.open()};
      std::string error, path = c.text("path");
      if (path.empty()) path = timestampedPath(view_.screenshot_dir, &error);
      if (error.empty()) error = hooks_.capture ? hooks_.capture(spec, path) : "no window to render with";
      if (!error.empty()) throw InputError("screenshot failed: " + error);
      last_screenshot_ = path;
      showToast("Saved " + path, false, now);
      break;
    }
    case Id::Pin:  // the newest result (update() waited for it), of what is shown
      if (!shown())
        throw InputError(engine_error_.empty() ? "nothing computed yet: nothing to pin"
                                               : "nothing to pin: " + engine_error_);
      if (model_.given()) throw InputError("attention maps as they came have only their weights: nothing to compare");
      // A holds its maps while B is edited, and Compare draws B − A beside them: that is counted
      // against the budget from now on, so every edit while pinned is checked with it.
      holdBeside(pinnedBytes(*snapshot_));
      pinned_ = snapshot_;
      pinned_head_ = view_.head;
      view_.tab = "compare";
      showToast("Pinned as A: change anything, the Compare tab shows A, B and B − A", false, now);
      break;
    case Id::Unpin:
      if (!pinned_) throw InputError("nothing is pinned");
      unpin();
      break;
    case Id::Swap: return swap(c, now);
    case Id::Wait: break;  // update() waited for the newest result
    case Id::Save: return save(c, now);
    case Id::ExportTrace:
    case Id::ExportMap: {
      // What is shown only: with a model's pass failed, the chapter's last trace is no export of it.
      if (!shown())
        throw InputError(engine_error_.empty() ? "nothing computed yet" : "nothing to export: " + engine_error_);
      ExportFormat format;
      if (!parseExportFormat(c.text("format"), &format)) throw InputError("format: expected csv, json or npy");
      const std::string path = c.text("path");
      if (!snapshot_->complete)  // a two-part result whose rest is still to come, or never will
        throw InputError(worker_.busy()          ? "the maps are still being computed: export again in a moment"
                         : engine_error_.empty() ? "some of the maps were not computed: change anything to compute them"
                                                 : "some of the maps were not computed: " + engine_error_);
      if (c.id() == Id::ExportTrace && model_.given()) {
        if (format != ExportFormat::Json) throw InputError("format: attention maps as they came export as json");
        return exportAttention(path, now);
      }
      if (c.id() == Id::ExportMap && model_.given() && c.text("stage") != "weights")
        throw InputError("stage: attention maps as they came have only their weights");
      if (c.id() == Id::ExportTrace) {
        // A trained model's layer in JSON: its heads as the Layers tab measures them, beside the trace.
        if (model_.isOpen() && format == ExportFormat::Json) exportAttention(path, now);
        const int files = exportTrace(*snapshot_->inputs, *snapshot_->trace, path, format) +
                          (model_.isOpen() && format == ExportFormat::Json ? 1 : 0);
        showToast("Wrote " + std::to_string(files) + " file" + (files == 1 ? "" : "s") + " to " + path, false, now);
        return;
      }
      // x.png named for a table: refused, as the dialog would have made it x.csv (formats/export.h).
      std::string named = path, named_format, why;
      if (!fileKindOf(path).empty() &&
          (!mapFileFormat(&named, c.text("format"), &named_format, &why) || named_format != c.text("format")))
        throw InputError("Not saved: " + path + " is named as " + fileKindOf(path) + ": a map as " + c.text("format") +
                         " is saved as ." + c.text("format"));
      Stage stage;
      if (!parseStage(c.text("stage"), &stage)) throw InputError("stage: unknown stage '" + c.text("stage") + "'");
      const int head = c.integer("head");
      if (head < 0 || head >= static_cast<int>(snapshot_->shown().heads.size())) throw InputError("head: no such head");
      // CSV with the tokens as a header row and first column, as attnscope-cli writes it (formats/export.h).
      writeFileAtomically(path, exportMap(*snapshot_->trace, snapshot_->shown().heads[head], stage, snapshot_->tokens(),
                                          format));
      showToast("Saved " + path, false, now);
      break;
    }
    case Id::SavePytorch:
    case Id::CopyPytorch: {
      if (model_.isOpen())
        throw InputError(
            "the PyTorch script rebuilds the chapter's workspace: close the model first (a trained "
            "model's layer is exported with Export trace…)");
      const std::string script = pytorchScript(doc_.workspace(), doc_.file().empty() ? "untitled" : doc_.file());
      if (c.id() == Id::CopyPytorch) {
        if (hooks_.set_clipboard) hooks_.set_clipboard(script);
        showToast("PyTorch code copied: paste it into a notebook or run it with /usr/bin/python3", false, now);
      } else {
        if (const std::string why = writtenKindRefusal(c.text("path"), "a PyTorch script"); !why.empty())
          throw InputError("Not saved: " + why);
        writeFileAtomically(c.text("path"), script);
        showToast("Saved " + c.text("path") + "  (run: /usr/bin/python3 " +
                      fs::path(c.text("path")).filename().string() + ")",
                  false, now);
      }
      break;
    }
    case Id::Dialog:
      if (!hooks_.open_dialog) throw InputError("no window for a dialog");
      hooks_.open_dialog(c.text("which"), c.has("stage") ? c.text("stage") : "", c.has("head") ? c.integer("head") : 0,
                         c.has("format") ? c.text("format") : "csv");
      break;
    case Id::Fullscreen: {
      const bool on = c.has("on") ? c.flag("on") : !(hooks_.fullscreen && hooks_.fullscreen());
      const std::string error = hooks_.set_fullscreen ? hooks_.set_fullscreen(on) : "no window";
      if (!error.empty()) throw InputError("full-screen: " + error);
      break;
    }
    case Id::Quit: quit_ = true; break;  // unsaved changes were asked about in apply()
    case Id::Recovery: {                 // the answer to the start's offer (offerRecovery)
      const std::string choice = c.text("choice");
      if (choice != "restore" && choice != "keep")
        throw InputError("choice: expected restore or keep, got \"" + choice + "\"");
      const std::string kept = prompts_.recovery_kept;
      if (kept.empty()) throw InputError("no unsaved changes of the last session are offered");
      prompts_.recovery_kept.clear();
      prompts_.recovery_file.clear();
      if (choice == "restore") {
        Command restore = makeCommand("restore", {{"path", kept}});
        restore.script_index = c.script_index;
        restoring_offer_ = true;
        struct Offered {  // … until the restore is applied, or refused
          bool& flag;
          ~Offered() { flag = false; }
        } offered{restoring_offer_};
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
      prompts_.unsaved_action.clear();
      prompts_.unsaved_doing.clear();
      prompts_.unsaved_what.clear();
      if (choice == "discard") {
        next.args["discard"] = true;
        applyAnswered(next, now);
      } else if (choice == "cancel") {
        notApplied(next, "the window asked first and Cancel was chosen");
      } else if (choice == "save") {  // untitled: the save dialog first; `save` goes on when it is done
        after_save_ = std::move(next);
        apply(makeCommand("save"), now);
      }
      break;
    }
    default: break;
  }
}

void Controller::unpin() {
  pinned_.reset();
  if (hooks_.unpinned) hooks_.unpinned();
  holdBeside(0);
  if (view_.tab == "compare") view_.tab = "heatmaps";
}

// A's settings become the document's, B is pinned in its place.
void Controller::swap(const Command& c, double now) {
  if (!pinned_) throw InputError("nothing is pinned: pin a result as A first");
  if (model_.isOpen() || pinned_->model)
    throw InputError("a trained model's layer cannot become the workspace: Compare shows A and B side by side");
  if (!snapshot_) throw InputError("nothing computed yet");
  const std::shared_ptr<const Snapshot> b = snapshot_;
  // A's workspace must fit beside what B will hold once pinned (the totals differ from B's beside
  // A's): checked first, so a refused swap changes nothing.
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
}

void Controller::save(const Command& c, double now) {
  // Ctrl+S while typing: the typed value first. (A save with a path comes from the Save as
  // dialog, whose name field was typed into: that is the save's own name, nothing to commit.)
  if (typing_ && c.script_index < 0 && !c.has("path")) {
    pushAfterTyping(c, true);
    return;
  }
  // What waited for the save (the prompt's "Save") does not happen when the save does not.
  auto notSaved = [&](const std::string& why) {
    const std::string so = after_save_ ? ", so not " + actionText(*after_save_) : "";
    if (after_save_) notApplied(*after_save_, "the save it waited for failed: " + why);
    after_save_.reset();
    return InputError("Not saved" + so + ": " + why);
  };
  const std::string path = c.has("path") ? c.text("path") : doc_.file();
  if (path.empty()) {  // untitled: ask where
    if (c.script_index >= 0 || !hooks_.open_dialog) throw InputError("path: this workspace is untitled: give a path");
    hooks_.open_dialog("save_as", "", 0, "csv");
    return;
  }
  // Another program wrote the file since it was opened or saved here: saving would destroy that
  // without a word. The user chooses (Overwrite, Save as…, Cancel); a script says `overwrite`.
  if (doc_.fileChangedOnDisk() && documentPath(path) == doc_.file() && !(c.has("overwrite") && c.flag("overwrite"))) {
    if (c.script_index < 0 && interactive_ && hooks_.ask_overwrite) return hooks_.ask_overwrite(path);
    throw notSaved(path + " changed on disk since it was opened or saved (another program wrote it); save with " +
                   "\"overwrite\": true to replace it, or save under another name");
  }
  if (const std::string why = writtenKindRefusal(path, "a workspace"); !why.empty()) throw notSaved(why);
  Workspace ws = doc_.workspace();
  ws.view = savedView(chapterView(), ws.view);
  if (const nlohmann::json model = savedModel(); !model.is_null()) ws.view["trained_model"] = model;
  try {
    saveWorkspace(path, ws);
  } catch (const InputError& e) {
    throw notSaved(e.what());
  }
  doc_.markSaved(path);
  model_text_saved_ = modelText(savedModel());
  if (hooks_.file_used) hooks_.file_used(path);
  showToast("Saved " + path, false, now);
  if (after_save_) {  // the prompt's "Save": now quit, open, … as asked
    const Command next = std::move(*after_save_);
    after_save_.reset();
    applyAnswered(next, now);
  }
}

// [SECTION] a trained model -------------------------------------------------------------------

void Controller::closeModel(double now, bool say) {
  // The chapter's selection as it was before the model; the room's settings (text size, theme,
  // panels) as they are now.
  view_ = chapterView();
  const bool from_file = !model_.saved().is_null();  // opened again at this text (ModelSession::open)
  model_.close();
  if (pinned_ && pinned_->model) unpin();  // a trained layer is nothing to compare the chapter with
  clampView();
  if (hooks_.document_replaced) hooks_.document_replaced();
  const bool learning = learn_showing_;
  if (learning) endLearning();  // its maps were what the views showed
  if (!say) return;
  showToast(learning    ? "Ended the run: the chapter's workspace again"
            : from_file ? "Closed the model: the chapter's workspace again (File › Open model… opens it again "
                          "at its text and layer)"
                        : "Closed the model: the chapter's workspace again",
            false, now);
}

ViewState Controller::chapterView() const {
  if (!model_.isOpen()) return view_;
  ViewState v = view_;
  v.token = chapter_view_.token;
  v.key = chapter_view_.key;
  v.head = chapter_view_.head;
  v.batch = chapter_view_.batch;
  v.tab = chapter_view_.tab;
  v.show = chapter_view_.show;
  v.show_module = chapter_view_.show_module;
  return v;
}

namespace {

// A command's `ids`: token ids, integers ≥ 0 (their vocabulary is the model's to check).
std::vector<int> tokenIdsArgument(const nlohmann::json& j) {
  if (!j.is_array()) throw InputError("ids: expected an array of token ids");
  std::vector<int> ids;
  for (const auto& v : j) {
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > (1 << 30))
      throw InputError("ids: expected token ids (integers ≥ 0), got " + v.dump());
    ids.push_back(v.get<int>());
  }
  return ids;
}

}  // namespace

// The part of a trained_model entry that is the user's work: which model read which text. The
// layer and head are the view's, as the chapter's selection is (they never mark a file unsaved).
nlohmann::json Controller::modelText(const nlohmann::json& entry) {
  if (entry.is_null()) return nullptr;
  return {{"path", entry.value("path", "")},
          {"ids", entry.value("ids", nlohmann::json())},
          {"prepend_eot", entry.value("prepend_eot", false)}};
}

bool Controller::unsaved() const { return doc_.dirty() || modelTextUnsaved(); }

bool Controller::modelTextUnsaved() const {
  // A workspace's model not open yet: its text is as unsaved as the workspace said (an autosave's
  // "dirty"), not text changed since it was opened.
  if (model_.saved().is_null() && openingSavedModel()) return saved_model_.unsaved;
  const nlohmann::json text = modelText(savedModel());
  return !text.is_null() && text != model_text_saved_;
}

nlohmann::json Controller::savedModel() const {
  nlohmann::json m = model_.saved();
  if (!m.is_null()) {
    m["head"] = view_.head;
    return m;
  }
  // A workspace's model still waiting or being read (an open, the autosave's restore): its entry as
  // the workspace gave it, so that a save or an autosave meanwhile keeps it (an autosave written
  // then had dropped it, and a kill right after lost the text).
  if (openingSavedModel()) {
    m = askedModelOpen()->args;
    m.erase("discard");
  }
  return m;
}

bool Controller::openingSavedModel() const {
  const Command* opening = askedModelOpen();
  return opening != nullptr && !saved_model_.path.empty() && opening->text("path") == saved_model_.path;
}

void Controller::setModelDraft(std::uint64_t lineage, const std::string& text) {
  if (model_.isOpen() && !model_.isRun() && !model_.given() && lineage == model_.lineage() &&
      (model_draft_.lineage != lineage || model_draft_.text != text))  // said every frame: copied when it changes
    model_draft_ = {lineage, text};
}

const std::string* Controller::modelDraft() const {
  return model_.isOpen() && model_draft_.lineage == model_.lineage() && !model_draft_.text.empty() ? &model_draft_.text
                                                                                                   : nullptr;
}

nlohmann::json Controller::autosavedModel() const {
  nlohmann::json m = savedModel();
  if (m.is_null()) return m;
  // Not past what a restore reads back (a 2 MB paste would have read as a damaged field).
  if (const std::string* draft = model_.saved().is_null() ? &saved_model_.draft : modelDraft();
      draft != nullptr && !draft->empty() && draft->size() <= kMostDraftBytes)
    m["draft"] = *draft;
  return m;
}

// A trained model's Heatmaps tab shows each head's weights alone, as large as they get (the
// chapter's six maps a head left a 25-token head's weights out of view at 1280 × 720 and 150 %);
// the toggles add the others. The chapter's columns come back with it (chapterView).
void Controller::showWeightsAlone() {
  view_.show.fill(false);
  view_.show[static_cast<std::size_t>(Stage::Weights)] = true;
  view_.show_module.fill(false);
}

void Controller::openLoadedModel(ModelLoad loaded, double now) {
  SavedModelPending saved = std::exchange(saved_model_, {});
  const bool saved_model = loaded.command.text("path") == saved.path;
  if (!loaded.model) {
    std::string error = loaded.error;
    if (saved_model) {
      error += ". The rest of the workspace is open; File › Open model… opens the model from where it is now";
      // An autosave's text of it, unsaved or typed and not applied, is kept aside: the next
      // autosave has no model to keep it with (it was lost with the model gone).
      if (!saved.autosave.empty() && (saved.unsaved || !saved.draft.empty()))
        if (const std::string kept = moveAside(saved.autosave); !kept.empty())
          error += ". Its text from the last session is kept in " + kept +
                   " (File › Open brings it back with the model once it is where it was)";
    }
    throw InputError(error);
  }
  const Command& c = loaded.command;
  if (lesson_.open()) throw InputError("a lesson is open: close it first (File › Close lesson), then open the model");
  if (!model_.isOpen()) chapter_view_ = view_;  // given back by model_close
  if (pinned_) unpin();                         // A belongs to what was shown before
  endLearning();                                // the model shows instead of the run's maps
  const std::optional<bool> eot = c.has("prepend_eot") ? std::optional<bool>(c.flag("prepend_eot")) : std::nullopt;
  // A saved workspace's text, layer and head (savedModel): taken where the model takes them.
  std::optional<ModelSession::Reading> start;
  if (c.has("ids"))
    start = ModelSession::Reading{tokenIdsArgument(c.args["ids"]), eot.value_or(false),
                                  c.has("layer") ? c.integer("layer") : 0};
  model_.open(loaded.model, base_limits_.max_tokens, eot, start);
  watched_model_ = loaded.model->weights_path;  // watched from the file as it was read
  watched_model_stamp_ = loaded.stamp;
  view_.token = model_.tokenCount() - 1;  // the next tokens after the text
  view_.head = -1;
  view_.key = -1;
  view_.tab = "layers";
  std::string note = "Opened " + modelTitle(*loaded.model);
  if (start) {
    std::vector<int> wanted = start->body;
    if (model_.prependEot()) wanted.insert(wanted.begin(), model_.ids().front());
    if (model_.ids() != wanted)
      note += ". Its saved text did not fit the model as it is now (changed since?): it shows its first text";
    else if (c.has("head") && c.integer("head") >= -1 && c.integer("head") < loaded.model->config.heads)
      view_.head = c.integer("head");
  } else if (c.has("layer")) {
    model_.setLayer(std::clamp(c.integer("layer"), 0, model_.layers() - 1));
  }
  if (saved_model && model_.model()->tokenizer && !saved.draft.empty()) {
    note += ". The text typed and not applied in the last session is back in the field: Enter applies it";
    model_draft_ = {model_.lineage(), std::move(saved.draft)};
  }
  showWeightsAlone();
  clampView();
  if (hooks_.document_replaced) hooks_.document_replaced();
  if (saved_model && !saved.left_out.empty()) {
    std::string fields;
    for (const std::string& f : saved.left_out) fields += (fields.empty() ? "" : ", ") + f;
    note += ". Left out of the workspace's trained_model, being damaged: " + fields;
  }
  for (const std::string& n : loaded.model->notes) note += ". " + n;
  if (!model_open_note_.empty()) note += ". " + std::exchange(model_open_note_, std::string());
  // Its text is the user's work from here (unsaved); an autosave's unsaved text is unsaved already.
  model_text_saved_ = saved_model && saved.unsaved ? nlohmann::json() : modelText(savedModel());
  notify(note, now);
}

// The shown layer's heads with what the Layers tab measures of them, as JSON (attention.json in the
// folder `path`): {"format": "attnscope-attention", "version": 1, "title", "tokens", "layer",
// "heads": [{"head", "label", "scores": {…, null when undefined}, "weights"}]} — the whole export of
// given maps, and beside a trained model's layer trace.
void Controller::exportAttention(const std::string& path, double now) {
  const ModelPass* pass = passShown(snapshot_.get(), model_);
  if (pass == nullptr || snapshot_->layer != model_.layer())
    throw InputError("the maps are still being read: export again in a moment");
  const int layer = snapshot_->layer;
  const std::vector<HeadTrace>& traced = snapshot_->shown().heads;
  nlohmann::json heads = nlohmann::json::array();
  for (std::size_t h = 0; h < traced.size(); ++h) {
    const HeadScores& sc = pass->head(layer, static_cast<int>(h)).scores;
    nlohmann::json scores = nlohmann::json::object();
    for (const HeadLabelInfo& info : headLabelTable())
      scores[info.id] = info.has == nullptr || sc.*info.has ? nlohmann::json(sc.*info.score) : nlohmann::json();
    scores["mean_entropy"] = sc.mean_entropy;
    const HeadLabelInfo* label = headLabel(sc);
    const Matrix& w = traced[h].weights;
    nlohmann::json rows = nlohmann::json::array();
    for (Eigen::Index i = 0; i < w.rows(); ++i)
      rows.push_back(std::vector<float>(w.row(i).data(), w.row(i).data() + w.cols()));
    heads.push_back({{"head", h},
                     {"label", label ? nlohmann::json(label->id) : nlohmann::json()},
                     {"scores", scores},
                     {"weights", std::move(rows)}});
  }
  const std::string title = model_.given() ? model_.given()->title : modelName(*model_.model());
  const nlohmann::json out = {{"format", "attnscope-attention"}, {"version", 1},   {"title", title},
                              {"tokens", model_.tokens()},       {"layer", layer}, {"heads", std::move(heads)}};
  std::error_code error;
  std::filesystem::create_directories(path, error);
  if (error) throw InputError(path + ": " + error.message());
  writeFileAtomically((std::filesystem::path(path) / "attention.json").string(), out.dump());
  if (model_.given()) showToast("Wrote attention.json to " + path, false, now);
}

// attention: maps of any model, as they are (docs/DESIGN.md §3.8 "Attention maps as they are"),
// checked whole before anything changes, then shown in the model view as a model's pass is.
void Controller::openGivenAttention(const Command& c, double now) {
  auto g = std::make_shared<GivenAttention>();
  std::vector<std::int64_t> shape;
  std::vector<float> values;
  if (c.arrays && c.arrays->count("maps")) {  // a channel message's tensor
    const nlohmann::json& s = c.args.contains("shape") ? c.args["shape"] : nlohmann::json();
    if (!s.is_array()) throw InputError("shape: the maps' shape, [heads, T, T] or [layers, heads, T, T]");
    for (const auto& d : s) shape.push_back(d.get<std::int64_t>());
    values = c.arrays->at("maps").values;
  } else {  // nested lists: [heads][T][T] or [layers][heads][T][T]
    std::function<void(const nlohmann::json&, std::size_t, const std::string&)> read =
        [&](const nlohmann::json& j, std::size_t depth, const std::string& at) {
          if (!j.is_array() || j.empty()) throw InputError(at + ": expected a non-empty list");
          if (depth == shape.size()) shape.push_back(static_cast<std::int64_t>(j.size()));
          if (shape[depth] != static_cast<std::int64_t>(j.size()))
            throw InputError(at + ": " + std::to_string(j.size()) + " entries where its neighbours have " +
                             std::to_string(shape[depth]));
          const bool numbers = j[0].is_number();
          for (std::size_t k = 0; k < j.size(); ++k) {
            if (numbers != j[k].is_number())
              throw InputError(at + "[" + std::to_string(k) + "]: numbers and lists mixed");
            if (numbers) {
              if (shape.size() != depth + 1) throw InputError(at + ": lists of different depths");
              values.push_back(static_cast<float>(j[k].get<double>()));
            } else {
              if (depth >= 3) throw InputError("maps: deeper than [layers, heads, T, T]");
              read(j[k], depth + 1, at + "[" + std::to_string(k) + "]");
            }
          }
        };
    read(c.args["maps"], 0, "maps");
  }
  if ((shape.size() != 3 && shape.size() != 4) || shape[shape.size() - 1] != shape[shape.size() - 2])
    throw InputError("maps: expected [heads, T, T] or [layers, heads, T, T]");
  if (shape.size() == 3) shape.insert(shape.begin(), 1);
  const std::int64_t L = shape[0], H = shape[1], T = shape[2];
  if (L < 1 || H < 1 || T < 1) throw InputError("maps: an empty dimension");
  if (T > base_limits_.max_tokens)
    throw InputError("maps: " + std::to_string(T) + " tokens, more than the limit of " +
                     std::to_string(base_limits_.max_tokens));
  if (L * H > 4096) throw InputError("maps: " + std::to_string(L * H) + " heads, more than the limit of 4096");
  if (static_cast<double>(L * H) * T * T * 4 > static_cast<double>(base_limits_.max_memory_bytes) / 2)
    throw InputError("maps: " + formatBytes(static_cast<double>(L * H) * T * T * 4) +
                     ", more than half the memory budget of " +
                     formatBytes(static_cast<double>(base_limits_.max_memory_bytes)));
  if (static_cast<std::int64_t>(values.size()) != L * H * T * T)
    throw InputError("maps: the values do not fill the shape");
  for (std::size_t k = 0; k < values.size(); ++k)
    if (!(values[k] >= 0.0f) || !std::isfinite(values[k])) {
      const std::size_t map = k / static_cast<std::size_t>(T * T);
      throw InputError("maps: layer " + std::to_string(map / H) + " head " + std::to_string(map % H) +
                       " holds a weight that is " + (std::isfinite(values[k]) ? "negative" : "not finite"));
    }
  if (c.has("tokens")) {
    const nlohmann::json& t = c.args["tokens"];
    if (!t.is_array() || static_cast<std::int64_t>(t.size()) != T)
      throw InputError("tokens: expected " + std::to_string(T) + " names, one per row of a map");
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (!t[i].is_string()) throw InputError("tokens[" + std::to_string(i) + "]: expected a string");
      if (firstNonUtf8(t[i].get<std::string>()) != std::string::npos)
        throw InputError("tokens[" + std::to_string(i) + "]: not UTF-8 text");
      g->labels.push_back(t[i].get<std::string>());
    }
  } else {
    for (std::int64_t i = 0; i < T; ++i) g->labels.push_back("t" + std::to_string(i + 1));
  }
  if (lesson_.open() || lesson_check_.busy())
    throw InputError("a lesson is open: close it first (File › Close lesson), then show the maps");
  g->layers = static_cast<int>(L);
  g->heads = static_cast<int>(H);
  g->tokens = static_cast<int>(T);
  g->maps = std::move(values);
  g->title = c.has("title") ? c.text("title") : "";
  stopModelLoad("attention maps came before it was read", now, &c);  // these maps instead of the model being read
  if (!model_.isOpen()) chapter_view_ = view_;                       // given back by model_close
  if (pinned_) unpin();
  endLearning();  // these maps instead of the run's
  model_.openGiven(std::move(g));
  view_.token = static_cast<int>(T) - 1;
  view_.head = -1;
  view_.key = -1;
  view_.tab = "layers";
  clampView();
  if (hooks_.document_replaced) hooks_.document_replaced();
  notify("Showing " + (model_.given()->title.empty() ? std::string("attention maps") : model_.given()->title) + ": " +
             std::to_string(L) + " layers × " + std::to_string(H) + " heads over " + std::to_string(T) +
             " tokens, as they came (File › Close model goes back)",
         now);
}

// [SECTION] Learning (docs/DESIGN.md §3.9) -------------------------------------------------------

void Controller::applyLearn(const Command& c, double now) {
  using Id = CommandId;
  if (c.id() == Id::Learn) {
    const nlohmann::json task = c.has("task") ? c.args["task"] : defaultTaskJson();
    const TrainTask t = parseTrainTask(task);  // a refusal changes nothing
    if ((lesson_.open() || lesson_check_.busy()) && !in_lesson_step_)
      throw InputError("a lesson is open: close it first (File › Close lesson), then train a model");
    // A lesson's step names its run: the same task goes on where it is (the step's learn_to says where).
    if (c.has("keep") && c.flag("keep") && learn_.open() && learn_showing_ &&
        trainTaskJson(learn_.task()) == trainTaskJson(t))
      return;
    learn_.start(t);                                                   // built, or refused with nothing changed
    stopModelLoad("a training run came before it was read", now, &c);  // the run instead of the model being read
    learn_announce_ = true;                                            // its model says which run it is
    learn_follow_ = true;
    learn_step_ = 0;
    learn_horizon_ = -1;
    if (learn_showing_) view_.tab = "learn";
    showLearnSnapshot(now);  // the untrained model, at once
    if (c.has("play") && c.flag("play")) learn_.play();
    return;
  }
  if (!learn_.open()) throw InputError("no model is training: start one in the Learn tab (the learn command)");
  switch (c.id()) {
    case Id::LearnPlay:
      if (learn_.finished())
        throw InputError("the run has trained all its " + std::to_string(learn_.task().steps) + " steps");
      learn_.play();
      learn_follow_ = true;
      learn_horizon_ = -1;  // on from the step trained
      return;
    case Id::LearnPause: return learn_.pause();
    case Id::LearnStep: {
      const int n = c.has("steps") ? c.integer("steps") : 1;
      if (n < 1 || n > 1000000) throw InputError("steps: 1 … 1000000");
      if (learn_.finished())
        throw InputError("the run has trained all its " + std::to_string(learn_.task().steps) + " steps");
      learn_.stepBy(n);
      learn_follow_ = true;
      learn_horizon_ = -1;
      return;
    }
    case Id::LearnTo: {  // shown at that step as it trains there, or as it was (the timeline's)
      const int step = c.integer("step");
      checkRunStep(learn_.task(), step, false);
      learn_follow_ = false;
      learn_step_ = step;
      // The run as it was at that step, the charts too (§3.9): a lesson's Back had shown the loss and
      // the scores of the steps it had yet to show.
      learn_horizon_ = step;
      if (step > learn_.stepsDone())
        learn_.trainTo(step);
      else
        learn_.pause();
      return showLearnSnapshot(now);
    }
    case Id::LearnShow: {
      const int step = c.integer("step");
      checkRunStep(learn_.task(), step, true);
      learn_follow_ = step == -1;
      learn_step_ = step;
      if (step == -1 || step > learn_horizon_) learn_horizon_ = -1;  // the newest, or past the run as it was
      return showLearnSnapshot(now);
    }
    case Id::LearnSave: {  // the model the views show: the newest, or the step scrubbed to
      const std::string path = c.text("path");
      const LearnSession::Snapshot* shown = learn_.snapshotAt(learnStepShown());
      if (shown == nullptr) throw InputError("the run has no model yet: it is being built");
      const TrainTask& task = learn_.task();  // a text task's token names go with it: reopened, it shows them
      saveStateDict(learn_.layout(), task.seq_len, shown->parameters->data(), path, task.heads, savedTokens(task));
      if (hooks_.file_used) hooks_.file_used(path);
      // A .npz has no place for the heads (saveStateDict): the dialog needs them.
      const std::string heads = std::to_string(learn_.task().heads);
      const bool says_heads = extensionOf(path) != "npz";
      return showToast("Saved the model at step " + std::to_string(shown->step) + " to " + path +
                           (says_heads ? " (File › Open model opens it with its " + heads + " heads)"
                                       : " (File › Open model opens it: give it " + heads + " heads there)"),
                       false, now);
    }
    case Id::LearnClose:
      if (learn_showing_) return closeModel(now);  // which ends the run
      endLearning();
      return showToast("Ended the run", false, now);
    default: return;
  }
}

void Controller::updateLearning(double now) {
  if (!learn_.open()) return;
  const std::string error_before = learn_.error();
  if (learn_.update(learnStepShown())) {  // the newest, or the one at the step asked for while it trains there
    try {
      showLearnSnapshot(now);
    } catch (const InputError& e) {  // a model the views cannot take (a weight no longer finite): the run stops
      learn_.pause();
      showToast("Training stopped: " + std::string(e.what()), true, now);
    }
  }
  if (learn_.error() != error_before) showToast("Training stopped: " + learn_.error(), true, now);
}

void Controller::endLearning() {
  learn_.close();
  learn_horizon_ = -1;
  learn_showing_ = false;
  learn_shown_.reset();
}

// The run's model at the snapshot asked for (learn_show) or the newest, shown as a trained model
// is: every view shows it on the probe (or the ids the user gave it since); the layer and head
// picked stay picked as it learns.
void Controller::showLearnSnapshot(double now) {
  const LearnSession::Snapshot* shown = learn_.snapshotAt(learnStepShown());
  if (shown == nullptr || (learn_showing_ && shown->parameters == learn_shown_ && model_.isRun())) return;
  const TrainTask& t = learn_.task();
  std::shared_ptr<const GptModel> model = learn_.modelOf(*shown);  // the thread's, or made now (scrubbed back)
  learn_shown_ = shown->parameters;
  const bool announce = std::exchange(learn_announce_, false);
  if (!learn_showing_ || !model_.isRun()) {
    if (!model_.isOpen()) chapter_view_ = view_;  // given back when the run ends
    if (pinned_) unpin();
    model_.openRun(std::move(model), learn_.probe());
    learn_showing_ = true;
    view_.tab = "learn";
    view_.token = model_.tokenCount() - 1;
    view_.head = -1;
    view_.key = -1;
    showWeightsAlone();  // as for an opened model (a run's Heatmaps opened on scores, its weights below)
    clampView();
    if (hooks_.document_replaced) hooks_.document_replaced();
  } else if (announce ||
             !model_.replaceModel(model)) {  // another run (or one of another shape): its probe, from layer 0
    if (pinned_) unpin();                    // A was a step of the run before
    model_.openRun(std::move(model), learn_.probe());
    clampView();
  } else {
    return;
  }
  if (!in_lesson_step_)  // a lesson's text says what is shown
    notify("Training " + std::string(taskInfo(t.kind).name) +
               ": every view shows its model on the probe sequence as it learns (File › Close model ends the run)",
           now);
}

void Controller::applyModel(const Command& c, double now) {
  using Id = CommandId;
  const auto prepend = [&]() -> std::optional<bool> {
    return c.has("prepend_eot") ? std::optional<bool>(c.flag("prepend_eot")) : std::nullopt;
  };
  switch (c.id()) {
    case Id::ModelOpen: {  // read and packed off the UI thread (openLoadedModel goes on)
      GptLoadOptions options = GptLoadOptions::within(base_limits_);
      options.reference_mlp = false;  // the app runs the fast path only
      if (c.has("num_heads")) {
        options.num_heads = c.integer("num_heads");
        if (options.num_heads < 1) throw InputError("num_heads: must be at least 1");
      }
      if (c.has("ids")) tokenIdsArgument(c.args["ids"]);  // a refusal before anything is read
      if (lesson_.open() || lesson_check_.busy())
        throw InputError("a lesson is open: close it first (File › Close lesson), then open the model");
      stopModelLoad("another model_open (" + c.text("path") + ") came before it was read", now, &c);
      model_loading_ = c;
      model_load_.start([c, options](const std::atomic<bool>&) {
        ModelLoad r{c, nullptr, "", {}};
        const std::string path = c.text("path");
        // The loader's messages mostly start with the file they are about: the path is said once.
        const auto couldNot = [&](const std::string& why) {
          return "Could not open the model " + (why.rfind(path, 0) == 0 ? why : path + ": " + why);
        };
        try {
          r.model = loadGptModel(path, options);
          r.stamp = fileStamp(r.model->weights_path);
        } catch (const InputError& e) {
          r.error = couldNot(e.what());
        } catch (const std::bad_alloc&) {
          r.error = couldNot("not enough memory");
        } catch (const std::exception& e) {
          r.error = couldNot(e.what());
        }
        return r;
      });
      showToast("Opening the model " + c.text("path") + " …", false, now);
      return;
    }
    case Id::ModelClose:
      if (model_load_.busy()) {  // stops waiting for it: what is read is dropped
        stopModelLoad("model_close came before it was read", now, &c);
        if (!model_.isOpen()) return showToast("Stopped opening the model", false, now);
      }
      if (!model_.isOpen()) throw InputError("no model is open");
      return closeModel(now);
    case Id::Attention: return openGivenAttention(c, now);
    case Id::Learn:
    case Id::LearnPlay:
    case Id::LearnPause:
    case Id::LearnStep:
    case Id::LearnTo:
    case Id::LearnShow:
    case Id::LearnSave:
    case Id::LearnClose: return applyLearn(c, now);
    case Id::SelectLayer: {
      const int h = c.has("head") ? c.integer("head") : view_.head;  // checked first: a refusal changes nothing
      if (model_.isOpen()) checkLayerAndHead(c.integer("layer"), h, model_.layers(), headsShown());
      model_.setLayer(c.integer("layer"));
      view_.head = h;
      return;
    }
    case Id::Text:
      if (c.has("ids")) {
        model_.setIds(tokenIdsArgument(c.args["ids"]), prepend());
      } else if (c.has("value")) {
        model_.setText(c.text("value"), prepend());
      } else if (c.has("prepend_eot")) {  // the same ids (generated ones are not what the text tokenizes to)
        model_.setPrependEot(c.flag("prepend_eot"));
      } else {
        throw InputError("text: give `value` (the text) or `ids`");
      }
      view_.token = model_.tokenCount() - 1;
      clampView();
      return;
    case Id::AppendToken: {
      if (!model_.model())
        throw InputError(model_.given() ? "these attention maps came as they are: no next tokens"
                                        : "no model is open: File › Open model… first");
      int id = 0;
      if (c.has("id")) {
        id = c.integer("id");
      } else {  // the most likely after the last token: the result on screen answers this text
        const float* logits = logitsShown(snapshot_.get(), model_, model_.tokenCount() - 1);
        if (logits == nullptr) throw InputError("append_token: the next tokens are still being computed");
        id = topNextTokens(logits, model_.model()->config.vocab_size, 1.0, 1)[0].id;
      }
      model_.append(id);
      view_.token = model_.tokenCount() - 1;
      return;
    }
    case Id::RepeatText:
      model_.repeat();
      view_.token = model_.tokenCount() - 1;
      return;
    default: return;
  }
}

// [SECTION] lessons (docs/DESIGN.md §3.7) ---------------------------------------------------

void Controller::applyLesson(const Command& c, double now) {
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

void Controller::openCheckedLesson(LessonChecker::Result checked, double now) {
  if (!checked.lesson) throw InputError(checked.error);
  const Command& c = checked.command;
  const int number = c.has("step") ? c.integer("step") : 1;
  checkLessonStep(*checked.lesson, number);
  if (asksFirst(c)) return askUnsaved(c);  // its steps load presets over the work: ask first, as a preset does
  if (model_.isOpen()) closeModel(now);    // a lesson is about the chapter's workspace
  const bool first = !lesson_.open();
  lesson_.begin(std::move(*checked.lesson), view_);
  if (first) {
    view_.presentation = true;   // the maps and the lesson, large; F10 brings back the side panels
    view_.weights_fixed = true;  // weights as the probabilities they are (View › Weights on a fixed 0–1 scale)
  }
  try {
    goToStep(number, c.script_index, now);
  } catch (const InputError&) {  // rehearsed from step 1, so only a step that needs the ones before it
    view_ = lesson_.close(view_);
    clampView();
    throw;
  }
}

void Controller::applyOpenLesson(const Command& c, double now) {
  if (c.id() == CommandId::LessonClose) {
    const ViewState before = view_;
    view_ = lesson_.close(view_);
    clampView();
    viewChanged(before);
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

void Controller::goToStep(int number, int script_index, double now) {
  const LessonStep& step = lesson_.lesson().steps[static_cast<std::size_t>(number - 1)];
  // A step trains a run by its learn command; one without ends the run a step before trained.
  const bool trains = std::any_of(step.commands.begin(), step.commands.end(),
                                  [](const Command& c) { return c.id() == CommandId::Learn; });
  if (!trains && learn_showing_) closeModel(now);
  struct InStep {  // the step's own commands may do what a lesson's user may not (train a model)
    bool& flag;
    explicit InStep(bool& f) : flag(f) { flag = true; }
    ~InStep() { flag = false; }
  } in_step(in_lesson_step_);
  for (std::size_t i = 0; i < step.commands.size(); ++i) {
    Command c = step.commands[i];
    c.script_index = script_index;
    // The lesson was asked about when it opened: its presets go on (and stay undoable).
    for (const CommandArg& a : c.info().args)
      if (std::string(a.name) == "discard") c.args["discard"] = true;
    try {
      apply(c, now);
    } catch (const InputError& e) {
      throw InputError("step " + std::to_string(number) + ": command " + std::to_string(i + 1) + " (" + c.name +
                       "): " + e.what());
    }
  }
  lesson_.setStep(number);
  view_.highlight = step.maps;
}

// [SECTION] messages and frames -------------------------------------------------------------

void Controller::hintIfCramped(double now, bool after_toast) {
  if (!hooks_.cramped || !hooks_.cramped()) return;
  // Larger text in a window too small for it beside the side panels: say how to make room.
  const std::string hint = "Text size " + std::to_string(view_.text_size) +
                           " %: the side panels are narrow in this window. "
                           "View › Presentation (F10) hides them, F11 goes full screen.";
  if (after_toast && !toast_.text.empty() && now < toast_.until) {  // the start's note first, then the hint
    if (toast_.error) return;
    appendHint(hint);
    toast_.until = std::max(toast_.until, now + 3.0);
  } else {
    showToast(hint, false, now);
    toast_.hint_room = 0;
  }
}

void Controller::notify(const std::string& text, double now) {
  const std::string hint = toast_.hint_room != std::string::npos && now < toast_.until
                               ? toast_.text.substr(toast_.hint_room)
                               : std::string();
  toast_ = {text, false, now + 12.0};
  ++messages_shown_;
  if (!hint.empty()) appendHint(hint);
}

// The toast's note, without the hint to make room after it.
std::string Controller::toastNote() const {
  if (toast_.hint_room == std::string::npos) return toast_.text;
  return toast_.text.substr(0,
                            toast_.hint_room >= kHintSeparator.size() ? toast_.hint_room - kHintSeparator.size() : 0);
}

// The hint to make room after the toast's note, where F10 can take it away again (hint_room).
void Controller::appendHint(const std::string& hint) {
  toast_.text += kHintSeparator;
  toast_.hint_room = toast_.text.size();
  toast_.text += hint;
}

// A progress toast ("Opening the model …") is over: it goes, a hint to make room after it stays.
void Controller::endProgress() {
  if (toast_.hint_room == std::string::npos) {
    toast_ = {};
  } else {
    toast_.text.erase(0, toast_.hint_room);
    toast_.hint_room = 0;
  }
}

void Controller::showToast(const std::string& text, bool error, double now) {
  toast_ = {text, error, now + (error ? 6.0 : 3.0)};
  ++messages_shown_;
}

void Controller::stopModelLoad(const std::string& why, double now, const Command* by) {
  if (!model_load_.busy()) return;
  model_load_.cancel();
  const std::optional<Command> c = std::exchange(model_loading_, std::nullopt);
  if (!c || (!c->listener && c->script_index < 0)) return;  // the window's own choice needs no word
  // The same message's (or script's) later command took its place: what it asked for is done.
  const bool own = by &&
                   ((c->listener && by->listener == c->listener) || (c->script_index >= 0 && by->script_index >= 0));
  if (own && c->listener) c->listener->applied();
  if (!own) fail(*c, "model_open " + c->text("path") + ": not opened: " + why, now);
}

void Controller::pushAfterTyping(Command c, bool typing) {
  if (!typing) return queue_.push(std::move(c));
  after_typing_.push_back(std::move(c));
  commit_typing_ = true;
}

void Controller::endFrame(double now, bool mouse_down, bool typing, double draw_ms) {
  draw_ms_[draw_next_] = draw_ms;
  draw_next_ = (draw_next_ + 1) % draw_ms_.size();
  draws_ = std::min(draws_ + 1, draw_ms_.size());
  mouse_down_ = mouse_down;
  if (!mouse_down && !typing) doc_.endGesture();  // a drag or a typed value ended: a new undo step next
  typing_ = typing;
  // The field lost its focus in this frame and pushed its value: what waited comes after it (and
  // does not wait again).
  if (!after_typing_.empty() && !commit_typing_) {
    for (Command& c : after_typing_) queue_.push(std::move(c));
    after_typing_.clear();
    typing_ = false;
  }
  autosave_.update(doc_, chapterView(), now, autosavedModel(), unsaved());
  if (auto message = autosave_.takeMessage()) showToast(message->first, message->second, now);
}

double Controller::idleTimeout(double now, double longest) const {
  // Commands behind a lesson's check, a model's read or a run's steps wait for its wake-up; so does
  // one waiting for the engine's result (the worker wakes the window): frames drawn meanwhile (25–45
  // ms each under a software renderer) took a core from a GPT-2-sized computation.
  if (!queue_.empty() && !lesson_check_.busy() && !model_load_.busy() && !learn_.stepping() &&
      !(commandInfo(queue_.front().id()).has(kWaitsForResult) && worker_.busy()))
    return 0;
  double timeout = longest;
  if (!toast_.text.empty() && toast_.until > now) timeout = std::min(timeout, toast_.until - now);
  return std::max(timeout, 0.0);
}

std::string Controller::windowTitle() const {
  const std::string name = doc_.file().empty() ? "untitled" : fs::path(doc_.file()).filename().string();
  const std::string chapter = name + (unsaved() ? " •" : "");
  std::string title = "attnscope — " + chapter;
  if (model_.given())
    title = "attnscope — " + (model_.given()->title.empty() ? std::string("attention maps") : model_.given()->title) +
            " (as they came)  (beside " + chapter + ")";
  else if (model_.isOpen())
    title = "attnscope — " + modelTitle(*model_.model()) + "  (beside " + chapter + ")";
  return printableText(std::move(title));  // one line: a file's name may hold a newline, a notebook's title anything
}

// [SECTION] the engine ----------------------------------------------------------------------

// Above this many T × T cells per element (12 heads of 1024², 4 of 512²) the maps of the heads off
// screen are computed after the first snapshot is shown; below it, everything comes at once.
constexpr double kSplitCells = 1 << 20;
// Below this many cells (every element traced) the UI thread waits up to 5 ms for the result.
constexpr double kWaitCells = 1 << 14;
// The longest a frame that sent a larger request waits for its result (holdMs), and that in
// frames' drawing: a frame drawn beside the pass (llvmpipe takes both cores) delays it by about its
// own drawing, and the result's frame comes after; worth a wait of up to eight such frames, never
// more than 100 ms (which still reads as at once). A frame's time includes its swap: under vsync
// (a GPU at 60 Hz) ~16 ms, so there too the hold reaches 100 ms (64 with four), and a typed
// character shows with its maps.
constexpr double kHoldCapMs = 100;
constexpr double kHoldFrames = 8;

double Controller::holdMs() const {
  if (mouse_down_ || draws_ == 0) return 0;  // a drag's frames keep coming; nothing measured yet
  std::array<double, 8> recent = draw_ms_;
  const auto end = recent.begin() + static_cast<std::ptrdiff_t>(draws_);
  const auto middle = recent.begin() + static_cast<std::ptrdiff_t>(draws_ / 2);
  std::nth_element(recent.begin(), middle, end);
  return std::min(kHoldCapMs, kHoldFrames * *middle);
}

const std::shared_ptr<const Snapshot>& Controller::shown() const {
  static const std::shared_ptr<const Snapshot> none;
  if (!snapshot_) return snapshot_;
  const bool other = model_.isOpen() ? passShown(snapshot_.get(), model_) == nullptr : snapshot_->model != nullptr;
  return other ? none : snapshot_;
}

namespace {
// The rows of a whole pass a model's pass did the work of (at least one).
double workRows(const ModelPass& pass) {
  return std::max(1.0, passWorkRows(pass.model->config, static_cast<int>(pass.ids.size()),
                                    {pass.reused_rows, pass.whole_attention, pass.reused_projections}));
}
}  // namespace

double Controller::expectedEngineMs() const {
  if (!snapshot_) return std::numeric_limits<double>::infinity();
  const ModelPass* last = snapshot_->model.get();
  const std::shared_ptr<const GptModel>& model = model_.model();
  if (!model_.isOpen() || !model || !last || last->model != model) return snapshot_->milliseconds;
  // A text's edit costs the rows after its first changed token (GPT-2: 340 MB of weights read
  // per row's pass, the head's logits beside): the last result's time per row it computed.
  const std::vector<int>& ids = model_.ids();
  if (ids == last->ids) return 0;  // another layer or token of the same pass
  // (Passes trace no layer: the one shown is traced after them, as a layer change traces it.)
  const double rows = passWorkRows(model->config, static_cast<int>(ids.size()),
                                   exec_.fused ? reusablePrefix(*last, *model, ids, -1) : PrefixReuse());
  const bool timed = row_time_model_ == model.get() && fastest_row_ms_ > 0;
  return (timed ? fastest_row_ms_ : snapshot_->milliseconds / workRows(*last)) * rows;
}

bool Controller::thumbnailsFirst() const {
  // A long text's layer maps follow the model view's thumbnails and next tokens, as the chapter's
  // heads off screen follow those on it (docs/DESIGN.md §3.3).
  const GptModel* model = model_.model().get();
  return model != nullptr && view_.tab == "layers" &&
         static_cast<double>(model->config.heads) * model_.tokenCount() * model_.tokenCount() >= kSplitCells;
}

void Controller::noteRowTime() {
  const ModelPass* pass = snapshot_ ? snapshot_->model.get() : nullptr;
  if (!pass || !pass->model || pass->given || pass == row_timed_pass_) return;
  row_timed_pass_ = pass;
  if (pass->model.get() != row_time_model_) row_time_model_ = pass->model.get(), fastest_row_ms_ = 0;
  const double ms = snapshot_->milliseconds / workRows(*pass);
  fastest_row_ms_ = fastest_row_ms_ > 0 ? std::min(fastest_row_ms_, ms) : ms;
}

Controller::RequestKey Controller::currentKey() const {
  if (model_.isOpen()) return {0, 0, exec_.parallel, exec_.threads, model_.version(), view_.token};
  return {doc_.version(), view_.batch, exec_.parallel, exec_.threads, 0, -1};
}

void Controller::updateEngine() {
  const RequestKey key = currentKey();
  const bool sending = !(key == requested_);
  // Estimated before the request is sent: the engine's thread, once it has it, takes the last
  // pass's projections over, and a pass without them would be expected to project its rows again.
  if (sending) expected_ms_ = expectedEngineMs();
  if (sending && model_.isOpen()) {
    EngineRequest r;
    auto job = std::make_shared<ModelJob>();
    job->model = model_.model();
    job->given = model_.given();
    job->ids = model_.ids();
    job->tokens = model_.tokens();
    job->layer = model_.layer();
    job->position = view_.token;
    job->version = model_.version();
    job->lineage = model_.lineage();
    job->previous = snapshot_;  // the same text: no forward again; the same layer: no trace again
    job->thumbnails_first = thumbnailsFirst();
    r.model = std::move(job);
    r.exec = exec_;
    r.limits = base_limits_;
    // A short text's result is waited for (drawn in the frame that asked), as the chapter's.
    small_request_ = model_.tokenCount() <= 64 &&
                     (!model_.model() || std::int64_t{model_.tokenCount()} * model_.model()->config.d_model *
                                                 model_.model()->config.layers <=
                                             std::int64_t{32} * 64 * 4);
    worker_.request(std::move(r));
    requested_ = key;
  } else if (sending) {
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
      const std::vector<int> visible = hooks_.visible_heads ? hooks_.visible_heads() : std::vector<int>{};
      if (view_.head >= 0)
        r.first_heads = {view_.head};
      else
        r.first_heads = visible.empty() ? std::vector<int>{0} : visible;
    }
    small_request_ = cells < kWaitCells;
    worker_.request(std::move(r));
    requested_ = key;
  }
  // A small input (the book's 6 tokens take 0.05 ms) is waited for, so an edit's result is drawn
  // in the frame that applied it. A larger one holds the frame that sent it for about what drawing
  // eight frames costs (holdMs): a frame drawn meanwhile would show the old result and take the cores from
  // the engine (docs/DESIGN.md §3.3 "Holding a frame"); later frames never wait.
  using Ms = std::chrono::duration<double, std::milli>;
  Ms wait = small_request_ ? Ms(5) : Ms(0);
  if (!small_request_ && sending) {
    const double hold = holdMs();
    if (expected_ms_ <= hold) wait = Ms(hold);
  }
  if (auto result = worker_.poll(std::chrono::duration_cast<std::chrono::milliseconds>(wait))) {
    if (result->snapshot) {
      snapshot_ = std::move(result->snapshot);
      noteRowTime();
      // A pinned while its heads off screen were computing gets them when they come.
      if (pinned_ && !pinned_->complete && snapshot_->version == pinned_->version &&
          snapshot_->batch == pinned_->batch && snapshot_->model_version == pinned_->model_version)
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

bool Controller::waitingForWorkers() const {
  return worker_.busy() || lesson_check_.busy() || model_load_.busy() || learn_.stepping();
}

bool Controller::settled() const {
  // A run training to the step asked for (learn_step, learn_to) shows it when there.
  return !waitingForWorkers() && currentKey() == requested_ &&
         (!lesson_.open() || !hooks_.layout_settled || hooks_.layout_settled());
}

}  // namespace attnscope
