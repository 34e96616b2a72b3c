#include "editing/command.h"

#include <cmath>
#include <limits>
#include <unordered_map>

#include "engine/errors.h"
#include "formats/json_format.h"
#include "formats/json_reading.h"
#include "formats/zip_archive.h"

namespace attnscope {

namespace {

using T = CommandTarget;
using A = ArgType;

const char* typeWord(ArgType t) {
  switch (t) {
    case A::Int: return "an integer";
    case A::Number: return "a number";
    case A::Bool: return "true or false";
    case A::String: return "a string";
    case A::Any: return "a value";
  }
  return "a value";
}

bool matches(const nlohmann::json& v, ArgType t) {
  switch (t) {
    case A::Int: return v.is_number_integer() || v.is_number_unsigned();
    case A::Number: return v.is_number();
    case A::Bool: return v.is_boolean();
    case A::String: return v.is_string();
    case A::Any: return true;
  }
  return false;
}

}  // namespace

const std::vector<CommandInfo>& commandTable() {
  // One row per command.
  // clang-format off
  static const std::vector<CommandInfo> table = {
      // open, preset and new from the app's own menus ask first when there are unsaved changes
      // (unless `discard` is true); scripts are unattended and never asked.
      {CommandId::Open, "open", T::Document, kAsksFirst, {{"path", A::String, true}, {"discard", A::Bool, false}},
       "open a workspace file (or a PNG saved by attnscope)"},
      {CommandId::Preset, "preset", T::Document, kAsksFirst | kUndoable, {{"name", A::String, true}, {"discard", A::Bool, false}},
       "load a preset by name (assets/presets)"},
      {CommandId::New, "new", T::Document, kAsksFirst | kUndoable, {{"discard", A::Bool, false}}, "the book's example with the current step's settings"},
      {CommandId::Restore, "restore", T::Document, 0, {{"path", A::String, true}},
       "reopen an autosave: its workspace, with the file name and unsaved mark it had"},
      {CommandId::Sentence, "sentence", T::Document, kUndoable, {{"text", A::String, true}, {"seed", A::Int, false}},
       "type a sentence and make tokens (one per word, same word → same vector)"},
      {CommandId::AddToken, "add_token", T::Document, kUndoable, {{"name", A::String, false}, {"at", A::Int, false}, {"seed", A::Int, false}},
       "add a token (at the end unless `at` is given)"},
      {CommandId::RemoveToken, "remove_token", T::Document, kUndoable, {{"index", A::Int, true}}, "remove the token at `index`"},
      {CommandId::RenameToken, "rename_token", T::Document, kUndoable, {{"index", A::Int, true}, {"name", A::String, true}}, "rename a token"},
      {CommandId::MoveToken, "move_token", T::Document, kUndoable, {{"from", A::Int, true}, {"to", A::Int, true}}, "move a token and its row"},
      {CommandId::Set, "set", T::Document, kUndoable, {{"field", A::String, true}, {"value", A::Any, true}},
       "set one model field: variant, d_out, num_heads, dropout, seed, training, qkv_bias, causal, scale, "
       "batch_size, normalization, causal_route (neg_inf, tril), dropout_rng (mkl, default), dropout_seed (a seed, "
       "or null), draws_before"},
      {CommandId::Model, "model", T::Document, kUndoable, {{"fields", A::Any, true}}, "set several model fields at once: {\"fields\": {…}}"},
      {CommandId::SetCell, "set_cell", T::Document, kUndoable, {{"row", A::Int, true}, {"col", A::Int, true}, {"value", A::Number, true}},
       "set one embedding value"},
      {CommandId::DIn, "d_in", T::Document, kUndoable, {{"value", A::Int, true}, {"seed", A::Int, false}},
       "change the embedding width (new columns are seeded random values)"},
      {CommandId::Randomize, "randomize", T::Document, kUndoable, {{"seed", A::Int, false}}, "new random embeddings: torch.rand(T, d_in)"},
      {CommandId::BookExample, "book_example", T::Document, kUndoable, {}, "the book's six tokens and embeddings, keeping the model"},
      {CommandId::Workspace, "workspace", T::Document, kUndoable, {{"json", A::Any, true}},
       "take the tokens, embeddings, model and parameters of a workspace given inline (one undo step; the file stays)"},
      {CommandId::Reload, "reload", T::Document, kUndoable, {},
       "take the document's file again as it is on disk now (one undo step): what View › Reload on change does when "
       "a notebook rewrites it"},
      {CommandId::PasteEmbeddings, "paste_embeddings", T::Document, kUndoable, {{"text", A::String, false}},
       "replace the embeddings by a pasted tensor: print(x) of torch, a NumPy repr, nested lists, CSV/TSV "
       "(Edit › Paste embeddings, Ctrl+Shift+V); without `text` the app reads the clipboard"},
      {CommandId::SetParameter, "set_parameter", T::Document, kUndoable, {{"name", A::String, true}, {"row", A::Int, true}, {"col", A::Int, true},
                                      {"value", A::Number, true}},
       "set one value of a parameter by its state_dict name (W_query.weight, heads.0.W_key.weight, out_proj.bias "
       "(row 0), W_query for v1), in torch's layout; the tensor becomes the user's own"},
      {CommandId::ResetParameters, "reset_parameters", T::Document, kUndoable, {}, "back to the seeded initialization: the user's own parameters removed"},
      {CommandId::PasteParameters, "paste_parameters", T::Document, kUndoable, {{"text", A::String, false}},
       "the module's parameters from a printed state_dict, print(m.state_dict()): OrderedDict([('W_query.weight', "
       "tensor(…)), …]) (Edit › Paste parameters); without `text` the app reads the clipboard"},
      {CommandId::Undo, "undo", T::Document, 0, {}, "undo the last edit"},
      {CommandId::Redo, "redo", T::Document, 0, {}, "redo what was undone"},
      {CommandId::SelectToken, "select_token", T::View, 0, {{"index", A::Int, false}, {"step", A::Int, false}},
       "select the query token `index` everywhere (or move by `step`)"},
      {CommandId::SelectKey, "select_key", T::View, 0, {{"index", A::Int, true}}, "highlight key column `index` (−1: none)"},
      {CommandId::SelectHead, "select_head", T::View, 0, {{"index", A::Int, false}, {"step", A::Int, false}},
       "show head `index` alone (−1: all heads), or cycle by `step`"},
      {CommandId::GoTo, "go_to", T::View, 0, {{"text", A::String, false}, {"index", A::Int, false}, {"to", A::Int, false}},
       "zoom every map to tokens: `text` as typed (a name, a number from 1, a range a–b) or `index` … `to` (0-based); "
       "selects the first"},
      {CommandId::SelectBatch, "select_batch", T::View, 0, {{"index", A::Int, true}}, "show batch element `index`"},
      {CommandId::View, "view", T::View, 0, {{"field", A::String, true}, {"value", A::Any, true}},
       "a view setting: theme, colormap, columns, shared_scale, diverging_for_signed, tab, inspector, "
       "model_panel, inputs_panel, status_bar, statistics, presentation, text_size (100–250 %, \"larger\", \"smaller\"), "
       "screenshot_scale, caption, screenshot_dir, focus ([map names]: the grid lays itself out for them, the others "
       "dimmed or set aside, as a lesson step's maps; [] for none); the Lines view's lines_stage (weights, dropped_weights), lines_top_k (1–64), "
       "lines_hidden_heads ([0-based heads]), lines_isolate (only the selected token's lines)"},
      // Compare mode (the Compare tab): A is a result pinned aside, B the current one.
      {CommandId::Pin, "pin", T::App, kWaitsForResult, {}, "pin the newest result as A of the Compare tab (Ctrl+P); any later change is B"},
      {CommandId::Unpin, "unpin", T::App, 0, {}, "drop the pinned result A"},
      {CommandId::Swap, "swap", T::App, kWaitsForResult, {}, "swap A and B: the pinned settings become the current ones (one undo step), B is pinned"},
      {CommandId::Wait, "wait", T::App, kWaitsForResult, {},
       "nothing, once the newest result is shown: a script's or notebook's point to go on from (its reply comes then)"},
      {CommandId::Fullscreen, "fullscreen", T::App, 0, {{"on", A::Bool, false}},
       "full-screen on the window's monitor (on: true), or back to the window as it was (toggles without `on`)"},
      {CommandId::Engine, "engine", T::App, kChangesExecutor, {{"parallel", A::Bool, false}, {"threads", A::Int, false}},
       "serial or OpenMP path, and the thread count (0 = all cores)"},
      {CommandId::Screenshot, "screenshot", T::App, kWaitsForResult, {{"path", A::String, true}, {"panel", A::String, false}, {"head", A::Int, false},
                              {"scale", A::Number, false}, {"selection", A::Bool, false}},
       "save the window (or a panel, or one head's map) as PNG once the newest result is shown; "
       "path \"\" = a time-stamped file in the screenshot folder; `selection`: the selected token's row and key "
       "outlined (default: while a lesson is open, whose steps are about them; else as --selection says)"},
      {CommandId::Save, "save", T::App, 0, {{"path", A::String, false}, {"overwrite", A::Bool, false}},
       "save the workspace (to `path`, or to its file); `overwrite`: even if another program changed the file since"},
      {CommandId::ExportTrace, "export_trace", T::App, kWaitsForResult, {{"path", A::String, true}, {"format", A::String, true}},
       "write every matrix of the shown result into folder `path` (format json, csv or npy)"},
      {CommandId::ExportMap, "export_map", T::App, kWaitsForResult, {{"stage", A::String, true}, {"head", A::Int, true}, {"path", A::String, true},
                              {"format", A::String, true}},
       "write one map of the shown result (csv, json or npy)"},
      {CommandId::SavePytorch, "save_pytorch", T::App, 0, {{"path", A::String, true}}, "write the PyTorch script that rebuilds the workspace"},
      {CommandId::CopyPytorch, "copy_pytorch", T::App, 0, {}, "copy that script to the clipboard"},
      {CommandId::Dialog, "dialog", T::App, 0, {{"which", A::String, true}, {"stage", A::String, false}, {"head", A::Int, false},
                          {"format", A::String, false}},
       "open a file dialog: open, open_lesson, save_as, export_trace, save_pytorch, export_map, save_lines, open_model, save_model"},
      {CommandId::Quit, "quit", T::App, kAsksFirst | kAsksScripts, {{"discard", A::Bool, false}},
       "quit; asks first when there are unsaved changes, unless `discard` is true"},
      {CommandId::Unsaved, "unsaved", T::App, 0, {{"choice", A::String, true}},
       "answer the unsaved-changes prompt of quit, open, new or preset: save (then go on), discard or cancel"},
      // Lessons (core/lessons/lesson.h): a step applies its own commands through this same path.
      {CommandId::Recovery, "recovery", T::App, 0, {{"choice", A::String, true}},
       "the answer to the start's offer of the last session's unsaved changes to the file opened, newer than it: "
       "restore (them, unsaved) or keep (the file as saved; they stay in the state folder)"},
      {CommandId::LessonOpen, "lesson_open", T::App, kAsksFirst, {{"path", A::String, true}, {"step", A::Int, false}, {"discard", A::Bool, false}},
       "open a lesson file (checked whole first) at `step` (1-based, default 1); asks first over unsaved changes"},
      {CommandId::LessonStep, "lesson_step", T::App, 0, {{"step", A::Int, true}}, "go to step `step` of the open lesson (1-based, as shown)"},
      {CommandId::LessonNext, "lesson_next", T::App, 0, {}, "the open lesson's next step (Space, →, PageDown)"},
      {CommandId::LessonBack, "lesson_back", T::App, 0, {}, "the open lesson's previous step (←, PageUp)"},
      {CommandId::LessonClose, "lesson_close", T::App, 0, {}, "close the lesson: the view as it was before it"},
      // A trained model (docs/DESIGN.md §3.1 "A trained model"): the chapter's workspace waits
      // beside it, unchanged, until model_close.
      {CommandId::ModelOpen, "model_open", T::Model, kAsksModelText,
       {{"path", A::String, true}, {"num_heads", A::Int, false}, {"prepend_eot", A::Bool, false}, {"ids", A::Any, false},
        {"layer", A::Int, false}, {"head", A::Int, false}, {"discard", A::Bool, false}},
       "open a trained GPT: a Hugging Face GPT-2 folder or the book's GPTModel (.pth, .safetensors, .npz) with the "
       "tokenizer files beside it; `num_heads` when it has no config.json; every view then shows its layers. `ids`, "
       "`layer`, `head`: the text (token ids) and the layer and head to open it at, as a saved workspace keeps them"},
      {CommandId::ModelClose, "model_close", T::Model, kAsksModelText, {{"discard", A::Bool, false}},
       "close the trained model: the chapter's workspace again"},
      {CommandId::SelectLayer, "select_layer", T::Model, 0, {{"layer", A::Int, true}, {"head", A::Int, false}},
       "show the model's layer `layer` (0-based) in every view, and head `head` of it (−1: all heads)"},
      {CommandId::Text, "text", T::Model, 0, {{"value", A::String, false}, {"ids", A::Any, false}, {"prepend_eot", A::Bool, false}},
       "the text the model reads (`value`, tokenized as GPT-2 does) or its token ids (`ids`); `prepend_eot` starts it "
       "with <|endoftext|>"},
      {CommandId::AppendToken, "append_token", T::Model, kWaitsForResult, {{"id", A::Int, false}},
       "append token `id` to the model's text, or the most likely next token after the last one"},
      {CommandId::RepeatText, "repeat_text", T::Model, 0, {},
       "the model's text twice over: its second half is predictable, which induction heads show"},
      {CommandId::Attention, "attention", T::Model, kAsksModelText,
       {{"maps", A::Any, true}, {"tokens", A::Any, false}, {"title", A::String, false}, {"shape", A::Any, false},
        {"discard", A::Bool, false}},
       "show attention maps of any model as they are, in the model view: maps [heads, T, T] or [layers, heads, T, "
       "T] (nested lists, or a channel message's tensor, whose shape the channel gives), tokens T names (default "
       "t1 … tT), a title"},
      // Watching a model learn (docs/DESIGN.md §3.9): the run is shown as a trained model, on its probe.
      {CommandId::Learn, "learn", T::Model, kAsksModelText,
       {{"task", A::Any, false}, {"play", A::Bool, false}, {"keep", A::Bool, false}, {"discard", A::Bool, false}},
       "start training a small model on `task` (a TASK object as attnscope-cli train reads, default {\"task\": "
       "\"induction\"}), at step 0; `play`: train at once; `keep`: a run of this same task goes on where it is (a "
       "lesson's steps). The Learn tab shows it, every view its model on the task's probe"},
      {CommandId::LearnPlay, "learn_play", T::Model, 0, {}, "train the run (to its last step)"},
      {CommandId::LearnPause, "learn_pause", T::Model, 0, {}, "pause the run"},
      {CommandId::LearnStep, "learn_step", T::Model, 0, {{"steps", A::Int, false}},
       "train `steps` more steps (default 1), then pause; a script's next command waits for them"},
      {CommandId::LearnTo, "learn_to", T::Model, 0, {{"step", A::Int, true}},
       "the run at `step`, paused there: trained up to it (a script's next command waits) or, trained past it, "
       "shown as it was then (a lesson's steps)"},
      {CommandId::LearnShow, "learn_show", T::Model, 0, {{"step", A::Int, true}},
       "show the run's model at `step` (the timeline's snapshot at or before it); −1: follow the newest"},
      {CommandId::LearnSave, "learn_save", T::Model, 0, {{"path", A::String, true}},
       "save the run's model at the step the views show (the newest while following) to `path`, the "
       "book's GPTModel state_dict as .npz, .safetensors, .pth or .pt"},
      {CommandId::LearnClose, "learn_close", T::Model, 0, {}, "end the run: the chapter's workspace again"},
  };
  // clang-format on
  return table;
}

const CommandInfo* findCommand(const std::string& name) {
  static const std::unordered_map<std::string, const CommandInfo*> by_name = [] {
    std::unordered_map<std::string, const CommandInfo*> m;
    for (const CommandInfo& c : commandTable()) m.emplace(c.name, &c);
    return m;
  }();
  const auto it = by_name.find(name);
  return it == by_name.end() ? nullptr : it->second;
}

const CommandInfo& commandInfo(CommandId id) {
  static const std::vector<const CommandInfo*> by_id = [] {  // the table has each id once (a unit test says so)
    std::vector<const CommandInfo*> v(commandTable().size());
    for (const CommandInfo& c : commandTable()) v.at(static_cast<std::size_t>(c.id)) = &c;
    return v;
  }();
  return *by_id.at(static_cast<std::size_t>(id));
}

const CommandInfo& Command::info() const {
  const CommandInfo* c = findCommand(name);
  if (!c) throw InputError("unknown command '" + printableName(name) + "'");
  return *c;
}

namespace {

const nlohmann::json& argument(const Command& c, const char* arg) {
  if (!c.args.contains(arg)) throw InputError(std::string(arg) + ": required");
  return c.args[arg];
}

}  // namespace

int Command::integer(const char* arg) const {
  const nlohmann::json& v = argument(*this, arg);
  if (!matches(v, A::Int)) throw InputError(std::string(arg) + ": expected an integer, got " + v.dump());
  if (v.is_number_unsigned() ? v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<int>::max())
                             : v.get<std::int64_t>() < std::numeric_limits<int>::min() ||
                                   v.get<std::int64_t>() > std::numeric_limits<int>::max())
    throw InputError(std::string(arg) + ": out of range: " + v.dump());
  return static_cast<int>(v.get<std::int64_t>());
}

double Command::number(const char* arg) const {
  const nlohmann::json& v = argument(*this, arg);
  if (!v.is_number()) throw InputError(std::string(arg) + ": expected a number, got " + v.dump());
  const double d = v.get<double>();
  if (!std::isfinite(d)) throw InputError(std::string(arg) + ": not a finite number");
  return d;
}

bool Command::flag(const char* arg) const {
  const nlohmann::json& v = argument(*this, arg);
  if (!v.is_boolean()) throw InputError(std::string(arg) + ": expected true or false, got " + v.dump());
  return v.get<bool>();
}

std::string Command::text(const char* arg) const {
  const nlohmann::json& v = argument(*this, arg);
  if (!v.is_string()) throw InputError(std::string(arg) + ": expected a string, got " + v.dump());
  return v.get<std::string>();
}

Command makeCommand(const std::string& name, nlohmann::json args) {
  const CommandInfo* info = findCommand(name);
  if (!info) {
    std::string names;
    for (const CommandInfo& c : commandTable()) names += (names.empty() ? "" : ", ") + std::string(c.name);
    throw InputError("unknown command '" + printableName(name) + "' (one of: " + names + ")");
  }
  if (!args.is_object()) throw InputError("arguments: expected an object");
  for (auto it = args.begin(); it != args.end(); ++it) {
    const CommandArg* spec = nullptr;
    for (const CommandArg& a : info->args)
      if (it.key() == a.name) spec = &a;
    if (!spec) {
      std::string known;
      for (const CommandArg& a : info->args) known += (known.empty() ? "" : ", ") + std::string(a.name);
      throw InputError(printableName(it.key()) + ": unknown argument" +
                       (known.empty() ? " (this command takes none)" : " (expected " + known + ")"));
    }
    if (!matches(it.value(), spec->type))
      throw InputError(it.key() + ": expected " + typeWord(spec->type) + ", got " + it.value().dump());
  }
  for (const CommandArg& a : info->args)
    if (a.required && !args.contains(a.name)) throw InputError(std::string(a.name) + ": required");
  return Command{name, std::move(args), "", -1};
}

Command parseCommand(const nlohmann::json& j) {
  if (!j.is_object()) throw InputError("expected an object such as {\"do\": \"undo\"}, got " + j.dump());
  if (!j.contains("do") || !j["do"].is_string()) throw InputError("\"do\": required, the command's name");
  nlohmann::json args = j;
  args.erase("do");
  return makeCommand(j["do"].get<std::string>(), std::move(args));
}

std::vector<Command> parseCommandList(const std::string& text) {
  // Depth and memory bounded while parsing (formats/json_reading.h).
  nlohmann::json j;
  try {
    j = readJson(text, "commands", Limits{}.max_memory_bytes);
  } catch (const InputError& e) {  // "commands: not valid JSON: …" reads as before without the prefix
    const std::string what = e.what();
    throw InputError(what.rfind("commands: ", 0) == 0 ? what.substr(10) : what);
  }
  return commandsOf(j);
}

std::vector<Command> commandsOf(const nlohmann::json& j) {
  if (!j.is_array()) throw InputError("expected a JSON array of commands");
  std::vector<Command> out;
  for (std::size_t i = 0; i < j.size(); ++i) {
    try {
      out.push_back(parseCommand(j[i]));
    } catch (const InputError& e) {
      const std::string name = j[i].is_object() && j[i].contains("do") && j[i]["do"].is_string()
                                   ? " (" + printableName(j[i]["do"].get<std::string>()) + ")"
                                   : "";
      throw InputError("command " + std::to_string(i) + name + ": " + e.what());
    }
  }
  return out;
}

nlohmann::json commandToJson(const Command& c) {
  nlohmann::json j = c.args;
  j["do"] = c.name;
  return j;
}

std::string indexRefusal(int i, int count, const char* what, const char* minus_one) {
  if (i >= (minus_one ? -1 : 0) && i < count) return "";
  return "no " + std::string(what) + " " + std::to_string(i) + " (there are " + std::to_string(count) +
         ", numbered from 0" + (minus_one ? std::string("; −1 = ") + minus_one : std::string()) + ")";
}

int indexArgument(const Command& c, int count, const char* what, const char* minus_one) {
  const int i = c.integer("index");
  const std::string why = indexRefusal(i, count, what, minus_one);
  if (!why.empty()) throw InputError("index: " + why);
  return i;
}

void checkViewSelection(const Command& c, int heads, int tokens, int batch) {
  struct Selection {
    const char* field;
    const char* what;
    const char* minus_one;  // what −1 selects, or nullptr
    int count;
  };
  const Selection selections[] = {{"head", "head", "all heads", heads},
                                  {"token", "token", nullptr, tokens},
                                  {"batch", "batch element", nullptr, batch}};
  const std::string field = c.text("field");
  const nlohmann::json& value = c.args.contains("value") ? c.args.at("value") : nlohmann::json();
  if (!value.is_number() || std::floor(value.get<double>()) != value.get<double>() ||
      std::fabs(value.get<double>()) > 1e9)
    return;
  for (const Selection& s : selections) {
    if (field != s.field) continue;
    const std::string why = indexRefusal(static_cast<int>(value.get<double>()), s.count, s.what, s.minus_one);
    if (!why.empty()) throw InputError("view " + field + ": " + why);
  }
}

}  // namespace attnscope
