// The AVX-512 version of the fused attention's micro-kernels (tile_kernels.h): 16 floats a vector
// (AVX-512F, with the AVX2 helpers of tile_kernels_internal.h inlined). Every function carries its
// target attribute; tile_kernels.cpp runs them only where the CPU has AVX-512F.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "engine/tile_kernels_internal.h"

#if ATTNSCOPE_SIMD_X86
namespace attnscope::tile {

namespace {

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

// S = Q·Kᵀ (tile_kernels.h) as a packed linear product: scoresPacked. Q: n × hw (ldq), K: nk × hw
// (ldk), S: n × nk (lds).
ATTNSCOPE_AVX512 void scoresAvx512(int n, int nk, int hw, const float* Q, int ldq, const float* K, int ldk, float* S,
                                   int lds, int key_limit) {
  scoresPacked(Isa::Avx512, n, nk, hw, Q, ldq, K, ldk, S, lds, key_limit);
}

// acc += P·V on an R × NV register block of 16-column vectors (Masked: one vector of the first
// hw % 16 columns), in chunks of kKeyChunk keys as accumulateBlockAvx2: one broadcast of P per row
// and key. p: R × keys (ldp), v: keys × columns (ldv), a: R × columns (lda).
template <int R, int NV, bool Masked>
ATTNSCOPE_AVX512_INLINE void accumulateBlockAvx512(int keys, const float* p, int ldp, const float* v, int ldv, float* a,
                                                   int lda, __mmask16 tail) {
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

// acc += P·V for one block of R rows, its columns 32 at a time (two vectors: with 6 rows, 12
// accumulators), then a remaining whole vector, then the ragged end. p: R × keys (ldp),
// V: keys × hw (ldv), a: R × hw (lda).
template <int R>
ATTNSCOPE_AVX512 void accumulateRowsAvx512(int keys, int hw, const float* p, int ldp, const float* V, int ldv, float* a,
                                           int lda, __mmask16 tail) {
  int c = 0;
  for (; c + 32 <= hw; c += 32) accumulateBlockAvx512<R, 2, false>(keys, p, ldp, V + c, ldv, a + c, lda, tail);
  if (c + 16 <= hw) {
    accumulateBlockAvx512<R, 1, false>(keys, p, ldp, V + c, ldv, a + c, lda, tail);
    c += 16;
  }
  if (c < hw) accumulateBlockAvx512<R, 1, true>(keys, p, ldp, V + c, ldv, a + c, lda, tail);
}

// acc += P·V (tile_kernels.h): P n × nk (ldp), V nk × hw (ldv), acc n × hw (ldacc). Blocks of 6
// rows × 32 columns, the last rows one by one.
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
// own latency (4 rows; 8 are slower again: docs/engine-measurements.md). S: R × nk (lds); row r
// has valid[r] unmasked keys; m_old, out: R. Pass 1 takes the max and flags anything not finite
// (x·0 is NaN only for ±∞ and NaN: one FMA a vector); pass 2 writes p = 2^((s − m)·log2_scale) (0
// for the kSoftmaxZeroKeys after the row's keys), sums it and applies the keep bits. The keys
// where every row has whole vectors take no mask and no branch; the ragged ends mask per row and
// vector. Each lane sums the keys j ≡ lane (mod 16) in order and the lanes are added in one fixed
// tree, so a row's bits do not depend on the rows beside it.
template <int R>
ATTNSCOPE_AVX512_INLINE void softmaxBlockAvx512(float* S, int lds, int nk, const int* valid, float log2_scale,
                                                const float* m_old, const std::uint64_t* keep, std::size_t keep_bit0,
                                                std::size_t keep_row_bits, SoftmaxRowResult* out) {
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
// S: n × nk (lds), row r's unmasked keys j < r + key_limit; m_old, out: n.
ATTNSCOPE_AVX512 void softmaxRowsAvx512(float* S, int lds, int n, int nk, int key_limit, float log2_scale,
                                        const float* m_old, const std::uint64_t* keep, std::size_t keep_bit0,
                                        std::size_t keep_row_bits, SoftmaxRowResult* out) {
  key_limit = clampLimit(key_limit, n, nk);
  constexpr int kRows = 4;
  int valid[kRows];
  int r = 0;
  for (; r + kRows <= n; r += kRows) {
    for (int i = 0; i < kRows; ++i) valid[i] = keysFor(r + i, key_limit, nk);
    softmaxBlockAvx512<kRows>(S + static_cast<std::ptrdiff_t>(r) * lds, lds, nk, valid, log2_scale, m_old + r, keep,
                              keep_bit0 + r * keep_row_bits, keep_row_bits, out + r);
  }
  for (; r < n; ++r) {
    valid[0] = keysFor(r, key_limit, nk);
    softmaxBlockAvx512<1>(S + static_cast<std::ptrdiff_t>(r) * lds, lds, nk, valid, log2_scale, m_old + r, keep,
                          keep_bit0 + r * keep_row_bits, keep_row_bits, out + r);
  }
}

constexpr TileKernels kAvx512Kernels{Isa::Avx512, scoresAvx512, accumulateAvx512, softmaxRowsAvx512};

}  // namespace

const TileKernels& avx512Kernels() { return kAvx512Kernels; }

}  // namespace attnscope::tile
#endif  // ATTNSCOPE_SIMD_X86
