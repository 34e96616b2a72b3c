// History: undo and redo of workspace edits, bounded by memory. Each step stores only what the
// edit changed: the parts of the workspace that differ (model, tokens, random recipe, view,
// embeddings), each as its value before and after; when few embedding cells changed, only those
// cells. Undo puts the `before` values back into the workspace, redo the `after` values.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/model_config.h"
#include "engine/tensor.h"
#include "formats/workspace_file.h"

namespace attnscope {

// What a step holds; used by History only (history.cpp builds, merges and applies them).
namespace history_detail {

template <class T>
struct Change {
  T before, after;
};
struct Cell {
  std::int32_t row, col;
  float before, after;
};
// The embeddings' change: a cell list sorted by (row, col) when the shape stayed and at most
// 1/16 of the cells differ, otherwise both whole matrices.
struct EmbeddingsChange {
  bool dense = false;
  Eigen::Index rows = 0, cols = 0;  // the (unchanged) shape, for the cell list
  std::vector<Cell> cells;          // when !dense
  Matrix before, after;             // when dense
};
// One undo step: the parts that differ, each absent when the step left it alone.
struct Step {
  std::optional<Change<ModelConfig>> model;
  std::optional<Change<std::vector<std::string>>> tokens;
  std::optional<Change<std::optional<RandomEmbeddings>>> random;
  std::optional<Change<nlohmann::json>> view;
  std::optional<Change<std::vector<Matrix>>> batch_sequences;  // a batch's own sequences, whole
  std::optional<EmbeddingsChange> embeddings;
  // The document's file name, when the step changed it (a preset or New leaves it untitled): not
  // part of the workspace, but undoing the step must give the window back its name.
  std::optional<Change<std::string>> file_name;
  std::size_t bytes = 0;  // what History::bytes() counts for it
  bool empty() const { return !model && !tokens && !random && !view && !embeddings && !batch_sequences; }
};

}  // namespace history_detail

// Why deltas and a byte budget: whole-workspace snapshots cost 3 MiB each at GPT-2 size
// (1024 × 768 floats) even when a drag moved one cell, so 200 of them took ≈ 600 MiB. A delta of
// one cell is a few dozen bytes, and a budget in bytes (not in steps) keeps hundreds of small
// edits while a few huge ones (a new sentence) cannot exhaust memory.
//
// Steps are deltas, so they only apply in order: a step undoes correctly only on the state the
// steps after it left. Hence the budget drops the oldest steps first, and a step that alone
// exceeds the budget takes every older step with it (nothing left could be applied).
class History {
 public:
  static constexpr std::size_t kDefaultBudget = std::size_t{64} << 20;  // 64 MiB of steps
  explicit History(std::size_t budget_bytes = kDefaultBudget);

  // Records the edit that turned `before` into `after` as one undo step. With a non-empty
  // `gesture` equal to the previous record's gesture (no endGesture/undo/redo in between) it
  // extends that step instead (one slider drag = one step; the step undoes back to the state
  // before the gesture began). Clears the redo stack. Drops the oldest steps while the steps held
  // exceed the budget (a single step larger than the whole budget is not kept at all: then
  // canUndo() may be false right after record; that is accepted and documented).
  // Recording an edit that changed nothing records nothing.
  //
  // Details: `before` should be the state the previous record's `after` left (the app records
  // every edit), since a gesture's step is extended on that assumption. A record that changed
  // nothing is ignored entirely: it neither clears redo nor ends a gesture (a drag that pauses
  // stays one step). A gesture whose edits return exactly to where it began leaves no step. Once
  // a gesture's step was too large to keep, the rest of that gesture is not recorded either
  // (a step starting mid-gesture would undo to a state the user never chose).
  //
  // `file_name`, when the edit changed the document's file name ({before, after}; a preset or New
  // leaves the document untitled): undo and redo hand it back. Such a step never extends a gesture.
  void record(const Workspace& before, const Workspace& after, const std::string& gesture = "",
              const std::optional<std::array<std::string, 2>>& file_name = std::nullopt);
  // Ends the gesture in progress (e.g. the mouse was released): the next record is a new step.
  void endGesture();
  bool canUndo() const;
  bool canRedo() const;
  // `current` must be the workspace as the newest step left it. undo turns it into the state
  // before that step and returns true; with nothing to undo it returns false and changes nothing.
  // `file` (optional): the document's file name. A step that changed it puts back the name it had
  // before the step (redo: after), provided *file is still the name the step left — a document
  // saved under another name since keeps that name.
  bool undo(Workspace& current, std::string* file = nullptr);
  bool redo(Workspace& current, std::string* file = nullptr);
  void clear();
  std::size_t bytes() const;  // memory the undo and redo steps hold, approximately (payload bytes)
  std::size_t undoSteps() const;
  std::size_t redoSteps() const;

 private:
  // The step of the gesture named by open_gesture_: none yet (or no gesture), undo_.back(), or
  // dropped for being larger than the budget.
  enum class GestureStep { None, OnTop, Dropped };

  void clearRedo();
  void enforceBudget();

  std::size_t budget_;
  std::size_t bytes_ = 0;                         // the sum of the steps' bytes
  std::deque<history_detail::Step> undo_, redo_;  // the next to undo (redo) at the back
  std::string open_gesture_;                      // the gesture of the previous record; empty after endGesture
  GestureStep gesture_step_ = GestureStep::None;
};

// Whether two workspaces are equal in every part History keeps (bit for bit in the numbers).
bool equalWorkspaces(const Workspace& a, const Workspace& b);

}  // namespace attnscope
