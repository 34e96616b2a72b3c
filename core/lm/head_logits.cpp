// The output head's logits at a few positions (lm/head_logits.h): the scalar definition and its
// AVX2 and AVX-512 versions, chosen at run time.
#include "lm/head_logits.h"

#include <algorithm>

#include "engine/tile_kernels.h"

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define ATTNSCOPE_LOGITS_X86 1
#include <immintrin.h>
#define ATTNSCOPE_AVX2 __attribute__((target("avx2,fma")))
#define ATTNSCOPE_AVX512 __attribute__((target("avx512f,avx2,fma")))
#else
#define ATTNSCOPE_LOGITS_X86 0
#endif

namespace attnscope {

namespace {

constexpr int kLanes = 8;

// The tail (i ≥ d − d % 8) in order, then the lanes in order: the sum's last additions.
float finish(const double* lane, const double* x, const float* row, int whole, int d) {
  double sum = 0;
  for (int i = whole; i < d; ++i) sum += x[i] * static_cast<double>(row[i]);
  for (int k = 0; k < kLanes; ++k) sum += lane[k];
  return static_cast<float>(sum);
}

// [SECTION] Scalar: the definition
void logitsScalar(const double* x, int P, int d, const float* head, int rows, float* out, std::ptrdiff_t ld_out) {
  const int whole = d / kLanes * kLanes;
  for (int v = 0; v < rows; ++v) {
    const float* row = head + static_cast<std::ptrdiff_t>(v) * d;
    for (int p = 0; p < P; ++p) {
      const double* xp = x + static_cast<std::ptrdiff_t>(p) * d;
      double lane[kLanes] = {};
      for (int i = 0; i < whole; i += kLanes)
        for (int k = 0; k < kLanes; ++k) lane[k] += xp[i + k] * static_cast<double>(row[i + k]);
      out[p * ld_out + v] = finish(lane, xp, row, whole, d);
    }
  }
}

#if ATTNSCOPE_LOGITS_X86
// [SECTION] AVX-512: R rows × P positions, an 8-double register each
// Each product is exact in double, so an FMA adds the same value as the scalar loop's product and sum.
template <int R, int P>
ATTNSCOPE_AVX512 void rowsAvx512(const double* x, int d, const float* head, float* out, std::ptrdiff_t ld_out) {
  __m512d acc[R][P];
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p) acc[r][p] = _mm512_setzero_pd();
  const int whole = d / kLanes * kLanes;
  for (int i = 0; i < whole; i += kLanes) {
    __m512d xv[P];
    for (int p = 0; p < P; ++p) xv[p] = _mm512_loadu_pd(x + static_cast<std::ptrdiff_t>(p) * d + i);
    for (int r = 0; r < R; ++r) {
      const __m512d y = _mm512_cvtps_pd(_mm256_loadu_ps(head + static_cast<std::ptrdiff_t>(r) * d + i));
      for (int p = 0; p < P; ++p) acc[r][p] = _mm512_fmadd_pd(xv[p], y, acc[r][p]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p) {
      alignas(64) double lane[kLanes];
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
  const int whole = d / kLanes * kLanes;
  for (int i = 0; i < whole; i += kLanes) {
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
      alignas(32) double lane[kLanes];
      _mm256_store_pd(lane, lo[r][p]);
      _mm256_store_pd(lane + 4, hi[r][p]);
      out[p * ld_out + r] = finish(lane, x + static_cast<std::ptrdiff_t>(p) * d,
                                   head + static_cast<std::ptrdiff_t>(r) * d, whole, d);
    }
}

using RowsKernel = void (*)(const double*, int, const float*, float*, std::ptrdiff_t);

// The kernels for P positions at once (P = 1 … 4): a block of `rows` rows of the head (R·P
// accumulators of 8 lanes within the registers), and one row for the last.
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
#endif  // ATTNSCOPE_LOGITS_X86

}  // namespace

void headLogits(const double* x, int P, int d, const float* head, int rows, float* out, std::ptrdiff_t ld_out,
                Isa isa) {
  isa = isa == Isa::Auto ? activeTileKernels().isa : runnableIsa(isa, "the head's logits");
#if ATTNSCOPE_LOGITS_X86
  if (isa != Isa::Scalar) {
    // Positions in groups of up to 4, each group reading the rows once.
    for (int p0 = 0; p0 < P; p0 += 4) {
      const int n = std::min(4, P - p0);
      const PositionKernels k = isa == Isa::Avx512 ? avx512Kernels(n) : avx2Kernels(n);
      const double* xg = x + static_cast<std::ptrdiff_t>(p0) * d;
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
