// The app's keys, one table (docs/DESIGN.md §3.1 "Panels"): each binding's key and modifiers, when
// it acts, the command it pushes, its label (menus show it beside the item) and its line in
// Help › Keys and mouse. The window turns a key press into a KeyPress (shell/app_window.cpp) and
// keyCommand() into a command; the menus ask shortcutLabel(); the help text is keyHelpLines().
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "editing/command.h"
#include "state/view_state.h"

namespace attnscope {

// clang-format off
enum class Key { S, O, Q, Z, Y, V, P, Plus, Minus, Zero, F10, F11, F12, Space, Left, Right, Up, Down, PageUp, PageDown, Tab };
// clang-format on

enum KeyMods : unsigned { kNoMods = 0, kCtrl = 1, kShift = 2, kAlt = 4 };

struct KeyPress {
  Key key;
  unsigned mods = kNoMods;  // KeyMods
  bool repeat = false;      // held down: the window's auto-repeat
};

// When a binding acts.
enum class KeyScope {
  Always,  // even while a text field has the keyboard, or a dialog is up
  View,    // neither: a field's keys type, and a dialog is modal (no page turns or undo behind it)
  Lesson,  // as View, with a lesson open: its steps take the presenter's clicker keys
  Typing,  // only while a text field has the keyboard, and no command: the field lets go (keyCommitsTyping)
};

// What the window is doing when the key comes.
struct KeyContext {
  bool typing = false;  // a text field has the keyboard
  bool dialog = false;  // a modal dialog or prompt is up
  bool lesson = false;  // a lesson is open
  const ViewState* view = nullptr;
};

struct KeyBinding {
  Key key;
  unsigned mods;
  KeyScope scope;
  bool repeats;                                   // a held key acts again (arrows, undo); a step or a toggle does not
  const char* label;                              // "Ctrl+S"
  const char* command;                            // the command's name
  nlohmann::json (*args)(const ViewState& view);  // its arguments, or null for none
  const char* help;  // its line in the help text: bindings with the same text share one; "" for none
};

const std::vector<KeyBinding>& keyBindings();
// The command for a key press, or none (unbound, or not now). The first binding that
// matches wins, but with a lesson open its lesson binding does (← and → turn its pages).
std::optional<Command> keyCommand(const KeyPress& press, const KeyContext& context);
// Whether the key makes the field being typed into let go of the keyboard, its value applied as on
// Enter (Tab, as in a spreadsheet: ImGui never sees Tab, which walked into the next field).
bool keyCommitsTyping(const KeyPress& press, const KeyContext& context);
// The label of the first binding pushing `command` whose arguments include `args` ("Ctrl+S"; for
// the text size's Smaller: `view` with {"value": "smaller"}); null for none.
const char* shortcutLabel(const std::string& command, const nlohmann::json& args = nlohmann::json::object());
// The help text's lines, "keys: what they do", in the table's order.
const std::vector<std::string>& keyHelpLines();

}  // namespace attnscope
