// Inside computeTrace (attention.cpp): the buffers of one forward pass (Work) and the steps that
// run on them — the projections, the attention rows and the outputs, on the reference path by the
// reference's blocks (attention_reference.h) and on the fast path by its own kernels
// (attention_fast.cpp) — and the task graph that hands them to the threads
// (attention_schedule.cpp). Not for use outside these three files.
//
// Shapes: B batch elements, T tokens, d_in input width, d_out projection width, H heads of width
// w, G projection groups (H for the wrapper, else 1), as in attention_reference.cpp.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "engine/attention.h"
#include "engine/packed_linear.h"
#include "engine/parameters.h"
#include "engine/tensor.h"
#include "engine/trace.h"

namespace attnscope::pass {

using Stride = Eigen::OuterStride<>;
using ConstBlock = Eigen::Map<const Matrix, Eigen::Unaligned, Stride>;
using Block = Eigen::Map<Matrix, Eigen::Unaligned, Stride>;

// Dropout draws as bits, in torch's order: draw i is kept iff bit i % 64 of word i / 64 is set.
struct KeepBits {
  const std::uint64_t* words = nullptr;  // null: no dropout, everything kept
  bool operator()(std::size_t i) const { return words == nullptr || (words[i >> 6] >> (i & 63)) & 1; }
};

// The packed weights of `p` (attention.h's PackedModule), packed on first use and kept for the last
// few parameter sets (the parameters' own cache keeps as many, engine/parameters.h): an edit of the
// inputs packs nothing. Null unless gemm.h's backend is Packed: the fast path then multiplies on
// that backend. Thread-safe.
std::shared_ptr<const PackedModule> packedWeights(const std::shared_ptr<const Parameters>& p, const ModelConfig& m);

// The key tiles of the pass's heads packed once for the SIMD scores (PackedLinear, as
// tile::scoresPacked packs a tile): every query block of a head reads the same whole tiles, and
// each block packing its own copy re-packed a head's keys once per block (GPT-2 at T = 1024: 8.5×
// its keys, about 10 ms of the 0.9 s pass: docs/engine-measurements.md). Slot i is packed by the first task that needs
// it; a task that finds it being packed packs its own copy rather than wait. The calling thread keeps one
// (computeTrace), so the tiles' memory is reused pass after pass.
class PackedKeyTiles {
 public:
  // `slots` unpacked slots (the memory of earlier ones kept). Not while a pass uses them.
  void reset(std::size_t slots) {
    if (slots > capacity_) {
      state_.reset(new std::atomic<int>[slots]);
      capacity_ = slots;
    }
    tiles_.resize(std::max(tiles_.size(), slots));
    for (std::size_t i = 0; i < slots; ++i) state_[i].store(kFree, std::memory_order_relaxed);
  }
  // Slot i packed, by `pack(PackedLinear&)` here when it is free; null while another thread packs it.
  template <class Pack>
  const PackedLinear* get(std::size_t i, Pack&& pack) {
    int state = state_[i].load(std::memory_order_acquire);
    if (state == kFree && state_[i].compare_exchange_strong(state, kPacking, std::memory_order_acquire)) {
      pack(tiles_[i]);
      state_[i].store(kReady, std::memory_order_release);
      return &tiles_[i];
    }
    return state == kReady ? &tiles_[i] : nullptr;
  }

 private:
  enum : int { kFree, kPacking, kReady };
  std::unique_ptr<std::atomic<int>[]> state_;
  std::vector<PackedLinear> tiles_;
  std::size_t capacity_ = 0;
};

// Everything one task needs to read; each task writes only its own rows.
// Q, K and V of one projection group fill one block of T × 3·d_out floats, `qkvBlock(p, g)` for
// projection element p (one per batch element, or a single one shared by all, since every
// element's inputs are the same X) and group g (the wrapper's heads, else 1). Row-major [Q | K | V]
// rows on the reference path; on the fast path, when a head is whole panels of the packed product
// (w a multiple of 32), head-major: Q of head 0 (T × w, dense), Q of head 1, …, then the keys, then
// the values. In the row-major layout a head's rows lie 3·d_out floats apart, a stride that maps a
// key tile onto a sixteenth of the L1 cache's sets, so the fused kernel copied each V tile first
// (GPT-2's 3 MB of copies a pass); dense, the kernels read K and V where they lie.
struct Work {
  // The inputs (T × d_in each): one per batch element (a batch of different sequences), or one that
  // every element reads (the chapter's stacked input).
  std::vector<const Matrix*> xs;
  const Matrix& xOf(int b) const { return *xs[xs.size() == 1 ? 0 : static_cast<std::size_t>(b)]; }
  Trace* trace;
  FloatBuffer* qkv;                      // projection elements × groups × T × 3·d_out (qkvBlock)
  KeepBits keep;                         // dropout draws in torch's order
  const PackedModule* packed = nullptr;  // the fast path's packed layers (gemm.h's Packed backend)
  PackedKeyTiles* key_tiles = nullptr;   // the fast path's packed key tiles (prepareKeyTiles); null: none
  std::atomic<bool> overflow{false};
  int groups = 1;                  // projection groups (heads for the wrapper, else 1)
  bool shared_projection = false;  // one projection element serves every batch element
  bool head_major = false;         // the fast path's head-major layout of the projections
  // Rows [0, projected_rows) of the block hold their projections already (a block taken over with
  // its rows kept, TraceRequest::reuse_rows): they are not projected again.
  int projected_rows = 0;
  // The projection element batch element b reads.
  int projectionElement(int b) const { return shared_projection ? 0 : b; }
  // The projection group of head h: its own for the wrapper's heads, else the one of every head.
  int groupOf(int h) const { return groups > 1 ? h : 0; }
  float* qkvBlock(int b, int g) const {
    return qkv->data() +
           static_cast<std::size_t>(projectionElement(b) * groups + g) * trace->tokens * 3 * trace->model.d_out;
  }
  // The layout of a block, in PackedLinear's terms: column c (of the 3·d_out of [Q | K | V]) of
  // row r lies at qkvBlock + r · qkvLd() + qkvColumns().offset(c).
  int qkvLd() const { return head_major ? trace->head_width : 3 * trace->model.d_out; }
  OutputBlocks qkvColumns() const {
    if (!head_major) return OutputBlocks();
    return OutputBlocks{trace->head_width, static_cast<std::ptrdiff_t>(trace->tokens) * trace->head_width};
  }
};

// Sizes w.key_tiles for the pass's heads when the SIMD scores run (attention_fast.cpp); leaves it
// null otherwise.
void prepareKeyTiles(Work& w, PackedKeyTiles& tiles);

// A [Q | K | V] block kept from pass to pass (TraceRequest::reuse): its first `rows` rows, laid
// out for `from` tokens, moved in place to the layout for `to` (head-major: width ÷ hw blocks of
// tokens × hw, each block's rows moving; else rows of `width`, which stay). A block too small for
// `to` tokens, or with more than twice `room` floats, is copied into one of `room` (≥ to · width).
// The other rows are left as they fall. If it throws (bad_alloc), qkv is as it was.
void layOutRows(FloatBuffer& qkv, int from, int to, int rows, int width, int hw, bool head_major, std::size_t room);

// The steps (attention_fast.cpp). Rows [r0, r0+n) of batch element b; g a projection group, h a
// head.

// Q, K, V rows of group g (n × 3·d_out, row-major [Q | K | V]) by the reference's linearForward.
void projectRowsReference(Work& w, int b, int g, int r0, int n);
// The same rows on the fastest GEMM (gemm.h), in the block's layout (Work::qkvColumns): slice s of
// the packed product's outputs (PackedModule), all of them on another backend (s = 0).
void projectRowsFast(Work& w, int b, int g, int s, int r0, int n);

// Attention rows of head h by the reference's attentionForward: scores and weights rows (n × T,
// and the keep mask's) into `maps` at row o (the head's trace, o = r0; or a block of rows, o = 0),
// the context rows (n × w) into `context` (T × w).
void attendRowsReference(Work& w, int b, int h, int r0, int n, HeadTrace& maps, int o, Matrix& context);
// The same stages for a traced head on the fast path (every map of the head kept).
void attendRowsTraced(Work& w, int b, int h, int r0, int n, HeadTrace& head);
// The fused kernel: context rows only (n × w), written at ctx (row stride ldc), no T × T map.
void attendRowsFused(Work& w, int b, int h, int r0, int n, float* ctx, int ldc);

// The fused kernel's products with each row's weights whole, for a head that keeps no maps but
// hands its weights over (TraceRequest::weight_rows): S = Q·Kᵀ over the rows' unmasked keys into a
// per-thread block, each row's softmax, `sink` called with the weights, then the context rows (n ×
// w, dropout applied) written at ctx (row stride ldc).
void attendRowsStreamed(Work& w, int b, int h, int r0, int n, float* ctx, int ldc,
                        const std::function<void(const WeightRows&)>& sink);

// Sizes a head's matrices: `rows` rows of the T × T maps (T for a traced head, a row block for
// scratch), the keep mask only with dropout, and T × w for Q, K, V (traced only).
void allocateHead(HeadTrace& h, int rows, int T, int hw, bool traced, bool dropout, bool tril = false);

// Rows of element b's output (n × d_out) from its concatenated context (every head's columns
// written by the attention tasks): out_proj(context) for multihead, slice s of its outputs on the
// packed product (PackedModule), all of them otherwise (s = 0); the context for the other variants.
void outputRows(Work& w, int b, int r0, int n, int s, bool fast);
// The items the projection of a row block, and an output block, take (1 but on the packed product).
int projectionSlices(const Work& w, bool fast);
int outputSlices(const Work& w, bool fast);

// The pass (attention_schedule.cpp).

struct PassPlan {
  bool fused = false;                  // the fast path's kernels; else the reference's blocks
  std::vector<int> computed;           // the batch elements computed, in order (the rest are copies)
  std::size_t draws = 0;               // dropout draws (0: none)
  std::function<void()> draw_dropout;  // makes them into w.keep's words
};

// Runs every step of the pass on exec's threads: the draws, the projections, the attention of
// `request`'s heads (maps into `heads`, B × H, sized already) and the outputs of the computed
// elements. Throws Cancelled once exec.cancel is set; sets w.overflow on an overflow.
void runPass(Work& w, const PassPlan& plan, const ExecutionOptions& exec, const TraceRequest& request,
             std::vector<std::vector<HeadTrace>>& heads);

}  // namespace attnscope::pass
