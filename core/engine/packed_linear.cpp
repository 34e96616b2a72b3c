#include "engine/packed_linear.h"

#include "engine/simd_targets.h"
#include "engine/tensor.h"
#include "engine/tile_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace attnscope {

namespace {

constexpr int kPanel = PackedLinear::kPanel;

// Inputs per block of a product with many (apply): a block's part of a panel (96 KiB) and of 128
// rows of X (384 KiB) stay in a 512 KiB L2 while the block's panels pass, as in the products of
// 768 inputs, where GPT-2's out_proj of the MLP (3072 inputs) streamed a 384 KiB panel and 1.5 MiB
// of X from L3.
constexpr int kInputBlock = 768;

// What one panel's kernel reads and writes: rows [0, m) of X and Y, the panel's `cols` outputs
// (kPanel but in the last panel) starting at Y's column 0. Each output's chain of FMAs starts at
// the bias, or, for a later block of inputs (`from_y`), at what Y holds: the chain of the inputs
// before, continued — the same bits as one chain.
struct PanelJob {
  int m, in, cols;
  const float* x;  // m × in, row stride ldx
  std::ptrdiff_t ldx;
  const float* w;  // in × kPanel
  const float* b;  // kPanel
  float* y;        // m × cols, row stride ldy
  std::ptrdiff_t ldy;
  bool from_y;
  const float* next_w = nullptr;  // the panel the product reads after this one (in × kPanel), or null
};

// The part of the next panel a block of rows fetches into L2 while it computes (PanelJob::next_w):
// `steps` input indices' runs of kPanel floats from `at`. At 64 rows a layer's weights are used 64
// times each and come from memory (GPT-2 small: 340 MB, past any L3), and a panel's first row block
// waited on each cache line: 128 bytes every 12 cycles, twice what one core's memory gives. Fetched
// a panel ahead, shared among the row blocks, the wait overlaps the arithmetic (§2.3).
struct Prefetch {
  const float* at = nullptr;
  int steps = 0;
};

// Row block `block` of `blocks`' share of the next panel.
Prefetch prefetchShare(const PanelJob& j, int block, int blocks) {
  if (j.next_w == nullptr) return {};
  const int span = (j.in + blocks - 1) / blocks, from = std::min(block * span, j.in);
  return {j.next_w + static_cast<std::ptrdiff_t>(from) * kPanel, std::min(span, j.in - from)};
}

// ---------------------------------------------------------------- scalar: the definition

// y[r][c] = fma(x[r][in−1], w[in−1][c], … fma(x[r][0], w[0][c], b[c])). Shapes: X m × in,
// the panel in × kPanel, Y m × cols.
bool panelScalar(const PanelJob& j) {
  bool finite = true;
  for (int r = 0; r < j.m; ++r) {
    float* y = j.y + r * j.ldy;
    for (int c = 0; c < j.cols; ++c) {
      float acc = j.from_y ? y[c] : j.b[c];
      for (int i = 0; i < j.in; ++i) acc = std::fma(j.x[r * j.ldx + i], j.w[i * kPanel + c], acc);
      y[c] = acc;
    }
    finite = finite && allFinite(y, static_cast<std::size_t>(j.cols));
  }
  return finite;
}

#if ATTNSCOPE_SIMD_X86
// Input index i's two cache lines of the next panel into L2, while i is within the block's share.
inline void prefetchStep(const Prefetch& next, int i) {
  if (i >= next.steps) return;
  _mm_prefetch(reinterpret_cast<const char*>(next.at + i * kPanel), _MM_HINT_T1);
  _mm_prefetch(reinterpret_cast<const char*>(next.at + i * kPanel + 16), _MM_HINT_T1);
}

// ---------------------------------------------------------------- AVX-512: MR × 32 in registers

// Rows [r0, r0 + MR) of the panel: 2·MR accumulators, two loads of the panel and MR broadcasts per
// input index. Returns whether the rows' outputs are finite (x − x is 0 for a finite x, NaN else).
template <int MR>
ATTNSCOPE_AVX512_INLINE bool rowsAvx512(const PanelJob& j, int r0, Prefetch next) {
  __m512 lo[MR], hi[MR];
  const __mmask16 m_lo = j.cols >= 16 ? 0xffff : static_cast<__mmask16>((1u << j.cols) - 1);
  const __mmask16 m_hi = j.cols >= 32 ? 0xffff : j.cols <= 16 ? 0 : static_cast<__mmask16>((1u << (j.cols - 16)) - 1);
  if (j.from_y) {
#pragma GCC unroll 12
    for (int r = 0; r < MR; ++r) {
      const float* y = j.y + (r0 + r) * j.ldy;
      lo[r] = _mm512_maskz_loadu_ps(m_lo, y), hi[r] = _mm512_maskz_loadu_ps(m_hi, y + 16);
    }
  } else {
    const __m512 b_lo = _mm512_loadu_ps(j.b), b_hi = _mm512_loadu_ps(j.b + 16);
#pragma GCC unroll 12
    for (int r = 0; r < MR; ++r) lo[r] = b_lo, hi[r] = b_hi;
  }
  const float* x = j.x + r0 * j.ldx;
  for (int i = 0; i < j.in; ++i) {
    prefetchStep(next, i);
    const __m512 w_lo = _mm512_loadu_ps(j.w + i * kPanel), w_hi = _mm512_loadu_ps(j.w + i * kPanel + 16);
#pragma GCC unroll 12
    for (int r = 0; r < MR; ++r) {
      const __m512 a = _mm512_set1_ps(x[r * j.ldx + i]);
      lo[r] = _mm512_fmadd_ps(a, w_lo, lo[r]);
      hi[r] = _mm512_fmadd_ps(a, w_hi, hi[r]);
    }
  }
  __m512 z = _mm512_setzero_ps();
#pragma GCC unroll 12
  for (int r = 0; r < MR; ++r) {
    float* y = j.y + (r0 + r) * j.ldy;
    _mm512_mask_storeu_ps(y, m_lo, lo[r]);
    _mm512_mask_storeu_ps(y + 16, m_hi, hi[r]);
    z = _mm512_mask_add_ps(z, m_lo, z, _mm512_sub_ps(lo[r], lo[r]));
    z = _mm512_mask_add_ps(z, m_hi, z, _mm512_sub_ps(hi[r], hi[r]));
  }
  return _mm512_cmp_ps_mask(z, z, _CMP_ORD_Q) == 0xffff;
}

ATTNSCOPE_AVX512 bool panelAvx512(const PanelJob& j) {
  constexpr int MR = 12;  // 24 accumulators, 2 panel registers and a broadcast of the 32
  const int blocks = (j.m + MR - 1) / MR;
  bool finite = true;
  int r = 0;
  for (; r + MR <= j.m; r += MR) finite &= rowsAvx512<MR>(j, r, prefetchShare(j, r / MR, blocks));
  const Prefetch last = prefetchShare(j, r / MR, blocks);
  switch (j.m - r) {  // the block's last rows
    case 11: finite &= rowsAvx512<11>(j, r, last); break;
    case 10: finite &= rowsAvx512<10>(j, r, last); break;
    case 9: finite &= rowsAvx512<9>(j, r, last); break;
    case 8: finite &= rowsAvx512<8>(j, r, last); break;
    case 7: finite &= rowsAvx512<7>(j, r, last); break;
    case 6: finite &= rowsAvx512<6>(j, r, last); break;
    case 5: finite &= rowsAvx512<5>(j, r, last); break;
    case 4: finite &= rowsAvx512<4>(j, r, last); break;
    case 3: finite &= rowsAvx512<3>(j, r, last); break;
    case 2: finite &= rowsAvx512<2>(j, r, last); break;
    case 1: finite &= rowsAvx512<1>(j, r, last); break;
    default: break;
  }
  return finite;
}

// ---------------------------------------------------------------- AVX2: MR × 16, two per panel (a row or two: MR × 32)

// Rows [r0, r0 + MR) of NV · 8 of the panel's outputs from column c0: MR · NV accumulators, NV
// loads of the panel and MR broadcasts per input index. Outputs past the panel's `cols` go through
// a row buffer.
template <int MR, int NV>
ATTNSCOPE_AVX2_BLOCK bool rowsAvx2(const PanelJob& j, int r0, int c0, Prefetch next = {}) {
  __m256 acc[MR][NV];
  const int cols = std::min(j.cols - c0, 8 * NV);
  if (!j.from_y) {
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
      for (int k = 0; k < NV; ++k) acc[r][k] = _mm256_loadu_ps(j.b + c0 + 8 * k);
  } else {
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const float* y = j.y + (r0 + r) * j.ldy + c0;
      alignas(32) float row[8 * NV] = {};
      if (cols < 8 * NV) std::memcpy(row, y, cols * sizeof(float));
#pragma GCC unroll 4
      for (int k = 0; k < NV; ++k) acc[r][k] = _mm256_loadu_ps(cols == 8 * NV ? y + 8 * k : row + 8 * k);
    }
  }
  const float* x = j.x + r0 * j.ldx;
  for (int i = 0; i < j.in; ++i) {
    prefetchStep(next, i);
    __m256 w[NV];
#pragma GCC unroll 4
    for (int k = 0; k < NV; ++k) w[k] = _mm256_loadu_ps(j.w + i * kPanel + c0 + 8 * k);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m256 a = _mm256_broadcast_ss(x + r * j.ldx + i);
#pragma GCC unroll 4
      for (int k = 0; k < NV; ++k) acc[r][k] = _mm256_fmadd_ps(a, w[k], acc[r][k]);
    }
  }
  __m256 z = _mm256_setzero_ps();
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    float* y = j.y + (r0 + r) * j.ldy + c0;
    if (cols == 8 * NV) {
#pragma GCC unroll 4
      for (int k = 0; k < NV; ++k) {
        _mm256_storeu_ps(y + 8 * k, acc[r][k]);
        z = _mm256_add_ps(z, _mm256_sub_ps(acc[r][k], acc[r][k]));
      }
    } else {
      alignas(32) float row[8 * NV];
#pragma GCC unroll 4
      for (int k = 0; k < NV; ++k) _mm256_store_ps(row + 8 * k, acc[r][k]);
      std::memcpy(y, row, cols * sizeof(float));
      if (!allFinite(row, static_cast<std::size_t>(cols))) z = _mm256_set1_ps(NAN);
    }
  }
  return _mm256_movemask_ps(_mm256_cmp_ps(z, z, _CMP_UNORD_Q)) == 0;
}

// The register arrays' loops are unrolled by pragma: without it GCC kept the AVX2 accumulators in
// memory, storing all 12 on every input index (docs/engine-measurements.md). Each block is a
// function of its own (ATTNSCOPE_AVX2_BLOCK): inlined here, GCC 12 kept two of the 4- and 5-row
// blocks' accumulators on the stack, a store and a load on every input index, and those blocks
// (a T of 64 ends in one) ran at 27 and 33 GFLOP/s where 6 rows ran at 60 (§2.3). A row or two (a
// text's new rows after an edit, lm/gpt_forward.h) take the whole panel at once (four or eight
// chains of FMAs, each cache line of the weights read once): they stream the weights from memory,
// and in halves each half would read the panel on every other cache line with two chains in flight.
// Each output is the same chain of FMAs either way.
ATTNSCOPE_AVX2 bool panelAvx2(const PanelJob& j) {
  if (j.cols == kPanel && j.m >= 1 && j.m <= 2) return j.m == 1 ? rowsAvx2<1, 4>(j, 0, 0) : rowsAvx2<2, 4>(j, 0, 0);
  constexpr int MR = 6;  // 12 accumulators, 2 panel registers and a broadcast of the 16
  bool finite = true;
  for (int c0 = 0; c0 < j.cols; c0 += 16) {
    int r = 0;
    // The first half's row blocks fetch the next panel (prefetchShare), the second's find it there.
    const auto share = [&](int r0) { return c0 == 0 ? prefetchShare(j, r0 / MR, (j.m + MR - 1) / MR) : Prefetch(); };
    for (; r + MR <= j.m; r += MR) finite &= rowsAvx2<MR, 2>(j, r, c0, share(r));
    switch (j.m - r) {
      case 5: finite &= rowsAvx2<5, 2>(j, r, c0, share(r)); break;
      case 4: finite &= rowsAvx2<4, 2>(j, r, c0, share(r)); break;
      case 3: finite &= rowsAvx2<3, 2>(j, r, c0, share(r)); break;
      case 2: finite &= rowsAvx2<2, 2>(j, r, c0, share(r)); break;
      case 1: finite &= rowsAvx2<1, 2>(j, r, c0, share(r)); break;
      default: break;
    }
  }
  return finite;
}
#endif  // ATTNSCOPE_SIMD_X86

// ---------------------------------------------------------------- packing

// Element (i, c) of panel p is W[p·kPanel + c][i], 0 past the last output. W: out × in (ldw).
void packScalar(const float* W, int out, int in, std::ptrdiff_t ldw, float* panels, int o0, int o1, int i0) {
  for (int o = o0; o < o1; ++o) {
    float* dst = panels + static_cast<std::size_t>(o / kPanel) * in * kPanel + o % kPanel;
    for (int i = i0; i < in; ++i) dst[static_cast<std::size_t>(i) * kPanel] = o < out ? W[o * ldw + i] : 0.0f;
  }
}

void packPanelsScalar(const float* W, int out, int in, int ldw, float* panels) {
  const int padded = (out + kPanel - 1) / kPanel * kPanel;
  packScalar(W, out, in, ldw, panels, 0, padded, 0);
}

#if ATTNSCOPE_SIMD_X86
// Blocks of 8 outputs × 8 inputs, transposed in registers: rows o … o+7 of W become 8 runs of the
// panels' 8 floats. What does not fill a block goes through packScalar.
ATTNSCOPE_AVX2 void packPanelsAvx2(const float* W, int out, int in, int ldw, float* panels) {
  const int whole_in = in / 8 * 8;
  for (int o = 0; o + 8 <= out; o += 8) {
    float* dst = panels + static_cast<std::size_t>(o / kPanel) * in * kPanel + o % kPanel;
    for (int i = 0; i < whole_in; i += 8) {
      __m256 r[8], t[8];
      for (int k = 0; k < 8; ++k) r[k] = _mm256_loadu_ps(W + static_cast<std::ptrdiff_t>(o + k) * ldw + i);
      for (int k = 0; k < 8; k += 2) {
        t[k] = _mm256_unpacklo_ps(r[k], r[k + 1]);
        t[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]);
      }
      for (int k = 0; k < 8; k += 4)
        for (int h = 0; h < 2; ++h) {
          r[k + h] = _mm256_shuffle_ps(t[k + h], t[k + h + 2], 0x44);
          r[k + h + 2] = _mm256_shuffle_ps(t[k + h], t[k + h + 2], 0xEE);
        }
      // r[k] (k < 4) holds input j of rows 0 … 3 and input j + 4 of the same rows, r[k + 4] those of
      // rows 4 … 7, with j = 0, 2, 1, 3 for k = 0, 1, 2, 3.
      for (int k = 0; k < 4; ++k) {
        const int j = (k & 1) * 2 + (k >> 1);
        const __m256 lo = _mm256_permute2f128_ps(r[k], r[k + 4], 0x20),
                     hi = _mm256_permute2f128_ps(r[k], r[k + 4], 0x31);
        _mm256_storeu_ps(dst + static_cast<std::size_t>(i + j) * kPanel, lo);
        _mm256_storeu_ps(dst + static_cast<std::size_t>(i + j + 4) * kPanel, hi);
      }
    }
    packScalar(W, out, in, ldw, panels, o, o + 8, whole_in);
  }
  const int padded = (out + kPanel - 1) / kPanel * kPanel;
  packScalar(W, out, in, ldw, panels, out / 8 * 8, padded, 0);
}
#endif  // ATTNSCOPE_SIMD_X86

using PackKernel = void (*)(const float*, int, int, int, float*);

PackKernel packPanels(Isa isa) {
#if ATTNSCOPE_SIMD_X86
  if (isa == Isa::Avx2 || isa == Isa::Avx512) return packPanelsAvx2;
#endif
  (void)isa;
  return packPanelsScalar;
}

using PanelKernel = bool (*)(const PanelJob&);

PanelKernel panelKernel(Isa isa) {
  switch (isa == Isa::Auto ? activeTileKernels().isa : runnableIsa(isa, "packed linear")) {
#if ATTNSCOPE_SIMD_X86
    case Isa::Avx2: return panelAvx2;
    case Isa::Avx512: return panelAvx512;
#endif
    default: return panelScalar;
  }
}

}  // namespace

void PackedLinear::pack(const WeightView& w, const float* bias) {
  out_ = w.out, in_ = w.in;
  const int panels = (w.out + kPanel - 1) / kPanel;
  panels_.resize(static_cast<std::size_t>(panels) * w.in * kPanel);
  bias_.resize(static_cast<std::size_t>(panels) * kPanel);
  if (w.in_stride == 1) {
    packPanels(isaBest())(w.data, w.out, w.in, static_cast<int>(w.out_stride), panels_.data());
  } else if (w.out_stride == 1) {  // columns: each input's run of a panel's outputs lies as the panel holds it
    for (int p = 0; p < panels; ++p) {
      const int n = std::min(kPanel, w.out - p * kPanel);
      float* dst = panels_.data() + static_cast<std::size_t>(p) * w.in * kPanel;
      for (int i = 0; i < w.in; ++i, dst += kPanel) {
        std::copy_n(w.data + i * w.in_stride + p * kPanel, n, dst);
        std::fill(dst + n, dst + kPanel, 0.0f);
      }
    }
  } else {
    for (int p = 0; p < panels; ++p)
      for (int i = 0; i < w.in; ++i)
        for (int c = 0; c < kPanel; ++c) {
          const int o = p * kPanel + c;
          panels_[(static_cast<std::size_t>(p) * w.in + i) * kPanel + c] =
              o < w.out ? w.data[o * w.out_stride + i * w.in_stride] : 0.0f;
        }
  }
  std::fill(bias_.begin(), bias_.end(), 0.0f);
  if (bias != nullptr) std::copy(bias, bias + w.out, bias_.begin());
}

void PackedLinear::unpack(int o0, int o1, float* weight, int ldw, float* bias) const {
  // A panel's kPanel outputs × kRun inputs at a time: the panel's run read in cache, each output's
  // row written a cache line at a time.
  constexpr int kRun = 16;
  for (int o = o0; o < o1;) {
    const int p = o / kPanel, c0 = o % kPanel, c1 = std::min(kPanel, o1 - p * kPanel);
    const float* panel = panels_.data() + static_cast<std::size_t>(p) * in_ * kPanel;
    for (int i0 = 0; i0 < in_; i0 += kRun) {
      const int i1 = std::min(in_, i0 + kRun);
      for (int c = c0; c < c1; ++c) {
        float* row = weight + static_cast<std::ptrdiff_t>(p * kPanel + c - o0) * ldw;
        for (int i = i0; i < i1; ++i) row[i] = panel[static_cast<std::size_t>(i) * kPanel + c];
      }
    }
    o = p * kPanel + c1;
  }
  if (bias != nullptr) std::copy(bias_.data() + o0, bias_.data() + o1, bias);
}

bool PackedLinear::apply(int m, const float* X, int ldx, float* Y, int ldy, Isa isa, int output_limit,
                         OutputBlocks blocks) const {
  if (blocks.cols <= 0 || (blocks.cols < out_ && blocks.cols % kPanel != 0))
    throw std::invalid_argument("PackedLinear::apply: output blocks must be whole panels");
  const PanelKernel kernel = panelKernel(isa);
  // Rows of X a multiple of 2 KiB apart (GPT-2 medium's 1024-wide rows) are copied first to rows
  // 16 floats longer (aliasFreeStride): the kernel broadcasts from 12 rows at once, and rows 4 KiB
  // apart share one L1 set. The same values in the same order: the same bits. A row or two read
  // each panel once and broadcast from one or two rows: they read X as it lies.
  thread_local std::vector<float> x_copy;
  if (m > 2 && aliasFreeStride(ldx) != ldx) {
    const int ld = aliasFreeStride(in_);
    x_copy.resize(static_cast<std::size_t>(m) * ld);
    for (int r = 0; r < m; ++r)
      std::copy_n(X + static_cast<std::ptrdiff_t>(r) * ldx, in_, x_copy.data() + static_cast<std::ptrdiff_t>(r) * ld);
    X = x_copy.data(), ldx = ld;
  }
  bool finite = true;
  // Many inputs in blocks (kInputBlock), each block's panels in turn; a row or two read each
  // panel once whole. An output past an overflow stays non-finite, so the last block's answer is
  // the product's.
  const int input_blocks = m > 2 ? std::max((in_ + kInputBlock - 1) / kInputBlock, 1) : 1;
  const int block_in = std::max((in_ + input_blocks - 1) / input_blocks, 1);
  // The rows that need an output of panel q: r + output_limit > q·kPanel.
  const auto firstRow = [&](int q) {
    return static_cast<int>(
        std::clamp(static_cast<long long>(q) * kPanel - output_limit + 1, 0LL, static_cast<long long>(m)));
  };
  for (int i0 = 0; i0 == 0 || i0 < in_; i0 += block_in) {  // once with no inputs: Y = b
    finite = true;
    // Panel after panel: one panel's block (block_in × 32 floats, 96 KiB for 768 inputs) stays in
    // L2 while every row block of X passes by.
    for (int p = 0; p * kPanel < out_; ++p) {
      const int r0 = firstRow(p);
      if (r0 == m) break;                        // the later panels lie further beyond every row's limit
      float* y = Y + blocks.offset(p * kPanel);  // the panel's first output, within one block
      PanelJob job{m - r0,
                   std::min(block_in, in_ - i0),
                   std::min(kPanel, out_ - p * kPanel),
                   X + static_cast<std::ptrdiff_t>(r0) * ldx + i0,
                   ldx,
                   panels_.data() + (static_cast<std::size_t>(p) * in_ + i0) * kPanel,
                   bias_.data() + static_cast<std::size_t>(p) * kPanel,
                   y + static_cast<std::ptrdiff_t>(r0) * ldy,
                   ldy,
                   i0 > 0};
      if ((p + 1) * kPanel < out_ && firstRow(p + 1) < m)  // a panel read next
        job.next_w = panels_.data() + (static_cast<std::size_t>(p + 1) * in_ + i0) * kPanel;
      finite &= kernel(job);
    }
  }
  return finite;
}

SlicedLinear packSliced(const WeightView& weight, const float* bias, int granularity) {
  SlicedLinear s;
  const int out = weight.out;
  const int units = (out + granularity - 1) / granularity;
  const int per = (units + kSlices - 1) / kSlices * granularity;
  s.slices.reserve(kSlices);
  for (int o = 0; o < out; o += per) {
    const int n = std::min(per, out - o);
    s.slices.push_back({o, PackedLinear(weight.outputs(o, n), bias != nullptr ? bias + o : nullptr)});
  }
  s.outputs = out;
  return s;
}

}  // namespace attnscope
