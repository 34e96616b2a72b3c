// Head scores (lm/head_scores.h, docs/DESIGN.md §2.6).
#include "lm/head_scores.h"

#include <unordered_map>
#include <vector>

#include "engine/head_statistics.h"

namespace attnscope {

const std::array<HeadLabelInfo, 4>& headLabelTable() {
  static const std::array<HeadLabelInfo, 4> table{{
      {"previous_token", "previous", "prev", "P", 0.5f, &HeadScores::previous_token, &HeadScores::has_previous, nullptr,
       nullptr},
      {"first_token", "first (sink)", "sink", "S", 0.7f, &HeadScores::first_token, nullptr, nullptr, nullptr},
      {"duplicate_token", "duplicate", "dup", "D", 0.3f, &HeadScores::duplicate_token, &HeadScores::has_duplicate,
       &HeadScores::duplicate_rows, &HeadScores::duplicate_even},
      {"induction", "induction", "induct", "I", 0.3f, &HeadScores::induction, &HeadScores::has_induction,
       &HeadScores::induction_rows, &HeadScores::induction_even},
  }};
  return table;
}

const HeadLabelInfo* headLabel(const HeadScores& s) {
  const HeadLabelInfo* best = nullptr;
  float best_ratio = 1.0f;
  for (const HeadLabelInfo& info : headLabelTable()) {
    if (labelRows(s, info) < kLabelMinTokens) continue;  // (a score over 8 rows or more is defined)
    if (!aboveEven(s, info)) continue;
    const float ratio = s.*info.score / info.threshold;
    if (ratio >= best_ratio) {
      best = &info;
      best_ratio = ratio;
    }
  }
  return best;
}

bool aboveEven(const HeadScores& s, const HeadLabelInfo& info) {
  return info.even == nullptr || s.*info.score >= kLabelOverEven * (s.*info.even);
}

int labelRows(const HeadScores& s, const HeadLabelInfo& info) { return info.rows != nullptr ? s.*info.rows : s.rows; }

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

HeadScoreRow headScoreRow(const float* w, int i, int visible, const TokenPatterns& patterns, const double* entropy) {
  HeadScoreRow row;
  row.entropy = entropy != nullptr ? *entropy : rowEntropy(w, visible);
  row.first = w[0];
  if (i >= 1) row.previous = w[i - 1];
  int duplicate_keys = 0, induction_keys = 0;
  for (int c = 0; c < patterns.copiesBefore(i); ++c) {
    const int k = patterns.copies(i)[c];
    if (k >= 1) {  // the first position is the sink's: a head that only looks there is no duplicate head
      row.duplicate += w[k];
      ++duplicate_keys;
    }
    if (k + 1 <= i - 1) {
      row.induction += w[k + 1];
      ++induction_keys;
    }
  }
  row.has_duplicate = duplicate_keys > 0;
  row.has_induction = induction_keys > 0;
  row.duplicate_even = static_cast<double>(duplicate_keys) / visible;
  row.induction_even = static_cast<double>(induction_keys) / visible;
  return row;
}

HeadScores headScoresOfRows(const HeadScoreRow* rows, int T) {
  double entropy = 0, first = 0, previous = 0, duplicate = 0, induction = 0, duplicate_even = 0, induction_even = 0;
  int duplicate_rows = 0, induction_rows = 0;
  for (int i = 0; i < T; ++i) {
    const HeadScoreRow& r = rows[i];
    entropy += r.entropy;
    first += r.first;
    if (i >= 1) previous += r.previous;
    if (r.has_duplicate) duplicate += r.duplicate, duplicate_even += r.duplicate_even, ++duplicate_rows;
    if (r.has_induction) induction += r.induction, induction_even += r.induction_even, ++induction_rows;
  }
  HeadScores s;
  s.rows = T;
  if (T > 0) {
    s.mean_entropy = static_cast<float>(entropy / T);
    s.first_token = static_cast<float>(first / T);
  }
  s.has_previous = T >= 2;
  if (s.has_previous) s.previous_token = static_cast<float>(previous / (T - 1));
  s.duplicate_rows = duplicate_rows;
  s.induction_rows = induction_rows;
  s.has_duplicate = duplicate_rows > 0;
  if (s.has_duplicate) {
    s.duplicate_token = static_cast<float>(duplicate / duplicate_rows);
    s.duplicate_even = static_cast<float>(duplicate_even / duplicate_rows);
  }
  s.has_induction = induction_rows > 0;
  if (s.has_induction) {
    s.induction = static_cast<float>(induction / induction_rows);
    s.induction_even = static_cast<float>(induction_even / induction_rows);
  }
  return s;
}

HeadScores headScores(const Trace& t, const HeadTrace& h, const TokenPatterns& patterns) {
  const int T = patterns.rows();
  std::vector<HeadScoreRow> rows(static_cast<std::size_t>(T));
  for (int i = 0; i < T; ++i)
    rows[static_cast<std::size_t>(i)] = headScoreRow(h.weights.row(i).data(), i, t.model.causal ? i + 1 : T, patterns);
  return headScoresOfRows(rows.data(), T);
}

}  // namespace attnscope
