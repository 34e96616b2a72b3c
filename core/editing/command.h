// Commands: every user action as a value (docs/DESIGN.md §3.2). The app's menus, keys, buttons,
// drags and typed values, `attnscope --commands FILE.json`, and the tests all make the same
// values; one place applies them. The JSON form is an object with "do" and the arguments:
//   {"do": "set", "field": "num_heads", "value": 2}
// The table below is the one list of commands: parsing, argument checks and the help text use it.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "formats/json_reading.h"

namespace attnscope {

// What a command changes, so the app knows who applies it.
enum class CommandTarget {
  Document,  // the workspace being edited (core/editing/document.h)
  View,      // what is shown: selection, head, batch element, view settings; no undo step
  App,       // files, screenshots, Compare, the engine's threads, lessons
  Model,     // the trained model open beside the workspace: its text, the layer shown
};

enum class ArgType { Int, Number, Bool, String, Any };

struct CommandArg {
  const char* name;
  ArgType type;
  bool required;
};

// Every command by what it is; the table gives each its "do" name and the rest. The app and the
// Document dispatch on it (a switch), never on the name. Written as a block, in the table's order.
// clang-format off
enum class CommandId {
  Open, Preset, New, Restore, Sentence, AddToken, RemoveToken, RenameToken, MoveToken, Set, Model, SetCell, DIn,
  Randomize, BookExample, Workspace, Reload, PasteEmbeddings, SetParameter, ResetParameters, PasteParameters, Undo, Redo,
  SelectToken, SelectKey, SelectHead, GoTo, SelectBatch, View, Pin, Unpin, Swap, Wait, Fullscreen, Engine, Screenshot, Save,
  ExportTrace, ExportMap, SavePytorch, CopyPytorch, Dialog, Quit, Unsaved, Recovery, LessonOpen, LessonStep,
  LessonNext, LessonBack, LessonClose, ModelOpen, ModelClose, SelectLayer, Text, AppendToken, RepeatText,
  Attention, Learn, LearnPlay, LearnPause, LearnStep, LearnTo, LearnShow, LearnSave, LearnClose,
};
// clang-format on

// What the app must know of a command before applying it (docs/DESIGN.md §3.2).
enum CommandFlag : unsigned {
  kUndoable = 1u << 0,         // a change of the workspace that makes one undo step
  kWaitsForResult = 1u << 1,   // runs once the newest result is shown (it reads or keeps that result)
  kAsksFirst = 1u << 2,        // in the app, asks before unsaved changes are lost (unless `discard`) …
  kAsksScripts = 1u << 3,      // … even when a script gave it (quit); others run unattended
  kChangesExecutor = 1u << 4,  // changes how the engine runs (threads), not what it computes
  kAsksModelText =
      1u << 5,  // in the app, asks before a trained model's unsaved text is closed or replaced (unless `discard`)
};

struct CommandInfo {
  CommandId id;
  const char* name;  // the "do"
  CommandTarget target;
  unsigned flags;  // CommandFlag bits
  std::vector<CommandArg> args;
  const char* help;  // one line for the README and error messages
  bool has(CommandFlag f) const { return (flags & f) != 0; }
};

// The command table, in the order the README lists it.
const std::vector<CommandInfo>& commandTable();
const CommandInfo* findCommand(const std::string& name);
const CommandInfo& commandInfo(CommandId id);

// Who waits to hear how a command went (a channel message, app/state/channel_server.h): told once
// per command, on the UI thread, when it is applied or refused.
class CommandListener {
 public:
  virtual ~CommandListener() = default;
  virtual void applied() = 0;
  virtual void refused(const std::string& message) = 0;
  virtual bool refusedAlready() const = 0;  // an earlier command of the same message failed: skip this one
};

struct Command {
  std::string name;                                // the "do": an entry of commandTable()
  nlohmann::json args = nlohmann::json::object();  // its arguments, checked against the table
  std::string gesture;                             // not in JSON: edits of one drag share it and make one undo step
  int script_index = -1;  // not in JSON: its position in a --commands file, −1 for the UI's own
  // Not in JSON: the app read a paste's `text` from the clipboard, so messages name "clipboard";
  // text a command gives is "pasted text".
  bool from_clipboard = false;
  std::shared_ptr<CommandListener> listener = nullptr;  // not in JSON: who waits for the outcome, or null
  // Not in JSON: a `workspace` command's numbers as a channel message's float32 tensors brought them
  // ("embeddings", "parameters.NAME", "batch_sequences[k]"; its "json" holds empty arrays there), so
  // they are never written out and read back as decimal text. Null: the numbers are in "json".
  std::shared_ptr<const std::map<std::string, NumberArray>> arrays = nullptr;

  const CommandInfo& info() const;  // the table entry (the name was checked on creation)
  CommandId id() const { return info().id; }
  // Typed arguments; throw InputError naming the argument when missing or of the wrong kind.
  int integer(const char* arg) const;
  double number(const char* arg) const;
  bool flag(const char* arg) const;
  std::string text(const char* arg) const;
  bool has(const char* arg) const { return args.contains(arg); }
};

// Builds a command, checking the name and the arguments against the table; throws InputError.
Command makeCommand(const std::string& name, nlohmann::json args = nlohmann::json::object());
// {"do": …, args…} → Command; throws InputError ("unknown command 'x'", "index: expected an integer").
Command parseCommand(const nlohmann::json& j);
// A JSON array of command objects; throws InputError naming the first bad one ("command 3: …").
std::vector<Command> parseCommandList(const std::string& text);
// The same from a parsed JSON array (a channel message's "commands", editing/channel_message.h).
std::vector<Command> commandsOf(const nlohmann::json& array);
nlohmann::json commandToJson(const Command& c);

// Why `i` names no `what` of `count` ("no head 9 (there are 4, numbered from 0; −1 = all heads)"),
// or "" where it is one: within [0, count), or −1 where that means `minus_one` ("all heads",
// "none"). The app's and a lesson's checks say it alike.
std::string indexRefusal(int i, int count, const char* what, const char* minus_one = nullptr);
// A selection command's `index` argument, or an InputError: "index: " and its indexRefusal.
int indexArgument(const Command& c, int count, const char* what, const char* minus_one = nullptr);
// A view command's selection (`head`, `token`, `batch`) within these counts, else an InputError:
// "view head: no head 9 (there are 2, numbered from 0; −1 = all heads)". Other fields, and values
// of another kind (the view's own check refuses those), pass. The app's and a lesson's checks.
void checkViewSelection(const Command& c, int heads, int tokens, int batch);

}  // namespace attnscope
