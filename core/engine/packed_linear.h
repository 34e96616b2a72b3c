// A linear layer's product on weights packed once: Y = X·Wᵀ + b, the fast path's projections
// (Q, K, V side by side, and out_proj; docs/DESIGN.md §2.3 "The fast path"). The weights stay the
// same across forward passes (the app recomputes on every edit of the inputs), so they are laid out
// once in column panels of kPanel outputs, the order the micro-kernel reads them: one contiguous
// run of kPanel floats per input index. The kernel keeps an MR × kPanel block of Y in registers,
// starts it at the bias (or, for a later block of a product's many inputs, at what Y holds: the
// chains continued), broadcasts X's elements from X as it lies (any row stride, no packing per
// call) and adds the products one input index after the other.
//
// Every version (scalar, AVX2/FMA, AVX-512) computes each output as the same chain of fused
// multiply-adds, y = fma(x[in−1], w[in−1], … fma(x[0], w[0], b)), so all give the same bits,
// whatever the row's place in a block, the thread or the ISA. The scalar loop is the readable
// definition the SIMD versions are tested against (unit.packed_linear.PackedLinear).
#pragma once
#include <algorithm>
#include <cstddef>
#include <vector>

#include <Eigen/Core>

#include "engine/memory.h"
#include "engine/simd_isa.h"

namespace attnscope {

// Y's columns in blocks of `cols` (a multiple of PackedLinear::kPanel), each a row-major block of
// the rows (row stride ldy), `stride` floats after the one before: output c of row r goes to
// Y + (c / cols)·stride + r·ldy + c % cols. The default is one block: plain row-major Y.
struct OutputBlocks {
  int cols = 1 << 30;
  std::ptrdiff_t stride = 0;
  // Where output `column` of row 0 lies, from Y.
  std::ptrdiff_t offset(int column) const { return column / cols * stride + column % cols; }
};

// A weight matrix, out × in, as it lies: element (o, i) at data[o·out_stride + i·in_stride]. An
// nn.Linear's weight lies in rows (out_stride its row stride, in_stride 1); a Conv1D's — GPT-2's,
// y = x·W, in × out — in columns (out_stride 1, in_stride its row length), the panels' own order:
// packed without transposing it first.
struct WeightView {
  const float* data = nullptr;
  int out = 0, in = 0;
  std::ptrdiff_t out_stride = 0, in_stride = 1;
  static WeightView rows(const float* w, int out, int in, std::ptrdiff_t ldw) { return {w, out, in, ldw, 1}; }
  static WeightView columns(const float* w, int out, int in, std::ptrdiff_t ld) { return {w, out, in, 1, ld}; }
  // Outputs [o0, o0 + n).
  WeightView outputs(int o0, int n) const { return {data + o0 * out_stride, n, in, out_stride, in_stride}; }
};

class PackedLinear {
 public:
  static constexpr int kPanel = 32;  // outputs per column panel: two AVX-512 registers, four AVX2

  PackedLinear() = default;
  // weight: out × in, row-major (row stride ldw); bias: `out` floats, or null for none.
  PackedLinear(const float* weight, int out, int in, int ldw, const float* bias) { pack(weight, out, in, ldw, bias); }
  PackedLinear(const WeightView& weight, const float* bias) { pack(weight, bias); }
  // Packs other weights, in the memory already held when it is large enough: the fused attention
  // packs every key tile (S = Q·Kᵀ is X·Wᵀ with W = K), in blocks transposed in registers.
  void pack(const float* weight, int out, int in, int ldw, const float* bias) {
    pack(WeightView::rows(weight, out, in, ldw), bias);
  }
  void pack(const WeightView& weight, const float* bias);

  int outputs() const { return out_; }
  int inputs() const { return in_; }
  // Outputs [o0, o1) of the weight and bias as pack() took them, the same bits: weight
  // (o1 − o0) × in (row stride ldw); bias o1 − o0 floats, or null.
  void unpack(int o0, int o1, float* weight, int ldw, float* bias) const;

  // Y = X·Wᵀ + b for m rows. X: m × in (row stride ldx), Y: m × out (ldy). Returns whether every
  // output computed is finite. `isa`: Auto is the one the fused attention's kernels use
  // (activeTileKernels: the widest this CPU runs, unless ATTNSCOPE_TILE_ISA or setIsa chose
  // another); a named one must be supported. `output_limit`, for a causal product: row r needs only the outputs o < r +
  // limit; a row skips the panels wholly beyond its limit, and in the panel its limit crosses, the outputs past it are
  // computed anyway (they are written, and count in the returned finiteness). `blocks`: where Y's columns go
  // (OutputBlocks); by default plain row-major Y.
  bool apply(int m, const float* X, int ldx, float* Y, int ldy, Isa isa = Isa::Auto, int output_limit = kAllOutputs,
             OutputBlocks blocks = OutputBlocks()) const;
  static constexpr int kAllOutputs = 1 << 30;

 private:
  int out_ = 0, in_ = 0;
  // Panel p holds outputs [p·kPanel, (p+1)·kPanel): element (i, c) at p·in·kPanel + i·kPanel + c,
  // zero past the last output (and in the bias).
  // A model's panels are large and written whole once: LargeBufferAllocator.
  std::vector<float, LargeBufferAllocator<float>> panels_;
  std::vector<float, Eigen::aligned_allocator<float>> bias_;
};

// A row stride (floats) for a matrix of `cols` columns that a PackedLinear reads as X: `cols`, or 16
// more where rows would lie a multiple of 2 KiB apart. The kernel broadcasts from up to 12 rows of X
// at once; rows 4 KiB apart fall in the same L1 set (GPT-2's MLP hidden rows, 3072 floats = 12 KiB:
// 12 rows in an 8-way set), and each broadcast missed L1. On a Zen 4 the MLP's out_proj ran at 91–93
// GFLOP/s on one core and 136–145 on two for T = 64 rows, 107 and 211–222 with the rows 64 bytes
// further apart (docs/DESIGN.md §2.3). `apply` copies X to this stride where the caller's aliases
// (GPT-2 medium's 1024-wide rows); a caller that owns X's storage gives it this stride and saves the
// copy.
inline int aliasFreeStride(int cols) { return cols % 512 == 0 ? cols + 16 : cols; }

// A layer in column slices, each a PackedLinear of its own, so that items of (rows, slice) let a
// short text's threads each read a part of the weights instead of all of them (the MLP's layers, the
// attention's projections; docs/DESIGN.md §2.6). Each output is the same chain of FMAs however the
// layer is sliced: no bit changes.
struct SlicedLinear {
  struct Slice {
    int first_output;
    PackedLinear packed;
  };
  std::vector<Slice> slices;
  int outputs = 0;

  int count() const { return static_cast<int>(slices.size()); }
  // Outputs [o0, o1) of the layer as it was packed (PackedLinear::unpack): weight (o1 − o0) × in,
  // bias o1 − o0 floats or null.
  void unpack(int o0, int o1, float* weight, int ldw, float* bias) const {
    for (const Slice& slice : slices) {
      const int first = std::max(o0, slice.first_output);
      const int end = std::min(o1, slice.first_output + slice.packed.outputs());
      if (first >= end) continue;
      slice.packed.unpack(first - slice.first_output, end - slice.first_output,
                          weight + static_cast<std::ptrdiff_t>(first - o0) * ldw, ldw,
                          bias != nullptr ? bias + (first - o0) : nullptr);
    }
  }
  // Slice s's columns of Y = X·Wᵀ + b for m rows, as PackedLinear::apply (Y is the whole layer's
  // output; `blocks` as there, every slice starting at a multiple of blocks.cols).
  bool apply(int s, int m, const float* X, int ldx, float* Y, int ldy, OutputBlocks blocks = OutputBlocks()) const {
    const Slice& slice = slices[static_cast<std::size_t>(s)];
    return slice.packed.apply(m, X, ldx, Y + blocks.offset(slice.first_output), ldy, Isa::Auto,
                              PackedLinear::kAllOutputs, blocks);
  }
};

// weight: out × in (row stride ldw), bias: `out` floats or null, packed in up to kSlices slices,
// each a multiple of `granularity` outputs (a multiple of kPanel; the last takes the rest).
constexpr int kSlices = 4;
SlicedLinear packSliced(const WeightView& weight, const float* bias, int granularity = PackedLinear::kPanel);
inline SlicedLinear packSliced(const float* weight, int out, int in, int ldw, const float* bias,
                               int granularity = PackedLinear::kPanel) {
  return packSliced(WeightView::rows(weight, out, in, ldw), bias, granularity);
}

}  // namespace attnscope
