// The fused kernel's micro-kernels (core/engine/tile_kernels.h) on every version this CPU runs
// (scalar, AVX2, AVX-512), against plain double-precision loops written here: S = Q·Kᵀ, acc += P·V
// and the online softmax step, for head widths 1, 3, 8, 32, 64, 65, ragged blocks and tiles, dense
// and strided rows, the causal key limit, and buffers at every float offset from an alignment.
// Around every operand the buffers hold NaN: a read past a row or a tile turns a result into NaN,
// and a write past them changes a guard. Each result must also be the same bits whatever its place
// in a register block or a call and the buffers' alignment (the fused path's determinism), and the
// whole fused path must match the reference loops on each version.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/attention.h"
#include "engine/tile_kernels.h"
#include "guarded_operand.h"
#include "test_support.h"

namespace attnscope {
namespace {

using test::bitsOf;
using test::isasToTest;
using test::kInf;
using test::kNaN;
using test::Operand;

struct Shape {
  int n, nk, hw;
};

std::vector<Shape> shapes() {
  std::vector<Shape> out;
  for (int hw : {1, 3, 8, 32, 64, 65})
    for (int n : {1, 2, 3, 4, 7, 128})
      for (int nk : {1, 3, 4, 5, 13, 256}) out.push_back({n, nk, hw});
  return out;
}

// Key limits to try for a tile: all keys, and causal ones crossing the tile (negative: rows with
// no key; past nk: every row complete).
std::vector<int> keyLimits(const Shape& s) { return {s.nk, 1, 0, -2, s.nk / 2 + 1, s.nk - s.n + 1, s.nk + 5}; }

int keysOf(int r, int key_limit, int nk) { return std::clamp(r + key_limit, 0, nk); }

std::string where(Isa isa, const Shape& s, int key_limit, int offset) {
  return std::string(isaName(isa)) + " n=" + std::to_string(s.n) + " nk=" + std::to_string(s.nk) +
         " hw=" + std::to_string(s.hw) + " key_limit=" + std::to_string(key_limit) +
         " offset=" + std::to_string(offset);
}

TEST(TileKernels, VersionsThisCpuRuns) {
  std::string list;
  for (Isa isa : isasToTest()) list += std::string(" ") + isaName(isa);
  std::printf("tile kernels this CPU runs:%s; auto = %s, active = %s\n", list.c_str(), isaName(isaBest()),
              isaName(activeTileKernels().isa));
  EXPECT_TRUE(isaSupported(isaBest()));
  EXPECT_EQ(tileKernels(Isa::Auto).isa, isaBest());
  for (Isa isa : isasToTest()) EXPECT_EQ(tileKernels(isa).isa, isa);
  for (Isa isa : {Isa::Avx2, Isa::Avx512})
    if (!isaSupported(isa)) {
      EXPECT_THROW(tileKernels(isa), std::invalid_argument) << isaName(isa);
    }
}

// S = Q·Kᵀ against Σ_c q_c k_c in double: every needed element within float rounding of the sum
// (|error| ≤ 2·hw·ε·Σ|q_c k_c|), nothing written outside S's n × nk, no NaN read in.
TEST(TileKernels, ScoresMatchDoubleLoops) {
  std::mt19937 g(1);
  int checked = 0;
  for (Isa isa : isasToTest()) {
    const TileKernels& k = tileKernels(isa);
    for (const Shape& s : shapes())
      for (int key_limit : keyLimits(s)) {
        const int offset = (s.n + s.nk + s.hw + key_limit + 64) % 8;
        SCOPED_TRACE(where(isa, s, key_limit, offset));
        // K dense (row stride hw: the fused kernel's copy, the kernels' fast path) or strided.
        const int k_pad = (s.n + key_limit) % 2 == 0 ? 0 : 5;
        Operand Q(s.n, s.hw, 3, offset), K(s.nk, s.hw, k_pad, (offset + 3) % 8), S(s.n, s.nk, 2, (offset + 5) % 8);
        Q.fillRandom(g, -1, 1);
        K.fillRandom(g, -1, 1);
        k.scores(s.n, s.nk, s.hw, Q.data(), Q.ld, K.data(), K.ld, S.data(), S.ld, key_limit);
        int bad = 0;
        for (int r = 0; r < s.n; ++r)
          for (int j = 0; j < keysOf(r, key_limit, s.nk); ++j) {
            double want = 0, magnitude = 0;
            for (int c = 0; c < s.hw; ++c) {
              want += double(Q.at(r, c)) * K.at(j, c);
              magnitude += std::fabs(double(Q.at(r, c)) * K.at(j, c));
            }
            const double got = S.at(r, j);
            if (!(std::fabs(got - want) <= 2.0 * s.hw * FLT_EPSILON * magnitude + 1e-30) && bad++ < 3)
              ADD_FAILURE() << "S(" << r << ", " << j << ") = " << got << ", expected " << want;
            ++checked;
          }
        EXPECT_TRUE(S.guardsIntact()) << "written outside S";
      }
  }
  std::printf("%d scores checked\n", checked);
}

// acc += P·V against acc + Σ_j p_j v_j in double. Row r's P is 0 for the kSoftmaxZeroKeys keys
// after its key limit (as the softmax row leaves it) and NaN beyond them and past nk; V is NaN
// past its nk × hw.
TEST(TileKernels, AccumulateMatchesDoubleLoops) {
  std::mt19937 g(2);
  int checked = 0;
  for (Isa isa : isasToTest()) {
    const TileKernels& k = tileKernels(isa);
    for (const Shape& s : shapes())
      for (int key_limit : keyLimits(s)) {
        const int offset = (s.n * 3 + s.nk + s.hw + key_limit + 64) % 8;
        SCOPED_TRACE(where(isa, s, key_limit, offset));
        const int v_pad = (s.n + key_limit) % 2 == 0 ? 0 : 7;  // V dense or strided
        Operand P(s.n, s.nk, 4, offset), V(s.nk, s.hw, v_pad, (offset + 1) % 8), A(s.n, s.hw, 1, (offset + 6) % 8);
        P.fillRandom(g, 0, 1);
        V.fillRandom(g, -2, 2);
        A.fillRandom(g, -3, 3);
        for (int r = 0; r < s.n; ++r)
          for (int j = keysOf(r, key_limit, s.nk); j < s.nk; ++j)  // as softmaxRows leaves P: NaN past
            P.at(r, j) = j < keysOf(r, key_limit, s.nk) + kSoftmaxZeroKeys ? 0.0f : kNaN;  // its zeros

        const Operand before = A;
        k.accumulate(s.n, s.nk, s.hw, P.data(), P.ld, V.data(), V.ld, A.data(), A.ld, key_limit);
        int bad = 0;
        for (int r = 0; r < s.n; ++r)
          for (int c = 0; c < s.hw; ++c) {
            const int keys = keysOf(r, key_limit, s.nk);
            double want = before.buf[before.offset + static_cast<std::size_t>(r) * before.ld + c];
            double magnitude = std::fabs(want);
            for (int j = 0; j < keys; ++j) {
              want += double(P.at(r, j)) * V.at(j, c);
              magnitude += std::fabs(double(P.at(r, j)) * V.at(j, c));
            }
            const double got = A.at(r, c);
            if (!(std::fabs(got - want) <= 2.0 * (keys + 1) * FLT_EPSILON * magnitude + 1e-30) && bad++ < 3)
              ADD_FAILURE() << "acc(" << r << ", " << c << ") = " << got << ", expected " << want;
            ++checked;
          }
        EXPECT_TRUE(A.guardsIntact()) << "written outside acc";
      }
  }
  std::printf("%d accumulated elements checked\n", checked);
}

// Keep bits from a fixed seed, 64 per word.
std::vector<std::uint64_t> randomKeepBits(std::size_t bits, std::uint32_t seed) {
  std::mt19937_64 g(seed);
  std::vector<std::uint64_t> words((bits + 63) / 64);
  for (std::uint64_t& w : words) w = g();
  return words;
}

// The online softmax step against double, row by row: the raw max exactly, p = 2^t with
// t = float(float(s − m)·log2_scale) within a few ulp (+0 exactly where dropped, and for the
// kSoftmaxZeroKeys masked keys after the row's last), Σ p within float rounding, the finite flag. Rows of one call have
// their own key limits, running maxima and keep bits.
TEST(TileKernels, SoftmaxRowsMatchDoubleLoops) {
  std::mt19937 g(3);
  const std::vector<std::uint64_t> keep = randomKeepBits(1 << 14, 4);
  int checked = 0;
  for (Isa isa : isasToTest()) {
    const TileKernels& k = tileKernels(isa);
    for (int nk : {1, 3, 7, 8, 9, 16, 17, 31, 128, 256})
      for (int key_limit : {nk, 1, 0, -3, 5, 8, 9, nk - 4})
        for (int variant = 0; variant < 8; ++variant) {
          const bool scaled = variant % 2 == 0, dropout = variant % 4 >= 2, wide = variant >= 4;
          const float log2_scale = log2Scale(scaled ? 5.656854f : 1.0f);
          const int n = 6, offset = (nk + key_limit + variant + 16) % 8;
          const std::size_t bit0 = static_cast<std::size_t>(nk * 11 + variant * 5 + 16) % 300;
          const std::size_t row_bits = static_cast<std::size_t>(nk) + 37;  // each row's bits from its own offset
          SCOPED_TRACE(std::string(isaName(isa)) + " nk=" + std::to_string(nk) +
                       " key_limit=" + std::to_string(key_limit) + " variant=" + std::to_string(variant));
          Operand S(n, nk, 3, offset);
          // Scores within ±4, or spread over hundreds so that some exp underflow.
          S.fillRandom(g, wide ? -900.0f : -4.0f, wide ? 40.0f : 4.0f);
          const Operand raw = S;
          std::vector<float> m_old(n);
          for (int r = 0; r < n; ++r) m_old[r] = r % 3 == 0 ? -kInf : r % 3 == 1 ? 3.0f : -1.0f;
          std::vector<SoftmaxRowResult> got(n);
          k.softmaxRows(S.data(), S.ld, n, nk, key_limit, log2_scale, m_old.data(), dropout ? keep.data() : nullptr,
                        bit0, row_bits, got.data());
          for (int r = 0; r < n; ++r) {
            const int valid = keysOf(r, key_limit, nk);
            std::vector<float> scores(valid);
            float want_max = m_old[r];
            for (int j = 0; j < valid; ++j) {
              scores[j] = raw.buf[raw.offset + static_cast<std::size_t>(r) * raw.ld + j];
              want_max = std::max(want_max, scores[j]);
            }
            EXPECT_TRUE(got[r].finite) << "row " << r;
            EXPECT_EQ(bitsOf(got[r].max), bitsOf(want_max)) << "row " << r << ": " << got[r].max << " vs " << want_max;
            double want_sum = 0;
            int bad = 0;
            // The keys past the row's zeros may hold anything: accumulate never reads them.
            for (int j = 0; j < std::min(nk, valid + kSoftmaxZeroKeys); ++j) {
              double want = 0;
              if (j < valid) {
                const float t = (scores[j] - want_max) * log2_scale;  // float operations, as the kernel
                want = std::exp2(static_cast<double>(t));
                want_sum += want;
                const std::size_t bit = bit0 + r * row_bits + j;
                if (dropout && !((keep[bit >> 6] >> (bit & 63)) & 1)) want = 0;
              }
              const double p = S.at(r, j);
              const bool ok = want == 0 ? bitsOf(S.at(r, j)) == 0u
                                        : std::fabs(p - want) <= 4 * FLT_EPSILON * want + FLT_MIN;
              if (!ok && bad++ < 3) ADD_FAILURE() << "p(" << r << ", " << j << ") = " << p << ", expected " << want;
              ++checked;
            }
            EXPECT_LE(std::fabs(got[r].sum - want_sum), (valid + 8) * FLT_EPSILON * want_sum + FLT_MIN)
                << "row " << r << ": " << got[r].sum << " vs " << want_sum;
          }
          EXPECT_TRUE(S.guardsIntact()) << "written outside S";
        }
  }
  std::printf("%d softmax weights checked\n", checked);
}

// The exponent folds the scaling in: for the scores of a head of width w, the weights of a row are
// softmax(s ÷ √w) (computed here in double) within float rounding, for every w of 1 … 80, scores
// within ±60: weights near 1 and far below it. Multiplying the polynomial's 2^f by anything but
// 2^n, or a wrong coefficient, is far outside.
TEST(TileKernels, FoldedScaleGivesTheScaledSoftmax) {
  std::mt19937 g(11);
  constexpr int kRows = 6, kKeys = 37;  // a block of 4 rows and two single ones; ragged vectors
  int checked = 0;
  for (Isa isa : isasToTest()) {
    const TileKernels& k = tileKernels(isa);
    for (int w = 1; w <= 80; ++w) {
      const double divisor = static_cast<float>(std::sqrt(w));
      Operand S(kRows, kKeys, 0, 0);
      S.fillRandom(g, -60.0f, 60.0f);
      const Operand raw = S;
      const std::vector<float> m_old(kRows, -kInf);
      SoftmaxRowResult out[kRows];
      k.softmaxRows(S.data(), S.ld, kRows, kKeys, kKeys, log2Scale(static_cast<float>(divisor)), m_old.data(), nullptr,
                    0, 0, out);
      for (int r = 0; r < kRows; ++r) {
        double m = -kInf;
        for (int j = 0; j < kKeys; ++j) m = std::max(m, double(raw.at(r, j)));
        std::vector<double> e(kKeys);
        double sum = 0;
        for (int j = 0; j < kKeys; ++j) sum += e[j] = std::exp((raw.at(r, j) - m) / divisor);
        for (int j = 0; j < kKeys; ++j) {
          const double want = e[j] / sum, got = S.at(r, j) / out[r].sum;
          // t = (s − m)·log₂e/√w is rounded three times, each relative to |t|, so a weight's error
          // grows with log₂ of how small it is: 2e-6 for the largest, 1e-5 at 1e-6.
          const double t = std::fabs(std::log2(e[j]));
          ASSERT_LE(std::fabs(got - want), (16 + 4 * t) * FLT_EPSILON * want + 1e-30)
              << isaName(isa) << " w=" << w << " row " << r << " key " << j;
          ++checked;
        }
      }
    }
  }
  std::printf("%d weights checked\n", checked);
}

// Anything not finite among a row's scores (±∞, NaN) clears that row's flag, wherever it sits;
// masked keys are not looked at. Finite scores at float's ends are no error: a score of −FLT_MAX
// beside a max of FLT_MAX (their difference overflows to −∞) weighs exactly 0.
TEST(TileKernels, SoftmaxRowsFlagWhatIsNotFinite) {
  for (Isa isa : isasToTest()) {
    const TileKernels& k = tileKernels(isa);
    for (int nk : {5, 8, 21})
      for (int at = 0; at < nk; ++at)
        for (float bad : {kInf, -kInf, kNaN}) {
          SCOPED_TRACE(std::string(isaName(isa)) + " nk=" + std::to_string(nk) + " at " + std::to_string(at) +
                       " value " + std::to_string(bad));
          const float log2_scale = log2Scale(5.656854f);
          // Row 0 sees every key, row 1 the keys before `at`: key_limit = nk, with row 1 shifted.
          std::vector<float> s(2 * nk, 0.5f);
          s[at] = bad;
          s[nk + at] = bad;
          const float m_old[2] = {-kInf, -kInf};
          SoftmaxRowResult out[2];
          k.softmaxRows(s.data(), nk, 2, nk, at - 1, log2_scale, m_old, nullptr, 0, 0, out);
          // key_limit = at − 1: row 0 sees keys < at − 1, row 1 keys < at: neither sees key `at`.
          EXPECT_TRUE(out[0].finite && out[1].finite) << "a masked key was looked at";
          std::fill(s.begin(), s.end(), 0.5f);
          s[at] = bad;
          s[nk + at] = bad;
          k.softmaxRows(s.data(), nk, 2, nk, nk, log2_scale, m_old, nullptr, 0, 0, out);
          EXPECT_FALSE(out[0].finite);
          EXPECT_FALSE(out[1].finite);
        }
    for (int nk : {5, 8, 21})
      for (int at = 0; at < nk; ++at) {
        std::vector<float> s(nk, 0.5f);
        s[at] = -FLT_MAX;
        s[(at + 1) % nk] = FLT_MAX;
        const float m_old = -kInf;
        SoftmaxRowResult out;
        k.softmaxRows(s.data(), nk, 1, nk, nk, log2Scale(1.0f), &m_old, nullptr, 0, 0, &out);
        EXPECT_TRUE(out.finite) << isaName(isa) << " nk=" << nk << " at " << at;
        EXPECT_EQ(out.max, FLT_MAX);
        EXPECT_EQ(out.sum, 1.0f);
        for (int j = 0; j < nk; ++j) EXPECT_EQ(s[j], j == (at + 1) % nk ? 1.0f : 0.0f) << "key " << j;
      }
  }
}

// The bits of a result do not depend on where it falls in a register block, nor on the buffers'
// alignment: the same rows and keys moved by one row, one key, or one float give the same bits.
TEST(TileKernels, ResultsDoNotDependOnPlaceOrAlignment) {
  std::mt19937 g(5);
  for (Isa isa : isasToTest()) {
    const TileKernels& k = tileKernels(isa);
    for (int hw : {3, 32, 64, 65}) {
      SCOPED_TRACE(std::string(isaName(isa)) + " hw=" + std::to_string(hw));
      const int n = 11, nk = 23;
      Operand Q(n, hw, 0, 0), K(nk, hw, 0, 0), V(nk, hw, 0, 0), P(n, nk, 0, 0);
      Q.fillRandom(g, -1, 1);
      K.fillRandom(g, -1, 1);
      V.fillRandom(g, -1, 1);
      P.fillRandom(g, 0, 1);
      Operand S(n, nk, 0, 0), A(n, hw, 0, 0);
      std::fill(A.buf.begin(), A.buf.end(), 0.0f);
      k.scores(n, nk, hw, Q.data(), Q.ld, K.data(), K.ld, S.data(), S.ld, nk);
      k.accumulate(n, nk, hw, P.data(), P.ld, V.data(), V.ld, A.data(), A.ld, nk);
      for (int shift = 1; shift <= 2; ++shift)
        for (int offset = 1; offset < 8; ++offset) {
          // Rows from `shift` on, keys from `shift` on, every buffer `offset` floats further.
          const int m = n - shift, mk = nk - shift;
          Operand Q2(m, hw, 0, offset), K2(mk, hw, 0, offset), S2(m, mk, 0, offset);
          Operand P2(m, nk, 0, offset), A2(m, hw, 0, offset);
          for (int r = 0; r < m; ++r)
            for (int c = 0; c < hw; ++c) Q2.at(r, c) = Q.at(r + shift, c), A2.at(r, c) = 0.0f;
          for (int j = 0; j < mk; ++j)
            for (int c = 0; c < hw; ++c) K2.at(j, c) = K.at(j + shift, c);
          for (int r = 0; r < m; ++r)
            for (int j = 0; j < nk; ++j) P2.at(r, j) = P.at(r + shift, j);
          k.scores(m, mk, hw, Q2.data(), Q2.ld, K2.data(), K2.ld, S2.data(), S2.ld, mk);
          k.accumulate(m, nk, hw, P2.data(), P2.ld, V.data(), V.ld, A2.data(), A2.ld, nk);
          for (int r = 0; r < m; ++r) {
            for (int j = 0; j < mk; ++j)
              ASSERT_EQ(bitsOf(S2.at(r, j)), bitsOf(S.at(r + shift, j + shift)))
                  << "S(" << r << ", " << j << ") shift " << shift << " offset " << offset;
            for (int c = 0; c < hw; ++c)
              ASSERT_EQ(bitsOf(A2.at(r, c)), bitsOf(A.at(r + shift, c)))
                  << "acc(" << r << ", " << c << ") shift " << shift << " offset " << offset;
          }
        }
      // A softmax row at another alignment, and as the second row of a call.
      for (int offset = 1; offset < 8; ++offset) {
        Operand a(1, 45, 0, 0), b(2, 45, 0, offset);
        a.fillRandom(g, -5, 5);
        for (int j = 0; j < 45; ++j) b.at(1, j) = a.at(0, j);
        const float m_old[2] = {-kInf, -kInf};
        SoftmaxRowResult ra, rb[2];
        k.softmaxRows(a.data(), a.ld, 1, 45, 41, log2Scale(5.656854f), m_old, nullptr, 0, 0, &ra);
        k.softmaxRows(b.data(), b.ld, 2, 45, 40, log2Scale(5.656854f), m_old, nullptr, 0, 0, rb);
        ASSERT_EQ(bitsOf(ra.sum), bitsOf(rb[1].sum)) << "offset " << offset;
        for (int j = 0; j < 45; ++j) ASSERT_EQ(bitsOf(a.at(0, j)), bitsOf(b.at(1, j))) << j;
      }
    }
  }
}

// Selects a version for the fused path for the life of a test.
struct ActiveIsa {
  Isa saved = activeTileKernels().isa;
  explicit ActiveIsa(Isa isa) { setIsa(isa); }
  ~ActiveIsa() { setIsa(saved); }
};

double relativeDiff(const Matrix& a, const Matrix& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols()) return INFINITY;
  const double scale = std::max(static_cast<double>(b.cwiseAbs().maxCoeff()), 1e-30);
  return static_cast<double>((a - b).cwiseAbs().maxCoeff()) / scale;
}

// The whole fused path on each version: outputs within 1e-5 of the reference loops for heads of
// width 32 and 64 (and a ragged 20), causal or not, with and without dropout; the thread count
// changes no bit.
TEST(TileKernels, FusedPathOnEachVersionMatchesTheReference) {
  const TraceRequest outputs_only = TraceRequest::only({});
  for (Isa isa : isasToTest()) {
    ActiveIsa active(isa);
    for (int hw : {20, 32, 64})
      for (int variant = 0; variant < 3; ++variant) {
        ModelConfig m = defaultConfig(Variant::MultiHead);
        m.num_heads = 2;
        m.d_out = 2 * hw;
        m.batch_size = 2;
        m.causal = variant != 1;
        m.training = variant == 2;
        m.dropout = variant == 2 ? 0.1 : 0.0;
        const int T = 300;
        SCOPED_TRACE(std::string(isaName(isa)) + " hw=" + std::to_string(hw) + " variant " + std::to_string(variant));
        const Matrix x = test::randomMatrix(T, 24, 11 + hw);
        ExecutionOptions reference;
        reference.fused = false;
        const Trace want = computeTrace(x, m, reference, outputs_only);
        const Trace one = computeTrace(x, m, ExecutionOptions{}, outputs_only);
        ExecutionOptions two;
        two.parallel = true;
        two.threads = 2;
        two.min_parallel_work = 0;
        const Trace got = computeTrace(x, m, two, outputs_only);
        for (std::size_t b = 0; b < got.batches.size(); ++b) {
          EXPECT_LE(relativeDiff(got.batches[b].output, want.batches[b].output), 1e-5) << "batch " << b;
          EXPECT_TRUE(test::bitwiseEqual(got.batches[b].output, one.batches[b].output)) << "batch " << b;
        }
      }
  }
}

}  // namespace
}  // namespace attnscope
