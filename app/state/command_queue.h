// CommandQueue: where panels, menus, keys and scripts put their commands. The controller applies the
// queue once per frame, before drawing, in one place (docs/DESIGN.md §3.2).
#pragma once
#include <cstdio>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "editing/command.h"
#include "engine/errors.h"

namespace attnscope {

class CommandQueue {
 public:
  void push(Command c) { queue_.push_back(std::move(c)); }
  // Builds the command from the table; `gesture` ties the edits of one drag into one undo step.
  void push(const std::string& name, nlohmann::json args = nlohmann::json::object(), std::string gesture = "") {
    try {
      Command c = makeCommand(name, std::move(args));
      c.gesture = std::move(gesture);
      queue_.push_back(std::move(c));
    } catch (const InputError& e) {  // a panel built a command the table does not know: a bug
      std::fprintf(stderr, "attnscope: internal error: bad command %s: %s\n", name.c_str(), e.what());
    }
  }
  // Bad input a panel found itself (a cell's typed "1e"): the window says why once, as it does for
  // a command refused.
  void refuse(std::string message) { refusals_.push_back(std::move(message)); }
  std::vector<std::string> takeRefusals() { return std::exchange(refusals_, {}); }
  bool empty() const { return queue_.empty(); }
  std::size_t size() const { return queue_.size(); }
  const Command& front() const { return queue_.front(); }
  bool holds(CommandId id) const {  // a command of this kind waiting
    for (const Command& c : queue_)
      if (c.id() == id) return true;
    return false;
  }
  const Command* newest(CommandId id) const {  // the last waiting command of this kind, or null
    for (auto c = queue_.rbegin(); c != queue_.rend(); ++c)
      if (c->id() == id) return &*c;
    return nullptr;
  }
  Command pop() {
    Command c = std::move(queue_.front());
    queue_.pop_front();
    return c;
  }

 private:
  std::deque<Command> queue_;
  std::vector<std::string> refusals_;
};

}  // namespace attnscope
