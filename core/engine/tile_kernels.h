// Micro-kernels of the fused attention kernel (attendRowsFused, docs/DESIGN.md §2.3): the
// products of one query block with one key tile, S = Q·Kᵀ and acc += P·V, and the tile's online
// softmax step. A head is narrow (w = 32 for medium, 64 for GPT-2), so the products' inner
// dimension is too short for a general GEMM's packing to pay: these kernels read the row-major
// Q, K, V, P as they are (any row stride; dense rows of K are the fast path) and keep a small
// block of results in registers.
//
// The SIMD versions (AVX2/FMA; AVX-512) are chosen at run time from what the CPU has, never assumed
// from the build flags, as Mt19937 does; the scalar loops are the fallback everywhere else. Every
// version is deterministic: each result is summed in one fixed order that depends on neither the
// thread, nor the buffers' alignment, nor where in a register block the element falls.
#pragma once
#include <cstddef>
#include <cstdint>

#include "engine/simd_isa.h"

namespace attnscope {

class PackedLinear;

// One query row of a key tile after the online softmax step.
struct SoftmaxRowResult {
  float max;    // the new running max of the raw scores: max(m_old, the row's unmasked scores)
  float sum;    // Σ p over the row's unmasked keys, dropped ones included
  bool finite;  // every unmasked score was finite
};

// The softmax's factor for scores divided by `divisor` (√d_k, or 1 unscaled): log₂e ÷ divisor,
// rounded once to float. exp((s − m) ÷ divisor) = 2^((s − m)·log2Scale(divisor)): the division by
// √d_k and the change to base 2 are one multiplication (docs/DESIGN.md §2.3).
inline float log2Scale(float divisor) { return static_cast<float>(1.4426950408889634 / divisor); }

// How many keys after a row's last unmasked one softmaxRows sets to 0 (within the tile; beyond
// them it leaves S as it was): the rows of accumulate's register blocks (up to 6) read as far as
// the block's last row's keys. Zeroing the rest of a causal tile's upper triangle cost the
// diagonal tile's softmax a third of its time.
constexpr int kSoftmaxZeroKeys = 8;

struct TileKernels {
  Isa isa;  // never Auto

  // S = Q·Kᵀ for a query block and a key tile. Q: n × hw (row stride ldq), K: nk × hw (ldk),
  // S: n × nk (lds). Row r needs only the keys j < r + key_limit (the causal mask: key_limit =
  // first row's index − first key's index + 1; nk or more for all keys): beyond them S holds
  // anything (left unwritten, or scores a register block computed anyway), never past nk.
  void (*scores)(int n, int nk, int hw, const float* Q, int ldq, const float* K, int ldk, float* S, int lds,
                 int key_limit);

  // acc += P·V. P: n × nk (ldp), V: nk × hw (ldv), acc: n × hw (ldacc). Row r's P must be 0 for the
  // kSoftmaxZeroKeys keys after its key limit (r + key_limit), within nk, as softmaxRows leaves it:
  // a register block reads the keys of its last row, at most kSoftmaxZeroKeys − 1 rows down, and no
  // further. Each element sums the keys in chunks (kKeyChunk in tile_kernels_internal.h), each in
  // order from 0, and adds each chunk's sum to acc in order.
  void (*accumulate)(int n, int nk, int hw, const float* P, int ldp, const float* V, int ldv, float* acc, int ldacc,
                     int key_limit);

  // The online softmax step of a key tile for n query rows. S: n × nk raw scores (lds); row r's
  // unmasked keys are j < r + key_limit, as for scores. Per row: the new max of the raw scores
  // m = max(m_old[r], the row's unmasked scores), then for its unmasked keys s = 2^t with
  // t = float(float(s − m)·log2_scale) (log2_scale = log2Scale(√d_k) > 0: the scores' scaling
  // folded into the exponent), 0 for at least the next kSoftmaxZeroKeys keys (within nk; beyond
  // them S may keep what it held); with `keep` (dropout) the dropped p are then set to 0 but still
  // counted in the sum: key j of row r is kept iff bit keep_bit0 + r·keep_row_bits + j is set
  // (bit i % 64 of word i / 64). out[r] = {m, Σ p, every unmasked score finite}; a row without
  // unmasked keys keeps m_old[r] and sums to 0. 2^t is exp2f's on the scalar version, within 2 ulp
  // of it on the SIMD ones (AVX2: exactly 0 below 2⁻¹²⁶·⁵, where 2^t is subnormal).
  void (*softmaxRows)(float* S, int lds, int n, int nk, int key_limit, float log2_scale, const float* m_old,
                      const std::uint64_t* keep, std::size_t keep_bit0, std::size_t keep_row_bits,
                      SoftmaxRowResult* out);
};

// TileKernels::scores of the SIMD versions with the key tile packed already: `keys` is the tile's
// nk keys × hw packed as they pack it (PackedLinear::pack(K, nk, hw, ldk, nullptr)), so that the
// query blocks of a head share one packing; the same products, the same bits. isa: Avx2 or Avx512.
void scoresOfPackedKeys(Isa isa, int n, const PackedLinear& keys, const float* Q, int ldq, float* S, int lds,
                        int key_limit);

// The kernels of `isa` (Auto: the widest this CPU runs). Throws std::invalid_argument when this
// CPU cannot run them.
const TileKernels& tileKernels(Isa isa);
// The kernels the fused attention uses: tileKernels(Auto), unless ATTNSCOPE_TILE_ISA=scalar|avx2|
// avx512 names one this CPU runs, or setIsa changed them (tests and measurements; not while a
// computation runs).
const TileKernels& activeTileKernels();
void setIsa(Isa isa);

}  // namespace attnscope
