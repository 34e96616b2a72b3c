// The attention engine: one call computes a whole forward pass of the chapter's modules and
// returns its Trace. Two execution paths share every kernel: the serial loops are the readable
// reference; the parallel path runs the same loops' items on the engine's thread team
// (engine/thread_team.h) across batch × heads × rows.
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "engine/memory.h"
#include "engine/model_config.h"
#include "engine/packed_linear.h"
#include "engine/parameters.h"
#include "engine/tensor.h"
#include "engine/trace.h"

namespace attnscope {

struct ExecutionOptions {
  bool parallel = false;                  // the parallel path instead of the serial one (same masks, same numbers)
  int threads = 0;                        // threads of the parallel path; 0 = one per processor
  long long min_parallel_work = 1 << 16;  // below B·H·T²·w the parallel path runs on one thread
  bool fused = true;            // outputs of untraced elements from the fused kernel (false: the reference loops)
  bool share_identical = true;  // without active dropout all elements are equal: compute one, copy it
  const std::atomic<bool>* cancel = nullptr;  // once set (by another thread), computeTrace stops
                                              // between tasks and throws Cancelled
};

// Rows of one head's attention weights as the pass computes them (TraceRequest::weight_rows):
// rows [first_row, first_row + rows) of head `head` of batch element `element`, `rows` × `keys`
// floats with row stride `ld`. Every weight of those rows beyond column `keys` is 0 (the causal
// mask), and so is every masked one inside. The weights before dropout, as HeadTrace::weights.
struct WeightRows {
  int element = 0, head = 0;
  int first_row = 0, rows = 0;
  int keys = 0;
  const float* weights = nullptr;
  int ld = 0;
  // Each row's entropy −Σ α ln α (nats), where the pass has it for little: the streamed rows take
  // it from the scores, ln l + Σ α·(m − s)/√d_k (l the softmax's sum, m the row's max score), with
  // no logarithm per weight. Null: not given (head_statistics.h's rowEntropy computes it).
  const double* entropy = nullptr;
};

// The projections of a pass, [Q | K | V] of every row (TraceRequest::keep_projections), kept so
// that a later pass over inputs whose first rows are the same computes only the rows after them
// (TraceRequest::first_row): a trained model's text edited after its first tokens, where causal
// attention makes those rows' numbers the same (lm/gpt_forward.h).
struct KeptProjections {
  int tokens = 0;           // T of the pass that kept them
  int rows = 0;             // rows [0, rows) are the kept pass's: T, or fewer where another pass's
                            // rows after them were written over them (lm/model_pass.cpp's runModelPass)
  int width = 0;            // 3·d_out
  bool head_major = false;  // their layout (attention_pass.h's Work)
  FloatBuffer qkv;          // T × 3·d_out: the pass's own block, handed over

  // Head-major (each head's rows together, T · w floats apart) where the packed product writes
  // them, whole heads a panel wide; else rows of [Q | K | V].
  static bool headMajor(int head_width, bool packed) { return packed && head_width % PackedLinear::kPanel == 0; }

  bool holds(int first_rows, int of_width) const {
    return first_rows <= rows && rows <= tokens && width == of_width &&
           qkv.size() == static_cast<std::size_t>(tokens) * static_cast<std::size_t>(width);
  }
};

// Which intermediates to keep. Outputs of every batch element are always kept; large configs
// (the GPT-2 preset) ask for one element's heads instead of all of them.
struct TraceRequest {
  bool all_batches = true;   // keep the heads of every batch element
  std::vector<int> batches;  // otherwise only of these (empty: outputs only, as in a benchmark)
  std::vector<int> heads;    // of a kept element, only these heads keep their maps (empty: all);
                             // the others keep nothing (HeadTrace::hasMaps() is false)
  bool outputs = true;       // false: only the kept heads' maps and contexts; every element's
                             // context and output are left empty (the rest of a split request,
                             // whose outputs came with its first part)
  // Called with the weights of every head that keeps no maps, rows at a time, as the pass computes
  // them and before it drops them: what a caller reduces on the way (the model view's thumbnails
  // and scores, lm/model_pass.h) without T × T maps ever being held. Called from the pass's
  // threads, for each computed element (equal elements are computed once), each row of each head
  // once, in no set order; it must only write what belongs to those rows. Null: not called.
  std::function<void(const WeightRows&)> weight_rows;
  // Rows [0, first_row) are an earlier pass's over the same first rows of the inputs, by the same
  // module: their keys and values are taken from `earlier` (its first first_row rows), and their
  // queries, attention and outputs are not computed (the context's and output's rows there are 0).
  // Each computed row reads the same numbers as in a pass of every row, so it gets the same bits
  // (every kernel's sum order is the row's own, whatever its place in a block: packed_linear.h,
  // tile_kernels.h). Only the fast path's pass of one projection (no dropout, one input, no
  // per-head projections) with no kept head: else InputError.
  int first_row = 0;
  const KeptProjections* earlier = nullptr;
  // With first_row: the rows before it are attended again from the earlier projections and their
  // weights handed to weight_rows (which must be set) — nothing else of theirs is computed (their
  // context and output rows stay 0). A model view's thumbnail, whose cells a new text length
  // regroups, needs every row's weights; their projections, out_proj and MLP it can take as they were.
  bool weights_before_first_row = false;
  KeptProjections* keep_projections = nullptr;  // set: the pass's projections are moved here
  // With keep_projections: an earlier pass's block to take over as this pass's own (it may be
  // `earlier`), so that no second block is allocated (GPT-2 small at 1024 tokens: 9.4 MB a layer,
  // and fresh pages cost more than the rows). Its first `reuse_rows` rows — the same inputs', so
  // the same numbers — are laid out anew in place and kept; the rest this pass writes. Left empty;
  // if the pass throws, it holds the block again, in this pass's layout, `rows` those kept.
  KeptProjections* reuse = nullptr;
  int reuse_rows = 0;
  // With keep_projections: the rows the kept block has room for (a text typed at its end grows a
  // token at a time, in place); T when fewer. A block taken over with room for more than twice as
  // many is given back to the allocator (a long text cut short).
  int keep_room = 0;
  bool keeps(int b) const;
  bool keepsHead(int b, int h) const;
  // Only these elements keep their intermediates (every head of them).
  static TraceRequest only(std::vector<int> batches) {
    TraceRequest r;
    r.all_batches = false;
    r.batches = std::move(batches);
    return r;
  }
};

// Runs m on `embeddings` (T × d_in) stacked batch_size times. Throws InputError if m does not
// validate, ComputeError if a value overflows float32 (never returns NaN or ±∞ except the mask).
Trace computeTrace(const Matrix& embeddings, const ModelConfig& m, const ExecutionOptions& exec = {},
                   const TraceRequest& request = {}, const Limits& limits = {});

// The same on a batch of different sequences: element b reads inputs[b] (B of them, each T × d_in,
// no longer stacked copies of one: each element is computed and projected on its own), or, with
// one matrix, every element reads it as above. InputError names `batch_sequences[b]` when one does
// not fit.
Trace computeTrace(const std::vector<const Matrix*>& inputs, const ModelConfig& m, const ExecutionOptions& exec = {},
                   const TraceRequest& request = {}, const Limits& limits = {});

// The fast path's linear layers on packed weights (packed_linear.h): per projection group the
// stacked [W_query; W_key; W_value] (3·d_out × d_in, so that one product writes a group's
// [Q | K | V] rows), and out_proj, each in column slices (whole heads for the projections, so that
// a slice of the head-major layout is whole blocks): the pass's items are (rows, slice), and a
// short text's threads each read a part of the weights. Empty where the model has no such layer.
struct PackedModule {
  std::vector<SlicedLinear> qkv;  // one per group
  SlicedLinear out_proj;          // multihead only

  // The parameters packed, in torch's layout again (bit for bit) for m, the module's config: one
  // set, unpacked when asked for while none is held, and shared while anything holds it.
  std::shared_ptr<const Parameters> unpacked(const ModelConfig& m) const;

 private:
  mutable std::mutex mutex_;
  mutable std::weak_ptr<const Parameters> unpacked_;
};
std::shared_ptr<const PackedModule> packModule(const Parameters& p, const ModelConfig& m);
// A multi-head module's, from its weights as a file lays them out: qkv the stacked [W_query; W_key;
// W_value] (3·d_out × d_in; GPT-2's c_attn, a Conv1D, holds them so as columns), out_proj d_out ×
// d_out; biases null for none. The same panels as from Parameters of the same weights.
std::shared_ptr<const PackedModule> packModule(const WeightView& qkv, const float* qkv_bias, const WeightView& out_proj,
                                               const float* out_bias, const ModelConfig& m);

// A module whose parameters are given, not drawn from m.seed: a block of a trained model
// (DESIGN.md §2.6). `packed` (packModule, made once with the parameters) serves the fast path when
// gemm.h's backend is Packed; null, the fast path multiplies on the other backends. `parameters`
// may be null where `packed` is not: a trained model holds its attention's weights once, packed
// (GPT-2 small's 113 MB), and a trace that shows them, or a path that multiplies them in torch's
// layout, unpacks them (weights()).
struct GivenModule {
  std::shared_ptr<const Parameters> parameters;
  std::shared_ptr<const PackedModule> packed;

  std::shared_ptr<const Parameters> weights(const ModelConfig& m) const {
    return parameters != nullptr ? parameters : packed->unpacked(m);
  }
};

// computeTrace on a given module: m describes it (variant, widths, heads, mask, scale; its seed is
// not used, and it may have no dropout in training mode: nothing is drawn). Throws InputError when
// the parameters' shapes are not m's for inputs of x's width.
Trace computeTrace(const Matrix& x, const ModelConfig& m, const GivenModule& module, const ExecutionOptions& exec = {},
                   const TraceRequest& request = {}, const Limits& limits = {});

// Threads the parallel path uses for `threads` (0 = every processor this process may use).
int resolveThreads(int threads);

}  // namespace attnscope
