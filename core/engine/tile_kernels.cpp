#include "engine/tile_kernels.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "engine/packed_linear.h"

// The SIMD versions need GCC/Clang's per-function target attributes and CPU detection (as in
// mt19937.cpp); elsewhere only the scalar loops are built.
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define ATTNSCOPE_TILE_X86 1
#include <immintrin.h>
#define ATTNSCOPE_AVX2 __attribute__((target("avx2,fma")))
// The register blocks are inlined into their loops: a call per block would cost as much as its
// arithmetic.
#define ATTNSCOPE_AVX2_INLINE __attribute__((target("avx2,fma"), always_inline)) inline
// AVX-512F (with AVX2 and FMA, which every AVX-512 CPU has: the 8-wide helpers inline into it).
#define ATTNSCOPE_AVX512 __attribute__((target("avx512f,avx2,fma")))
#define ATTNSCOPE_AVX512_INLINE __attribute__((target("avx512f,avx2,fma"), always_inline)) inline
#else
#define ATTNSCOPE_TILE_X86 0
#endif

namespace attnscope {
namespace {

// Keys a block whose last row is `last_row` needs: j < last_row + key_limit, within [0, nk].
inline int keysFor(int last_row, int key_limit, int nk) {
  return std::clamp(last_row + key_limit, 0, nk);
}

// key_limit may be any int (callers pass nk for "all keys"); clamped so that row + key_limit
// cannot overflow.
inline int clampLimit(int key_limit, int n, int nk) { return std::clamp(key_limit, -n, nk); }

// acc += P·V sums the keys of a tile in chunks of this many, in order, each from 0, and adds the
// chunks' sums to acc in order. One float chain over a 256-key tile doubled the fused path's error
// against the reference loops (1.05e-6 instead of the Eigen GEMM's 5.7e-7 over unit.fused's cases,
// whose sums keep two chains); in chunks of 64 it is 5.6e-7, for one load, add and store per 64
// FMAs.
constexpr int kKeyChunk = 64;

inline bool keptBit(const std::uint64_t* keep, std::size_t i) { return (keep[i >> 6] >> (i & 63)) & 1; }

// ---------------------------------------------------------------- scalar: the fallback

// S = Q·Kᵀ. Q: n × hw (ldq), K: nk × hw (ldk), S: n × nk (lds); row r only up to its key limit.
void scoresScalar(int n, int nk, int hw, const float* Q, int ldq, const float* K, int ldk, float* S,
                  int lds, int key_limit) {
  key_limit = clampLimit(key_limit, n, nk);
  for (int r = 0; r < n; ++r) {
    const float* q = Q + static_cast<std::ptrdiff_t>(r) * ldq;
    for (int j = 0, keys = keysFor(r, key_limit, nk); j < keys; ++j) {
      const float* k = K + static_cast<std::ptrdiff_t>(j) * ldk;
      float s = 0.0f;
      for (int c = 0; c < hw; ++c) s += q[c] * k[c];
      S[static_cast<std::ptrdiff_t>(r) * lds + j] = s;
    }
  }
}

// acc += P·V. P: n × nk (ldp), V: nk × hw (ldv), acc: n × hw (ldacc); each chunk of keys summed
// in order, then added to acc.
void accumulateScalar(int n, int nk, int hw, const float* P, int ldp, const float* V, int ldv,
                      float* acc, int ldacc, int key_limit) {
  key_limit = clampLimit(key_limit, n, nk);
  for (int r = 0; r < n; ++r) {
    float* a = acc + static_cast<std::ptrdiff_t>(r) * ldacc;
    const float* p = P + static_cast<std::ptrdiff_t>(r) * ldp;
    const int keys = keysFor(r, key_limit, nk);
    for (int j0 = 0; j0 < keys; j0 += kKeyChunk)
      for (int c = 0; c < hw; ++c) {
        float part = 0.0f;
        for (int j = j0; j < std::min(j0 + kKeyChunk, keys); ++j)
          part += p[j] * V[static_cast<std::ptrdiff_t>(j) * ldv + c];
        a[c] += part;
      }
  }
}

// One row of the online softmax (tile_kernels.h); s: nk floats, the first `valid` unmasked.
SoftmaxRowResult softmaxRowScalar(float* s, int nk, int valid, float log2_scale, float m_old,
                                  const std::uint64_t* keep, std::size_t keep_bit0) {
  valid = std::clamp(valid, 0, nk);
  if (valid == 0) {
    std::fill(s, s + nk, 0.0f);
    return {m_old, 0.0f, true};
  }
  bool finite = true;
  float m = m_old;
  for (int j = 0; j < valid; ++j) {
    finite = finite && std::isfinite(s[j]);
    m = std::max(m, s[j]);
  }
  double sum = 0.0;  // as the reference loops sum (the SIMD versions keep 8 or 16 float partial sums)
  for (int j = 0; j < valid; ++j) {
    const float p = std::exp2((s[j] - m) * log2_scale);
    sum += p;
    s[j] = keep == nullptr || keptBit(keep, keep_bit0 + j) ? p : 0.0f;
  }
  std::fill(s + valid, s + nk, 0.0f);
  return {m, static_cast<float>(sum), finite};
}

// The online softmax step of a tile, row after row (tile_kernels.h).
void softmaxRowsScalar(float* S, int lds, int n, int nk, int key_limit, float log2_scale, const float* m_old,
                       const std::uint64_t* keep, std::size_t keep_bit0, std::size_t keep_row_bits,
                       SoftmaxRowResult* out) {
  key_limit = clampLimit(key_limit, n, nk);
  for (int r = 0; r < n; ++r)
    out[r] = softmaxRowScalar(S + static_cast<std::ptrdiff_t>(r) * lds, nk, keysFor(r, key_limit, nk), log2_scale,
                              m_old[r], keep, keep_bit0 + r * keep_row_bits);
}

// S = Q·Kᵀ as a packed linear product (packed_linear.h), the SIMD versions' scores: the key tile
// is packed as the weights (W = K, one output per key, transposed in registers), the query rows
// are broadcast from Q as they lie, and a register block holds 12 rows × 32 keys (AVX-512; 6 × 16
// with AVX2), each score one chain of FMAs over the head's columns in order. The key limit skips
// the panels of 32 keys beyond a row's last. Dot products of one row against 16 keys, summed
// across lanes by shuffles, took 9.5 µs for a 128 × 128 tile of a 32-wide head; this takes 6.0
// with the packing (1.0).
void scoresPacked(Isa isa, int n, int nk, int hw, const float* Q, int ldq, const float* K, int ldk, float* S,
                  int lds, int key_limit) {
  thread_local PackedLinear key_tile;  // its memory stays with the thread
  key_tile.pack(K, nk, hw, ldk, nullptr);
  key_tile.apply(n, Q, ldq, S, lds, isa, clampLimit(key_limit, n, nk));
}

constexpr TileKernels kScalarKernels{Isa::Scalar, scoresScalar, accumulateScalar, softmaxRowsScalar};

#if ATTNSCOPE_TILE_X86
// ---------------------------------------------------------------- AVX2 + FMA: 8 floats a vector

// All ones in the first `count` lanes (0 … 8): the masked loads and stores of ragged ends, which
// neither read nor write past them.
ATTNSCOPE_AVX2_INLINE __m256i firstLanes(int count) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// S = Q·Kᵀ (tile_kernels.h) as a packed linear product: scoresPacked.
ATTNSCOPE_AVX2 void scoresAvx2(int n, int nk, int hw, const float* Q, int ldq, const float* K, int ldk,
                               float* S, int lds, int key_limit) {
  scoresPacked(Isa::Avx2, n, nk, hw, Q, ldq, K, ldk, S, lds, key_limit);
}

// acc += P·V on an R × NV register block: R rows × NV vectors of 8 columns (Masked: one vector of
// the first hw % 8 columns). Each element sums each chunk of kKeyChunk keys in order, one FMA a
// key, from 0, and adds the chunk to acc: whatever the block, the same operations.
// p: R × keys (ldp), v: keys × columns (ldv), a: R × columns (lda).
template <int R, int NV, bool Masked>
ATTNSCOPE_AVX2_INLINE void accumulateBlockAvx2(int keys, const float* p, int ldp, const float* v, int ldv,
                                               float* a, int lda, __m256i tail) {
  for (int j0 = 0; j0 < keys; j0 += kKeyChunk) {
    __m256 part[R][NV];  // unrolled, so that the array lives in registers
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int c = 0; c < NV; ++c) part[r][c] = _mm256_setzero_ps();
    for (int j = j0, j1 = std::min(j0 + kKeyChunk, keys); j < j1; ++j) {
      const float* vj = v + static_cast<std::ptrdiff_t>(j) * ldv;
      __m256 vv[NV];
#pragma GCC unroll 4
      for (int c = 0; c < NV; ++c) vv[c] = Masked ? _mm256_maskload_ps(vj + 8 * c, tail) : _mm256_loadu_ps(vj + 8 * c);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        const __m256 pr = _mm256_broadcast_ss(p + static_cast<std::ptrdiff_t>(r) * ldp + j);
#pragma GCC unroll 4
        for (int c = 0; c < NV; ++c) part[r][c] = _mm256_fmadd_ps(pr, vv[c], part[r][c]);
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int c = 0; c < NV; ++c) {
        float* dst = a + static_cast<std::ptrdiff_t>(r) * lda + 8 * c;
        if (Masked)
          _mm256_maskstore_ps(dst, tail, _mm256_add_ps(_mm256_maskload_ps(dst, tail), part[r][c]));
        else
          _mm256_storeu_ps(dst, _mm256_add_ps(_mm256_loadu_ps(dst), part[r][c]));
      }
  }
}

// The columns of one block of R rows: 32 at a time, then the remaining whole vectors, then the
// ragged end.
template <int R>
ATTNSCOPE_AVX2 void accumulateRowsAvx2(int keys, int hw, const float* p, int ldp, const float* V, int ldv,
                                       float* a, int lda, __m256i tail) {
  int c = 0;
  for (; c + 32 <= hw; c += 32) accumulateBlockAvx2<R, 4, false>(keys, p, ldp, V + c, ldv, a + c, lda, tail);
  switch ((hw - c) / 8) {
    case 3: accumulateBlockAvx2<R, 3, false>(keys, p, ldp, V + c, ldv, a + c, lda, tail); break;
    case 2: accumulateBlockAvx2<R, 2, false>(keys, p, ldp, V + c, ldv, a + c, lda, tail); break;
    case 1: accumulateBlockAvx2<R, 1, false>(keys, p, ldp, V + c, ldv, a + c, lda, tail); break;
    default: break;
  }
  c += (hw - c) / 8 * 8;
  if (c < hw) accumulateBlockAvx2<R, 1, true>(keys, p, ldp, V + c, ldv, a + c, lda, tail);
}

// acc += P·V: P n × nk, V nk × hw, acc n × hw (tile_kernels.h). Blocks of 3 rows × 32 columns:
// 12 accumulators, one broadcast of P per row and key, V's row loaded once per key.
ATTNSCOPE_AVX2 void accumulateAvx2(int n, int nk, int hw, const float* P, int ldp, const float* V, int ldv,
                                   float* acc, int ldacc, int key_limit) {
  key_limit = clampLimit(key_limit, n, nk);
  const __m256i tail = firstLanes(hw % 8);
  constexpr int kRows = 3;
  static_assert(kRows - 1 < kSoftmaxZeroKeys, "a block reads its last row's keys: the softmax zeroes that far");
  for (int r = 0; r < n; r += kRows) {
    const int rows = std::min(kRows, n - r), keys = keysFor(r + rows - 1, key_limit, nk);
    const float* p = P + static_cast<std::ptrdiff_t>(r) * ldp;
    float* a = acc + static_cast<std::ptrdiff_t>(r) * ldacc;
    if (rows == 3)
      accumulateRowsAvx2<3>(keys, hw, p, ldp, V, ldv, a, ldacc, tail);
    else if (rows == 2)
      accumulateRowsAvx2<2>(keys, hw, p, ldp, V, ldv, a, ldacc, tail);
    else
      accumulateRowsAvx2<1>(keys, hw, p, ldp, V, ldv, a, ldacc, tail);
  }
}

// 2^f for f in [−½, ½]: a degree-6 polynomial in Horner form, fitted to 2^f's relative error
// (near-minimax; within 1.7 ulp of 2^f when evaluated in float with FMAs), shared by both versions.
constexpr float kExp2Coefficients[] = {0x1.41fbbcp-13f, 0x1.5f3e54p-10f, 0x1.3b2d4cp-7f,
                                       0x1.c6aee8p-5f,  0x1.ebfbdcp-3f,  0x1.62e430p-1f};

// 2^t for t ≤ 0 (the softmax's exponent, tile_kernels.h), 8 at a time: t = n + f with n the
// nearest integer, 2^f by the polynomial, × 2^n. n comes from the magic number 1.5·2^23 + 127:
// t + magic rounds to the nearest integer (its ulp is 1), minus magic is n, and its low bits are
// the exponent field n + 127 of 2^n (AVX2 has no vscalefps; vroundps and the conversions cost
// 10 % more). The clamp at −127 keeps the field ≥ 0, and n = −127 (t < −126.5, where 2^t is
// beneath float's normal range anyway) gives the field 0, i.e. exactly +0 (−∞ and NaN included).
ATTNSCOPE_AVX2_INLINE __m256 exp2NonPositiveAvx2(__m256 t) {
  const __m256 magic = _mm256_set1_ps(0x1.8p23f + 127.0f);
  t = _mm256_max_ps(t, _mm256_set1_ps(-127.0f));
  const __m256 shifted = _mm256_add_ps(t, magic);
  const __m256 f = _mm256_sub_ps(t, _mm256_sub_ps(shifted, magic));
  __m256 y = _mm256_set1_ps(kExp2Coefficients[0]);
#pragma GCC unroll 6
  for (int k = 1; k < 6; ++k) y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(kExp2Coefficients[k]));
  y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(1.0f));
  return _mm256_mul_ps(y, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_castps_si256(shifted), 23)));
}

// Lanes of the `count` (≤ 8) keep bits from bit i on: all ones where kept.
ATTNSCOPE_AVX2_INLINE __m256 keepLanes(const std::uint64_t* keep, std::size_t i, int count) {
  const std::size_t word = i >> 6, shift = i & 63;
  std::uint64_t bits = keep[word] >> shift;
  if (shift + count > 64) bits |= keep[word + 1] << (64 - shift);  // only when the bits span two words
  const __m256i lane_bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  const __m256i set = _mm256_and_si256(_mm256_set1_epi32(static_cast<int>(bits & 0xff)), lane_bit);
  return _mm256_castsi256_ps(_mm256_cmpeq_epi32(set, lane_bit));
}

// Σ of the 8 lanes in one fixed order, ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)), for every call.
ATTNSCOPE_AVX2_INLINE float sumLanes(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

ATTNSCOPE_AVX2_INLINE float maxLanes(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Pass 1 of the softmax on 8 keys of a row at s: their running max in mx, and x·0 added to `nan`,
// which stays 0 while every score is finite (±∞·0 and NaN·0 are NaN: one FMA a vector). Masked: the
// first `count` (< 8) lanes only; the others are not read, and −∞ for the max.
template <bool Masked>
ATTNSCOPE_AVX2_INLINE void scanAvx2(const float* s, int count, __m256& mx, __m256& nan) {
  const __m256i lanes = Masked ? firstLanes(count) : _mm256_set1_epi32(-1);
  const __m256 x = Masked ? _mm256_maskload_ps(s, lanes) : _mm256_loadu_ps(s);
  nan = _mm256_fmadd_ps(x, _mm256_setzero_ps(), nan);  // the masked lanes' 0.0 is finite
  mx = _mm256_max_ps(mx, Masked ? _mm256_blendv_ps(_mm256_set1_ps(-std::numeric_limits<float>::infinity()), x,
                                                   _mm256_castsi256_ps(lanes))
                                : x);
}

// Pass 2 on 8 keys of a row at s (key bit `bit` in keep): p = 2^((s − m)·log2_scale) added to
// `sum`, then the keep bits applied and p written over s. Masked: the first `count` (< 8) lanes,
// 0 in the others up to the tile's end, `room` (≥ 1) floats from s.
template <bool Masked>
ATTNSCOPE_AVX2_INLINE void weighAvx2(float* s, int count, int room, __m256 mv, __m256 log2_scale, __m256& sum,
                                     const std::uint64_t* keep, std::size_t bit) {
  const __m256i lanes = Masked ? firstLanes(count) : _mm256_set1_epi32(-1);
  const __m256 x = Masked ? _mm256_maskload_ps(s, lanes) : _mm256_loadu_ps(s);
  __m256 p = exp2NonPositiveAvx2(_mm256_mul_ps(_mm256_sub_ps(x, mv), log2_scale));
  if (Masked) p = _mm256_and_ps(p, _mm256_castsi256_ps(lanes));
  sum = _mm256_add_ps(sum, p);
  if (keep != nullptr) p = _mm256_and_ps(p, keepLanes(keep, bit, Masked ? count : 8));
  if (Masked && room < 8)
    _mm256_maskstore_ps(s, firstLanes(room), p);
  else
    _mm256_storeu_ps(s, p);
}

// Zeros over the `room` (≥ 1) floats from s, at most 8.
ATTNSCOPE_AVX2_INLINE void zeroAvx2(float* s, int room) {
  if (room >= 8)
    _mm256_storeu_ps(s, _mm256_setzero_ps());
  else
    _mm256_maskstore_ps(s, firstLanes(room), _mm256_setzero_ps());
}

// The online softmax step (tile_kernels.h) of R rows at once, 8 keys at a time, as
// softmaxBlockAvx512: R independent chains of maxima and sums keep the vector units busy (with
// the earlier division and exp, 4 rows took a full 128-key tile in 8.2 µs where row by row took
// 12.1, Xeon; 2 rows 8.5, 8 rows 9.7, as they spill; now 4.1, Zen 5). Row r has valid[r] unmasked
// keys. Pass 1 takes the max and flags anything not finite; pass 2 writes p = 2^((s − m)·log2_scale)
// (0 for the kSoftmaxZeroKeys after the row's keys), sums it and applies the keep bits. Each lane
// sums the keys j ≡ lane (mod 8) in order and the lanes are added in one fixed tree, so a row's
// bits do not depend on the rows beside it. The keys where every row has whole vectors take no
// branch; the ragged ends branch per row and vector.
template <int R>
ATTNSCOPE_AVX2_INLINE void softmaxBlockAvx2(float* S, int lds, int nk, const int* valid, float log2_scale,
                                            const float* m_old, const std::uint64_t* keep, std::size_t keep_bit0,
                                            std::size_t keep_row_bits, SoftmaxRowResult* out) {
  const __m256 scale = _mm256_set1_ps(log2_scale);
  int longest = 0, shortest = valid[0];
  __m256 mx[R], nan[R];  // nan: 0 while every score seen is finite (scanAvx2)
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    longest = std::max(longest, valid[r]);
    shortest = std::min(shortest, valid[r]);
    mx[r] = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
    nan[r] = _mm256_setzero_ps();
  }
  const int whole = shortest / 8 * 8;  // keys where every row has whole vectors
  for (int j = 0; j < whole; j += 8)
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
      scanAvx2<false>(S + static_cast<std::ptrdiff_t>(r) * lds + j, 8, mx[r], nan[r]);
  for (int j = whole; j < longest; j += 8)
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const int count = valid[r] - j;
      const float* s = S + static_cast<std::ptrdiff_t>(r) * lds + j;
      if (count >= 8)
        scanAvx2<false>(s, count, mx[r], nan[r]);
      else if (count > 0)
        scanAvx2<true>(s, count, mx[r], nan[r]);
    }
  __m256 mv[R], sum[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    out[r].max = std::max(m_old[r], maxLanes(mx[r]));
    mv[r] = _mm256_set1_ps(out[r].max);
    sum[r] = _mm256_setzero_ps();
  }
  for (int j = 0; j < whole; j += 8)
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
      weighAvx2<false>(S + static_cast<std::ptrdiff_t>(r) * lds + j, 8, 8, mv[r], scale, sum[r], keep,
                       keep_bit0 + r * keep_row_bits + j);
  for (int j = whole, end = std::min(nk, longest + kSoftmaxZeroKeys); j < end; j += 8)
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const int count = valid[r] - j;
      float* s = S + static_cast<std::ptrdiff_t>(r) * lds + j;
      const std::size_t bit = keep_bit0 + r * keep_row_bits + j;
      if (count >= 8)
        weighAvx2<false>(s, count, nk - j, mv[r], scale, sum[r], keep, bit);
      else if (count > 0)  // its store zeroes the vector's lanes past the row's keys
        weighAvx2<true>(s, count, nk - j, mv[r], scale, sum[r], keep, bit);
      else if (j < valid[r] + kSoftmaxZeroKeys)
        zeroAvx2(s, nk - j);
    }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    out[r].sum = sumLanes(sum[r]);
    out[r].finite = _mm256_movemask_ps(_mm256_cmp_ps(nan[r], _mm256_setzero_ps(), _CMP_NEQ_UQ)) == 0;
  }
}

// The online softmax step of a tile (tile_kernels.h): blocks of 4 rows, then the last rows.
ATTNSCOPE_AVX2 void softmaxRowsAvx2(float* S, int lds, int n, int nk, int key_limit, float log2_scale,
                                    const float* m_old, const std::uint64_t* keep, std::size_t keep_bit0,
                                    std::size_t keep_row_bits, SoftmaxRowResult* out) {
  key_limit = clampLimit(key_limit, n, nk);
  constexpr int kRows = 4;
  int valid[kRows];
  int r = 0;
  for (; r + kRows <= n; r += kRows) {
    for (int i = 0; i < kRows; ++i) valid[i] = keysFor(r + i, key_limit, nk);
    softmaxBlockAvx2<kRows>(S + static_cast<std::ptrdiff_t>(r) * lds, lds, nk, valid, log2_scale, m_old + r, keep,
                            keep_bit0 + r * keep_row_bits, keep_row_bits, out + r);
  }
  for (; r < n; ++r) {
    valid[0] = keysFor(r, key_limit, nk);
    softmaxBlockAvx2<1>(S + static_cast<std::ptrdiff_t>(r) * lds, lds, nk, valid, log2_scale, m_old + r, keep,
                        keep_bit0 + r * keep_row_bits, keep_row_bits, out + r);
  }
}

constexpr TileKernels kAvx2Kernels{Isa::Avx2, scoresAvx2, accumulateAvx2, softmaxRowsAvx2};

// ---------------------------------------------------------------- AVX-512: 16 floats a vector

// GCC 12 warns inside its own AVX-512 intrinsics once they are inlined (bug 105593: the
// _mm512_undefined_* placeholders), as in mt19937.cpp; a false positive, silenced here only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// The first `count` lanes of a vector, for any count (≤ 0: none; ≥ 16: all).
ATTNSCOPE_AVX512_INLINE __mmask16 firstLanes16(int count) {
  return static_cast<__mmask16>((1u << std::clamp(count, 0, 16)) - 1u);
}

// S = Q·Kᵀ (tile_kernels.h) as a packed linear product: scoresPacked.
ATTNSCOPE_AVX512 void scoresAvx512(int n, int nk, int hw, const float* Q, int ldq, const float* K, int ldk,
                                   float* S, int lds, int key_limit) {
  scoresPacked(Isa::Avx512, n, nk, hw, Q, ldq, K, ldk, S, lds, key_limit);
}

// acc += P·V on an R × NV register block of 16-column vectors (Masked: one vector of the first
// hw % 16 columns), in chunks of kKeyChunk keys as accumulateBlockAvx2: one broadcast of P per row
// and key. p: R × keys (ldp), v: keys × columns (ldv), a: R × columns (lda).
template <int R, int NV, bool Masked>
ATTNSCOPE_AVX512_INLINE void accumulateBlockAvx512(int keys, const float* p, int ldp, const float* v, int ldv,
                                                   float* a, int lda, __mmask16 tail) {
  for (int j0 = 0; j0 < keys; j0 += kKeyChunk) {
    __m512 part[R][NV];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int c = 0; c < NV; ++c) part[r][c] = _mm512_setzero_ps();
    for (int j = j0, j1 = std::min(j0 + kKeyChunk, keys); j < j1; ++j) {
      const float* vj = v + static_cast<std::ptrdiff_t>(j) * ldv;
      __m512 vv[NV];
#pragma GCC unroll 4
      for (int c = 0; c < NV; ++c)
        vv[c] = Masked ? _mm512_maskz_loadu_ps(tail, vj + 16 * c) : _mm512_loadu_ps(vj + 16 * c);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m512 pr = _mm512_set1_ps(p[static_cast<std::ptrdiff_t>(r) * ldp + j]);
#pragma GCC unroll 4
        for (int c = 0; c < NV; ++c) part[r][c] = _mm512_fmadd_ps(pr, vv[c], part[r][c]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int c = 0; c < NV; ++c) {
        float* dst = a + static_cast<std::ptrdiff_t>(r) * lda + 16 * c;
        if (Masked)
          _mm512_mask_storeu_ps(dst, tail, _mm512_add_ps(_mm512_maskz_loadu_ps(tail, dst), part[r][c]));
        else
          _mm512_storeu_ps(dst, _mm512_add_ps(_mm512_loadu_ps(dst), part[r][c]));
      }
  }
}

// The columns of one block of R rows: 32 at a time (two vectors: with 6 rows, 12 accumulators),
// then a remaining whole vector, then the ragged end.
template <int R>
ATTNSCOPE_AVX512 void accumulateRowsAvx512(int keys, int hw, const float* p, int ldp, const float* V, int ldv,
                                           float* a, int lda, __mmask16 tail) {
  int c = 0;
  for (; c + 32 <= hw; c += 32) accumulateBlockAvx512<R, 2, false>(keys, p, ldp, V + c, ldv, a + c, lda, tail);
  if (c + 16 <= hw) {
    accumulateBlockAvx512<R, 1, false>(keys, p, ldp, V + c, ldv, a + c, lda, tail);
    c += 16;
  }
  if (c < hw) accumulateBlockAvx512<R, 1, true>(keys, p, ldp, V + c, ldv, a + c, lda, tail);
}

// acc += P·V (tile_kernels.h): blocks of 6 rows × 32 columns, the last rows one by one.
ATTNSCOPE_AVX512 void accumulateAvx512(int n, int nk, int hw, const float* P, int ldp, const float* V, int ldv,
                                       float* acc, int ldacc, int key_limit) {
  key_limit = clampLimit(key_limit, n, nk);
  const __mmask16 tail = firstLanes16(hw % 16);
  constexpr int kRows = 6;
  static_assert(kRows - 1 < kSoftmaxZeroKeys, "a block reads its last row's keys: the softmax zeroes that far");
  int r = 0;
  for (; r + kRows <= n; r += kRows)
    accumulateRowsAvx512<kRows>(keysFor(r + kRows - 1, key_limit, nk), hw, P + static_cast<std::ptrdiff_t>(r) * ldp,
                                ldp, V, ldv, acc + static_cast<std::ptrdiff_t>(r) * ldacc, ldacc, tail);
  for (; r < n; ++r)
    accumulateRowsAvx512<1>(keysFor(r, key_limit, nk), hw, P + static_cast<std::ptrdiff_t>(r) * ldp, ldp, V, ldv,
                            acc + static_cast<std::ptrdiff_t>(r) * ldacc, ldacc, tail);
}

// 2^t for t ≤ 0, 16 at a time, as exp2NonPositiveAvx2, × 2^n by vscalefps, which rounds into the
// subnormals and gives 0 below them. The clamp turns −∞ (a score minus a max that overflows) into
// a t whose 2^t is 0, where −∞ − (−∞) would be NaN.
ATTNSCOPE_AVX512_INLINE __m512 exp2NonPositiveAvx512(__m512 t) {
  t = _mm512_max_ps(t, _mm512_set1_ps(-160.0f));
  const __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_sub_ps(t, n);
  __m512 y = _mm512_set1_ps(kExp2Coefficients[0]);
#pragma GCC unroll 6
  for (int k = 1; k < 6; ++k) y = _mm512_fmadd_ps(y, f, _mm512_set1_ps(kExp2Coefficients[k]));
  y = _mm512_fmadd_ps(y, f, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(y, n);
}

// The `count` (≤ 16) keep bits from bit i on, as a lane mask.
ATTNSCOPE_AVX512_INLINE __mmask16 keepMask16(const std::uint64_t* keep, std::size_t i, int count) {
  const std::size_t word = i >> 6, shift = i & 63;
  std::uint64_t bits = keep[word] >> shift;
  if (shift + count > 64) bits |= keep[word + 1] << (64 - shift);  // only when the bits span two words
  return static_cast<__mmask16>(bits & 0xffff);
}

// Σ of the 16 lanes in one fixed order: lane l + lane l + 8, then sumLanes.
ATTNSCOPE_AVX512_INLINE float sumLanes16(__m512 v) {
  const __m256 high = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
  return sumLanes(_mm256_add_ps(_mm512_castps512_ps256(v), high));
}

// Pass 1 of the softmax on 16 keys of a row at s, as scanAvx2: their running max in mx, and x·0
// added to `nan`. Masked: the lanes `lanes` only; the others are not read (0.0, finite) and do not
// count for the max.
template <bool Masked>
ATTNSCOPE_AVX512_INLINE void scanAvx512(const float* s, __mmask16 lanes, __m512& mx, __m512& nan) {
  const __m512 x = Masked ? _mm512_maskz_loadu_ps(lanes, s) : _mm512_loadu_ps(s);
  mx = Masked ? _mm512_mask_max_ps(mx, lanes, mx, x) : _mm512_max_ps(mx, x);
  nan = _mm512_fmadd_ps(x, _mm512_setzero_ps(), nan);
}

// Pass 2 of the softmax on 16 keys of a row at s (key bit `bit` in keep): p = 2^((s − m)·scale) in
// the lanes `lanes` (0 in the others), added to `sum`, then the keep bits applied and p written
// over s in the lanes `room`.
template <bool Masked>
ATTNSCOPE_AVX512_INLINE void weighAvx512(float* s, __mmask16 lanes, __mmask16 room, __m512 mv, __m512 scale,
                                         __m512& sum, const std::uint64_t* keep, std::size_t bit) {
  const __m512 x = Masked ? _mm512_maskz_loadu_ps(lanes, s) : _mm512_loadu_ps(s);
  __m512 p = exp2NonPositiveAvx512(_mm512_mul_ps(_mm512_sub_ps(x, mv), scale));
  if (Masked) p = _mm512_maskz_mov_ps(lanes, p);
  sum = _mm512_add_ps(sum, p);
  if (keep != nullptr) p = _mm512_maskz_mov_ps(keepMask16(keep, bit, Masked ? _mm_popcnt_u32(lanes) : 16), p);
  if (Masked)
    _mm512_mask_storeu_ps(s, room, p);
  else
    _mm512_storeu_ps(s, p);
}

// The online softmax step (tile_kernels.h) of R rows at once, 16 keys at a time: R independent
// chains of maxima and sums keep the vector units busy where one row's chain would wait on its
// own latency (with the earlier division and exp, 4 rows: a 128-key tile in 5.9 µs instead of 9.8
// row by row, Xeon; 8 rows are slower again). Row r has valid[r] unmasked keys. Pass 1 takes the
// max and flags anything not finite (x·0 is NaN only for ±∞ and NaN: one FMA a vector); pass 2
// writes p = 2^((s − m)·log2_scale) (0 for the kSoftmaxZeroKeys after the row's keys), sums it and
// applies the keep bits. The keys where every row has whole vectors take no mask and no branch (a
// full tile's softmax 4.4 → 2.2 µs with the fold, Zen 5); the ragged ends mask per row and
// vector. Each lane sums the keys j ≡ lane (mod 16) in order and the lanes are added in one fixed
// tree, so a row's bits do not depend on the rows beside it.
template <int R>
ATTNSCOPE_AVX512_INLINE void softmaxBlockAvx512(float* S, int lds, int nk, const int* valid, float log2_scale,
                                                const float* m_old, const std::uint64_t* keep,
                                                std::size_t keep_bit0, std::size_t keep_row_bits,
                                                SoftmaxRowResult* out) {
  const __m512 scale = _mm512_set1_ps(log2_scale), zero = _mm512_setzero_ps();
  int longest = 0, shortest = valid[0];
  __m512 mx[R], nan[R];  // nan: 0 while every score seen is finite
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    longest = std::max(longest, valid[r]);
    shortest = std::min(shortest, valid[r]);
    mx[r] = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    nan[r] = zero;
  }
  const int whole = shortest / 16 * 16;  // keys where every row has whole vectors (valid ≥ 0)
  for (int j = 0; j < whole; j += 16)
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) scanAvx512<false>(S + static_cast<std::ptrdiff_t>(r) * lds + j, 0xffff, mx[r], nan[r]);
  for (int j = whole; j < longest; j += 16)
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
      scanAvx512<true>(S + static_cast<std::ptrdiff_t>(r) * lds + j, firstLanes16(valid[r] - j), mx[r], nan[r]);
  __m512 mv[R], sum[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    out[r].max = std::max(m_old[r], _mm512_reduce_max_ps(mx[r]));
    mv[r] = _mm512_set1_ps(out[r].max);
    sum[r] = zero;
  }
  for (int j = 0; j < whole; j += 16)
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
      weighAvx512<false>(S + static_cast<std::ptrdiff_t>(r) * lds + j, 0xffff, 0xffff, mv[r], scale, sum[r], keep,
                         keep_bit0 + r * keep_row_bits + j);
  for (int j = whole, end = std::min(nk, longest + kSoftmaxZeroKeys); j < end; j += 16) {
    const __mmask16 in_tile = firstLanes16(nk - j);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const __mmask16 lanes = firstLanes16(valid[r] - j);
      float* s = S + static_cast<std::ptrdiff_t>(r) * lds + j;
      if (lanes != 0)  // its store zeroes the vector's lanes past the row's keys
        weighAvx512<true>(s, lanes, in_tile, mv[r], scale, sum[r], keep, keep_bit0 + r * keep_row_bits + j);
      else if (j < valid[r] + kSoftmaxZeroKeys)
        _mm512_mask_storeu_ps(s, in_tile, zero);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    out[r].sum = sumLanes16(sum[r]);
    out[r].finite = _mm512_cmp_ps_mask(nan[r], zero, _CMP_EQ_OQ) == 0xffff;
  }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

// The online softmax step of a tile (tile_kernels.h): blocks of 4 rows, then the last rows.
ATTNSCOPE_AVX512 void softmaxRowsAvx512(float* S, int lds, int n, int nk, int key_limit, float log2_scale,
                                        const float* m_old, const std::uint64_t* keep, std::size_t keep_bit0,
                                        std::size_t keep_row_bits, SoftmaxRowResult* out) {
  key_limit = clampLimit(key_limit, n, nk);
  constexpr int kRows = 4;
  int valid[kRows];
  int r = 0;
  for (; r + kRows <= n; r += kRows) {
    for (int i = 0; i < kRows; ++i) valid[i] = keysFor(r + i, key_limit, nk);
    softmaxBlockAvx512<kRows>(S + static_cast<std::ptrdiff_t>(r) * lds, lds, nk, valid, log2_scale, m_old + r,
                              keep, keep_bit0 + r * keep_row_bits, keep_row_bits, out + r);
  }
  for (; r < n; ++r) {
    valid[0] = keysFor(r, key_limit, nk);
    softmaxBlockAvx512<1>(S + static_cast<std::ptrdiff_t>(r) * lds, lds, nk, valid, log2_scale, m_old + r, keep,
                          keep_bit0 + r * keep_row_bits, keep_row_bits, out + r);
  }
}

constexpr TileKernels kAvx512Kernels{Isa::Avx512, scoresAvx512, accumulateAvx512, softmaxRowsAvx512};
#endif  // ATTNSCOPE_TILE_X86

const TileKernels* kernelsFromEnvironment() {
  if (const char* env = std::getenv("ATTNSCOPE_TILE_ISA"))
    for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512})
      if (std::strcmp(env, isaName(isa)) == 0 && isaSupported(isa)) return &tileKernels(isa);
  return &tileKernels(Isa::Auto);
}

std::atomic<const TileKernels*>& active() {
  static std::atomic<const TileKernels*> kernels{kernelsFromEnvironment()};
  return kernels;
}

}  // namespace

const TileKernels& tileKernels(Isa isa) {
  switch (runnableIsa(isa, "tile kernels")) {
#if ATTNSCOPE_TILE_X86
    case Isa::Avx2: return kAvx2Kernels;
    case Isa::Avx512: return kAvx512Kernels;
#endif
    default: return kScalarKernels;
  }
}

const TileKernels& activeTileKernels() { return *active().load(std::memory_order_relaxed); }

void setIsa(Isa isa) { active().store(&tileKernels(isa), std::memory_order_relaxed); }

}  // namespace attnscope
