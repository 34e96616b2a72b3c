#include "editing/command.h"

#include <cmath>
#include <limits>

#include "engine/errors.h"
#include "formats/json_format.h"
#include "formats/json_reading.h"

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
  static const std::vector<CommandInfo> table = {
      // open, preset and new from the app's own menus ask first when there are unsaved changes
      // (unless `discard` is true); scripts are unattended and never asked.
      {"open", T::Document, {{"path", A::String, true}, {"discard", A::Bool, false}},
       "open a workspace file (or a PNG saved by attnscope)"},
      {"preset", T::Document, {{"name", A::String, true}, {"discard", A::Bool, false}},
       "load a preset by name (assets/presets)"},
      {"new", T::Document, {{"discard", A::Bool, false}}, "the book's example with the current step's settings"},
      {"restore", T::Document, {{"path", A::String, true}},
       "reopen an autosave: its workspace, with the file name and unsaved mark it had"},
      {"sentence", T::Document, {{"text", A::String, true}, {"seed", A::Int, false}},
       "type a sentence and make tokens (one per word, same word → same vector)"},
      {"add_token", T::Document, {{"name", A::String, false}, {"at", A::Int, false}, {"seed", A::Int, false}},
       "add a token (at the end unless `at` is given)"},
      {"remove_token", T::Document, {{"index", A::Int, true}}, "remove the token at `index`"},
      {"rename_token", T::Document, {{"index", A::Int, true}, {"name", A::String, true}}, "rename a token"},
      {"move_token", T::Document, {{"from", A::Int, true}, {"to", A::Int, true}}, "move a token and its row"},
      {"set", T::Document, {{"field", A::String, true}, {"value", A::Any, true}},
       "set one model field: variant, d_out, num_heads, dropout, seed, training, qkv_bias, causal, scale, "
       "batch_size, normalization, causal_route (neg_inf, tril), dropout_rng (mkl, default), dropout_seed (a seed, "
       "or null), draws_before"},
      {"model", T::Document, {{"fields", A::Any, true}}, "set several model fields at once: {\"fields\": {…}}"},
      {"set_cell", T::Document, {{"row", A::Int, true}, {"col", A::Int, true}, {"value", A::Number, true}},
       "set one embedding value"},
      {"d_in", T::Document, {{"value", A::Int, true}, {"seed", A::Int, false}},
       "change the embedding width (new columns are seeded random values)"},
      {"randomize", T::Document, {{"seed", A::Int, false}}, "new random embeddings: torch.rand(T, d_in)"},
      {"book_example", T::Document, {}, "the book's six tokens and embeddings, keeping the model"},
      {"workspace", T::Document, {{"json", A::Any, true}},
       "take the tokens, embeddings, model and parameters of a workspace given inline (one undo step; the file stays)"},
      {"paste_embeddings", T::Document, {{"text", A::String, false}},
       "replace the embeddings by a pasted tensor: print(x) of torch, a NumPy repr, nested lists, CSV/TSV "
       "(Edit › Paste embeddings, Ctrl+Shift+V); without `text` the app reads the clipboard"},
      {"set_parameter", T::Document, {{"name", A::String, true}, {"row", A::Int, true}, {"col", A::Int, true},
                                      {"value", A::Number, true}},
       "set one value of a parameter by its state_dict name (W_query.weight, heads.0.W_key.weight, out_proj.bias "
       "(row 0), W_query for v1), in torch's layout; the tensor becomes the user's own"},
      {"reset_parameters", T::Document, {}, "back to the seeded initialization: the user's own parameters removed"},
      {"paste_parameters", T::Document, {{"text", A::String, false}},
       "the module's parameters from a printed state_dict, print(m.state_dict()): OrderedDict([('W_query.weight', "
       "tensor(…)), …]) (Edit › Paste parameters); without `text` the app reads the clipboard"},
      {"undo", T::Document, {}, "undo the last edit"},
      {"redo", T::Document, {}, "redo what was undone"},
      {"select_token", T::View, {{"index", A::Int, false}, {"step", A::Int, false}},
       "select the query token `index` everywhere (or move by `step`)"},
      {"select_key", T::View, {{"index", A::Int, true}}, "highlight key column `index` (−1: none)"},
      {"select_head", T::View, {{"index", A::Int, false}, {"step", A::Int, false}},
       "show head `index` alone (−1: all heads), or cycle by `step`"},
      {"go_to", T::View, {{"text", A::String, false}, {"index", A::Int, false}, {"to", A::Int, false}},
       "zoom every map to tokens: `text` as typed (a name, a number from 1, a range a–b) or `index` … `to` (0-based); "
       "selects the first"},
      {"select_batch", T::View, {{"index", A::Int, true}}, "show batch element `index`"},
      {"view", T::View, {{"field", A::String, true}, {"value", A::Any, true}},
       "a view setting: theme, colormap, columns, shared_scale, diverging_for_signed, tab, inspector, "
       "model_panel, inputs_panel, status_bar, statistics, presentation, text_size (100–250 %, \"larger\", \"smaller\"), "
       "screenshot_scale, caption, screenshot_dir, focus ([map names]: the grid lays itself out for them, the others "
       "dimmed or set aside, as a lesson step's maps; [] for none); the Lines view's lines_stage (weights, dropped_weights), lines_top_k (1–64), "
       "lines_hidden_heads ([0-based heads]), lines_isolate (only the selected token's lines)"},
      // Compare mode (the Compare tab): A is a result pinned aside, B the current one.
      {"pin", T::App, {}, "pin the newest result as A of the Compare tab (Ctrl+P); any later change is B"},
      {"unpin", T::App, {}, "drop the pinned result A"},
      {"swap", T::App, {}, "swap A and B: the pinned settings become the current ones (one undo step), B is pinned"},
      {"fullscreen", T::App, {{"on", A::Bool, false}},
       "full-screen on the window's monitor (on: true), or back to the window as it was (toggles without `on`)"},
      {"engine", T::View, {{"parallel", A::Bool, false}, {"threads", A::Int, false}},
       "serial or OpenMP path, and the thread count (0 = all cores)"},
      {"screenshot", T::App, {{"path", A::String, true}, {"panel", A::String, false}, {"head", A::Int, false},
                              {"scale", A::Number, false}},
       "save the window (or a panel, or one head's map) as PNG once the newest result is shown; "
       "path \"\" = a time-stamped file in the screenshot folder"},
      {"save", T::App, {{"path", A::String, false}, {"overwrite", A::Bool, false}},
       "save the workspace (to `path`, or to its file); `overwrite`: even if another program changed the file since"},
      {"export_trace", T::App, {{"path", A::String, true}, {"format", A::String, true}},
       "write every matrix of the shown result into folder `path` (format json, csv or npy)"},
      {"export_map", T::App, {{"stage", A::String, true}, {"head", A::Int, true}, {"path", A::String, true},
                              {"format", A::String, true}},
       "write one map of the shown result (csv, json or npy)"},
      {"save_pytorch", T::App, {{"path", A::String, true}}, "write the PyTorch script that rebuilds the workspace"},
      {"copy_pytorch", T::App, {}, "copy that script to the clipboard"},
      {"dialog", T::App, {{"which", A::String, true}, {"stage", A::String, false}, {"head", A::Int, false},
                          {"format", A::String, false}},
       "open a file dialog: open, open_lesson, save_as, export_trace, save_pytorch, export_map, save_lines"},
      {"quit", T::App, {{"discard", A::Bool, false}},
       "quit; asks first when there are unsaved changes, unless `discard` is true"},
      {"unsaved", T::App, {{"choice", A::String, true}},
       "answer the unsaved-changes prompt of quit, open, new or preset: save (then go on), discard or cancel"},
      // Lessons (core/lessons/lesson.h): a step applies its own commands through this same path.
      {"recovery", T::App, {{"choice", A::String, true}},
       "the answer to the start's offer of the last session's unsaved changes to the file opened, newer than it: "
       "restore (them, unsaved) or keep (the file as saved; they stay in the state folder)"},
      {"lesson_open", T::App, {{"path", A::String, true}, {"step", A::Int, false}, {"discard", A::Bool, false}},
       "open a lesson file (checked whole first) at `step` (1-based, default 1); asks first over unsaved changes"},
      {"lesson_step", T::App, {{"step", A::Int, true}}, "go to step `step` of the open lesson (1-based, as shown)"},
      {"lesson_next", T::App, {}, "the open lesson's next step (Space, →, PageDown)"},
      {"lesson_back", T::App, {}, "the open lesson's previous step (←, PageUp)"},
      {"lesson_close", T::App, {}, "close the lesson: the view as it was before it"},
  };
  return table;
}

const CommandInfo* findCommand(const std::string& name) {
  for (const CommandInfo& c : commandTable())
    if (name == c.name) return &c;
  return nullptr;
}

const CommandInfo& Command::info() const {
  const CommandInfo* c = findCommand(name);
  if (!c) throw InputError("unknown command '" + name + "'");
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
    throw InputError("unknown command '" + name + "' (one of: " + names + ")");
  }
  if (!args.is_object()) throw InputError("arguments: expected an object");
  for (auto it = args.begin(); it != args.end(); ++it) {
    const CommandArg* spec = nullptr;
    for (const CommandArg& a : info->args)
      if (it.key() == a.name) spec = &a;
    if (!spec) {
      std::string known;
      for (const CommandArg& a : info->args) known += (known.empty() ? "" : ", ") + std::string(a.name);
      throw InputError(it.key() + ": unknown argument" + (known.empty() ? " (this command takes none)" : " (expected " + known + ")"));
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
  if (!j.is_array()) throw InputError("expected a JSON array of commands");
  std::vector<Command> out;
  for (std::size_t i = 0; i < j.size(); ++i) {
    try {
      out.push_back(parseCommand(j[i]));
    } catch (const InputError& e) {
      const std::string name = j[i].is_object() && j[i].contains("do") && j[i]["do"].is_string()
                                   ? " (" + j[i]["do"].get<std::string>() + ")"
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

}  // namespace attnscope
