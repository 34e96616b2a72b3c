// Shared by the versions of the fused attention's micro-kernels (tile_kernels.h): one file per
// instruction set — tile_kernels_scalar.cpp (the fallback, and the readable definition),
// tile_kernels_avx2.cpp, tile_kernels_avx512.cpp — and tile_kernels.cpp, which picks the version
// this CPU runs. Every file is built with the project's flags; the SIMD functions carry their own
// target attributes and run only where the CPU was found to have the instructions, never assumed.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "engine/simd_isa.h"
#include "engine/simd_targets.h"
#include "engine/tile_kernels.h"

namespace attnscope::tile {

// Keys a block whose last row is `last_row` needs: j < last_row + key_limit, within [0, nk].
inline int keysFor(int last_row, int key_limit, int nk) { return std::clamp(last_row + key_limit, 0, nk); }

// key_limit may be any int (callers pass nk for "all keys"); clamped so that row + key_limit
// cannot overflow.
inline int clampLimit(int key_limit, int n, int nk) { return std::clamp(key_limit, -n, nk); }

// acc += P·V sums the keys of a tile in chunks of this many, in order, each from 0, and adds the
// chunks' sums to acc in order. One float chain over a whole tile was twice as far from the
// reference as chunks (docs/engine-measurements.md), which cost one load, add and store per 64
// FMAs.
constexpr int kKeyChunk = 64;

inline bool keptBit(const std::uint64_t* keep, std::size_t i) { return (keep[i >> 6] >> (i & 63)) & 1; }

// 2^f for f in [−½, ½]: a degree-6 polynomial in Horner form, fitted to 2^f's relative error
// (near-minimax; within 1.7 ulp of 2^f when evaluated in float with FMAs), shared by both versions.
constexpr float kExp2Coefficients[] = {0x1.41fbbcp-13f, 0x1.5f3e54p-10f, 0x1.3b2d4cp-7f,
                                       0x1.c6aee8p-5f,  0x1.ebfbdcp-3f,  0x1.62e430p-1f};

// S = Q·Kᵀ as a packed linear product, the scores of both SIMD versions (tile_kernels.cpp).
// Q: n × hw (ldq), K: nk × hw (ldk), S: n × nk (lds); row r only up to its key limit.
void scoresPacked(Isa isa, int n, int nk, int hw, const float* Q, int ldq, const float* K, int ldk, float* S, int lds,
                  int key_limit);

#if ATTNSCOPE_SIMD_X86
// Σ of the 8 lanes in one fixed order, ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)), for every call.
ATTNSCOPE_AVX2_INLINE float sumLanes(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
#endif

// The versions' tables (each in its own file; the SIMD ones only on x86 with GCC or Clang).
const TileKernels& scalarKernels();
#if ATTNSCOPE_SIMD_X86
const TileKernels& avx2Kernels();
const TileKernels& avx512Kernels();
#endif

}  // namespace attnscope::tile
