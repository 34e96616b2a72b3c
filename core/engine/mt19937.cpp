#include "engine/mt19937.h"

#include "engine/simd_targets.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace attnscope {
namespace {

constexpr std::size_t N = Mt19937::kStateSize, M = 397;
constexpr std::uint32_t kMatrixA = 0x9908b0dfu, kUpper = 0x80000000u, kLower = 0x7fffffffu;

// The recurrence, indices mod N: x[k+N] = x[k+M] ^ (y >> 1) ^ (y odd ? a : 0), where
// y = (upper bit of x[k]) | (lower 31 bits of x[k+1]).
inline std::uint32_t twist(std::uint32_t xk, std::uint32_t xk1, std::uint32_t xkm) {
  const std::uint32_t y = (xk & kUpper) | (xk1 & kLower);
  return xkm ^ (y >> 1) ^ ((0u - (y & 1u)) & kMatrixA);
}

// The source of truth. mt[k] becomes x[k+N] in place, in increasing k: for k < N−M the x[k+M] term
// is the old mt[k+M]; from k = N−M on it is mt[k+M−N], already refilled; the last word's x[k+1] is
// the new mt[0].
void refillScalar(std::uint32_t* mt) {
  std::size_t k = 0;
  for (; k < N - M; ++k) mt[k] = twist(mt[k], mt[k + 1], mt[k + M]);
  for (; k < N - 1; ++k) mt[k] = twist(mt[k], mt[k + 1], mt[k + M - N]);
  mt[N - 1] = twist(mt[N - 1], mt[0], mt[M - 1]);
}

void temperScalar(const std::uint32_t* in, std::uint32_t* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = Mt19937::temper(in[i]);
}

#if ATTNSCOPE_SIMD_X86
// A chunk of W words k … k+W−1 is refilled from one load each of x[k …], x[k+1 …] and x[k+M …],
// all made before its store, so x[k+1 …] are still the old words. It must lie within one of the
// scalar loop's two parts, which find x[k+M] in different places (mt[k+M], not yet refilled;
// mt[k+M−N], N−M = 227 words behind, already refilled for any W ≤ 227), and must stop before the
// last word, whose x[k+1] is the new mt[0]. The remainders run scalar.

__attribute__((target("avx2"))) inline __m256i twist8(__m256i xk, __m256i xk1, __m256i xkm) {
  const __m256i y = _mm256_or_si256(_mm256_and_si256(xk, _mm256_set1_epi32(int(kUpper))),
                                    _mm256_and_si256(xk1, _mm256_set1_epi32(int(kLower))));
  // All ones where y is odd: bit 0 shifted to the sign and spread.
  const __m256i odd = _mm256_srai_epi32(_mm256_slli_epi32(xk1, 31), 31);
  const __m256i mag = _mm256_and_si256(odd, _mm256_set1_epi32(int(kMatrixA)));
  return _mm256_xor_si256(_mm256_xor_si256(xkm, _mm256_srli_epi32(y, 1)), mag);
}

__attribute__((target("avx2"))) inline __m256i load8(const std::uint32_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// mt[k … k+7] = x[k+N …], with x[k+M …] at mt[km …].
__attribute__((target("avx2"))) inline void step8(std::uint32_t* mt, std::size_t k, std::size_t km) {
  const __m256i r = twist8(load8(mt + k), load8(mt + k + 1), load8(mt + km));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(mt + k), r);
}

__attribute__((target("avx2"))) void refillAvx2(std::uint32_t* mt) {
  std::size_t k = 0;
  for (; k + 8 <= N - M; k += 8) step8(mt, k, k + M);
  for (; k < N - M; ++k) mt[k] = twist(mt[k], mt[k + 1], mt[k + M]);
  for (; k + 8 <= N - 1; k += 8) step8(mt, k, k + M - N);
  for (; k < N - 1; ++k) mt[k] = twist(mt[k], mt[k + 1], mt[k + M - N]);
  mt[N - 1] = twist(mt[N - 1], mt[0], mt[M - 1]);
}

__attribute__((target("avx2"))) inline __m256i temper8(__m256i y) {
  y = _mm256_xor_si256(y, _mm256_srli_epi32(y, 11));
  y = _mm256_xor_si256(y, _mm256_and_si256(_mm256_slli_epi32(y, 7), _mm256_set1_epi32(int(0x9d2c5680u))));
  y = _mm256_xor_si256(y, _mm256_and_si256(_mm256_slli_epi32(y, 15), _mm256_set1_epi32(int(0xefc60000u))));
  return _mm256_xor_si256(y, _mm256_srli_epi32(y, 18));
}

__attribute__((target("avx2"))) void temperAvx2(const std::uint32_t* in, std::uint32_t* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i y = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), temper8(y));
  }
  for (; i < n; ++i) out[i] = Mt19937::temper(in[i]);
}

// GCC 12 warns inside its own AVX-512 intrinsics once they are inlined (bug 105593: the
// _mm512_undefined_* placeholders); a false positive, silenced for these functions only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// AVX-512F implies AVX2 (GCC's and Clang's target("avx512f") enable it), so the 16-wide refill
// narrows to 8 words before its scalar remainders.
__attribute__((target("avx512f"))) inline __m512i twist16(__m512i xk, __m512i xk1, __m512i xkm) {
  // (xk & upper) | (xk1 & ~upper): a bit select, 0xCA in ternary-logic terms.
  const __m512i y = _mm512_ternarylogic_epi32(_mm512_set1_epi32(int(kUpper)), xk, xk1, 0xCA);
  const __mmask16 odd = _mm512_test_epi32_mask(xk1, _mm512_set1_epi32(1));
  const __m512i r = _mm512_xor_si512(xkm, _mm512_srli_epi32(y, 1));
  return _mm512_mask_xor_epi32(r, odd, r, _mm512_set1_epi32(int(kMatrixA)));
}

__attribute__((target("avx512f"))) inline void step16(std::uint32_t* mt, std::size_t k, std::size_t km) {
  const __m512i r = twist16(_mm512_loadu_si512(mt + k), _mm512_loadu_si512(mt + k + 1), _mm512_loadu_si512(mt + km));
  _mm512_storeu_si512(mt + k, r);
}

__attribute__((target("avx512f"))) void refillAvx512(std::uint32_t* mt) {
  std::size_t k = 0;
  for (; k + 16 <= N - M; k += 16) step16(mt, k, k + M);
  for (; k + 8 <= N - M; k += 8) step8(mt, k, k + M);
  for (; k < N - M; ++k) mt[k] = twist(mt[k], mt[k + 1], mt[k + M]);
  for (; k + 16 <= N - 1; k += 16) step16(mt, k, k + M - N);
  for (; k + 8 <= N - 1; k += 8) step8(mt, k, k + M - N);
  for (; k < N - 1; ++k) mt[k] = twist(mt[k], mt[k + 1], mt[k + M - N]);
  mt[N - 1] = twist(mt[N - 1], mt[0], mt[M - 1]);
}

__attribute__((target("avx512f"))) inline __m512i temper16(__m512i y) {
  y = _mm512_xor_si512(y, _mm512_srli_epi32(y, 11));
  y = _mm512_xor_si512(y, _mm512_and_si512(_mm512_slli_epi32(y, 7), _mm512_set1_epi32(int(0x9d2c5680u))));
  y = _mm512_xor_si512(y, _mm512_and_si512(_mm512_slli_epi32(y, 15), _mm512_set1_epi32(int(0xefc60000u))));
  return _mm512_xor_si512(y, _mm512_srli_epi32(y, 18));
}

__attribute__((target("avx512f"))) void temperAvx512(const std::uint32_t* in, std::uint32_t* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_si512(out + i, temper16(_mm512_loadu_si512(in + i)));
  if (i < n) {  // the last 1 … 15 words, masked so nothing past n is read or written
    const __mmask16 tail = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_epi32(out + i, tail, temper16(_mm512_maskz_loadu_epi32(tail, in + i)));
  }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#endif  // ATTNSCOPE_SIMD_X86

}  // namespace

Mt19937::Mt19937(std::uint32_t s, Isa impl) : impl_(runnableIsa(impl, "Mt19937")) { seed(s); }

void Mt19937::seed(std::uint32_t s) {
  // Knuth's initialization, as std::mersenne_twister_engine::seed does it.
  state_[0] = s;
  for (std::size_t i = 1; i < N; ++i)
    state_[i] = 1812433253u * (state_[i - 1] ^ (state_[i - 1] >> 30)) + static_cast<std::uint32_t>(i);
  index_ = N;
}

void Mt19937::refill() {
  switch (impl_) {
#if ATTNSCOPE_SIMD_X86
    case Isa::Avx512: refillAvx512(state_); break;
    case Isa::Avx2: refillAvx2(state_); break;
#endif
    default: refillScalar(state_); break;
  }
  index_ = 0;
}

void Mt19937::fill(std::uint32_t* out, std::size_t n) {
  while (n > 0) {
    if (index_ >= N) refill();
    const std::size_t take = std::min(n, N - index_);
    const std::uint32_t* in = state_ + index_;
    switch (impl_) {
#if ATTNSCOPE_SIMD_X86
      case Isa::Avx512: temperAvx512(in, out, take); break;
      case Isa::Avx2: temperAvx2(in, out, take); break;
#endif
      default: temperScalar(in, out, take); break;
    }
    index_ += take;
    out += take;
    n -= take;
  }
}

}  // namespace attnscope
