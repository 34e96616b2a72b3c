// Mt19937 and TorchGenerator's block draws against plain std::mt19937: the same stream bit for bit
// for every implementation this CPU can run (scalar always, AVX2 and AVX-512 when present), any
// seed, any mix of next() and fill() sizes; dropout's keep bits and bytes against the two-draw,
// double-compare formula of docs/DESIGN.md §2.2 written out here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/mt19937.h"
#include "engine/torch_generator.h"

namespace attnscope {
namespace {

using Impl = Isa;

std::vector<Impl> implsToTest() {
  std::vector<Impl> impls{Impl::Scalar};
  for (Impl i : {Impl::Avx2, Impl::Avx512})
    if (isaSupported(i)) impls.push_back(i);
  return impls;
}

std::vector<std::uint32_t> seedsToTest() {
  std::vector<std::uint32_t> seeds{0, 1, 123, 5489, 0xFFFFFFFFu};
  std::mt19937 pick(20240607);  // fixed, so a failure reproduces
  for (int i = 0; i < 8; ++i) seeds.push_back(static_cast<std::uint32_t>(pick()));
  return seeds;
}

const std::size_t kSizes[] = {0, 1, 623, 624, 625, 1247, 100003};

std::string where(Impl impl, std::uint32_t seed) {
  return std::string(isaName(impl)) + ", seed " + std::to_string(seed);
}

// Index of the first difference between a and the next a.size() outputs of ref, or -1.
long firstMismatch(const std::vector<std::uint32_t>& a, std::mt19937& ref) {
  long bad = -1;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] != ref() && bad < 0) bad = static_cast<long>(i);
  return bad;
}

TEST(Mt19937, ImplementationsThisCpuRuns) {
  std::string list;
  for (Impl i : implsToTest()) list += std::string(" ") + isaName(i);
  std::cout << "[ info     ] implementations tested:" << list << "; auto = " << isaName(isaBest()) << "\n";
  EXPECT_TRUE(isaSupported(isaBest()));
  EXPECT_EQ(Mt19937(1).impl(), isaBest());
  for (Impl i : {Impl::Avx2, Impl::Avx512}) {
    if (!isaSupported(i)) {
      EXPECT_THROW(Mt19937(1, i), std::invalid_argument);
    }
  }
}

TEST(Mt19937, DefaultSeedGivesTheStandardsTenThousandthValue) {
  // [rand.predef]: the 10000th consecutive output of a default-constructed mt19937 is 4123659995.
  for (Impl impl : implsToTest()) {
    Mt19937 a(5489u, impl), b(5489u, impl);
    std::uint32_t v = 0;
    for (int i = 0; i < 10000; ++i) v = a.next();
    EXPECT_EQ(v, 4123659995u) << isaName(impl);
    std::vector<std::uint32_t> block(10000);
    b.fill(block.data(), block.size());
    EXPECT_EQ(block.back(), 4123659995u) << isaName(impl);
  }
}

TEST(Mt19937, FillEqualsStdMt19937ForSeedsAndSizes) {
  for (Impl impl : implsToTest())
    for (std::uint32_t seed : seedsToTest())
      for (std::size_t n : kSizes) {
        Mt19937 g(seed, impl);
        std::mt19937 ref(seed);
        std::vector<std::uint32_t> out(n + 1, 0xDEADBEEFu);  // one past n: must stay untouched
        g.fill(out.data(), n);
        ASSERT_EQ(out[n], 0xDEADBEEFu) << where(impl, seed) << ", fill(" << n << ") wrote past n";
        out.pop_back();
        ASSERT_EQ(firstMismatch(out, ref), -1) << where(impl, seed) << ", fill(" << n << ")";
        // and the stream goes on: a second fill, then single draws
        g.fill(out.data(), n);
        ASSERT_EQ(firstMismatch(out, ref), -1) << where(impl, seed) << ", second fill(" << n << ")";
        for (int i = 0; i < 700; ++i)
          ASSERT_EQ(g.next(), ref()) << where(impl, seed) << ", next() " << i << " after fills of " << n;
      }
}

TEST(Mt19937, NextEqualsStdMt19937) {
  for (Impl impl : implsToTest())
    for (std::uint32_t seed : seedsToTest()) {
      Mt19937 g(seed, impl);
      std::mt19937 ref(seed);
      for (int i = 0; i < 3000; ++i) ASSERT_EQ(g(), ref()) << where(impl, seed) << ", draw " << i;
    }
}

TEST(Mt19937, FillFromEveryOffsetInTheState) {
  // A fill starting at each of the 625 positions of the state index, across the next refill.
  for (Impl impl : implsToTest()) {
    Mt19937 start(4242u, impl);
    std::mt19937 ref_start(4242u);
    std::vector<std::uint32_t> out(1300);
    for (std::size_t offset = 0; offset <= Mt19937::kStateSize; ++offset) {
      Mt19937 g = start;
      std::mt19937 ref = ref_start;
      for (std::size_t i = 0; i < offset; ++i) ASSERT_EQ(g.next(), ref());
      g.fill(out.data(), out.size());
      ASSERT_EQ(firstMismatch(out, ref), -1) << isaName(impl) << ", offset " << offset;
    }
  }
}

TEST(Mt19937, RandomInterleavingsOfNextAndFill) {
  const std::size_t sizes[] = {0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 227, 396, 397, 623, 624, 625, 1000, 1249};
  for (Impl impl : implsToTest())
    for (std::uint32_t seed : seedsToTest()) {
      Mt19937 g(seed, impl);
      std::mt19937 ref(seed), choose(seed ^ 0x5bd1e995u);
      std::vector<std::uint32_t> out;
      for (int step = 0; step < 200; ++step) {
        if (choose() % 3 == 0) {
          const std::uint32_t k = choose() % 5;
          for (std::uint32_t i = 0; i < k; ++i) ASSERT_EQ(g.next(), ref()) << where(impl, seed);
        } else {
          out.resize(sizes[choose() % (sizeof sizes / sizeof sizes[0])]);
          g.fill(out.data(), out.size());
          ASSERT_EQ(firstMismatch(out, ref), -1)
              << where(impl, seed) << ", step " << step << ", fill(" << out.size() << ")";
        }
      }
    }
}

TEST(Mt19937, CopyContinuesTheSameStream) {
  for (Impl impl : implsToTest()) {
    Mt19937 a(77u, impl);
    std::vector<std::uint32_t> skip(1001), x(2000), y(2000);
    a.fill(skip.data(), skip.size());
    Mt19937 b = a;
    a.fill(x.data(), x.size());
    b.fill(y.data(), y.size());
    EXPECT_EQ(x, y) << isaName(impl);
    EXPECT_EQ(a.next(), b.next());
  }
}

TEST(Mt19937, ReseedRestartsTheStream) {
  for (Impl impl : implsToTest()) {
    Mt19937 g(1u, impl);
    std::vector<std::uint32_t> out(777);
    g.fill(out.data(), out.size());
    g.seed(99u);
    std::mt19937 ref(99u);
    g.fill(out.data(), out.size());
    EXPECT_EQ(firstMismatch(out, ref), -1) << isaName(impl);
  }
}

// ---- TorchGenerator ----

// docs/DESIGN.md §2.2 on plain std::mt19937: random64 = two draws, high first; u = 53 bits · 2⁻⁵³;
// kept iff u < 1 − p; p == 0 draws nothing.
std::vector<std::uint8_t> referenceKeep(std::mt19937& mt, std::size_t n, double p) {
  std::vector<std::uint8_t> keep(n, 1);
  if (p == 0) return keep;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t hi = mt(), lo = mt();
    const std::uint64_t r = (hi << 32) | lo;
    const double u = static_cast<double>(r & ((std::uint64_t{1} << 53) - 1)) * std::ldexp(1.0, -53);
    keep[i] = u < 1 - p;
  }
  return keep;
}

TEST(TorchGeneratorDropout, BitsAndBytesEqualTheTwoDrawReference) {
  const double ps[] = {0.1, 0.5, 0.9, 1e-9, 0.999999, 0.0};
  const std::size_t ns[] = {1, 63, 64, 65, 1023, 1024, 1025, 2049, 4097, 100003};
  const std::size_t skips[] = {0, 1, 311, 623};  // draws before: odd ones split random64 pairs
  const std::uint64_t kGarbage = 0xA5A5A5A5A5A5A5A5ull;
  for (Impl impl : implsToTest())
    for (double p : ps)
      for (std::size_t n : ns)
        for (std::size_t skip : skips) {
          const std::uint32_t seed = static_cast<std::uint32_t>(n * 31 + skip);
          const std::string at = std::string(isaName(impl)) + ", p " + std::to_string(p) + ", n " + std::to_string(n) +
                                 ", skip " + std::to_string(skip);
          std::mt19937 ref(seed);
          TorchGenerator bits_gen(seed, impl), bytes_gen(seed, impl);
          for (std::size_t i = 0; i < skip; ++i) {
            const std::uint32_t r = ref();
            ASSERT_EQ(bits_gen.random(), r);
            ASSERT_EQ(bytes_gen.random(), r);
          }
          const std::vector<std::uint8_t> expected = referenceKeep(ref, n, p);

          const std::size_t word_count = (n + 63) / 64;
          std::vector<std::uint64_t> words(word_count + 1, kGarbage);
          bits_gen.fillDropoutKeepBits(words.data(), n, p);
          std::vector<std::uint8_t> bytes(n + 1, 7);
          bytes_gen.fillDropoutKeep(bytes.data(), n, p);

          std::size_t bad_bits = 0, bad_bytes = 0;
          for (std::size_t i = 0; i < n; ++i) {
            bad_bits += ((words[i / 64] >> (i % 64)) & 1) != expected[i];
            bad_bytes += bytes[i] != expected[i];
          }
          EXPECT_EQ(bad_bits, 0u) << at;
          EXPECT_EQ(bad_bytes, 0u) << at;
          if (n % 64 != 0) {
            EXPECT_EQ(words[word_count - 1] >> (n % 64), 0u) << at << ": bits past n";
          }
          EXPECT_EQ(words[word_count], kGarbage) << at << ": wrote past the last word";
          EXPECT_EQ(bytes[n], 7) << at << ": wrote past n";
          // Both consumed exactly the reference's draws.
          const std::uint32_t next = ref();
          EXPECT_EQ(bits_gen.random(), next) << at;
          EXPECT_EQ(bytes_gen.random(), next) << at;
        }
}

// torch with MKL (pip's, the notebook's): torch.manual_seed(123); Dropout(0.5)(torch.ones(6, 6))
// printed this mask in the notebook's cell [31] — and the generator moved by one 32-bit draw (the
// second mt19937 output after manual_seed(123) is 3062119789, as numpy's MT19937 gives it too).
TEST(TorchGeneratorDropout, MklStreamGivesTheNotebooksMask) {
  const int printed[6][6] = {{1, 1, 1, 1, 1, 1}, {0, 1, 0, 0, 0, 0}, {0, 0, 1, 0, 1, 0},
                             {1, 1, 0, 0, 0, 1}, {1, 0, 0, 0, 0, 1}, {0, 1, 0, 0, 0, 0}};
  TorchGenerator g(123);
  std::uint64_t words[1] = {0};
  g.fillDropoutKeepBitsMkl(words, 0, 36, 0.5);
  for (int i = 0; i < 36; ++i)
    EXPECT_EQ((words[0] >> i) & 1u, static_cast<std::uint64_t>(printed[i / 6][i % 6])) << "element " << i;
  EXPECT_EQ(words[0] >> 36, 0u);
  EXPECT_EQ(g.random(), 3062119789u);  // one draw, whatever n
  TorchGenerator none(123);
  none.fillDropoutKeepBitsMkl(words, 0, 36, 0.0);
  EXPECT_EQ(words[0], (std::uint64_t{1} << 36) - 1);
  none.fillDropoutKeepBitsMkl(words, 0, 36, 1.0);
  EXPECT_EQ(words[0], 0u);
  EXPECT_EQ(none.random(), 2991312382u);  // p = 0 and p = 1 draw nothing
}

// MKL's stream written out serially from Intel's documentation (MCG31m1: x₀ = seed mod m, or 1;
// xᵢ₊₁ = a·xᵢ mod m; the real output uᵢ = xᵢ/m; Bernoulli ICDF: 1 iff u < p) with the single
// precision of MKL's Bernoulli, in double-free integer form nowhere: u and p as floats.
std::vector<int> mklKeepReference(std::uint32_t seed, std::size_t n, double p) {
  const std::uint64_t m = 2147483647u, a = 1132489760u;
  std::uint64_t x = seed % m;
  if (x == 0) x = 1;
  std::vector<int> keep(n);
  for (std::size_t i = 0; i < n; ++i) {
    keep[i] = static_cast<float>(static_cast<double>(x) / static_cast<double>(m)) < static_cast<float>(1.0 - p);
    x = x * a % m;
  }
  return keep;
}

TEST(TorchGeneratorDropout, MklFastPathIsTheSerialStream) {
  for (Impl impl : implsToTest())
    for (std::size_t n : {1u, 63u, 64u, 65u, 1000u, 1024u, 1025u, 5000u})
      for (std::size_t first : {0u, 5u, 64u, 70u})
        for (double p : {0.5, 0.1, 0.9, 1.0 / 3, 0.123456789}) {
          TorchGenerator g(2024u + static_cast<std::uint32_t>(n), impl), seeds(2024u + static_cast<std::uint32_t>(n));
          std::vector<std::uint64_t> words((first + n + 63) / 64 + 1, 0xA5A5A5A5A5A5A5A5u);
          g.fillDropoutKeepBitsMkl(words.data(), first, n, p);
          const std::vector<int> ref = mklKeepReference(seeds.random(), n, p);
          for (std::size_t i = 0; i < words.size() * 64; ++i) {
            const int bit = static_cast<int>((words[i / 64] >> (i % 64)) & 1);
            const int want = i >= first && i < first + n ? ref[i - first]
                                                         : static_cast<int>((0xA5A5A5A5A5A5A5A5u >> (i % 64)) & 1);
            ASSERT_EQ(bit, want) << isaName(impl) << " n " << n << " first " << first << " p " << p << " bit " << i;
          }
          EXPECT_EQ(g.random(), seeds.random());  // one draw per call
        }
}

// Measured with Debian's MKL 2020.4 (libmkl-rt, viRngBernoulli(VSL_RNG_METHOD_BERNOULLI_ICDF) on a
// VSL_BRNG_MCG31 stream seeded 1234567890, so x₀ = 1234567890): the success probability at which the
// first value turns from 0 to 1 lies between 0.574890524148941 and 0.5748905241489412, the midpoint
// of float(x₀/m) and the next float — not at x₀/m = 0.5748904731939036. MKL compares in single
// precision; a double compare keeps at 0.5748905, where MKL drops.
TEST(TorchGeneratorDropout, MklComparesInSinglePrecision) {
  const std::uint32_t x0 = 1234567890u;
  EXPECT_LT(static_cast<double>(x0) / 2147483647.0, 0.5748905);  // a double compare would keep
  EXPECT_GE(x0, TorchGenerator::mklKeepBelow(1 - 0.5748905));    // MKL dropped it
  EXPECT_GE(x0, TorchGenerator::mklKeepBelow(1 - 0.574890524148941));
  EXPECT_LT(x0, TorchGenerator::mklKeepBelow(1 - 0.57489054));  // above the flip: MKL kept it
  // p = 0.5: float(x/m) rounds to 0.5 from x = 2³⁰ − 32 on (0.5 − 2⁻²⁶ is the midpoint below).
  EXPECT_EQ(TorchGenerator::mklKeepBelow(0.5), 1073741792u);
}

TEST(TorchGeneratorDropout, KeepsSomeAndDropsSome) {
  // Guards the test above against a reference that trivially agrees (all kept or all dropped).
  TorchGenerator g(123);
  std::vector<std::uint64_t> words(100003 / 64 + 1);
  g.fillDropoutKeepBits(words.data(), 100003, 0.1);
  std::size_t kept = 0;
  for (std::uint64_t w : words) kept += static_cast<std::size_t>(__builtin_popcountll(w));
  EXPECT_NEAR(static_cast<double>(kept) / 100003, 0.9, 0.01);
}

TEST(TorchGeneratorDropout, ZeroElementsAndZeroPDrawNothing) {
  for (Impl impl : implsToTest()) {
    TorchGenerator g(5u, impl);
    std::mt19937 ref(5u);
    std::uint64_t word = 0x1234;
    g.fillDropoutKeepBits(&word, 0, 0.5);
    EXPECT_EQ(word, 0x1234u);
    std::vector<std::uint64_t> words(3);
    g.fillDropoutKeepBits(words.data(), 130, 0.0);
    EXPECT_EQ(words[0], ~std::uint64_t{0});
    EXPECT_EQ(words[1], ~std::uint64_t{0});
    EXPECT_EQ(words[2], 3u);
    EXPECT_EQ(g.random(), ref());
  }
}

TEST(TorchGeneratorDropout, IntegerThresholdIsTheDoubleCompare) {
  // b < dropoutKeepThreshold(p) ⇔ b·2⁻⁵³ < 1 − p, checked at the threshold itself, where an
  // off-by-one would show, and over random b.
  constexpr std::uint64_t kTop = std::uint64_t{1} << 53;
  std::vector<double> ps{0.1, 0.5,    0.9,         1e-9, 0.999999, 0.25, 1.0 / 3,
                         0.7, 1e-300, 1 - 0x1p-53, 1.0,  1.5,      -0.5, std::numeric_limits<double>::quiet_NaN()};
  std::mt19937_64 pick(99);
  for (int i = 0; i < 200; ++i) ps.push_back(std::ldexp(static_cast<double>(pick() >> 11), -53));
  for (double p : ps) {
    const std::uint64_t t = TorchGenerator::dropoutKeepThreshold(p);
    ASSERT_LE(t, kTop) << p;
    std::vector<std::uint64_t> bs{0, 1, kTop - 1, t, t - 1, t + 1, t - 2, t + 2};
    for (int i = 0; i < 1000; ++i) bs.push_back(pick() & (kTop - 1));
    for (std::uint64_t b : bs) {
      if (b >= kTop) continue;
      const bool by_double = static_cast<double>(b) * std::ldexp(1.0, -53) < 1 - p;
      ASSERT_EQ(b < t, by_double) << "p " << p << ", b " << b << ", threshold " << t;
    }
  }
}

TEST(TorchGeneratorDropout, DecisionAtTheExactBoundary) {
  // Random draws almost never land on the threshold, so put it there: with 1 − p = b·2⁻⁵³ for an
  // element's own b, u < 1 − p is false (dropped); one step higher it is true (kept). Elements in
  // different SIMD lanes and words, compared whole against the reference as well.
  constexpr std::size_t n = 1000;
  std::vector<std::uint64_t> b(n);
  std::mt19937 draws(2024u);
  for (std::uint64_t& v : b) {
    const std::uint64_t hi = draws(), lo = draws();
    v = ((hi << 32) | lo) & ((std::uint64_t{1} << 53) - 1);
  }
  for (Impl impl : implsToTest())
    for (std::size_t i : {0, 1, 3, 4, 7, 8, 15, 63, 64, 500, 999})
      for (std::uint64_t step : {0, 1}) {
        const double p = 1 - static_cast<double>(b[i] + step) * std::ldexp(1.0, -53);  // exact
        std::mt19937 ref(2024u);
        const std::vector<std::uint8_t> expected = referenceKeep(ref, n, p);
        ASSERT_EQ(expected[i], step) << "the reference at the boundary, element " << i;
        TorchGenerator g(2024u, impl), h(2024u, impl);
        std::vector<std::uint64_t> words(n / 64 + 1);
        g.fillDropoutKeepBits(words.data(), n, p);
        std::vector<std::uint8_t> bytes(n);
        h.fillDropoutKeep(bytes.data(), n, p);
        for (std::size_t j = 0; j < n; ++j) {
          ASSERT_EQ((words[j / 64] >> (j % 64)) & 1, expected[j])
              << isaName(impl) << ", boundary at element " << i << " + " << step << ", element " << j;
          ASSERT_EQ(bytes[j], expected[j]) << isaName(impl) << ", element " << j;
        }
      }
}

TEST(TorchGenerator, FillUniformEqualsOneDrawAtATime) {
  const std::size_t ns[] = {0, 1, 5, 623, 1023, 1024, 1025, 5000};
  for (Impl impl : implsToTest())
    for (std::size_t n : ns)
      for (std::size_t skip : {0, 1, 400}) {
        TorchGenerator a(789u, impl), b(789u, impl);
        std::mt19937 ref(789u);
        for (std::size_t i = 0; i < skip; ++i) {
          a.random();
          b.random();
          ref();
        }
        const double from = -0.4082482904638631, to = 0.4082482904638631;  // nn.Linear(6, ·)
        std::vector<float> block(n), one(n);
        a.fillUniform(block.data(), n, from, to);
        const float f = static_cast<float>(from), t = static_cast<float>(to);
        for (std::size_t i = 0; i < n; ++i) one[i] = b.uniformFloat(f, t);
        for (std::size_t i = 0; i < n; ++i)
          ASSERT_EQ(std::memcmp(&block[i], &one[i], sizeof(float)), 0)
              << isaName(impl) << ", n " << n << ", skip " << skip << ", element " << i;
        for (std::size_t i = 0; i < n; ++i) {  // the §2.2 formula on std::mt19937
          const double x = static_cast<double>(ref() & 0xFFFFFF) * std::ldexp(1.0, -24);
          const float expected = static_cast<float>(x * (t - f) + f);
          ASSERT_EQ(std::memcmp(&block[i], &expected, sizeof(float)), 0) << "element " << i;
        }
        EXPECT_EQ(a.random(), ref());
      }
}

TEST(TorchGenerator, CopyContinuesTheSameStream) {
  // What a cache of a generator's state after the parameters relies on.
  for (Impl impl : implsToTest()) {
    TorchGenerator g(123u, impl);
    std::vector<float> w(6 * 4);
    g.fillLinearWeight(w.data(), 4, 6);
    TorchGenerator copy = g;
    std::vector<std::uint64_t> a(40), b(40);
    g.fillDropoutKeepBits(a.data(), 2500, 0.1);
    copy.fillDropoutKeepBits(b.data(), 2500, 0.1);
    EXPECT_EQ(a, b) << isaName(impl);
    EXPECT_EQ(g.random(), copy.random());
  }
}

}  // namespace
}  // namespace attnscope
