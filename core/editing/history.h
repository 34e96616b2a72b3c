// History: undo and redo of workspace edits. Each entry is a whole workspace snapshot (they are
// small next to a trace); a run of edits with the same `coalesce` key — one slider drag, one
// cell being dragged — becomes one step.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "formats/workspace.h"

namespace attnscope {

class History {
 public:
  explicit History(std::size_t capacity = 200) : capacity_(capacity) {}

  // Call before applying an edit, with the workspace as it is before it. Edits with the same
  // non-empty `coalesce` key in a row (until endGesture, undo or redo) make one undo step. Every
  // record clears the redo stack; beyond `capacity` steps the oldest is dropped.
  void record(const Workspace& before, const std::string& coalesce = "");
  // Ends a coalescing run (e.g. the mouse was released), so the next edit is a new step.
  void endGesture();

  bool canUndo() const { return !undo_.empty(); }
  bool canRedo() const { return !redo_.empty(); }
  // Returns the workspace to show; `current` is pushed onto the other stack. With nothing to
  // undo (redo) they return `current` and change nothing.
  Workspace undo(const Workspace& current);
  Workspace redo(const Workspace& current);
  void clear();

 private:
  std::size_t capacity_;
  std::vector<Workspace> undo_, redo_;
  std::string open_gesture_;  // the coalesce key of the run in progress
};

}  // namespace attnscope
