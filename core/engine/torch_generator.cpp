#include "engine/torch_generator.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define ATTNSCOPE_TG_X86 1
#include <immintrin.h>
#else
#define ATTNSCOPE_TG_X86 0
#endif

namespace attnscope {
namespace {

// uniform_real_distribution<float> on one draw r (see uniformFloat).
inline float uniformFloatFrom(std::uint32_t r, float from, float range) {
  const double x = static_cast<double>(r & ((1u << 24) - 1)) * std::ldexp(1.0, -24);
  return static_cast<float>(x * range + from);
}

// Dropout's keep bits from the 2·n draws in r (element i's random64 is r[2i] << 32 | r[2i+1]):
// element i is kept iff (random64 & (2⁵³ − 1)) < threshold. Writes ⌈n / 64⌉ words, bits past n zero.
void keepBitsScalar(const std::uint32_t* r, std::size_t n, std::uint64_t threshold, std::uint64_t* words) {
  constexpr std::uint64_t kMask53 = (std::uint64_t{1} << 53) - 1;
  for (std::size_t w = 0; w * 64 < n; ++w) {
    const std::size_t count = std::min<std::size_t>(64, n - w * 64);
    std::uint64_t bits = 0;
    for (std::size_t j = 0; j < count; ++j) {
      const std::size_t i = w * 64 + j;
      const std::uint64_t b = ((std::uint64_t{r[2 * i]} << 32) | r[2 * i + 1]) & kMask53;
      bits |= std::uint64_t{b < threshold} << j;
    }
    words[w] = bits;
  }
}

#if ATTNSCOPE_TG_X86
// A little-endian 64-bit load of the pair (r[2i], r[2i+1]) holds r[2i] in its low half: swapping
// the halves gives random64. Both sides of the compare are below 2⁶³, so AVX2's signed compare is
// the unsigned one.
__attribute__((target("avx2"))) void keepBitsAvx2(const std::uint32_t* r, std::size_t n, std::uint64_t threshold,
                                                  std::uint64_t* words) {
  const __m256i mask53 = _mm256_set1_epi64x((std::int64_t{1} << 53) - 1);
  const __m256i t = _mm256_set1_epi64x(static_cast<std::int64_t>(threshold));
  const std::size_t full = n / 64;
  for (std::size_t w = 0; w < full; ++w) {
    std::uint64_t bits = 0;
    for (int j = 0; j < 16; ++j) {  // 4 elements per vector
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r + w * 128 + j * 8));
      const __m256i b = _mm256_and_si256(_mm256_shuffle_epi32(v, 0xB1), mask53);
      const int keep = _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpgt_epi64(t, b)));
      bits |= static_cast<std::uint64_t>(keep) << (4 * j);
    }
    words[w] = bits;
  }
  if (full * 64 < n) keepBitsScalar(r + full * 128, n - full * 64, threshold, words + full);
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push  // GCC bug 105593, as in mt19937.cpp
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
__attribute__((target("avx512f"))) void keepBitsAvx512(const std::uint32_t* r, std::size_t n, std::uint64_t threshold,
                                                       std::uint64_t* words) {
  const __m512i mask53 = _mm512_set1_epi64((std::int64_t{1} << 53) - 1);
  const __m512i t = _mm512_set1_epi64(static_cast<std::int64_t>(threshold));
  const std::size_t full = n / 64;
  for (std::size_t w = 0; w < full; ++w) {
    std::uint64_t bits = 0;
    for (int j = 0; j < 8; ++j) {  // 8 elements per vector
      const __m512i v = _mm512_loadu_si512(r + w * 128 + j * 16);
      const __m512i b = _mm512_and_si512(_mm512_shuffle_epi32(v, _MM_PERM_CDAB), mask53);
      bits |= static_cast<std::uint64_t>(_mm512_cmplt_epu64_mask(b, t)) << (8 * j);
    }
    words[w] = bits;
  }
  if (full * 64 < n) keepBitsScalar(r + full * 128, n - full * 64, threshold, words + full);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

void keepBits(Isa impl, const std::uint32_t* r, std::size_t n, std::uint64_t threshold, std::uint64_t* words) {
  switch (impl) {
#if ATTNSCOPE_TG_X86
    case Isa::Avx512: keepBitsAvx512(r, n, threshold, words); return;
    case Isa::Avx2: keepBitsAvx2(r, n, threshold, words); return;
#endif
    default: keepBitsScalar(r, n, threshold, words); return;
  }
}

// [SECTION] MKL's MCG31 stream for dropout (torch with MKL on an Intel CPU)
// x_{i+1} = a·x_i mod m, m = 2³¹ − 1. Element i is kept iff x_i < K (TorchGenerator::mklKeepBelow).
// 64 lanes step together, lane j holding element 64·w + j of word w, each advanced by a⁶⁴ per word,
// so a word's 64 compares are independent (8 AVX-512 or 16 AVX2 vectors). Products stay below 2⁶²;
// mod m is two folds (t & m) + (t >> 31) and one conditional subtraction.
constexpr std::uint64_t kMklModulus = TorchGenerator::kMklModulus;
constexpr std::uint64_t kMcgMultiplier = 1132489760u;

constexpr std::uint64_t mcgMulMod(std::uint64_t x, std::uint64_t c) {
  std::uint64_t t = x * c;
  t = (t & kMklModulus) + (t >> 31);
  t = (t & kMklModulus) + (t >> 31);
  return t >= kMklModulus ? t - kMklModulus : t;
}

constexpr std::uint64_t mcgPower(std::uint64_t e) {  // a^e mod m
  std::uint64_t r = 1, b = kMcgMultiplier;
  for (; e > 0; e >>= 1, b = mcgMulMod(b, b))
    if (e & 1) r = mcgMulMod(r, b);
  return r;
}
constexpr std::uint64_t kMcgStride = mcgPower(64);

struct McgLanes {
  alignas(64) std::uint64_t x[64];
  explicit McgLanes(std::uint64_t x0) {
    x[0] = x0;
    for (int j = 1; j < 64; ++j) x[j] = mcgMulMod(x[j - 1], kMcgMultiplier);
  }
};

void mcgKeepBitsScalar(McgLanes& l, std::size_t n_words, std::uint32_t keep_below, std::uint64_t* words) {
  for (std::size_t w = 0; w < n_words; ++w) {
    std::uint64_t bits = 0;
    for (int j = 0; j < 64; ++j) {
      bits |= std::uint64_t{l.x[j] < keep_below} << j;
      l.x[j] = mcgMulMod(l.x[j], kMcgStride);
    }
    words[w] = bits;
  }
}

#if ATTNSCOPE_TG_X86
__attribute__((target("avx2"))) void mcgKeepBitsAvx2(McgLanes& l, std::size_t n_words, std::uint32_t keep_below,
                                                     std::uint64_t* words) {
  const __m256i m = _mm256_set1_epi64x(static_cast<std::int64_t>(kMklModulus));
  const __m256i m_minus_1 = _mm256_set1_epi64x(static_cast<std::int64_t>(kMklModulus - 1));
  const __m256i c = _mm256_set1_epi64x(static_cast<std::int64_t>(kMcgStride));
  const __m256i k = _mm256_set1_epi64x(keep_below);
  __m256i v[16];
  for (int j = 0; j < 16; ++j) v[j] = _mm256_load_si256(reinterpret_cast<const __m256i*>(l.x + 4 * j));
  for (std::size_t w = 0; w < n_words; ++w) {
    std::uint64_t bits = 0;
    for (int j = 0; j < 16; ++j) {  // values below 2³², so the signed compares are the unsigned ones
      const int keep = _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpgt_epi64(k, v[j])));
      bits |= static_cast<std::uint64_t>(keep) << (4 * j);
      __m256i t = _mm256_mul_epu32(v[j], c);
      t = _mm256_add_epi64(_mm256_and_si256(t, m), _mm256_srli_epi64(t, 31));
      t = _mm256_add_epi64(_mm256_and_si256(t, m), _mm256_srli_epi64(t, 31));
      v[j] = _mm256_sub_epi64(t, _mm256_and_si256(_mm256_cmpgt_epi64(t, m_minus_1), m));
    }
    words[w] = bits;
  }
  for (int j = 0; j < 16; ++j) _mm256_store_si256(reinterpret_cast<__m256i*>(l.x + 4 * j), v[j]);
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push  // GCC bug 105593 (the intrinsics' own locals, at -O1), as above
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
__attribute__((target("avx512f"))) void mcgKeepBitsAvx512(McgLanes& l, std::size_t n_words, std::uint32_t keep_below,
                                                          std::uint64_t* words) {
  const __m512i m = _mm512_set1_epi64(static_cast<std::int64_t>(kMklModulus));
  const __m512i c = _mm512_set1_epi64(static_cast<std::int64_t>(kMcgStride));
  const __m512i k = _mm512_set1_epi64(keep_below);
  __m512i v[8];
  for (int j = 0; j < 8; ++j) v[j] = _mm512_load_si512(l.x + 8 * j);
  for (std::size_t w = 0; w < n_words; ++w) {
    std::uint64_t bits = 0;
    for (int j = 0; j < 8; ++j) {
      bits |= static_cast<std::uint64_t>(_mm512_cmplt_epu64_mask(v[j], k)) << (8 * j);
      __m512i t = _mm512_mul_epu32(v[j], c);
      t = _mm512_add_epi64(_mm512_and_si512(t, m), _mm512_srli_epi64(t, 31));
      t = _mm512_add_epi64(_mm512_and_si512(t, m), _mm512_srli_epi64(t, 31));
      v[j] = _mm512_min_epu64(t, _mm512_sub_epi64(t, m));  // t − m wraps above t when t < m
    }
    words[w] = bits;
  }
  for (int j = 0; j < 8; ++j) _mm512_store_si512(l.x + 8 * j, v[j]);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

void mcgKeepBits(Isa impl, McgLanes& l, std::size_t n_words, std::uint32_t keep_below, std::uint64_t* words) {
  switch (impl) {
#if ATTNSCOPE_TG_X86
    case Isa::Avx512: mcgKeepBitsAvx512(l, n_words, keep_below, words); return;
    case Isa::Avx2: mcgKeepBitsAvx2(l, n_words, keep_below, words); return;
#endif
    default: mcgKeepBitsScalar(l, n_words, keep_below, words); return;
  }
}

// The keep bytes of 8 elements from their 8 keep bits: bytes[b][k] = bit k of b.
struct KeepBytes {
  std::uint8_t bytes[256][8];
};
constexpr KeepBytes makeKeepBytes() {
  KeepBytes t{};
  for (int b = 0; b < 256; ++b)
    for (int k = 0; k < 8; ++k) t.bytes[b][k] = static_cast<std::uint8_t>((b >> k) & 1);
  return t;
}
constexpr KeepBytes kKeepBytes = makeKeepBytes();

// Elements per block of the dropout draws: whole 64-bit words, the draws (8 KiB) stay in L1.
constexpr std::size_t kDropoutBlock = 64 * 16;

}  // namespace

void TorchGenerator::discard(std::uint64_t n) {
  alignas(64) std::uint32_t r[1024];
  while (n > 0) {
    const std::size_t m = static_cast<std::size_t>(std::min<std::uint64_t>(n, 1024));
    engine_.fill(r, m);
    n -= m;
  }
}

std::uint64_t TorchGenerator::random64() {
  const std::uint64_t hi = random();
  const std::uint64_t lo = random();
  return (hi << 32) | lo;
}

float TorchGenerator::uniformFloat(float from, float to) {
  // torch computes x in double (dist_acctype<float> on CPU), to − from in float.
  return uniformFloatFrom(random(), from, to - from);
}

double TorchGenerator::uniformDouble(double from, double to) {
  const double x = static_cast<double>(random64() & ((std::uint64_t{1} << 53) - 1)) * std::ldexp(1.0, -53);
  return x * (to - from) + from;
}

void TorchGenerator::fillUniform(float* data, std::size_t n, double from, double to) {
  const float f = static_cast<float>(from), range = static_cast<float>(to) - f;
  alignas(64) std::uint32_t r[1024];
  for (std::size_t done = 0; done < n;) {
    const std::size_t m = std::min(n - done, sizeof r / sizeof r[0]);
    engine_.fill(r, m);
    for (std::size_t i = 0; i < m; ++i) data[done + i] = uniformFloatFrom(r[i], f, range);
    done += m;
  }
}

double TorchGenerator::normalDouble(double mean, double std) {
  if (next_double_normal_) {
    const double cached = *next_double_normal_;
    next_double_normal_.reset();
    return cached * std + mean;
  }
  const double u1 = uniformDouble(0.0, 1.0);
  const double u2 = uniformDouble(0.0, 1.0);
  const double r = std::sqrt(-2.0 * std::log1p(-u2));
  const double theta = 2.0 * M_PI * u1;
  next_double_normal_ = r * std::sin(theta);
  return r * std::cos(theta) * std + mean;
}

// normal_fill_16: Box–Muller on 16 uniforms in place; the first 8 give the radii, the last 8 the
// angles (torch's layout, so value k of a block depends on uniforms k and k+8).
static void normalFill16(float* data, float mean, float std) {
  for (int j = 0; j < 8; ++j) {
    const float u1 = 1 - data[j];  // in (0, 1] so the log is finite
    const float u2 = data[j + 8];
    const float radius = std::sqrt(-2 * std::log(u1));
    const float theta = 2.0f * static_cast<float>(M_PI) * u2;
    data[j] = radius * std::cos(theta) * std + mean;
    data[j + 8] = radius * std::sin(theta) * std + mean;
  }
}

void TorchGenerator::fillNormal(float* data, std::size_t n, double mean, double std) {
  if (n < 16) {
    for (std::size_t i = 0; i < n; ++i) data[i] = static_cast<float>(normalDouble(mean, std));
    return;
  }
  const float m = static_cast<float>(mean), s = static_cast<float>(std);
  fillUniform(data, n, 0.0, 1.0);
  for (std::size_t i = 0; i + 16 <= n; i += 16) normalFill16(data + i, m, s);
  if (n % 16 != 0) {  // torch redraws the last 16 values and transforms them again
    float* tail = data + n - 16;
    fillUniform(tail, 16, 0.0, 1.0);
    normalFill16(tail, m, s);
  }
}

void TorchGenerator::fillLinearWeight(float* data, std::size_t fan_out, std::size_t fan_in) {
  // torch.nn.init.kaiming_uniform_(w, a=math.sqrt(5)), all in double as Python computes it.
  const double a = std::sqrt(5.0);
  const double gain = std::sqrt(2.0 / (1 + std::pow(a, 2)));
  const double std_ = gain / std::sqrt(static_cast<double>(fan_in));
  const double bound = std::sqrt(3.0) * std_;
  fillUniform(data, fan_out * fan_in, -bound, bound);
}

void TorchGenerator::fillLinearBias(float* data, std::size_t fan_out, std::size_t fan_in) {
  const double bound = fan_in > 0 ? 1 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
  fillUniform(data, fan_out, -bound, bound);
}

// torch keeps an element iff u < q, q = 1 − p, where u = b·2⁻⁵³ with b = random64 & (2⁵³ − 1)
// (uniform_real_distribution<double>(0, 1): the ·(to − from) + from is ·1 + 0, exact). b is below
// 2⁵³, so converting it to double and scaling by 2⁻⁵³ are exact: u is b·2⁻⁵³ exactly. For q > 0,
// s = q·2⁵³ (ldexp) is exact too, so u < q ⇔ b < s as real numbers, and for an integer b,
// b < s ⇔ b < ⌈s⌉. s ≥ 2⁵³ keeps every b; q ≤ 0 or NaN (u < q false) keeps none. (For p in
// [0, 1], 1 − p is a multiple of 2⁻⁵³, so s is already an integer and the ceil changes nothing.)
std::uint64_t TorchGenerator::dropoutKeepThreshold(double p) {
  constexpr double kAll = 9007199254740992.0;  // 2⁵³
  const double s = std::ldexp(1 - p, 53);
  if (!(s > 0)) return 0;
  if (s >= kAll) return std::uint64_t{1} << 53;
  return static_cast<std::uint64_t>(std::ceil(s));
}

void TorchGenerator::fillDropoutKeepBits(std::uint64_t* words, std::size_t n, double p) {
  const std::size_t word_count = (n + 63) / 64;
  if (p == 0) {  // torch skips the draws (dropout with p = 0 is the identity)
    std::fill(words, words + word_count, ~std::uint64_t{0});
    if (n % 64 != 0) words[word_count - 1] = (std::uint64_t{1} << (n % 64)) - 1;
    return;
  }
  if (p >= 1) {  // and with p = 1 (zeros_like: nothing drawn, nothing kept)
    std::fill(words, words + word_count, std::uint64_t{0});
    return;
  }
  const std::uint64_t threshold = dropoutKeepThreshold(p);  // bernoulli_(1 − p)
  alignas(64) std::uint32_t r[2 * kDropoutBlock];
  for (std::size_t done = 0; done < n;) {
    const std::size_t m = std::min(n - done, kDropoutBlock);
    engine_.fill(r, 2 * m);
    keepBits(engine_.impl(), r, m, threshold, words + done / 64);
    done += m;
  }
}

std::uint32_t TorchGenerator::mklKeepBelow(double p) {
  const float t = static_cast<float>(1.0 - p);  // MKL takes bernoulli_'s 1 − p as a float
  std::uint64_t lo = 0, hi = kMklModulus;       // u(m) = 1 ≥ t
  while (lo < hi) {
    const std::uint64_t mid = (lo + hi) / 2;
    if (static_cast<float>(static_cast<double>(mid) / kMklModulus) >= t)
      hi = mid;
    else
      lo = mid + 1;
  }
  return static_cast<std::uint32_t>(lo);
}

void TorchGenerator::fillDropoutKeepBitsMkl(std::uint64_t* words, std::size_t first, std::size_t n, double p) {
  if (n == 0) return;
  // The bits of elements first … first + n − 1, whatever their neighbours hold.
  auto put = [&](std::size_t i, std::uint64_t bits, std::size_t count) {  // count bits at element i
    const std::uint64_t mask = count == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << count) - 1;
    const std::size_t w = (first + i) / 64, shift = (first + i) % 64;
    words[w] = (words[w] & ~(mask << shift)) | ((bits & mask) << shift);
    if (shift != 0 && shift + count > 64) {
      const std::size_t spill = shift + count - 64;
      const std::uint64_t high = (std::uint64_t{1} << spill) - 1;
      words[w + 1] = (words[w + 1] & ~high) | ((bits & mask) >> (64 - shift));
    }
  };
  if (p == 0 || p >= 1) {  // the identity, or zeros: nothing drawn
    for (std::size_t i = 0; i < n; i += 64) put(i, p == 0 ? ~std::uint64_t{0} : 0, std::min<std::size_t>(64, n - i));
    return;
  }
  std::uint64_t x = random() % kMklModulus;  // vslNewStream(VSL_BRNG_MCG31, seed)
  if (x == 0) x = 1;
  const std::uint32_t keep_below = mklKeepBelow(p);
  alignas(64) std::uint64_t block[kDropoutBlock / 64];
  McgLanes lanes(x);
  for (std::size_t done = 0; done < n;) {
    const std::size_t m = std::min(n - done, kDropoutBlock);
    const std::size_t block_words = (m + 63) / 64;
    mcgKeepBits(engine_.impl(), lanes, block_words, keep_below, block);
    for (std::size_t w = 0; w < block_words; ++w) put(done + w * 64, block[w], std::min<std::size_t>(64, m - w * 64));
    done += m;
  }
}

void TorchGenerator::fillDropoutKeep(std::uint8_t* keep, std::size_t n, double p) {
  std::uint64_t words[kDropoutBlock / 64];
  // Through the bitmask a block at a time; blocks are whole words, so the stream is the same.
  for (std::size_t done = 0; done < n;) {
    const std::size_t m = std::min(n - done, kDropoutBlock);
    fillDropoutKeepBits(words, m, p);
    std::size_t i = 0;
    for (; i + 8 <= m; i += 8)  // 8 elements at a time from the table
      std::memcpy(keep + done + i, kKeepBytes.bytes[(words[i / 64] >> (i % 64)) & 0xFF], 8);
    for (; i < m; ++i) keep[done + i] = (words[i / 64] >> (i % 64)) & 1;
    done += m;
  }
}

}  // namespace attnscope
