// Head statistics (docs/DESIGN.md §2.3 "Head statistics"): how one head of one batch element
// spreads its attention, row by row, read from the weights and the dropped weights of its
// HeadTrace. Derived, never stored in the trace: the trace JSON, the exports and the app compute
// them from the maps.
//
// For a head with T query rows (α = the weights row i, α' = the dropped weights row i):
//   entropy[i]               = −Σⱼ αᵢⱼ ln αᵢⱼ in nats, over the cells with αᵢⱼ > 0 (0·ln 0 = 0:
//                              masked cells, which are 0, add nothing)                            T
//   effective_tokens[i]      = exp(entropy[i]): how many keys the row attends to, as if evenly
//                              (1 for a one-hot row, T for a uniform one)                          T
//   max_weight[i], argmax[i] = the row's largest weight and its key, 0-based, the first on ties    T
//   row_sum_after_dropout[i] = Σⱼ α'ᵢⱼ: 1 without dropout (to rounding); with dropout the kept
//                              weights × 1/(1 − p), so it scatters around 1 (often above it)      T
// and per head:
//   mean_entropy             = the mean of entropy[i] over the T rows
//   mean_previous            = the mean of αᵢ,ᵢ₋₁ over the rows i ≥ 1 (none when T = 1)
//   mean_first               = the mean of αᵢ,₀ over all T rows
// Sums run in double; the results are floats, as the maps are. With `normalization: "sum"` a row
// may hold negative weights: those cells are left out of the entropy as the zeros are (the row is
// no distribution, its entropy only indicative), and they still count for the maximum and the sums.
#pragma once
#include <vector>

#include "engine/tensor.h"
#include "engine/trace.h"

namespace attnscope {

struct HeadStatistics {
  RowVector entropy;                // T, nats
  RowVector effective_tokens;       // T, exp(entropy)
  RowVector max_weight;             // T
  std::vector<int> argmax;          // T, key index (0-based)
  RowVector row_sum_after_dropout;  // T
  float mean_entropy = 0;           // over the T rows
  float mean_previous = 0;          // over rows 1 … T−1; 0 and has_previous false when T = 1
  bool has_previous = false;        // T ≥ 2: the previous-token mean is defined
  float mean_first = 0;             // over the T rows

  int rows() const { return static_cast<int>(argmax.size()); }
};

// entropy[i] of one row of weights w (its first n keys: the visible ones), in double: −Σ α ln α
// over α > 0, each term in float, summed in double.
double rowEntropy(const float* w, int n);

// The statistics of head `h` of trace `t`; `h` must have its maps (HeadTrace::hasMaps).
// Cost: one pass over the visible cells of each row (causal: the lower triangle), vectorized
// (docs/engine-measurements.md).
HeadStatistics headStatistics(const Trace& t, const HeadTrace& h);

}  // namespace attnscope
