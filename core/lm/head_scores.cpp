// Head scores (lm/head_scores.h, docs/DESIGN.md §2.6).
#include "lm/head_scores.h"

#include <unordered_map>

#include "engine/head_statistics.h"

namespace attnscope {

const std::array<HeadLabelInfo, 4>& headLabelTable() {
  static const std::array<HeadLabelInfo, 4> table{{
      {"previous_token", "previous", "prev", 0.5f, &HeadScores::previous_token, &HeadScores::has_previous},
      {"first_token", "first (sink)", "sink", 0.7f, &HeadScores::first_token, nullptr},
      {"duplicate_token", "duplicate", "dup", 0.3f, &HeadScores::duplicate_token, &HeadScores::has_duplicate},
      {"induction", "induction", "induct", 0.3f, &HeadScores::induction, &HeadScores::has_induction},
  }};
  return table;
}

const HeadLabelInfo* headLabel(const HeadScores& s) {
  const HeadLabelInfo* best = nullptr;
  float best_ratio = 1.0f;
  for (const HeadLabelInfo& info : headLabelTable()) {
    if (info.has != nullptr && !(s.*info.has)) continue;
    const float ratio = s.*info.score / info.threshold;
    if (ratio >= best_ratio) {
      best = &info;
      best_ratio = ratio;
    }
  }
  return best;
}

TokenPatterns::TokenPatterns(const std::vector<int>& ids) {
  const int T = static_cast<int>(ids.size());
  std::unordered_map<int, std::vector<int>> positions;  // token → where it stands
  for (int i = 0; i < T; ++i) positions[ids[i]].push_back(i);
  order_.reserve(T);
  start_.resize(T);
  earlier_.resize(T);
  for (const auto& [token, where] : positions) {
    const int start = static_cast<int>(order_.size());
    for (std::size_t k = 0; k < where.size(); ++k) {
      start_[where[k]] = start;
      earlier_[where[k]] = static_cast<int>(k);
      order_.push_back(where[k]);
    }
  }
}

namespace {

// The mean, over the rows that have such keys, of the weight on the keys `keys(i)` lists; false
// when no row has any. duplicate: the earlier copies k; induction: k + 1 for those with k ≤ i − 2.
template <class Keys>
bool meanOverTargets(const Matrix& w, int rows, Keys keys, float* out) {
  double total = 0;
  int counted = 0;
  for (int i = 0; i < rows; ++i) {
    double row = 0;
    int n = 0;
    keys(i, [&](int j) {
      row += w(i, j);
      ++n;
    });
    if (n == 0) continue;
    total += row;
    ++counted;
  }
  *out = counted > 0 ? static_cast<float>(total / counted) : 0.0f;
  return counted > 0;
}

}  // namespace

HeadScores headScores(const Trace& t, const HeadTrace& h, const TokenPatterns& patterns) {
  const HeadStatistics stats = headStatistics(t, h);
  HeadScores s;
  s.previous_token = stats.mean_previous;
  s.has_previous = stats.has_previous;
  s.first_token = stats.mean_first;
  s.mean_entropy = stats.mean_entropy;
  const int T = patterns.rows();
  s.has_duplicate = meanOverTargets(
      h.weights, T,
      [&](int i, auto add) {
        for (int c = 0; c < patterns.copiesBefore(i); ++c) add(patterns.copies(i)[c]);
      },
      &s.duplicate_token);
  s.has_induction = meanOverTargets(
      h.weights, T,
      [&](int i, auto add) {
        for (int c = 0; c < patterns.copiesBefore(i); ++c)
          if (patterns.copies(i)[c] + 1 <= i - 1) add(patterns.copies(i)[c] + 1);
      },
      &s.induction);
  return s;
}

}  // namespace attnscope
