// Which version of the fused attention's micro-kernels runs (tile_kernels.h): the widest this CPU
// runs, detected at run time (simd_isa.h), or the one ATTNSCOPE_TILE_ISA or setIsa names; and the
// packed scores both SIMD versions share.
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "engine/packed_linear.h"
#include "engine/tile_kernels_internal.h"

namespace attnscope {

// S = Q·Kᵀ as a packed linear product (packed_linear.h), the SIMD versions' scores: the key tile
// is packed as the weights (W = K, one output per key, transposed in registers), the query rows
// are broadcast from Q as they lie, and a register block holds 12 rows × 32 keys (AVX-512; 6 × 16
// with AVX2), each score one chain of FMAs over the head's columns in order. The key limit skips
// the panels of 32 keys beyond a row's last. Dot products of one row against 16 keys, summed
// across lanes by shuffles, were slower, packing included (docs/engine-measurements.md).
void tile::scoresPacked(Isa isa, int n, int nk, int hw, const float* Q, int ldq, const float* K, int ldk, float* S,
                        int lds, int key_limit) {
  thread_local PackedLinear key_tile;  // its memory stays with the thread
  key_tile.pack(K, nk, hw, ldk, nullptr);
  scoresOfPackedKeys(isa, n, key_tile, Q, ldq, S, lds, key_limit);
}

void scoresOfPackedKeys(Isa isa, int n, const PackedLinear& keys, const float* Q, int ldq, float* S, int lds,
                        int key_limit) {
  keys.apply(n, Q, ldq, S, lds, isa, tile::clampLimit(key_limit, n, keys.outputs()));
}

namespace {

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
#if ATTNSCOPE_SIMD_X86
    case Isa::Avx2: return tile::avx2Kernels();
    case Isa::Avx512: return tile::avx512Kernels();
#endif
    default: return tile::scalarKernels();
  }
}

const TileKernels& activeTileKernels() { return *active().load(std::memory_order_relaxed); }

void setIsa(Isa isa) { active().store(&tileKernels(isa), std::memory_order_relaxed); }

}  // namespace attnscope
