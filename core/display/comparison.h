// Comparing two results (docs/DESIGN.md §3.4 "Compare"): a pinned result A and
// the current one B. What differs between their workspaces, in words, and the difference B − A of
// one map with where it is largest. Plain data: the app's Compare tab draws it, tests check it.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "engine/stages.h"
#include "engine/tensor.h"
#include "formats/workspace_file.h"

namespace attnscope {

// B − A of one map, cell by cell.
struct MapDifference {
  bool comparable = false;  // same shape; else no cell is compared
  Matrix delta;             // b − a; −∞ where either is −∞ (masked: nothing to subtract)
  float max_abs = 0;        // the largest |b − a| over the finite cells
  int row = -1, col = -1;   // where it is (the first such cell in row order); −1: no finite cell
  int changed = 0;          // cells whose value differs (bitwise, −∞ against a number included)
  int masked_in_b = 0;      // … of them −∞ in B only (a mask switched on: no |b − a| to show)
  int masked_in_a = 0;      // … −∞ in A only
};

MapDifference mapDifference(const StageMap& a, const StageMap& b);
// The cells (row, col) whose values differ bit for bit — what mapDifference counts as `changed`;
// none when the shapes differ. The grid outlines them after an edit.
std::vector<std::pair<int, int>> changedCells(const StageMap& a, const StageMap& b);

// What B's workspace changes of A's, one short item each, in the order a user reads the window:
// the model's fields ("seed 123 → 5", "dropout 0.0 → 0.5"), the tokens ("tokens 6 → 3", a renamed
// token, "token 3 'starts' → 'begins'"), edited embedding cells ("x2 d0 ('journey') 0.5500 →
// 0.6000", or "4 embedding cells" beyond `max_cells`), the parameters; tokens counted from 1, as the
// inspector and the token table count them. Empty when they compute the same thing.
std::vector<std::string> workspaceDifferences(const Workspace& a, const Workspace& b, int max_cells = 3);

}  // namespace attnscope
