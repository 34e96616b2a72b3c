#include "engine/head_statistics.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>

#include "engine/sum_in_double.h"

namespace attnscope {

double rowEntropy(const float* w_row, int n) {
  // −Σ α ln α over α > 0, each term in float, summed in double. Vectorized: no branch per cell
  // (Eigen's select would not vectorize), cells ≤ 0 become 0 · ln(FLT_MIN) = 0, never 0 · ln 0 =
  // NaN (a subnormal α < FLT_MIN is weighted by ln(FLT_MIN), off by under 1e-36); the terms go
  // through a per-thread buffer, then sumInDouble's lanes (Eigen's sum of a cast to double ran one
  // cell at a time: a third of this function's time on a GPT-2 layer's maps).
  thread_local Eigen::ArrayXf terms;
  if (terms.size() < n) terms.resize(n);
  const Eigen::Map<const Eigen::ArrayXf> w(w_row, n);
  const auto positive = w.max(0.0f);
  terms.head(n) = positive * positive.max(FLT_MIN).log();
  const float* t = terms.data();
  return 0.0 - sumInDouble(n, [t](int i) { return static_cast<double>(t[i]); });  // +0, never −0
}

HeadStatistics headStatistics(const Trace& t, const HeadTrace& h) {
  const Eigen::Index T = h.weights.rows();
  HeadStatistics s;
  s.entropy.resize(T);
  s.effective_tokens.resize(T);
  s.max_weight.resize(T);
  s.argmax.assign(static_cast<std::size_t>(T), 0);
  s.row_sum_after_dropout.resize(T);
  double entropy_sum = 0, previous_sum = 0, first_sum = 0;
  for (Eigen::Index i = 0; i < T; ++i) {
    // Keys after the query are masked to exactly 0 when causal (softmax rows, never negative):
    // they change neither the entropy, nor the first largest weight, nor the sums. Only the
    // visible keys are read.
    const Eigen::Index visible = t.model.causal ? i + 1 : T;
    const Eigen::Map<const Eigen::ArrayXf> w(h.weights.row(i).data(), visible);  // 1 × visible
    const double entropy = rowEntropy(w.data(), static_cast<int>(visible));
    s.entropy(i) = static_cast<float>(entropy);
    s.effective_tokens(i) = static_cast<float>(std::exp(entropy));

    // The largest weight (vectorized), then the first key that holds it.
    const float largest = w.maxCoeff();
    Eigen::Index best = 0;
    while (w(best) != largest) ++best;
    s.max_weight(i) = largest;
    s.argmax[static_cast<std::size_t>(i)] = static_cast<int>(best);

    // The dropped weights' row: the kept weights × 1/(1 − p), the dropped ones 0 (StageMap's
    // dropped_weights, the same float product, read here without the masked tail).
    // Summed in double by sumInDouble's lanes, as the entropy.
    const float* wr = w.data();
    if (h.dropout_mask.size() == 0) {  // no dropout: the weights row
      s.row_sum_after_dropout(i) = static_cast<float>(
          sumInDouble(static_cast<int>(visible), [wr](int j) { return static_cast<double>(wr[j]); }));
    } else {
      const std::uint8_t* keep = h.dropout_mask.row(i).data();
      const float scale = t.dropout_scale;
      s.row_sum_after_dropout(i) = static_cast<float>(sumInDouble(static_cast<int>(visible), [=](int j) {
        return static_cast<double>((wr[j] * scale) * static_cast<float>(keep[j]));
      }));
    }

    entropy_sum += entropy;
    first_sum += h.weights(i, 0);
    if (i >= 1) previous_sum += h.weights(i, i - 1);
  }
  if (T > 0) {
    s.mean_entropy = static_cast<float>(entropy_sum / static_cast<double>(T));
    s.mean_first = static_cast<float>(first_sum / static_cast<double>(T));
  }
  s.has_previous = T >= 2;
  if (s.has_previous) s.mean_previous = static_cast<float>(previous_sum / static_cast<double>(T - 1));
  return s;
}

}  // namespace attnscope
