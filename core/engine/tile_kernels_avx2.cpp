// The AVX2 + FMA version of the fused attention's micro-kernels (tile_kernels.h): 8 floats a
// vector. Every function carries its target attribute (tile_kernels_internal.h); tile_kernels.cpp
// runs them only where the CPU has AVX2 and FMA.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "engine/tile_kernels_internal.h"

#if ATTNSCOPE_SIMD_X86
namespace attnscope::tile {

namespace {

// All ones in the first `count` lanes (0 … 8): the masked loads and stores of ragged ends, which
// neither read nor write past them.
ATTNSCOPE_AVX2_INLINE __m256i firstLanes(int count) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// S = Q·Kᵀ (tile_kernels.h) as a packed linear product: scoresPacked. Q: n × hw (ldq), K: nk × hw
// (ldk), S: n × nk (lds).
ATTNSCOPE_AVX2 void scoresAvx2(int n, int nk, int hw, const float* Q, int ldq, const float* K, int ldk, float* S,
                               int lds, int key_limit) {
  scoresPacked(Isa::Avx2, n, nk, hw, Q, ldq, K, ldk, S, lds, key_limit);
}

// acc += P·V on an R × NV register block: R rows × NV vectors of 8 columns (Masked: one vector of
// the first hw % 8 columns). Each element sums each chunk of kKeyChunk keys in order, one FMA a
// key, from 0, and adds the chunk to acc: whatever the block, the same operations.
// p: R × keys (ldp), v: keys × columns (ldv), a: R × columns (lda).
template <int R, int NV, bool Masked>
ATTNSCOPE_AVX2_INLINE void accumulateBlockAvx2(int keys, const float* p, int ldp, const float* v, int ldv, float* a,
                                               int lda, __m256i tail) {
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

// acc += P·V for one block of R rows, its columns 32 at a time, then the remaining whole vectors,
// then the ragged end. p: R × keys (ldp), V: keys × hw (ldv), a: R × hw (lda).
template <int R>
ATTNSCOPE_AVX2 void accumulateRowsAvx2(int keys, int hw, const float* p, int ldp, const float* V, int ldv, float* a,
                                       int lda, __m256i tail) {
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
ATTNSCOPE_AVX2 void accumulateAvx2(int n, int nk, int hw, const float* P, int ldp, const float* V, int ldv, float* acc,
                                   int ldacc, int key_limit) {
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

// 2^t for t ≤ 0 (the softmax's exponent, tile_kernels.h), 8 at a time: t = n + f with n the
// nearest integer, 2^f by the polynomial, × 2^n. n comes from the magic number 1.5·2^23 + 127:
// t + magic rounds to the nearest integer (its ulp is 1), minus magic is n, and its low bits are
// the exponent field n + 127 of 2^n (AVX2 has no vscalefps; vroundps and the conversions cost
// more). The clamp at −127 keeps the field ≥ 0, and n = −127 (t < −126.5, where 2^t is
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

// The largest of the 8 lanes.
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
// softmaxBlockAvx512: R independent chains of maxima and sums keep the vector units busy (4 rows
// were the fastest; 8 spill: docs/engine-measurements.md). S: R × nk (lds); row r has valid[r]
// unmasked keys; m_old, out: R. Pass 1 takes the max and flags anything not finite; pass 2 writes
// p = 2^((s − m)·log2_scale) (0 for the kSoftmaxZeroKeys after the row's keys), sums it and applies
// the keep bits. Each lane sums the keys j ≡ lane (mod 8) in order and the lanes are added in one
// fixed tree, so a row's bits do not depend on the rows beside it. The keys where every row has
// whole vectors take no branch; the ragged ends branch per row and vector.
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
    for (int r = 0; r < R; ++r) scanAvx2<false>(S + static_cast<std::ptrdiff_t>(r) * lds + j, 8, mx[r], nan[r]);
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
// S: n × nk (lds), row r's unmasked keys j < r + key_limit; m_old, out: n.
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

}  // namespace

const TileKernels& avx2Kernels() { return kAvx2Kernels; }

}  // namespace attnscope::tile
#endif  // ATTNSCOPE_SIMD_X86
