#include "state/key_bindings.h"

#include "engine/errors.h"

namespace attnscope {

namespace {

nlohmann::json stepBack(const ViewState&) { return {{"step", -1}}; }
nlohmann::json stepOn(const ViewState&) { return {{"step", 1}}; }
nlohmann::json openDialog(const ViewState&) { return {{"which", "open"}}; }
nlohmann::json screenshotNow(const ViewState&) { return {{"path", ""}}; }  // a timestamped file in the folder
nlohmann::json larger(const ViewState&) { return {{"field", "text_size"}, {"value", "larger"}}; }
nlohmann::json smaller(const ViewState&) { return {{"field", "text_size"}, {"value", "smaller"}}; }
nlohmann::json normalSize(const ViewState&) { return {{"field", "text_size"}, {"value", 100}}; }
nlohmann::json presentation(const ViewState& v) { return {{"field", "presentation"}, {"value", !v.presentation}}; }

constexpr unsigned kCtrlShift = kCtrl | kShift;
constexpr const char* kNextStep = "with a lesson open: next step (a presenter's clicker sends these)";
constexpr const char* kStepBack = "with a lesson open: previous step";
// Bindings with the same help text share its line.
constexpr const char* kTextSize = "larger, smaller, normal text (View › Text size, 100–250\u00a0%)";
constexpr const char* kUndoRedo = "undo, redo (a slider drag is one step)";
constexpr const char* kToken = "previous / next query token";
constexpr const char* kHead = "next / previous head (then all heads)";
// The view a binding's arguments are made from when the caller has none.
const ViewState kDefaultView;

}  // namespace

const std::vector<KeyBinding>& keyBindings() {
  using S = KeyScope;
  // One row per binding.
  // clang-format off
  static const std::vector<KeyBinding> table = {
      // key, mods, scope, repeats, label, command, args, help — in the order the help lists them
      {Key::Up, kNoMods, S::View, true, "↑", "select_token", stepBack, kToken},
      {Key::Down, kNoMods, S::View, true, "↓", "select_token", stepOn, kToken},
      {Key::Left, kNoMods, S::View, true, "←", "select_token", stepBack, kToken},
      {Key::Right, kNoMods, S::View, true, "→", "select_token", stepOn, kToken},
      // A lesson's steps: the keys a presenter's clicker sends (they win over the arrows' own).
      {Key::Space, kNoMods, S::Lesson, false, "Space", "lesson_next", nullptr, kNextStep},
      {Key::Right, kNoMods, S::Lesson, false, "→", "lesson_next", nullptr, kNextStep},
      {Key::PageDown, kNoMods, S::Lesson, false, "PageDown", "lesson_next", nullptr, kNextStep},
      {Key::Left, kNoMods, S::Lesson, false, "←", "lesson_back", nullptr, kStepBack},
      {Key::PageUp, kNoMods, S::Lesson, false, "PageUp", "lesson_back", nullptr, kStepBack},
      {Key::Space, kShift, S::Lesson, false, "Shift+Space", "lesson_back", nullptr, kStepBack},
      {Key::Tab, kNoMods, S::View, true, "Tab", "select_head", stepOn, kHead},
      {Key::Tab, kShift, S::View, true, "Shift+Tab", "select_head", stepBack, kHead},
      {Key::Tab, kNoMods, S::Typing, false, "Tab", "", nullptr, "while typing a number: apply it, as Enter does"},
      {Key::Tab, kShift, S::Typing, false, "Shift+Tab", "", nullptr, "while typing a number: apply it, as Enter does"},
      {Key::Z, kCtrl, S::View, true, "Ctrl+Z", "undo", nullptr, kUndoRedo},
      {Key::Z, kCtrlShift, S::View, true, "Ctrl+Shift+Z", "redo", nullptr, kUndoRedo},
      {Key::Y, kCtrl, S::View, true, "Ctrl+Y", "redo", nullptr, ""},
      {Key::V, kCtrlShift, S::View, false, "Ctrl+Shift+V", "paste_embeddings", nullptr, "paste embeddings (a printed tensor, NumPy array, lists or CSV)"},
      {Key::Plus, kCtrl, S::Always, true, "Ctrl++", "view", larger, kTextSize},
      {Key::Minus, kCtrl, S::Always, true, "Ctrl+−", "view", smaller, kTextSize},
      {Key::Zero, kCtrl, S::Always, false, "Ctrl+0", "view", normalSize, kTextSize},
      {Key::F11, kNoMods, S::Always, false, "F11", "fullscreen", nullptr, "full screen, on the monitor that holds the window"},
      {Key::F10, kNoMods, S::Always, false, "F10", "view", presentation, "presentation: hide the panels around the maps"},
      {Key::P, kCtrl, S::View, false, "Ctrl+P", "pin", nullptr, "pin the result as A; the Compare tab shows A, B (now) and B − A"},
      {Key::F12, kNoMods, S::Always, false, "F12", "screenshot", screenshotNow, "save the window as PNG (File › Screenshot folder)"},
      {Key::S, kCtrl, S::Always, false, "Ctrl+S", "save", nullptr, "save (a value being typed first)"},
      {Key::O, kCtrl, S::Always, false, "Ctrl+O", "dialog", openDialog, "open a workspace or a PNG saved by attnscope"},
      {Key::Q, kCtrl, S::Always, false, "Ctrl+Q", "quit", nullptr, "quit"},
  };
  // clang-format on
  return table;
}

std::optional<Command> keyCommand(const KeyPress& press, const KeyContext& context) {
  const ViewState& view = context.view ? *context.view : kDefaultView;
  // The key's first binding; with a lesson open, its lesson binding (← → turn the pages, not the token).
  const KeyBinding* found = nullptr;
  for (const KeyBinding& b : keyBindings()) {
    if (b.key != press.key || b.mods != press.mods || b.scope == KeyScope::Typing) continue;
    if (b.scope == KeyScope::Lesson) {
      if (!context.lesson) continue;
      found = &b;
      break;
    }
    if (!found) found = &b;
  }
  if (!found) return std::nullopt;
  if (found->scope != KeyScope::Always && (context.typing || context.dialog)) return std::nullopt;
  if (press.repeat && !found->repeats) return std::nullopt;  // held down: a step or a toggle acts once
  return makeCommand(found->command, found->args ? found->args(view) : nlohmann::json::object());
}

bool keyCommitsTyping(const KeyPress& press, const KeyContext& context) {
  if (!context.typing || context.dialog) return false;
  for (const KeyBinding& b : keyBindings())
    if (b.scope == KeyScope::Typing && b.key == press.key && b.mods == press.mods) return true;
  return false;
}

const char* shortcutLabel(const std::string& command, const nlohmann::json& args) {
  for (const KeyBinding& b : keyBindings()) {
    if (command != b.command) continue;
    const nlohmann::json has = b.args ? b.args(kDefaultView) : nlohmann::json::object();
    bool all = true;
    for (const auto& [name, value] : args.items()) all = all && has.contains(name) && has[name] == value;
    if (all) return b.label;
  }
  return nullptr;
}

const std::vector<std::string>& keyHelpLines() {
  static const std::vector<std::string> lines = [] {  // the table is fixed: its help once
    std::vector<std::string> helps, keys;             // each help text once, in the table's order, with its keys
    for (const KeyBinding& b : keyBindings()) {
      if (!*b.help) continue;
      std::size_t i = 0;
      while (i < helps.size() && helps[i] != b.help) ++i;
      if (i == helps.size()) {
        helps.push_back(b.help);
        keys.emplace_back();
      }
      keys[i] += (keys[i].empty() ? "" : ", ") + std::string(b.label);
    }
    std::vector<std::string> out;
    for (std::size_t i = 0; i < helps.size(); ++i) out.push_back(keys[i] + ": " + helps[i]);
    return out;
  }();
  return lines;
}

}  // namespace attnscope
