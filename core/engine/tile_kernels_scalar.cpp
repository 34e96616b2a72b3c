// The scalar version of the fused attention's micro-kernels (tile_kernels.h): the fallback on
// every CPU, and the plain loops the SIMD versions are read against.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "engine/tile_kernels_internal.h"

namespace attnscope::tile {

namespace {

// S = Q·Kᵀ. Q: n × hw (ldq), K: nk × hw (ldk), S: n × nk (lds); row r only up to its key limit.
void scoresScalar(int n, int nk, int hw, const float* Q, int ldq, const float* K, int ldk, float* S, int lds,
                  int key_limit) {
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
void accumulateScalar(int n, int nk, int hw, const float* P, int ldp, const float* V, int ldv, float* acc, int ldacc,
                      int key_limit) {
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
SoftmaxRowResult softmaxRowScalar(float* s, int nk, int valid, float log2_scale, float m_old, const std::uint64_t* keep,
                                  std::size_t keep_bit0) {
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

// The online softmax step of a tile, row after row (tile_kernels.h). S: n × nk (lds), row r's
// unmasked keys j < r + key_limit; m_old, out: n.
void softmaxRowsScalar(float* S, int lds, int n, int nk, int key_limit, float log2_scale, const float* m_old,
                       const std::uint64_t* keep, std::size_t keep_bit0, std::size_t keep_row_bits,
                       SoftmaxRowResult* out) {
  key_limit = clampLimit(key_limit, n, nk);
  for (int r = 0; r < n; ++r)
    out[r] = softmaxRowScalar(S + static_cast<std::ptrdiff_t>(r) * lds, nk, keysFor(r, key_limit, nk), log2_scale,
                              m_old[r], keep, keep_bit0 + r * keep_row_bits);
}

constexpr TileKernels kScalarKernels{Isa::Scalar, scoresScalar, accumulateScalar, softmaxRowsScalar};

}  // namespace

const TileKernels& scalarKernels() { return kScalarKernels; }

}  // namespace attnscope::tile
