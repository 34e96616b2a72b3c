// What a trained model's head does, measured on the text it read (docs/DESIGN.md §2.6 "Head
// scores"): the labels the model view sorts heads by. For a head's weights α (T × T, causal) over
// token ids t:
//   previous_token  = mean over rows i ≥ 1 of αᵢ,ᵢ₋₁ (head statistics' mean_previous)
//   first_token     = mean over rows of αᵢ,₀: the attention sink (head statistics' mean_first)
//   duplicate_token = mean over rows i whose token appeared before, after the first position, of
//                     Σ αᵢⱼ over the earlier keys 1 ≤ j < i with tⱼ = tᵢ (position 0 is the sink's:
//                     a sink head on "the cat sat on the mat" was labelled a duplicate head)
//   induction       = mean over the rows i that have keys j = k + 1 ≤ i − 1 right after an earlier
//                     copy k of tᵢ of Σ αᵢⱼ over those keys: "what came next last time" (a
//                     repeated text makes the second half predictable)
// Sums in double, results float. duplicate_token and induction are undefined (has_… false) when no
// row qualifies; previous_token when T = 1. They are labelled only as means over at least
// kLabelMinTokens rows (duplicate_rows, induction_rows), and only at twice what a head spreading
// each row evenly over the keys it sees would score (duplicate_even, induction_even: the share of
// those keys among them, the text's alone): on "the cat the cat …" half of every row's keys are
// copies, and a random model's every head had been labelled duplicate.
#pragma once
#include <array>
#include <vector>

#include "engine/trace.h"

namespace attnscope {

struct HeadScores {
  float previous_token = 0, first_token = 0, duplicate_token = 0, induction = 0, mean_entropy = 0;
  bool has_previous = false, has_duplicate = false, has_induction = false;
  int rows = 0;                                // T: the rows the means are over …
  int duplicate_rows = 0, induction_rows = 0;  // … but these two's, the rows that qualify
  // What duplicate_token and induction would be for a head whose every row is even over the keys
  // it sees: the mean over the same rows of (the row's such keys) ÷ (the keys it sees).
  float duplicate_even = 0, induction_even = 0;
};

// A duplicate or induction label needs its score at this many times an even head's: the same
// margin kLabelMinTokens gives the other two labels.
constexpr float kLabelOverEven = 2.0f;

// Labels need this many tokens. On fewer, a head that spreads its attention evenly over the keys it
// sees already scores near the thresholds (3 tokens: first token 0.61, previous 0.42), so a label
// would say nothing about the head; from 8 on, each threshold is at least twice such a head's score.
// A duplicate or induction label needs its mean over as many rows: a sentence whose only repeats
// were "Ġl ic ens" (licensor, license) and "Ġthe" had three heads labelled induction on 3 rows.
constexpr int kLabelMinTokens = 8;

// The labels the model view puts on a head, one table for the thumbnails, the scores table and
// the CLI: a head gets the label whose score is the most above its threshold, or none. The
// thresholds are where a head reads as doing the thing on sight of its map (a previous-token
// head's diagonal, a sink's first column); the scores table shows every value.
struct HeadLabelInfo {
  const char* id;     // "previous_token": model-trace's JSON key
  const char* title;  // "previous token": the scores table's column
  const char* tag;    // "prev": on the thumbnail
  const char* letter;  // "P": on a thumbnail too small for the tag (the grid's key says it)
  float threshold;
  float HeadScores::*score;
  bool HeadScores::*has;  // null: always defined
  int HeadScores::*rows;  // the rows its mean is over, null: the text's (HeadScores::rows)
  float HeadScores::*even;  // an even head's score, which it must exceed kLabelOverEven-fold; null:
                            // kLabelMinTokens already puts the threshold that far above it
};
const std::array<HeadLabelInfo, 4>& headLabelTable();
const HeadLabelInfo* headLabel(const HeadScores& s);  // null: no score reaches its threshold, or
                                                      // fewer than kLabelMinTokens rows (its own), or
                                                      // under kLabelOverEven × an even head's
// Whether `info`'s score of `s` is at least kLabelOverEven × an even head's (always, for a label
// without one).
bool aboveEven(const HeadScores& s, const HeadLabelInfo& info);
// The rows `info`'s score of `s` is a mean over.
int labelRows(const HeadScores& s, const HeadLabelInfo& info);

// The keys each row's token-pattern scores read, found once per text and shared by every head:
// the positions of each token in order, so that row i's earlier copies of its token are a range
// (memory T, whatever the text repeats).
class TokenPatterns {
 public:
  explicit TokenPatterns(const std::vector<int>& ids);
  int rows() const { return static_cast<int>(start_.size()); }
  // Row i's earlier copies of its token, ascending: [copies(i), copies(i) + copiesBefore(i)).
  const int* copies(int i) const { return order_.data() + start_[i]; }
  int copiesBefore(int i) const { return earlier_[i]; }

 private:
  std::vector<int> order_;            // every position, grouped by token, ascending within a token
  std::vector<int> start_, earlier_;  // per row: where its token's group starts, the copies before it
};

// One row's part of a head's scores: what row i of α adds to each mean. A head's scores are its
// rows' parts summed in row order (headScoresOfRows), however the rows were computed — from a kept
// map, or streamed a block at a time without one (lm/model_pass.h).
struct HeadScoreRow {
  double entropy = 0;                                 // −Σ α ln α (head statistics' entropy[i])
  float first = 0;                                    // αᵢ,₀
  float previous = 0;                                 // αᵢ,ᵢ₋₁ (row 0: 0, not counted)
  double duplicate = 0;                               // Σ α over the earlier copies of tᵢ
  double induction = 0;                               // Σ α over the keys right after them
  double duplicate_even = 0, induction_even = 0;      // the share of such keys among those the row sees
  bool has_duplicate = false, has_induction = false;  // the row has such keys
};
// Row i of a causal head's weights, its first `visible` keys (i + 1; beyond them 0). `entropy`:
// the row's entropy when the pass computed it (WeightRows::entropy), else null.
HeadScoreRow headScoreRow(const float* w, int i, int visible, const TokenPatterns& patterns,
                          const double* entropy = nullptr);
HeadScores headScoresOfRows(const HeadScoreRow* rows, int T);

// The scores of head `h` (its maps kept) of element 0 of `t`, a trace of the text `patterns` was
// made from.
HeadScores headScores(const Trace& t, const HeadTrace& h, const TokenPatterns& patterns);

}  // namespace attnscope
