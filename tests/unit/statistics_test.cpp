// Head statistics (engine/head_statistics.h): edge cases whose values are known without
// the code under test — T = 1, one-hot rows, uniform rows (ties), causal rows with masked cells,
// dropout p = 0.5 row sums (twice the kept weights), negative row-sum weights — each held against a
// plain double re-derivation from the head's weights and keep mask. Then the trace JSON's and the
// exports' statistics, and the cost on a GPT-2-sized head (printed; the oracle test holds the values
// against torch).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "engine/attention.h"
#include "engine/head_statistics.h"
#include "engine/stages.h"
#include "formats/export.h"
#include "formats/trace_json.h"
#include "formats/workspace_file.h"
#include "test_support.h"

namespace attnscope {
namespace {

using test::rows;

ModelConfig config(Variant v) {
  ModelConfig m = defaultConfig(v);
  m.batch_size = 1;
  return m;
}

// The statistics re-derived in double from the head's weights and keep mask over every cell, masked
// ones included: what the definitions say, without the code under test's shortcuts.
struct Expected {
  std::vector<double> entropy, max_weight, row_sum;
  std::vector<int> argmax;
  double mean_entropy = 0, mean_previous = 0, mean_first = 0;
};

Expected rederive(const Trace& t, const HeadTrace& h) {
  Expected e;
  const int T = static_cast<int>(h.weights.rows());
  for (int i = 0; i < T; ++i) {
    double entropy = 0, sum = 0, best = -std::numeric_limits<double>::infinity();
    int at = -1;
    for (int j = 0; j < T; ++j) {
      const double w = h.weights(i, j);
      if (w > 0) entropy -= w * std::log(w);
      if (w > best) best = w, at = j;
      const bool kept = h.dropout_mask.size() == 0 || h.dropout_mask(i, j) != 0;
      if (kept) sum += static_cast<double>(h.weights(i, j) * t.dropout_scale);
    }
    e.entropy.push_back(entropy);
    e.max_weight.push_back(best);
    e.argmax.push_back(at);
    e.row_sum.push_back(sum);
    e.mean_entropy += entropy / T;
    e.mean_first += static_cast<double>(h.weights(i, 0)) / T;
    if (i > 0) e.mean_previous += static_cast<double>(h.weights(i, i - 1)) / (T - 1);
  }
  return e;
}

void expectMatches(const Trace& t, const HeadTrace& h, const HeadStatistics& s, double tol = 1e-6) {
  const Expected e = rederive(t, h);
  const int T = static_cast<int>(h.weights.rows());
  ASSERT_EQ(s.rows(), T);
  for (int i = 0; i < T; ++i) {
    EXPECT_NEAR(s.entropy(i), e.entropy[i], tol * (1 + std::fabs(e.entropy[i]))) << "row " << i;
    EXPECT_NEAR(s.effective_tokens(i), std::exp(e.entropy[i]), tol * std::exp(e.entropy[i]) * 4) << "row " << i;
    EXPECT_EQ(s.max_weight(i), static_cast<float>(e.max_weight[i])) << "row " << i;
    EXPECT_EQ(s.argmax[static_cast<std::size_t>(i)], e.argmax[i]) << "row " << i;
    EXPECT_NEAR(s.row_sum_after_dropout(i), e.row_sum[i], tol * (1 + std::fabs(e.row_sum[i]))) << "row " << i;
    // … and it is the sum of the dropped weights map as every reader sees it (StageMap).
    EXPECT_EQ(s.row_sum_after_dropout(i),
              static_cast<float>(StageMap(t, h, Stage::DroppedWeights).row(i).cast<double>().sum()))
        << "row " << i;
  }
  EXPECT_NEAR(s.mean_entropy, e.mean_entropy, tol * (1 + std::fabs(e.mean_entropy)));
  EXPECT_NEAR(s.mean_first, e.mean_first, tol);
  EXPECT_EQ(s.has_previous, T > 1);
  if (T > 1) {
    EXPECT_NEAR(s.mean_previous, e.mean_previous, tol);
  }
}

TEST(HeadStatistics, OneTokenIsOneHot) {
  for (Variant v : {Variant::Simple, Variant::SelfAttentionV2, Variant::Causal, Variant::MultiHead}) {
    const Trace t = computeTrace(rows({{0.43, 0.15, 0.89}}), config(v));
    for (const HeadTrace& h : t.batches[0].heads) {
      const HeadStatistics s = headStatistics(t, h);
      ASSERT_EQ(s.rows(), 1);
      EXPECT_EQ(s.entropy(0), 0.0f);
      EXPECT_FALSE(std::signbit(s.entropy(0))) << "entropy −0";
      EXPECT_EQ(s.effective_tokens(0), 1.0f);
      EXPECT_EQ(s.max_weight(0), 1.0f);
      EXPECT_EQ(s.argmax[0], 0);
      EXPECT_EQ(s.row_sum_after_dropout(0), 1.0f);
      EXPECT_EQ(s.mean_entropy, 0.0f);
      EXPECT_EQ(s.mean_first, 1.0f);
      EXPECT_FALSE(s.has_previous);  // no row has a previous token
      EXPECT_EQ(s.mean_previous, 0.0f);
    }
  }
}

TEST(HeadStatistics, OneHotRows) {
  // Simple attention on orthogonal vectors of length 20: scores 400 on the diagonal, 0 elsewhere, so
  // softmax underflows to exactly [1, 0, 0] — entropy 0, one token, the diagonal the maximum.
  ModelConfig m = config(Variant::Simple);
  m.scale = Scale::None;
  const Trace t = computeTrace(rows({{20, 0, 0}, {0, 20, 0}, {0, 0, 20}}), m);
  const HeadTrace& h = t.batches[0].heads[0];
  const HeadStatistics s = headStatistics(t, h);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(h.weights(i, i), 1.0f);
    EXPECT_EQ(s.entropy(i), 0.0f);
    EXPECT_EQ(s.effective_tokens(i), 1.0f);
    EXPECT_EQ(s.max_weight(i), 1.0f);
    EXPECT_EQ(s.argmax[static_cast<std::size_t>(i)], i);
    EXPECT_EQ(s.row_sum_after_dropout(i), 1.0f);
  }
  EXPECT_EQ(s.mean_previous, 0.0f);
  EXPECT_NEAR(s.mean_first, 1.0 / 3.0, 1e-7);
  expectMatches(t, h, s);
}

TEST(HeadStatistics, UniformRowsTieOnTheFirstKey) {
  // Identical tokens: every score equal, so each row is uniform: entropy ln T, T effective tokens,
  // and the maximum's key is the first of T equal weights.
  const int T = 7;
  Matrix x(T, 3);
  for (int i = 0; i < T; ++i) x.row(i) << 0.3f, 0.6f, 0.9f;
  const Trace t = computeTrace(x, config(Variant::SelfAttentionV2));
  const HeadTrace& h = t.batches[0].heads[0];
  const HeadStatistics s = headStatistics(t, h);
  for (int i = 0; i < T; ++i) {
    EXPECT_NEAR(s.entropy(i), std::log(T), 1e-6);
    EXPECT_NEAR(s.effective_tokens(i), T, 1e-5);
    EXPECT_EQ(s.argmax[static_cast<std::size_t>(i)], 0) << "ties go to the first key";
    EXPECT_NEAR(s.row_sum_after_dropout(i), 1.0, 1e-6);
  }
  expectMatches(t, h, s);
}

TEST(HeadStatistics, CausalRowsIgnoreMaskedCells) {
  // Causal: row i sees i + 1 keys. Row 0 is one-hot on itself; no row's entropy exceeds ln(i + 1);
  // the masked cells (exactly 0) add nothing; the re-derivation over every cell agrees.
  for (Variant v : {Variant::Causal, Variant::MultiHeadWrapper, Variant::MultiHead}) {
    const Trace t = computeTrace(test::randomMatrix(40, 5, 11), config(v));
    for (const HeadTrace& h : t.batches[0].heads) {
      const HeadStatistics s = headStatistics(t, h);
      EXPECT_EQ(s.entropy(0), 0.0f);
      EXPECT_EQ(s.argmax[0], 0);
      EXPECT_EQ(s.max_weight(0), 1.0f);
      for (int i = 0; i < 40; ++i) {
        EXPECT_LE(s.entropy(i), std::log(i + 1.0) + 1e-6) << "row " << i;
        EXPECT_LE(s.argmax[static_cast<std::size_t>(i)], i) << "a masked key is never the largest";
      }
      expectMatches(t, h, s);
    }
  }
}

TEST(HeadStatistics, DropoutHalfDoublesTheKeptWeights) {
  // p = 0.5: each row sum after dropout is 2 × the kept weights — above 1 where more than half the
  // row's weight was kept (the book's "rows sum to more than 1"), 0 or 2 on the causal first row.
  for (Variant v : {Variant::Causal, Variant::MultiHeadWrapper, Variant::MultiHead}) {
    ModelConfig m = config(v);
    m.dropout = 0.5;
    m.batch_size = 2;
    const Trace t = computeTrace(test::randomMatrix(30, 4, 5), m);
    ASSERT_TRUE(t.dropout_active);
    ASSERT_EQ(t.dropout_scale, 2.0f);
    int above = 0, below = 0;
    for (const BatchTrace& bt : t.batches)
      for (const HeadTrace& h : bt.heads) {
        const HeadStatistics s = headStatistics(t, h);
        for (int i = 0; i < 30; ++i) {
          double kept = 0;
          for (int j = 0; j < 30; ++j)
            if (h.dropout_mask(i, j)) kept += h.weights(i, j);
          EXPECT_NEAR(s.row_sum_after_dropout(i), 2 * kept, 1e-6) << "row " << i;
          above += s.row_sum_after_dropout(i) > 1.0f;
          below += s.row_sum_after_dropout(i) < 1.0f;
        }
        const float first = s.row_sum_after_dropout(0);  // the causal first row: [1] kept or dropped
        EXPECT_TRUE(first == 2.0f || first == 0.0f) << first;
        // Entropy, maximum and the means are of the weights before dropout.
        expectMatches(t, h, s);
      }
    EXPECT_GT(above, 0);
    EXPECT_GT(below, 0);
  }
  // Eval mode: no dropout acts, every row sums to 1.
  ModelConfig m = config(Variant::MultiHead);
  m.dropout = 0.5;
  m.training = false;
  const Trace t = computeTrace(test::randomMatrix(12, 4, 5), m);
  for (const HeadTrace& h : t.batches[0].heads) {
    const HeadStatistics s = headStatistics(t, h);
    for (int i = 0; i < 12; ++i) EXPECT_NEAR(s.row_sum_after_dropout(i), 1.0, 1e-6);
  }
}

TEST(HeadStatistics, RowSumWeightsMayBeNegative) {
  // Simple attention with ÷ row sum on signed inputs: weights may be negative or above 1. The
  // entropy leaves out the cells ≤ 0 and stays finite; the maximum and the row sum count them all.
  ModelConfig m = config(Variant::Simple);
  m.normalization = Normalization::Sum;
  m.scale = Scale::None;
  const Trace t = computeTrace(rows({{1.0, -0.5}, {0.2, 0.9}, {-0.3, 0.4}}), m);
  const HeadTrace& h = t.batches[0].heads[0];
  ASSERT_LT(h.weights.minCoeff(), 0.0f);
  const HeadStatistics s = headStatistics(t, h);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(std::isfinite(s.entropy(i)));
    EXPECT_TRUE(std::isfinite(s.effective_tokens(i)));
  }
  expectMatches(t, h, s, 1e-5);
}

TEST(HeadStatistics, TheBookExample) {
  // MultiHeadAttention, seed 123, the book's six tokens: every head and element re-derived.
  const Trace t = computeTrace(test::bookInputs(), defaultConfig(Variant::MultiHead));
  for (const BatchTrace& bt : t.batches)
    for (const HeadTrace& h : bt.heads) expectMatches(t, h, headStatistics(t, h));
}

TEST(HeadStatistics, InTheTraceJson) {
  // Every traced head carries "statistics" with arrays over its query rows and the summaries; the
  // previous-token mean is null for T = 1; the trace version stays 2.
  for (int T : {1, 6}) {
    Workspace ws;
    ws.embeddings = test::randomMatrix(T, 3, 2);
    for (int i = 0; i < T; ++i) ws.tokens.push_back("t" + std::to_string(i + 1));
    ws.model = defaultConfig(Variant::MultiHead);
    ws.model.dropout = 0.5;
    const Trace t = computeTrace(ws.embeddings, ws.model);
    std::ostringstream out;
    writeTraceJson(out, ws, t);
    const nlohmann::json j = nlohmann::json::parse(out.str());
    EXPECT_EQ(j["version"], 2);
    for (std::size_t b = 0; b < 2; ++b)
      for (std::size_t h = 0; h < 2; ++h) {
        const nlohmann::json& s = j["batches"][b]["heads"][h]["statistics"];
        const HeadStatistics want = headStatistics(t, t.batches[b].heads[h]);
        for (const char* key : {"entropy", "effective_tokens", "max_weight", "argmax", "row_sum_after_dropout"}) {
          ASSERT_TRUE(s.contains(key)) << key;
          EXPECT_EQ(s[key].size(), static_cast<std::size_t>(T)) << key;
        }
        for (int i = 0; i < T; ++i) {
          EXPECT_EQ(s["entropy"][i].get<float>(), want.entropy(i));
          EXPECT_EQ(s["argmax"][i].get<int>(), want.argmax[static_cast<std::size_t>(i)]);
          EXPECT_EQ(s["row_sum_after_dropout"][i].get<float>(), want.row_sum_after_dropout(i));
        }
        EXPECT_EQ(s["mean_entropy"].get<float>(), want.mean_entropy);
        EXPECT_EQ(s["mean_weight_first_token"].get<float>(), want.mean_first);
        if (T == 1) {
          EXPECT_TRUE(s["mean_weight_previous_token"].is_null());
        } else {
          EXPECT_EQ(s["mean_weight_previous_token"].get<float>(), want.mean_previous);
        }
      }
  }
}

TEST(HeadStatistics, ExportTables) {
  const Trace t = computeTrace(test::bookInputs(), defaultConfig(Variant::MultiHead));
  const std::vector<std::string> tokens = {"Your", "journey", "starts", "with", "one", "step"};
  const HeadStatistics s = headStatistics(t, t.batches[0].heads[0]);
  const std::string csv = statisticsCsv(s, tokens);
  std::istringstream lines(csv);
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line, "query,entropy,effective_tokens,max_weight,argmax,argmax_key,row_sum_after_dropout");
  std::getline(lines, line);
  EXPECT_EQ(line, "Your,0,1,1,0,Your,1");  // the causal first row: all on itself
  const Matrix m = statisticsMatrix(s);
  ASSERT_EQ(m.rows(), 6);
  ASSERT_EQ(m.cols(), 5);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(m(i, 0), s.entropy(i));
    EXPECT_EQ(m(i, 3), static_cast<float>(s.argmax[static_cast<std::size_t>(i)]));
    EXPECT_EQ(m(i, 4), s.row_sum_after_dropout(i));
  }
  const std::vector<HeadStatistics> heads = {s, headStatistics(t, t.batches[0].heads[1])};
  EXPECT_EQ(statisticsSummaryCsv(heads).substr(0, statisticsSummaryCsv(heads).find('\n')),
            "head,mean_entropy,mean_weight_previous_token,mean_weight_first_token");
  const Matrix summary = statisticsSummaryMatrix(heads);
  ASSERT_EQ(summary.rows(), 2);
  EXPECT_EQ(summary(1, 2), heads[1].mean_first);
  // T = 1: no previous token — an empty CSV field, NaN in .npy.
  const Trace one = computeTrace(rows({{0.43, 0.15, 0.89}}), defaultConfig(Variant::MultiHead));
  const std::vector<HeadStatistics> single = {headStatistics(one, one.batches[0].heads[0])};
  EXPECT_EQ(statisticsSummaryCsv(single),
            "head,mean_entropy,mean_weight_previous_token,mean_weight_first_token\nhead 1,0,,1\n");
  EXPECT_TRUE(std::isnan(statisticsSummaryMatrix(single)(0, 1)));
}

TEST(HeadStatistics, CheapForGpt2Small) {
  // 12 heads of T = 1024 (the width does not matter: the statistics read the T × T weights), with
  // and without dropout. Printed for the record; the app computes them on the engine thread.
  for (double p : {0.0, 0.1}) {
    ModelConfig m = defaultConfig(Variant::MultiHead);
    m.d_out = 768;
    m.num_heads = 12;
    m.batch_size = 1;
    m.dropout = p;
    const Trace t = computeTrace(test::randomMatrix(1024, 16, 3), m);
    double best = 1e9;
    for (int run = 0; run < 3; ++run) {
      const auto start = std::chrono::steady_clock::now();
      float sink = 0;
      for (const HeadTrace& h : t.batches[0].heads) sink += headStatistics(t, h).mean_entropy;
      best = std::min(best,
                      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
      EXPECT_TRUE(std::isfinite(sink));
    }
    std::printf("  head statistics, 12 heads × T = 1024, dropout %.1f: %.2f ms (best of 3)\n", p, best);
    EXPECT_LT(best, 1000.0);  // a gross regression only: the machine is shared
    expectMatches(t, t.batches[0].heads[5], headStatistics(t, t.batches[0].heads[5]), 2e-6);
  }
}

}  // namespace
}  // namespace attnscope
