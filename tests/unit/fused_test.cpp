// The fast path against the readable reference (docs/DESIGN.md §2.3): outputs of untraced batch
// elements come from the fused kernel (tiles, online softmax, causal tiles skipped, dropout from
// the keep bits) and must equal the reference loops' outputs within 1e-5 relative, for every
// variant and option, at sizes around the block and tile edges (query blocks and key tiles of
// 128 rows: 63 … 129 tokens in one or two tiles, 257 and 520 in three and five), with heads of 4 or
// 5 columns and of 32 and 64 (whole panels of the packed product: the head-major projections).
// Sharing identical elements and projections changes no bit; neither does the thread count. The
// weights rows untraced heads hand over (TraceRequest::weight_rows) are the reference's.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/attention.h"
#include "engine/errors.h"
#include "engine/gemm.h"
#include "engine/head_statistics.h"
#include "engine/stages.h"
#include "engine/tile_kernels.h"
#include "test_support.h"

namespace attnscope {
namespace {

// max |a − b| ÷ max(max |b|, tiny): the relative error of a whole output matrix.
double relativeDiff(const Matrix& a, const Matrix& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols()) return INFINITY;
  if (a.size() == 0) return 0;  // simple attention's weight maps: it has no weights
  const double scale = std::max(static_cast<double>(b.cwiseAbs().maxCoeff()), 1e-30);
  return static_cast<double>((a - b).cwiseAbs().maxCoeff()) / scale;
}

struct Case {
  ModelConfig m;
  int T, d_in;
};

// Every variant, causal or not, scaled or not, with and without dropout, around the tile edges.
std::vector<Case> cases() {
  std::vector<Case> out;
  for (const VariantName& v : variantNames()) {
    for (int T : {1, 6, 63, 64, 65, 129, 257, 520}) {
      ModelConfig m = defaultConfig(v.value);
      m.batch_size = 3;
      m.seed = 7 + T;
      if (hasProjections(v.value)) m.d_out = isMultiHead(v.value) ? 12 : 5;
      if (isMultiHead(v.value)) m.num_heads = 3;
      if (hasLinearLayers(v.value)) m.qkv_bias = T % 2 == 1;
      const int d_in = v.value == Variant::Simple ? 4 : 7;
      out.push_back({m, T, d_in});
      if (hasProjections(v.value) && (T == 65 || T == 257)) {
        // Heads of whole 32-wide panels: the projections head-major (attention_pass.h's Work).
        ModelConfig wide = m;
        wide.d_out = 32;                                                     // single heads and the wrapper's: 32 wide
        if (v.value == Variant::MultiHead) wide.d_out = T == 65 ? 192 : 96;  // 3 heads of 64, of 32
        out.push_back({wide, T, 40});
      }
      if (hasDropout(v.value)) {
        ModelConfig d = m;
        d.dropout = T % 3 == 0 ? 0.5 : 0.1;
        d.training = true;
        out.push_back({d, T, d_in});
        d.causal = false;
        d.scale = Scale::None;
        out.push_back({d, T, d_in});
      }
    }
  }
  return out;
}

std::string describe(const Case& c) {
  return std::string(variantId(c.m.variant)) + " T=" + std::to_string(c.T) + " p=" + std::to_string(c.m.dropout) +
         (c.m.causal ? " causal" : " full") + (c.m.scale == Scale::SqrtDk ? " scaled" : " unscaled");
}

const TraceRequest kOutputsOnly = TraceRequest::only({});

// The parallel path on two threads, however small the work; `fused` false: the reference loops.
ExecutionOptions onTwoThreads(bool fused = true) {
  ExecutionOptions exec;
  exec.fused = fused;
  exec.parallel = true;
  exec.threads = 2;
  exec.min_parallel_work = 0;
  return exec;
}

TEST(Fused, MatchesTheReferenceLoops) {
  double worst = 0;
  for (GemmBackend backend : {GemmBackend::Packed, GemmBackend::Eigen, GemmBackend::OpenBlas}) {
    if (!gemmBackendAvailable(backend)) continue;
    const GemmBackend saved = gemmBackend();
    setGemmBackend(backend);
    for (const Case& c : cases()) {
      SCOPED_TRACE(describe(c) + " gemm=" + gemmBackendId(backend));
      const Matrix x = test::randomMatrix(c.T, c.d_in, 3 + c.T);
      ExecutionOptions reference;
      reference.fused = false;
      const Trace expected = computeTrace(x, c.m, reference, kOutputsOnly);
      for (bool parallel : {false, true}) {
        ExecutionOptions fast;
        fast.parallel = parallel;
        fast.threads = 2;
        fast.min_parallel_work = 0;
        const Trace got = computeTrace(x, c.m, fast, kOutputsOnly);
        ASSERT_EQ(got.batches.size(), expected.batches.size());
        for (std::size_t b = 0; b < got.batches.size(); ++b) {
          EXPECT_TRUE(got.batches[b].heads.empty());
          const double d = std::max(relativeDiff(got.batches[b].output, expected.batches[b].output),
                                    relativeDiff(got.batches[b].context, expected.batches[b].context));
          EXPECT_LE(d, 1e-5) << "batch " << b;
          worst = std::max(worst, d);
        }
      }
    }
    setGemmBackend(saved);
  }
  std::printf("worst relative |fused − reference| over %zu cases: %.3g\n", cases().size(), worst);
}

// The trace of the shown element (reference loops) and the fused outputs of the others agree,
// and dropout differs between elements exactly as on the reference path.
TEST(Fused, TracedAndFusedElementsAgree) {
  for (const Case& c : cases()) {
    if (c.T < 60) continue;
    SCOPED_TRACE(describe(c));
    const Matrix x = test::randomMatrix(c.T, c.d_in, 5);
    ExecutionOptions reference;
    reference.fused = false;
    const Trace full = computeTrace(x, c.m, reference);
    const Trace one = computeTrace(x, c.m, ExecutionOptions{}, TraceRequest::only({1}));
    ASSERT_EQ(one.batches[1].heads.size(), full.batches[1].heads.size());
    for (std::size_t h = 0; h < one.batches[1].heads.size(); ++h) {
      EXPECT_TRUE(one.batches[1].heads[h].dropout_mask == full.batches[1].heads[h].dropout_mask);
      EXPECT_LE(relativeDiff(one.batches[1].heads[h].weights, full.batches[1].heads[h].weights), 1e-5);
    }
    for (std::size_t b = 0; b < one.batches.size(); ++b)
      EXPECT_LE(relativeDiff(one.batches[b].output, full.batches[b].output), 1e-5) << "batch " << b;
  }
}

// The rest of a split request (the app's second part): maps of some heads without outputs. The
// heads kept are bit for bit those of a whole trace, on both paths, with and without dropout.
TEST(Fused, MapsWithoutOutputsAreTheWholeTracesHeads) {
  for (const Case& c : cases()) {
    if (c.m.batch_size < 2 || headCount(c.m) < 2) continue;
    SCOPED_TRACE(describe(c));
    const Matrix x = test::randomMatrix(c.T, c.d_in, 21);
    for (bool fused : {false, true}) {
      ExecutionOptions exec;
      exec.fused = fused;
      TraceRequest whole = TraceRequest::only({1});
      TraceRequest rest = whole;
      rest.heads = {1};
      rest.outputs = false;
      const Trace a = computeTrace(x, c.m, exec, whole), b = computeTrace(x, c.m, exec, rest);
      for (std::size_t e = 0; e < b.batches.size(); ++e) {
        EXPECT_EQ(b.batches[e].output.size(), 0) << "an output was computed, element " << e;
        EXPECT_EQ(b.batches[e].context.size(), 0) << "a context was computed, element " << e;
      }
      ASSERT_EQ(b.batches[1].heads.size(), a.batches[1].heads.size());
      EXPECT_FALSE(b.batches[1].heads[0].hasMaps());
      const HeadTrace &got = b.batches[1].heads[1], &want = a.batches[1].heads[1];
      ASSERT_TRUE(got.hasMaps());
      EXPECT_TRUE(test::bitwiseEqual(got.scores, want.scores)) << "fused " << fused;
      EXPECT_TRUE(test::bitwiseEqual(got.weights, want.weights)) << "fused " << fused;
      EXPECT_TRUE(test::bitwiseEqual(got.context, want.context)) << "fused " << fused;
      EXPECT_TRUE(got.dropout_mask == want.dropout_mask) << "fused " << fused;
    }
  }
}

// max relative difference of two maps that may hold −∞ (masked scores): the −∞ must match exactly.
double mapDiff(const Matrix& a, const Matrix& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols()) return INFINITY;
  const auto inf_a = a.array().isInf(), inf_b = b.array().isInf();
  if ((inf_a != inf_b).any() || (inf_a && (a.array() != b.array())).any()) return INFINITY;
  const Matrix fa = inf_a.select(0.0f, a), fb = inf_b.select(0.0f, b);
  return relativeDiff(fa, fb);
}

// Traced heads on the fast path (row-wise vector operations) against the reference loops: every
// stage, masks bit for bit.
TEST(Fused, TracedMapsMatchTheReferenceLoops) {
  double worst = 0;
  for (const Case& c : cases()) {
    if (c.m.normalization != Normalization::Softmax) continue;
    SCOPED_TRACE(describe(c));
    const Matrix x = test::randomMatrix(c.T, c.d_in, 13);
    ExecutionOptions reference;
    reference.fused = false;
    const Trace expected = computeTrace(x, c.m, reference);
    const Trace got = computeTrace(x, c.m, onTwoThreads());
    for (std::size_t b = 0; b < got.batches.size(); ++b) {
      ASSERT_EQ(got.batches[b].heads.size(), expected.batches[b].heads.size());
      for (std::size_t h = 0; h < got.batches[b].heads.size(); ++h) {
        const HeadTrace &g = got.batches[b].heads[h], &e = expected.batches[b].heads[h];
        EXPECT_TRUE(g.dropout_mask == e.dropout_mask) << "dropout mask, batch " << b << " head " << h;
        for (const StageInfo& info : stageTable()) {
          const Matrix gv = stageValues(got, g, info.stage), ev = stageValues(expected, e, info.stage);
          if (info.flags) {
            EXPECT_TRUE(gv == ev) << info.id << ", batch " << b << " head " << h;
            continue;
          }
          const double d = mapDiff(gv, ev);
          EXPECT_LE(d, 1e-5) << info.id << ", batch " << b << " head " << h;
          worst = std::max(worst, d);
        }
      }
      EXPECT_LE(relativeDiff(got.batches[b].output, expected.batches[b].output), 1e-5);
    }
  }
  std::printf("worst relative |traced fast − reference| over every stage: %.3g\n", worst);
}

// The weights an untraced head hands over (TraceRequest::weight_rows) without keeping its maps:
// the fused path's streamed rows (attendRowsStreamed) on every kernel version this CPU runs, and
// the reference path's row blocks. Every row of every head of each computed element comes once;
// its weights are the reference loops' within 1e-5, as the traced maps (the reference path's: the
// same bits), 0 beyond
// the row's unmasked keys; the streamed rows' entropies, taken from the scores, are head
// statistics' within 1e-5; the outputs are the reference's within 1e-5 relative, dropout included.
TEST(Fused, StreamedWeightRowsAreTheReferenceWeights) {
  double worst_weight = 0, worst_entropy = 0;
  std::vector<Isa> isas;
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512})
    if (isaSupported(isa)) isas.push_back(isa);
  const Isa saved = activeTileKernels().isa;
  for (const Case& c : cases()) {
    if (c.m.normalization != Normalization::Softmax) continue;
    SCOPED_TRACE(describe(c));
    const Matrix x = test::randomMatrix(c.T, c.d_in, 17);
    ExecutionOptions reference;
    reference.fused = false;
    const Trace expected = computeTrace(x, c.m, reference);
    const int B = c.m.batch_size, H = expected.heads, T = c.T;
    for (int version = 0; version <= static_cast<int>(isas.size()); ++version) {
      const bool fused = version < static_cast<int>(isas.size());  // the last: the reference path
      if (fused) setIsa(isas[version]);
      SCOPED_TRACE(fused ? std::string("streamed, ") + isaName(isas[version]) : std::string("reference path"));
      // Filled by the pass's threads, each row by one: sized before.
      std::vector<Matrix> got(static_cast<std::size_t>(B * H), Matrix::Constant(T, T, -1.0f));
      std::vector<std::vector<double>> entropy(static_cast<std::size_t>(B * H), std::vector<double>(T, -1.0));
      std::vector<std::atomic<int>> delivered(static_cast<std::size_t>(B * H * T));
      TraceRequest request = TraceRequest::only({});
      request.weight_rows = [&](const WeightRows& w) {
        const std::size_t head = static_cast<std::size_t>(w.element * H + w.head);
        for (int r = 0; r < w.rows; ++r) {
          const int i = w.first_row + r;
          delivered[head * T + i].fetch_add(1);
          for (int j = 0; j < T; ++j)
            got[head](i, j) = j < w.keys ? w.weights[static_cast<std::size_t>(r) * w.ld + j] : 0.0f;
          if (w.entropy != nullptr) entropy[head][i] = w.entropy[r];
        }
      };
      const Trace out = computeTrace(x, c.m, onTwoThreads(fused), request);
      for (int b = 0; b < B; ++b) {
        EXPECT_LE(relativeDiff(out.batches[b].output, expected.batches[b].output), 1e-5) << "batch " << b;
        // Equal elements are computed once (without dropout): element 0, or every one.
        const bool computed = delivered[static_cast<std::size_t>(b * H * T)].load() > 0;
        EXPECT_TRUE(computed || (b > 0 && !expected.dropout_active)) << "element " << b << " never came";
        if (!computed) continue;
        for (int h = 0; h < H; ++h) {
          const std::size_t head = static_cast<std::size_t>(b * H + h);
          const HeadTrace& e = expected.batches[b].heads[h];
          const HeadStatistics stats = headStatistics(expected, e);
          for (int i = 0; i < T; ++i)
            ASSERT_EQ(delivered[head * T + i].load(), 1) << "b " << b << " h " << h << " row " << i;
          const double d = (got[head] - e.weights).cwiseAbs().maxCoeff();
          if (fused) {
            EXPECT_LE(d, 1e-5) << "batch " << b << " head " << h;
            for (int i = 0; i < T; ++i) {
              const double de = std::abs(entropy[head][i] - stats.entropy(i));
              ASSERT_LE(de, 1e-5) << "entropy, batch " << b << " head " << h << " row " << i;
              worst_entropy = std::max(worst_entropy, de);
            }
          } else {
            EXPECT_TRUE(test::bitwiseEqual(got[head], e.weights)) << "batch " << b << " head " << h;
          }
          worst_weight = std::max(worst_weight, d);
        }
      }
    }
  }
  setIsa(saved);
  std::printf("worst |streamed − reference|: weights %.3g, entropy %.3g\n", worst_weight, worst_entropy);
}

// Sharing (one projection for all elements; one element for all without dropout) and the thread
// count change no bit of the fast path's outputs.
TEST(Fused, SharingAndThreadsChangeNoBit) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(describe(c));
    const Matrix x = test::randomMatrix(c.T, c.d_in, 9);
    ExecutionOptions each;
    each.share_identical = false;
    const Trace base = computeTrace(x, c.m, each, kOutputsOnly);
    for (int threads : {1, 2, 3}) {
      ExecutionOptions shared;
      shared.parallel = true;
      shared.threads = threads;
      shared.min_parallel_work = 0;
      const Trace got = computeTrace(x, c.m, shared, kOutputsOnly);
      for (std::size_t b = 0; b < got.batches.size(); ++b)
        EXPECT_TRUE(test::bitwiseEqual(got.batches[b].output, base.batches[b].output))
            << "batch " << b << ", " << threads;
    }
  }
}

// A batch of different sequences (computeTrace on one input per element): without dropout each
// element's maps and output are the ones its sequence gives alone (batch 1), on both paths; with
// dropout the masks are the stacked batch's, element by element (the draws do not depend on the
// inputs). Sequences of another shape, or another count than the batch, are refused by name.
TEST(Fused, ABatchOfDifferentSequences) {
  for (const Case& c : cases()) {
    if (c.m.batch_size < 2 || c.T > 129) continue;
    SCOPED_TRACE(describe(c));
    std::vector<Matrix> xs;
    std::vector<const Matrix*> inputs;
    for (int b = 0; b < c.m.batch_size; ++b) xs.push_back(test::randomMatrix(c.T, c.d_in, 40 + b));
    for (const Matrix& x : xs) inputs.push_back(&x);
    for (bool fused : {false, true}) {
      const Trace batch = computeTrace(inputs, c.m, onTwoThreads(fused));
      const Trace stacked = computeTrace(xs[0], c.m, onTwoThreads(fused));
      for (int b = 0; b < c.m.batch_size; ++b) {
        ModelConfig one = c.m;
        one.batch_size = 1;
        if (!batch.dropout_active) {
          const Trace alone = computeTrace(xs[static_cast<std::size_t>(b)], one, onTwoThreads(fused));
          EXPECT_LE(relativeDiff(batch.batches[b].output, alone.batches[0].output), 1e-6) << "element " << b;
          for (std::size_t h = 0; h < alone.batches[0].heads.size(); ++h)
            EXPECT_LE(relativeDiff(batch.batches[b].heads[h].weights, alone.batches[0].heads[h].weights), 1e-6);
        } else {
          for (std::size_t h = 0; h < stacked.batches[b].heads.size(); ++h)
            EXPECT_TRUE(batch.batches[b].heads[h].dropout_mask == stacked.batches[b].heads[h].dropout_mask)
                << "element " << b << " head " << h;
        }
      }
    }
  }
  const ModelConfig m = defaultConfig(Variant::MultiHead);  // batch 2
  const Matrix a = test::randomMatrix(6, 3, 1), wide = test::randomMatrix(6, 4, 2);
  const auto refused = [&](const std::vector<const Matrix*>& inputs, const std::string& words) {
    try {
      computeTrace(inputs, m);
      ADD_FAILURE() << "accepted: " << words;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  refused({&a, &wide}, "batch_sequences[0]: 6 × 4, but the batch's sequences are T × d_in = 6 × 3");
  refused({&a, &a, &a}, "3 sequences for a batch of 2");
}

// Without dropout every element is the same; with it, elements differ (their own draws).
TEST(Fused, ElementsDifferOnlyWithDropout) {
  ModelConfig m = defaultConfig(Variant::MultiHead);
  m.d_out = 8, m.num_heads = 2, m.batch_size = 3, m.dropout = 0.5, m.training = true;
  const Matrix x = test::randomMatrix(100, 6, 1);
  const Trace dropped = computeTrace(x, m, ExecutionOptions{}, kOutputsOnly);
  EXPECT_FALSE(test::bitwiseEqual(dropped.batches[0].output, dropped.batches[1].output));
  EXPECT_FALSE(test::bitwiseEqual(dropped.batches[1].output, dropped.batches[2].output));
  m.training = false;
  const Trace eval = computeTrace(x, m, ExecutionOptions{}, kOutputsOnly);
  EXPECT_TRUE(test::bitwiseEqual(eval.batches[0].output, eval.batches[2].output));
}

// Scores that overflow float32 fail the call on the fast path as on the reference.
TEST(Fused, OverflowIsAComputeError) {
  ModelConfig m = defaultConfig(Variant::Simple);
  m.batch_size = 2;
  const Matrix x = test::randomMatrix(70, 4, 2, 1e20f);
  EXPECT_THROW(computeTrace(x, m, ExecutionOptions{}, kOutputsOnly), ComputeError);
}

}  // namespace
}  // namespace attnscope
