// The whole forward pass of a trained GPT (lm/gpt_model.h, docs/DESIGN.md §2.6) on token ids:
// embeddings, every block (LayerNorm, the chapter's causal multi-head attention on the engine's
// computeTrace, residual, LayerNorm, MLP with GELU, residual), the final LayerNorm and the output
// head at the positions asked for.
//
// Shapes: T tokens, d model width, H heads of width w, F MLP width, V vocabulary, P positions
// whose logits are asked for.
//
// Two paths, as the engine's: ExecutionOptions::fused (the default) runs the packed products (the
// MLP's in output slices), the fused attention and a vectorized GELU; fused = false runs the
// reference — the engine's reference attention, GELU by std::tanh, Eigen's products — the readable
// definition the fast path is tested against. Both take LayerNorm row by row (the book's class,
// summed in double) and run on the threads `exec` asks for (one with parallel = false).
#pragma once
#include <functional>
#include <vector>

#include "engine/attention.h"
#include "engine/trace.h"
#include "lm/gpt_model.h"

namespace attnscope {

struct GptRequest {
  // Layers whose heads keep their maps (every stage, as the chapter's traces): empty keeps every
  // layer's, a list only those (the others run on the fused kernel and keep no T × T map).
  std::vector<int> map_layers;
  bool no_maps = false;  // no layer keeps maps (a benchmark's forward)
  // Called once per block, in order, with the block's attention input LayerNorm₁(x) (T × d) and
  // its Trace (the heads' maps when the layer keeps them; batch element 0's output is the
  // attention's output, out_proj included). The trace is the callee's to keep or drop.
  std::function<void(int layer, const Matrix& attention_input, Trace&& trace)> on_layer;
  // Called with every head's weights rows of each layer that keeps no maps, as the attention
  // computes them (TraceRequest::weight_rows: from the pass's threads, each row once, before
  // on_layer of that layer); null: those layers run the fused kernel and no weight is ever whole.
  std::function<void(int layer, const WeightRows& rows)> weight_rows;
  // Positions whose next-token logits are computed (empty: the last one; none with no_logits).
  std::vector<int> logit_positions;
  bool no_logits = false;
  bool keep_final_x = false;  // GptResult::final_x: the residual stream after the last block
};

struct GptResult {
  std::vector<int> logit_positions;  // P
  Matrix logits;                     // P × V
  Matrix final_x;                    // T × d, before the final LayerNorm (keep_final_x)
};

// Throws InputError for ids outside the vocabulary, no ids, or more than the model's context
// length (or Limits::max_tokens), naming the position; ComputeError when a value overflows float32;
// Cancelled once exec.cancel is set (checked between blocks and inside the attention).
GptResult gptForward(const GptModel& model, const std::vector<int>& ids, const GptRequest& request = {},
                     const ExecutionOptions& exec = {}, const Limits& limits = {});

// The next-token logits of rows of the residual stream after the last block (T × d, as
// GptResult::final_x): LayerNorm_f(x[p]) · headᵀ for each position p (P × V). gptForward's own
// last step.
Matrix gptLogits(const GptModel& model, const Matrix& final_x, const std::vector<int>& positions,
                 const ExecutionOptions& exec = {});

}  // namespace attnscope
