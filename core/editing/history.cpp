// Undo/redo stacks of whole-workspace snapshots, with drags coalesced into one step.
#include "editing/history.h"

#include <utility>

namespace attnscope {

namespace {
void dropOldest(std::vector<Workspace>& stack, std::size_t capacity) {
  if (stack.size() > capacity)
    stack.erase(stack.begin(), stack.begin() + static_cast<std::ptrdiff_t>(stack.size() - capacity));
}
}  // namespace

void History::record(const Workspace& before, const std::string& coalesce) {
  redo_.clear();  // a new edit forks the timeline: what was undone cannot come back
  const bool continues = !coalesce.empty() && coalesce == open_gesture_ && !undo_.empty();
  open_gesture_ = coalesce;
  if (continues) return;  // the step already holds the state before the gesture began
  if (capacity_ == 0) return;
  undo_.push_back(before);
  dropOldest(undo_, capacity_);
}

void History::endGesture() { open_gesture_.clear(); }

Workspace History::undo(const Workspace& current) {
  open_gesture_.clear();
  if (undo_.empty()) return current;
  Workspace previous = std::move(undo_.back());
  undo_.pop_back();
  redo_.push_back(current);
  dropOldest(redo_, capacity_);
  return previous;
}

Workspace History::redo(const Workspace& current) {
  open_gesture_.clear();
  if (redo_.empty()) return current;
  Workspace next = std::move(redo_.back());
  redo_.pop_back();
  undo_.push_back(current);
  dropOldest(undo_, capacity_);
  return next;
}

void History::clear() {
  undo_.clear();
  redo_.clear();
  open_gesture_.clear();
}

}  // namespace attnscope
