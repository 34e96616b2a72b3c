// The output head's logits at a few positions (lm/head_logits.h): the scalar definition and its
// AVX2 and AVX-512 versions, chosen at run time.
#include "lm/head_logits.h"

#include <algorithm>
#include <vector>

#include "engine/simd_targets.h"
#include "engine/sum_in_double.h"
#include "engine/tile_kernels.h"

namespace attnscope {

namespace {

// [SECTION] Scalar: the definition

void logitsScalar(const float* x, int P, int d, const float* head, int rows, float* out, std::ptrdiff_t ld_out) {
  for (int v = 0; v < rows; ++v) {
    const float* row = head + static_cast<std::ptrdiff_t>(v) * d;
    for (int p = 0; p < P; ++p) {
      const float* xp = x + static_cast<std::ptrdiff_t>(p) * d;
      out[p * ld_out + v] = static_cast<float>(
          sumInDouble(d, [xp, row](int i) { return static_cast<double>(xp[i]) * row[i]; }));
    }
  }
}

#if ATTNSCOPE_SIMD_X86
// sumInDouble's last additions, after its lanes: the tail in order, then the lanes in order.
float finish(const double* lane, const double* x, const float* row, int whole, int d) {
  double sum = 0;
  for (int i = whole; i < d; ++i) sum += x[i] * static_cast<double>(row[i]);
  for (int k = 0; k < kSumLanes; ++k) sum += lane[k];
  return static_cast<float>(sum);
}

// [SECTION] AVX-512: R rows × P positions, an 8-double register each

// x: P × d in double (converted once a call). An FMA of two floats' exact product adds what the
// scalar loop's product and sum add.
template <int R, int P>
ATTNSCOPE_AVX512 void rowsAvx512(const double* x, int d, const float* head, float* out, std::ptrdiff_t ld_out) {
  __m512d acc[R][P];
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p) acc[r][p] = _mm512_setzero_pd();
  const int whole = d / kSumLanes * kSumLanes;
  for (int i = 0; i < whole; i += kSumLanes) {
    __m512d xv[P];
    for (int p = 0; p < P; ++p) xv[p] = _mm512_loadu_pd(x + static_cast<std::ptrdiff_t>(p) * d + i);
    for (int r = 0; r < R; ++r) {
      const float* row = head + static_cast<std::ptrdiff_t>(r) * d + i;
      const __m512d y = _mm512_maskz_cvtps_pd(0xff, _mm256_loadu_ps(row));  // not cvtps_pd: simd_targets.h
      for (int p = 0; p < P; ++p) acc[r][p] = _mm512_fmadd_pd(xv[p], y, acc[r][p]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p) {
      alignas(64) double lane[kSumLanes];
      _mm512_store_pd(lane, acc[r][p]);
      out[p * ld_out + r] = finish(lane, x + static_cast<std::ptrdiff_t>(p) * d,
                                   head + static_cast<std::ptrdiff_t>(r) * d, whole, d);
    }
}

// [SECTION] AVX2: R rows × P positions, lanes 0–3 and 4–7 in two 4-double registers

template <int R, int P>
ATTNSCOPE_AVX2 void rowsAvx2(const double* x, int d, const float* head, float* out, std::ptrdiff_t ld_out) {
  __m256d lo[R][P], hi[R][P];
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p) lo[r][p] = hi[r][p] = _mm256_setzero_pd();
  const int whole = d / kSumLanes * kSumLanes;
  for (int i = 0; i < whole; i += kSumLanes) {
    for (int r = 0; r < R; ++r) {
      const float* row = head + static_cast<std::ptrdiff_t>(r) * d + i;
      const __m256d y_lo = _mm256_cvtps_pd(_mm_loadu_ps(row)), y_hi = _mm256_cvtps_pd(_mm_loadu_ps(row + 4));
      for (int p = 0; p < P; ++p) {
        const double* xp = x + static_cast<std::ptrdiff_t>(p) * d + i;
        lo[r][p] = _mm256_fmadd_pd(_mm256_loadu_pd(xp), y_lo, lo[r][p]);
        hi[r][p] = _mm256_fmadd_pd(_mm256_loadu_pd(xp + 4), y_hi, hi[r][p]);
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p) {
      alignas(32) double lane[kSumLanes];
      _mm256_store_pd(lane, lo[r][p]);
      _mm256_store_pd(lane + 4, hi[r][p]);
      out[p * ld_out + r] = finish(lane, x + static_cast<std::ptrdiff_t>(p) * d,
                                   head + static_cast<std::ptrdiff_t>(r) * d, whole, d);
    }
}

// The kernels for P positions at once (P = 1 … 4): a block of `rows` rows of the head (R·P
// accumulators of 8 lanes within the registers), and one row for the last.
using RowsKernel = void (*)(const double*, int, const float*, float*, std::ptrdiff_t);
struct PositionKernels {
  RowsKernel block, one;
  int rows;
};

PositionKernels avx512Kernels(int P) {
  switch (P) {
    case 1: return {rowsAvx512<8, 1>, rowsAvx512<1, 1>, 8};
    case 2: return {rowsAvx512<4, 2>, rowsAvx512<1, 2>, 4};
    case 3: return {rowsAvx512<2, 3>, rowsAvx512<1, 3>, 2};
    default: return {rowsAvx512<2, 4>, rowsAvx512<1, 4>, 2};
  }
}

PositionKernels avx2Kernels(int P) {
  switch (P) {
    case 1: return {rowsAvx2<4, 1>, rowsAvx2<1, 1>, 4};
    case 2: return {rowsAvx2<2, 2>, rowsAvx2<1, 2>, 2};
    case 3: return {rowsAvx2<1, 3>, rowsAvx2<1, 3>, 1};
    default: return {rowsAvx2<1, 4>, rowsAvx2<1, 4>, 1};
  }
}
#endif  // ATTNSCOPE_SIMD_X86

}  // namespace

void headLogits(const float* x, int P, int d, const float* head, int rows, float* out, std::ptrdiff_t ld_out, Isa isa) {
  isa = isa == Isa::Auto ? activeTileKernels().isa : runnableIsa(isa, "the head's logits");
#if ATTNSCOPE_SIMD_X86
  if (isa != Isa::Scalar) {
    const std::vector<double> xd(x, x + static_cast<std::ptrdiff_t>(P) * d);  // each value converted once
    // Positions in groups of up to 4, each group reading the rows once.
    for (int p0 = 0; p0 < P; p0 += 4) {
      const PositionKernels k = isa == Isa::Avx512 ? avx512Kernels(std::min(4, P - p0))
                                                   : avx2Kernels(std::min(4, P - p0));
      const double* xg = xd.data() + static_cast<std::ptrdiff_t>(p0) * d;
      float* og = out + p0 * ld_out;
      int v = 0;
      for (; v + k.rows <= rows; v += k.rows) k.block(xg, d, head + static_cast<std::ptrdiff_t>(v) * d, og + v, ld_out);
      for (; v < rows; ++v) k.one(xg, d, head + static_cast<std::ptrdiff_t>(v) * d, og + v, ld_out);
    }
    return;
  }
#endif
  logitsScalar(x, P, d, head, rows, out, ld_out);
}

}  // namespace attnscope
