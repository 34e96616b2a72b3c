// Head scores (lm/head_scores.h, docs/DESIGN.md §2.6).
#include "lm/head_scores.h"

#include <unordered_map>

#include "engine/head_statistics.h"

namespace attnscope {

TokenPatterns::TokenPatterns(const std::vector<int>& ids) {
  const int T = static_cast<int>(ids.size());
  duplicates_.resize(T);
  inductions_.resize(T);
  std::unordered_map<int, std::vector<int>> seen;  // token → its earlier positions
  for (int i = 0; i < T; ++i) {
    std::vector<int>& earlier = seen[ids[i]];
    duplicates_[i] = earlier;
    for (int k : earlier)
      if (k + 1 <= i - 1) inductions_[i].push_back(k + 1);
    earlier.push_back(i);
  }
}

namespace {

// The mean over the rows with targets of the weight on them; false when no row has any.
bool meanOverTargets(const Matrix& w, const std::vector<std::vector<int>>& targets, float* out) {
  double total = 0;
  int rows = 0;
  for (int i = 0; i < static_cast<int>(targets.size()); ++i) {
    if (targets[i].empty()) continue;
    double row = 0;
    for (int j : targets[i]) row += w(i, j);
    total += row;
    ++rows;
  }
  *out = rows > 0 ? static_cast<float>(total / rows) : 0.0f;
  return rows > 0;
}

}  // namespace

HeadScores headScores(const Trace& t, const HeadTrace& h, const TokenPatterns& patterns) {
  const HeadStatistics stats = headStatistics(t, h);
  HeadScores s;
  s.previous_token = stats.mean_previous;
  s.has_previous = stats.has_previous;
  s.first_token = stats.mean_first;
  s.mean_entropy = stats.mean_entropy;
  s.has_duplicate = meanOverTargets(h.weights, patterns.duplicates(), &s.duplicate_token);
  s.has_induction = meanOverTargets(h.weights, patterns.inductions(), &s.induction);
  return s;
}

}  // namespace attnscope
