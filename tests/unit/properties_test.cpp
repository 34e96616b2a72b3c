// Properties of the trace over many configurations (every variant; seeds; T = 1, 6, 40; batch 1–3;
// dropout 0 / 0.3 / 0.9; training on and off; causal and scale switched; qkv_bias): parameters and
// dropout masks equal an independent re-derivation of torch's stream (reference.h), every
// intermediate follows from the previous one (recomputed in double), masks and dropout are exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "engine/attention.h"
#include "engine/stages.h"
#include "reference.h"
#include "test_support.h"

namespace attnscope {
namespace {

// Inputs from a generator of the test's own: uniform in [lo, hi).
Matrix randomInputs(int T, int d_in, std::uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  Matrix x(T, d_in);
  for (int i = 0; i < T; ++i)
    for (int j = 0; j < d_in; ++j) x(i, j) = u(g);
  return x;
}

std::string describe(const ModelConfig& m, int T, int d_in) {
  std::ostringstream s;
  s << variantId(m.variant) << " T=" << T << " d_in=" << d_in << " d_out=" << m.d_out << " heads=" << m.num_heads
    << " seed=" << m.seed << " B=" << m.batch_size << " p=" << m.dropout << " training=" << m.training
    << " causal=" << m.causal << " scale=" << scaleId(m.scale) << " bias=" << m.qkv_bias
    << " norm=" << normalizationId(m.normalization);
  return s.str();
}

// Relative float tolerance against a double reference whose terms sum (in |·|) to `magnitude`.
bool close(double ours, double ref, double magnitude) { return std::fabs(ours - ref) <= 1e-5 * (1.0 + magnitude); }

bool sameLayer(const Linear& ours, const ref::Layer& r) {
  if (ours.weight.rows() != r.out || ours.weight.cols() != r.in) return false;
  for (int o = 0; o < r.out; ++o)
    for (int i = 0; i < r.in; ++i)
      if (ours.weight(o, i) != r.w(o, i)) return false;  // bitwise: same draws, same arithmetic
  if (static_cast<std::size_t>(ours.bias.size()) != r.bias.size()) return false;
  for (std::size_t o = 0; o < r.bias.size(); ++o)
    if (ours.bias(static_cast<int>(o)) != r.bias[o]) return false;
  return true;
}

// y = x Wᵀ + b in double for column c of the projection, row i; `mag` gets Σ|terms|.
double project(const Matrix& x, const ref::Layer& l, int i, int c, double* mag) {
  double y = l.bias.empty() ? 0.0 : l.bias[c];
  *mag = std::fabs(y);
  for (int k = 0; k < l.in; ++k) {
    const double t = double(x(i, k)) * l.w(c, k);
    y += t;
    *mag += std::fabs(t);
  }
  return y;
}

struct Worst {  // the largest relative deviation from the double reference, for the log
  double value = 0;
  void see(double ours, double ref, double mag) { value = std::max(value, std::fabs(ours - ref) / (1.0 + mag)); }
};

// Checks one trace against the reference; reports the first few failed checks.
void checkTrace(const Matrix& x, const ModelConfig& m, const Trace& t, Worst& worst) {
  const int T = static_cast<int>(x.rows()), d_in = static_cast<int>(x.cols());
  const int B = m.batch_size;
  const bool multi = m.variant == Variant::MultiHead || m.variant == Variant::MultiHeadWrapper;
  const int H = multi ? m.num_heads : 1;
  const int hw = m.variant == Variant::Simple      ? d_in
                 : m.variant == Variant::MultiHead ? m.d_out / m.num_heads
                                                   : m.d_out;
  const bool dropout_variant = m.variant == Variant::Causal || multi;
  const bool dropout_on = dropout_variant && m.training && m.dropout > 0;
  const float keep_scale = 1.0f / static_cast<float>(1.0 - m.dropout);
  const float divisor = static_cast<float>(std::sqrt(static_cast<double>(hw)));
  const ref::Module r = ref::build(m, T, d_in);

  ASSERT_EQ(t.tokens, T);
  ASSERT_EQ(t.heads, H);
  ASSERT_EQ(t.head_width, hw);
  ASSERT_EQ(static_cast<int>(t.batches.size()), B);
  EXPECT_EQ(t.dropout_active, dropout_on);
  if (dropout_on) {
    EXPECT_EQ(t.dropout_scale, keep_scale);
  }

  // Parameters: the same draws as torch.manual_seed(seed); Module(...) (bitwise).
  ASSERT_EQ(t.parameters->query.size(), r.query.size());
  for (std::size_t g = 0; g < r.query.size(); ++g) {
    EXPECT_TRUE(sameLayer(t.parameters->query[g], r.query[g])) << "W_query of group " << g;
    EXPECT_TRUE(sameLayer(t.parameters->key[g], r.key[g])) << "W_key of group " << g;
    EXPECT_TRUE(sameLayer(t.parameters->value[g], r.value[g])) << "W_value of group " << g;
  }
  if (m.variant == Variant::MultiHead) {
    EXPECT_TRUE(sameLayer(t.parameters->out_proj, r.out_proj));
  }

  int failures = 0;
  auto fail = [&](const std::string& what) {
    if (++failures <= 5) ADD_FAILURE() << what;
  };

  for (int b = 0; b < B; ++b) {
    const BatchTrace& bt = t.batches[b];
    ASSERT_EQ(static_cast<int>(bt.heads.size()), H);
    for (int h = 0; h < H; ++h) {
      const HeadTrace& ht = bt.heads[h];
      // The stages a trace derives from what it stores, read as every consumer reads them.
      const StageMap scaled_scores(t, ht, Stage::ScaledScores), mask(t, ht, Stage::Mask),
          masked_scores(t, ht, Stage::MaskedScores), dropout_mask(t, ht, Stage::DropoutMask),
          dropped_weights(t, ht, Stage::DroppedWeights);
      const std::string at = "b=" + std::to_string(b) + " h=" + std::to_string(h) + " ";
      // Q, K, V: x Wᵀ + b (the head's columns of multihead's single projection).
      const int g = m.variant == Variant::MultiHeadWrapper ? h : 0;
      const int c0 = m.variant == Variant::MultiHead ? h * hw : 0;
      for (int i = 0; i < T; ++i)
        for (int c = 0; c < hw; ++c) {
          const Matrix* mats[3] = {&ht.queries, &ht.keys, &ht.values};
          for (int k = 0; k < 3; ++k) {
            // Simple: Q = K = V = x (hw == d_in). Otherwise hw may exceed d_in: never read x(i, c).
            double mag = 0, want;
            if (m.variant == Variant::Simple) {
              want = x(i, c);
            } else {
              const ref::Layer& l = k == 0 ? r.query[g] : k == 1 ? r.key[g] : r.value[g];
              want = project(x, l, i, c0 + c, &mag);
            }
            worst.see((*mats[k])(i, c), want, mag);
            if (!close((*mats[k])(i, c), want, mag)) fail(at + "Q/K/V mismatch");
          }
        }
      double row_sum_err = 0;
      for (int i = 0; i < T; ++i) {
        // scores = Q Kᵀ from the traced Q, K; scaled = scores / float(√hw) exactly.
        std::vector<double> unnorm(T);
        double denom = 0;
        float row_max = -std::numeric_limits<float>::infinity();
        for (int j = 0; j < T; ++j) {
          double s = 0, mag = 0;
          for (int c = 0; c < hw; ++c) {
            const double term = double(ht.queries(i, c)) * ht.keys(j, c);
            s += term;
            mag += std::fabs(term);
          }
          worst.see(ht.scores(i, j), s, mag);
          if (!close(ht.scores(i, j), s, mag)) fail(at + "scores != Q Kᵀ");
          // The notebook's order: masked = the raw scores with −∞ above the diagonal, then
          // scaled = masked / √d_k (−∞ stays −∞).
          const float scaled = m.scale == Scale::SqrtDk ? ht.scores(i, j) / divisor : ht.scores(i, j);
          const bool masked = m.causal && j > i;
          if (mask(i, j) != (masked ? 1 : 0)) fail(at + "mask is not the strict upper triangle");
          if (masked) {
            if (!(std::isinf(masked_scores(i, j)) && masked_scores(i, j) < 0)) fail(at + "masked score is not −inf");
            if (!(std::isinf(scaled_scores(i, j)) && scaled_scores(i, j) < 0))
              fail(at + "a masked score is not −inf once scaled");
            if (ht.weights(i, j) != 0.0f) fail(at + "masked weight is not exactly 0");
          } else {
            if (masked_scores(i, j) != ht.scores(i, j)) fail(at + "unmasked masked_scores != scores");
            if (scaled_scores(i, j) != scaled) fail(at + "scaled_scores != masked scores / √d_k");
            row_max = std::max(row_max, scaled);
          }
        }
        // weights: softmax (or ÷ row sum) of the unmasked scaled scores, in double.
        for (int j = 0; j < T; ++j) {
          const bool masked = m.causal && j > i;
          const double s = scaled_scores(i, j);
          unnorm[j] = masked ? 0.0 : m.normalization == Normalization::Sum ? s : std::exp(s - double(row_max));
          denom += unnorm[j];
        }
        double sum = 0;
        for (int j = 0; j < T; ++j) {
          const double want = unnorm[j] / denom;
          worst.see(ht.weights(i, j), want, std::fabs(want));
          if (!close(ht.weights(i, j), want, std::fabs(want))) fail(at + "weights != softmax");
          sum += ht.weights(i, j);
        }
        row_sum_err = std::max(row_sum_err, std::fabs(sum - 1.0));
        // dropout: kept = weight · (1.0f / float(1 − p)) exactly, dropped = 0; the keep pattern
        // is torch's stream (reference.h).
        for (int j = 0; j < T; ++j) {
          const std::size_t k = static_cast<std::size_t>(i) * T + j;
          const bool keep = dropout_on ? r.keep[b][h][k] != 0 : true;
          if (dropout_mask(i, j) != (keep ? 1 : 0)) fail(at + "dropout mask != torch's draws");
          const float want = !dropout_on ? ht.weights(i, j) : keep ? ht.weights(i, j) * keep_scale : 0.0f;
          if (dropped_weights(i, j) != want) fail(at + "dropped_weights not exact");
        }
        // context = dropped_weights · V, in double.
        for (int c = 0; c < hw; ++c) {
          double want = 0, mag = 0;
          for (int j = 0; j < T; ++j) {
            const double term = double(dropped_weights(i, j)) * ht.values(j, c);
            want += term;
            mag += std::fabs(term);
          }
          worst.see(ht.context(i, c), want, mag);
          if (!close(ht.context(i, c), want, mag)) fail(at + "context != dropped · V");
          if (bt.context(i, h * hw + c) != ht.context(i, c)) fail(at + "concat context differs");
        }
      }
      if (m.normalization == Normalization::Softmax && row_sum_err > 1e-5)
        fail(at + "a weight row sums to 1 ± " + std::to_string(row_sum_err));
    }
    // output: out_proj(context) for multihead, the context itself otherwise.
    ASSERT_EQ(bt.context.rows(), T);
    ASSERT_EQ(bt.context.cols(), H * hw);
    if (m.variant == Variant::MultiHead) {
      ASSERT_EQ(bt.output.cols(), m.d_out);
      for (int i = 0; i < T; ++i)
        for (int o = 0; o < m.d_out; ++o) {
          double mag = 0;
          const double want = project(bt.context, r.out_proj, i, o, &mag);
          worst.see(bt.output(i, o), want, mag);
          if (!close(bt.output(i, o), want, mag)) fail("output != context · out_projᵀ + bias");
        }
    } else if (bt.output != bt.context) {
      fail("output != context");
    }
  }
  EXPECT_EQ(failures, 0) << "in " << failures << " checks";
}

std::vector<ModelConfig> configurations(Variant v) {
  std::vector<ModelConfig> out;
  const std::uint32_t seeds[] = {0u, 123u, 4294967295u};
  const std::vector<double> rates = (v == Variant::Causal || v == Variant::MultiHead || v == Variant::MultiHeadWrapper)
                                        ? std::vector<double>{0.0, 0.3, 0.9}
                                        : std::vector<double>{0.0};
  int n = 0;
  for (std::uint32_t seed : seeds)
    for (int B = 1; B <= 3; ++B)
      for (double p : rates)
        for (bool training : {true, false}) {
          ModelConfig m = defaultConfig(v);
          m.seed = seed;
          m.batch_size = B;
          m.dropout = p;
          m.training = training;
          ++n;
          switch (v) {
            case Variant::Simple:
              m.d_out = 0;
              if (n % 2) m.normalization = Normalization::Sum;  // with positive inputs
              break;
            case Variant::SelfAttentionV1:
            case Variant::SelfAttentionV2:
            case Variant::Causal: m.d_out = 1 + n % 4; break;
            case Variant::MultiHeadWrapper:
              m.d_out = 1 + n % 3;
              m.num_heads = 1 + n % 4;
              break;
            case Variant::MultiHead:
              m.num_heads = 1 + n % 4;
              m.d_out = m.num_heads * (1 + n % 3);
              break;
          }
          if (v != Variant::Simple) {
            if (n % 3 == 1) m.causal = !m.causal;  // causal switched either way
            if (n % 5 == 2) m.scale = Scale::None;
            if (hasLinearLayers(v) && n % 2 == 0) m.qkv_bias = true;
            if (n % 2 == 1) m.dropout_rng = DropoutStream::Default;  // both streams, every variant
            if (n % 7 == 3) m.dropout_seed = 1000u + static_cast<std::uint32_t>(n);
            if (n % 4 == 3) m.draws_before = n;
          }
          out.push_back(m);
        }
  return out;
}

class TraceProperties : public ::testing::TestWithParam<Variant> {};

TEST_P(TraceProperties, FollowTheReference) {
  Worst worst;
  int traces = 0;
  for (const ModelConfig& m : configurations(GetParam()))
    for (int T : {1, 6, 40})
      for (int d_in : {1, 3, 5}) {
        const bool sum = m.normalization == Normalization::Sum;  // row sums must stay away from 0
        const Matrix x = randomInputs(T, d_in, 1000u * T + d_in + m.seed, sum ? 0.1f : -1.0f, 1.0f);
        SCOPED_TRACE(describe(m, T, d_in));
        const Trace t = computeTrace(x, m);
        checkTrace(x, m, t, worst);
        ++traces;
        if (HasFailure()) return;  // one failing configuration is enough to read
      }
  std::printf("%s: %d traces, worst |ours − double| / (1 + Σ|terms|) = %.3g\n", variantId(GetParam()), traces,
              worst.value);
  EXPECT_LE(worst.value, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(AllVariants, TraceProperties,
                         ::testing::Values(Variant::Simple, Variant::SelfAttentionV1, Variant::SelfAttentionV2,
                                           Variant::Causal, Variant::MultiHeadWrapper, Variant::MultiHead),
                         [](const ::testing::TestParamInfo<Variant>& info) {
                           return std::string(variantId(info.param));
                         });

}  // namespace
}  // namespace attnscope
