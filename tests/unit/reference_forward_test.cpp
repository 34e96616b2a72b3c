// The serial reference forward pass (engine/attention_reference.h) against the engine's two
// paths, over every preset of assets/presets/ and random configurations of every variant and
// option (docs/DESIGN.md §2.1–§2.3):
// - the reference path (computeTrace with fused off), on 1, 2 and 3 threads, is the serial
//   forward bit for bit: every stage of every head, contexts, outputs, parameters;
// - the fast path (the default options; on 1, 2 and 3 threads, traced and outputs only) has the
//   serial forward's parameters and dropout masks bit for bit, −∞ and masked weights exactly where
//   it has them, and every other number within 1e-5 relative (unit.fused's contract); its threads
//   change no bit; where the fused kernel does not apply (the tril route, 'simple' with ÷ row sum)
//   it is the reference path and equal bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "engine/attention.h"
#include "engine/attention_reference.h"
#include "engine/stages.h"
#include "formats/presets.h"
#include "formats/workspace_file.h"
#include "test_support.h"

namespace attnscope {
namespace {

struct Case {
  std::string name;
  Matrix x;
  ModelConfig m;
};

std::string describe(const ModelConfig& m, const Matrix& x) {
  std::string s = std::string(variantId(m.variant)) + " T=" + std::to_string(x.rows()) +
                  " d_in=" + std::to_string(x.cols()) + " d_out=" + std::to_string(m.d_out) +
                  " heads=" + std::to_string(m.num_heads) + " B=" + std::to_string(m.batch_size);
  if (m.causal) s += std::string(" causal:") + causalRouteId(m.causal_route);
  if (m.scale == Scale::None) s += " unscaled";
  if (m.normalization == Normalization::Sum) s += " sum";
  if (m.qkv_bias) s += " bias";
  if (m.training && m.dropout > 0) s += " p=" + std::to_string(m.dropout) + ":" + dropoutStreamId(m.dropout_rng);
  if (m.dropout_seed) s += " dropout_seed";
  if (m.draws_before > 0) s += " draws_before";
  if (m.parameters) s += " own parameters";
  return s;
}

// Every preset as it ships.
std::vector<Case> presetCases() {
  std::vector<Case> out;
  for (const std::string& name : presetNames()) {
    const Workspace ws = loadWorkspace(presetPath(name));
    out.push_back({"preset " + name, ws.embeddings, ws.model});
  }
  return out;
}

// Random configurations of every variant and option, around the blocks' edges (32-row reference
// blocks, 128-row query blocks and key tiles), reproducible from the test's own generator.
std::vector<Case> randomCases() {
  std::mt19937 g(2024);
  const auto pick = [&g](int n) { return static_cast<int>(g() % static_cast<unsigned>(n)); };
  std::vector<Case> out;
  for (const VariantName& v : variantNames())
    for (int T : {1, 2, 6, 31, 33, 64, 65, 129, 200}) {
      for (int k = 0; k < 4; ++k) {
        ModelConfig m = defaultConfig(v.value);
        m.seed = static_cast<std::uint32_t>(g());
        m.batch_size = 1 + pick(3);
        int d_in = 1 + pick(9);
        if (v.value == Variant::Simple) {
          m.normalization = k == 1 ? Normalization::Sum : Normalization::Softmax;
          m.scale = k == 2 ? Scale::SqrtDk : Scale::None;
        } else {
          m.d_out = 1 + pick(7);
          if (v.value == Variant::MultiHead) m.num_heads = 1 + pick(3), m.d_out = m.num_heads * (1 + pick(6));
          if (v.value == Variant::MultiHeadWrapper) m.num_heads = 1 + pick(3);
          if (hasLinearLayers(v.value)) m.qkv_bias = pick(2) == 1;
          m.causal = k != 1;
          m.causal_route = k == 2 ? CausalRoute::Tril : CausalRoute::NegInf;
          m.scale = k == 3 ? Scale::None : Scale::SqrtDk;
          if (pick(4) == 0) m.draws_before = 1 + pick(40);
          if (hasDropout(v.value) && k != 3) {
            m.training = true;
            m.dropout = k == 0 ? 0.1 : k == 1 ? 0.5 : (T % 2 == 1 ? 1.0 : 0.8);
            m.dropout_rng = pick(2) == 1 ? DropoutStream::Default : DropoutStream::Mkl;
            if (pick(3) == 0) m.dropout_seed = static_cast<std::uint32_t>(g());
          }
          if (T == 65 && k == 0) {  // heads of whole 32-wide panels: the fast path's head-major layout
            d_in = 40;
            m.d_out = v.value == Variant::MultiHead ? 64 * m.num_heads : 32;
          }
          if (T == 33 && k == 0 && hasLinearLayers(v.value)) {  // the user's own values for a weight
            auto values = std::make_shared<ParameterValues>();
            const std::string prefix = v.value == Variant::MultiHeadWrapper ? "heads.0." : "";
            values->push_back({prefix + "W_key.weight", test::randomMatrix(m.d_out, d_in, m.seed, 0.5f), false});
            m.parameters = values;
          }
        }
        if (v.value == Variant::Simple) d_in = 1 + pick(9);
        const Matrix x = test::randomMatrix(T, d_in, static_cast<std::uint32_t>(g()));
        out.push_back({describe(m, x), x, m});
      }
    }
  return out;
}

std::vector<Case> allCases() {
  std::vector<Case> out = presetCases();
  for (Case& c : randomCases()) out.push_back(std::move(c));
  return out;
}

// GPT-2 small's whole trace takes seconds and half a gigabyte: its fast path is compared on
// element 0's maps and every output.
bool large(const Case& c) { return static_cast<long long>(c.x.rows()) * c.x.rows() * headCount(c.m) > (1 << 22); }

// The thread counts a case runs on: all of them, or for the large ones two threads (their blocks are
// the small cases' blocks, many more of them).
std::vector<int> threadCounts(const Case& c, std::vector<int> all) { return large(c) ? std::vector<int>{2} : all; }

ExecutionOptions threadsOf(int threads, bool fused) {
  ExecutionOptions e;
  e.fused = fused;
  e.parallel = threads > 0;
  e.threads = threads;
  e.min_parallel_work = 0;  // parallel however small
  return e;
}

::testing::AssertionResult sameParameters(const Parameters& a, const Parameters& b) {
  const auto same = [](const Linear& x, const Linear& y) {
    return test::bitwiseEqual(x.weight, y.weight) && test::bitwiseEqual(Matrix(x.bias), Matrix(y.bias));
  };
  if (a.query.size() != b.query.size()) return ::testing::AssertionFailure() << "projection groups differ";
  for (std::size_t g = 0; g < a.query.size(); ++g)
    if (!same(a.query[g], b.query[g]) || !same(a.key[g], b.key[g]) || !same(a.value[g], b.value[g]))
      return ::testing::AssertionFailure() << "group " << g << "'s projections differ";
  if (!same(a.out_proj, b.out_proj)) return ::testing::AssertionFailure() << "out_proj differs";
  return ::testing::AssertionSuccess();
}

// Every stage of every head (stored or derived), the contexts and outputs, bit for bit.
void expectBitwiseEqual(const Trace& got, const Trace& want) {
  EXPECT_TRUE(sameParameters(*got.parameters, *want.parameters));
  EXPECT_EQ(got.scale_divisor, want.scale_divisor);
  EXPECT_EQ(got.dropout_scale, want.dropout_scale);
  EXPECT_EQ(got.dropout_active, want.dropout_active);
  ASSERT_EQ(got.batches.size(), want.batches.size());
  for (std::size_t b = 0; b < got.batches.size(); ++b) {
    const BatchTrace &g = got.batches[b], &w = want.batches[b];
    EXPECT_TRUE(test::bitwiseEqual(g.context, w.context)) << "context, batch " << b;
    EXPECT_TRUE(test::bitwiseEqual(g.output, w.output)) << "output, batch " << b;
    ASSERT_EQ(g.heads.size(), w.heads.size()) << "batch " << b;
    for (std::size_t h = 0; h < g.heads.size(); ++h) {
      EXPECT_EQ(g.heads[h].index, w.heads[h].index);
      EXPECT_TRUE(g.heads[h].dropout_mask == w.heads[h].dropout_mask) << "dropout mask, batch " << b << " head " << h;
      for (const StageInfo& s : stageTable()) {
        if (s.parameter || !stageHeld(want, s.stage)) continue;
        EXPECT_TRUE(test::bitwiseEqual(stageValues(got, g.heads[h], s.stage), stageValues(want, w.heads[h], s.stage)))
            << s.id << ", batch " << b << " head " << h;
      }
      EXPECT_TRUE(test::bitwiseEqual(g.heads[h].context, w.heads[h].context)) << "head context " << h;
    }
  }
}

// max |a − b| ÷ max |b| (b's largest magnitude, or a tiny one): unit.fused's measure. −∞ must
// be in the same cells of both (the masked scores); they are left out of the rest.
double relativeDiff(const Matrix& a, const Matrix& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols()) return INFINITY;
  if (a.size() == 0) return 0;
  const auto inf_a = a.array().isInf(), inf_b = b.array().isInf();
  if ((inf_a != inf_b).any() || (inf_a && (a.array() != b.array())).any()) return INFINITY;
  const Matrix fa = inf_a.select(0.0f, a), fb = inf_b.select(0.0f, b);
  const double scale = std::max(static_cast<double>(fb.cwiseAbs().maxCoeff()), 1e-30);
  return static_cast<double>((fa - fb).cwiseAbs().maxCoeff()) / scale;
}

constexpr double kTolerance = 1e-5;  // the fast path against the reference (unit.fused, DESIGN.md §2.3)

// The fast path's trace against the reference: parameters, dropout masks and 0/1 stages bit for
// bit, masked weights exactly 0, the rest within kTolerance relative. Returns the worst
// relative difference. Heads without maps (or elements without heads) compare their outputs only.
double expectClose(const Trace& got, const Trace& want) {
  double worst = 0;
  EXPECT_TRUE(sameParameters(*got.parameters, *want.parameters));
  EXPECT_EQ(got.dropout_scale, want.dropout_scale);
  EXPECT_EQ(got.scale_divisor, want.scale_divisor);
  EXPECT_EQ(got.batches.size(), want.batches.size());
  for (std::size_t b = 0; b < std::min(got.batches.size(), want.batches.size()); ++b) {
    const BatchTrace &g = got.batches[b], &w = want.batches[b];
    for (const auto& [name, gm, wm] :
         {std::make_tuple("context", &g.context, &w.context), std::make_tuple("output", &g.output, &w.output)}) {
      const double d = relativeDiff(*gm, *wm);
      EXPECT_LE(d, kTolerance) << name << ", batch " << b;
      worst = std::max(worst, d);
    }
    for (std::size_t h = 0; h < g.heads.size(); ++h) {
      if (!g.heads[h].hasMaps()) continue;
      const HeadTrace &gh = g.heads[h], &wh = w.heads[h];
      EXPECT_TRUE(gh.dropout_mask == wh.dropout_mask) << "dropout mask, batch " << b << " head " << h;
      for (const StageInfo& s : stageTable()) {
        if (s.parameter || !stageHeld(want, s.stage)) continue;
        const Matrix gv = stageValues(got, gh, s.stage), wv = stageValues(want, wh, s.stage);
        if (s.flags) {
          EXPECT_TRUE(gv == wv) << s.id << ", batch " << b << " head " << h;
          continue;
        }
        const double d = relativeDiff(gv, wv);
        EXPECT_LE(d, kTolerance) << s.id << ", batch " << b << " head " << h;
        worst = std::max(worst, d);
      }
      // Masked weights are exactly 0 on both paths (DESIGN.md §2.2 "Tolerance").
      const Matrix mask = stageValues(want, wh, Stage::Mask);
      EXPECT_TRUE(((mask.array() == 0) || (gh.weights.array() == 0)).all()) << "masked weights, head " << h;
    }
  }
  return worst;
}

// The serial forward is what the engine's reference path computes, on any number of threads.
TEST(ReferenceForward, IsTheReferencePathBitForBit) {
  for (const Case& c : allCases()) {
    SCOPED_TRACE(c.name);
    const Trace serial = referenceForward(c.x, c.m);
    for (int threads : threadCounts(c, {0, 1, 2, 3})) {  // 0: the serial path
      SCOPED_TRACE(std::to_string(threads) + " threads");
      expectBitwiseEqual(computeTrace(c.x, c.m, threadsOf(threads, false)), serial);
    }
  }
}

// The fast path against the serial forward: traced (every stage) and outputs only (the fused
// kernel), on the serial path and 1, 2, 3 threads, which give the same bits.
TEST(ReferenceForward, FastPathMatchesIt) {
  double worst_traced = 0, worst_fused = 0;
  int bitwise = 0;
  const std::vector<Case> cases = allCases();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Trace serial = referenceForward(c.x, c.m);
    const TraceRequest maps = large(c) ? TraceRequest::only({0}) : TraceRequest{};
    const Trace traced = computeTrace(c.x, c.m, ExecutionOptions{}, maps);
    worst_traced = std::max(worst_traced, expectClose(traced, serial));
    const Trace outputs = computeTrace(c.x, c.m, ExecutionOptions{}, TraceRequest::only({}));
    worst_fused = std::max(worst_fused, expectClose(outputs, serial));
    for (int threads : threadCounts(c, {1, 2, 3})) {
      SCOPED_TRACE(std::to_string(threads) + " threads");
      const Trace par = computeTrace(c.x, c.m, threadsOf(threads, true), maps);
      expectBitwiseEqual(par, traced);
      const Trace par_outputs = computeTrace(c.x, c.m, threadsOf(threads, true), TraceRequest::only({}));
      for (std::size_t b = 0; b < outputs.batches.size(); ++b)
        EXPECT_TRUE(test::bitwiseEqual(par_outputs.batches[b].output, outputs.batches[b].output)) << "batch " << b;
    }
    // Without the fused kernel the fast options run the reference path.
    if (trilRoute(c.m) || c.m.normalization == Normalization::Sum) {
      ++bitwise;
      if (!large(c)) expectBitwiseEqual(traced, serial);
    }
  }
  std::printf("%zu cases (%d on the reference path): worst relative |fast − reference| %.3g traced, %.3g fused\n",
              cases.size(), bitwise, worst_traced, worst_fused);
}

// The serial forward refuses what computeTrace refuses, with the same message.
TEST(ReferenceForward, RefusesAsComputeTraceDoes) {
  ModelConfig m = defaultConfig(Variant::MultiHead);
  m.d_out = 3;  // not divisible by num_heads = 2
  EXPECT_EQ(test::errorOf([&] { referenceForward(test::bookInputs(), m); }),
            test::errorOf([&] { computeTrace(test::bookInputs(), m); }));
  EXPECT_NE(test::errorOf([&] { referenceForward(test::bookInputs(), m); }), "");
  Matrix x = test::bookInputs();
  x(2, 1) = NAN;
  EXPECT_EQ(test::errorOf([&] { referenceForward(x, defaultConfig(Variant::Causal)); }),
            "embeddings: every value must be a finite number");
  const Matrix huge = test::randomMatrix(70, 4, 2, 1e20f);  // scores overflow float32
  ModelConfig simple = defaultConfig(Variant::Simple);
  EXPECT_THROW(referenceForward(huge, simple), ComputeError);
  EXPECT_THROW(computeTrace(huge, simple, threadsOf(0, false)), ComputeError);
}

}  // namespace
}  // namespace attnscope
