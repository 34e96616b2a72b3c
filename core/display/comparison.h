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

// B − A of one map, cell by cell: of the same shape, or (alignedDifference) of two texts' maps
// whose cells are matched by the tokens both texts have.
struct MapDifference {
  bool comparable = false;  // some cell compared (same shape, or a token both have); else none is
  bool aligned = false;     // cells matched by the texts' tokens (alignedDifference)
  Matrix delta;             // B's shape: b − a; −∞ where either is −∞ (masked: nothing to subtract)
                            // or, aligned, where the cell's token is B's alone
  ByteMatrix blank;         // B's shape: 1 where the cell has nothing to show (masked in both, B's token alone)
  float max_abs = 0;        // the largest |b − a| over the finite cells
  int row = -1, col = -1;   // where it is, in B (the first such cell in row order); −1: no finite cell
  int compared = 0;         // cells compared: every one, or those whose tokens A and B both have
  int compared_lower = 0;   // … of them on or below the diagonal (a causal map's unmasked cells)
  int changed = 0;          // cells whose value differs (bitwise, −∞ against a number included)
  int masked_in_b = 0;      // … of them −∞ in B only (a mask switched on: no |b − a| to show)
  int masked_in_a = 0;      // … −∞ in A only
  // Some value changed, not only a mask switched on or off, and a |b − a| to name (a finite cell).
  bool valuesChanged() const { return changed > masked_in_a + masked_in_b && row >= 0; }
};

MapDifference mapDifference(const StageMap& a, const StageMap& b);
// B − A where B's text is A's with tokens inserted, removed or replaced (TokenDifference::a_of_b):
// cell (i, j) of B against A's cell of the same tokens — A's row a_of_b[i] where the rows are
// tokens, else row i; the columns alike — and no difference where B's token is its own (−1). The
// other axis must have A's size; else nothing is compared.
MapDifference alignedDifference(const StageMap& a, const StageMap& b, const std::vector<int>& a_of_b, bool token_rows,
                                bool token_cols);
// The cells (row, col) whose values differ bit for bit — what mapDifference counts as `changed`;
// none when the shapes differ. The grid outlines them after an edit.
std::vector<std::pair<int, int>> changedCells(const StageMap& a, const StageMap& b);

// What B's workspace changes of A's, one short item each, in the order a user reads the window:
// the model's fields ("seed 123 → 5", "dropout 0.0 → 0.5"), the tokens ("tokens 6 → 3", a renamed
// token, "token 3 'starts' → 'begins'"), edited embedding cells ("x2 d0 ('journey') 0.5500 →
// 0.6000", or "4 embedding cells" beyond `max_cells`), the parameters; tokens counted from 1, as the
// inspector and the token table count them. Empty when they compute the same thing.
std::vector<std::string> workspaceDifferences(const Workspace& a, const Workspace& b, int max_cells = 3);

// How B's tokens differ from A's, for two texts of a trained model compared: the places where they
// differ, found as a shortest edit (the longest common subsequence), each said once — "token 2
// (Ġcat → Ġdog)", "tokens 3–4 (Ġbig Ġblack) inserted", "token 9 (Ġdown) removed", "token 12 (Ġthe)
// appended" (after A's last) — the first
// `max_places`, then "and N more". Positions count from 1: B's where B has the tokens, A's for
// tokens removed. Replacements alone read "tokens 2 (a → b), 5 (c → d)". Texts whose differing
// middle exceeds kTokenDiffCells pairs are compared position by position.
struct TokenDifference {
  std::string said;  // "" when the texts are the same
  // The tokens of the places said (up to three of each, as said), from 0: A's replaced or removed,
  // B's replaced or inserted. The maps name them whatever their thinning.
  std::vector<int> in_a, in_b;
  // For each of B's tokens (from 0) A's of the same place: the tokens both have, and those replaced
  // one for one (a word for a word of as many tokens: "Ġshe" against "Ġhe"); −1 for B's own.
  std::vector<int> a_of_b;
  bool shifted = false;  // some place inserts or removes tokens: B's positions are not A's after it
};
TokenDifference tokenDifference(const std::vector<std::string>& a, const std::vector<std::string>& b,
                                int max_places = 3);
constexpr std::size_t kTokenDiffCells = std::size_t{1} << 22;  // 8 MB of lengths, a few ms

// Whether two chapter workspaces differ in their text alone, so that their maps compare by the
// tokens both have (alignedDifference), as a model's texts do: the same model and parameters, the
// same d_in, no batch of sequences of their own, and every token B has of A's (`a_of_b`, the same
// name) with A's embedding bit for bit — a token inserted ("+ token") or removed leaves the others'
// rows as they were; the same word of a `sentence` is the same vector. At least one token shared.
bool differsInTextAlone(const Workspace& a, const Workspace& b, const std::vector<int>& a_of_b);

}  // namespace attnscope
