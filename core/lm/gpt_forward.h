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
#include <cstdint>
#include <functional>
#include <vector>

#include "engine/attention.h"
#include "engine/trace.h"
#include "lm/gpt_model.h"

namespace attnscope {

// What a pass keeps so that a later one over a text with the same first tokens computes only the
// rows after them (GptRequest::prefix): under the causal mask row i reads rows ≤ i alone, so the
// rows before the first changed token are the same numbers — each block's attention input
// LN₁(x), its projections (the keys and values the new rows read) and the residual stream after
// the last block. The rows computed again get the same bits as in a pass of every row.
struct GptPrefix {
  std::vector<int> ids;                      // T
  std::vector<Matrix> attention_inputs;      // L of T × d
  std::vector<KeptProjections> projections;  // L (each T × 3d); empty unless keep_projections
  // T × d, before the final LayerNorm: the residual stream after the last block, but in a row
  // not finished (GptRequest::final_rows) after the last block's attention, its MLP not added.
  Matrix final_x;
  std::vector<std::uint8_t> finished;  // T: 1 where final_x's row is after the whole last block
};

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
  // An earlier pass's GptPrefix, whose first `prefix_rows` ids (1 … T − 1) are these ids' first:
  // those rows are taken from it (the fast path only; the reference computes every row). The
  // traces handed to on_layer then have output rows of 0 before prefix_rows, but for map_layers
  // and whole_layer, which are computed whole; every layer's attention input is whole. The prefix's pass must have
  // kept the same map_layers: a layer that keeps maps computes its weights by the traced path,
  // the others by the streamed rows, which differ in the last bits, and so would the rows after.
  const GptPrefix* prefix = nullptr;
  int prefix_rows = 0;
  // With a prefix: every layer's attention is computed again over all rows (the rest — LayerNorms,
  // out_proj, the MLP — from prefix_rows), so that every row's weights are streamed anew: a text
  // longer than the thumbnails' cells, whose blocks regroup every row. The rows before prefix_rows
  // are attended from the prefix's projections when it kept them (their weights alone:
  // TraceRequest::weights_before_first_row), else projected again from its attention inputs. The
  // same bits as a pass of every row.
  bool whole_attention = false;
  // An earlier pass's projections, one block a layer, when the caller holds them apart from a
  // prefix (runModelPass takes them over from the pass before); null: prefix->projections. With a
  // prefix whose rows before prefix_rows every block holds (KeptProjections::holds), those rows
  // are the prefix's; else they serve as memory alone. With keep_projections each layer's block
  // becomes this pass's own for that layer (TraceRequest::reuse: its prefix rows kept in place, no
  // second set allocated), leaving it empty; if the pass throws, the layer it was computing holds
  // its block again (rows: those kept), and the layers done have theirs in keep_prefix.
  std::vector<KeptProjections>* prefix_projections = nullptr;
  // With a prefix: a layer computed whole all the same — every row's projections, attention and
  // outputs (its on_layer trace whole: a caller keeps its outputs). -1: none.
  int whole_layer = -1;
  // Set: filled with this pass's GptPrefix — its projections only with keep_projections, on the
  // fast path (they are most of its memory, and only a prefix's pass reads them).
  GptPrefix* keep_prefix = nullptr;
  bool keep_projections = false;
  int keep_room = 0;  // with keep_projections: the rows each kept block has room for (TraceRequest::keep_room)
  // Rows of the residual stream after the last block to finish (with the logit positions); empty:
  // every row. Nothing after the last block reads the others, so its MLP runs on these alone and
  // the others keep its input (GptPrefix::finished; gptLogits of the prefix finishes a row asked
  // for later): GPT-2 small at T = 1024, 1023 rows of the 4.7 M weights' MLP, 9.7 of the pass's
  // 193 GFLOP. The fast path only (the reference finishes every row); the same bits as a pass
  // that finishes every row.
  std::vector<int> final_rows;
};

struct GptResult {
  std::vector<int> logit_positions;  // P
  Matrix logits;                     // P × V
};

// The model can read `ids`: else InputError for no ids, more than the model's context length (or
// Limits::max_tokens), or an id outside the vocabulary, naming its position (counted from 1, as the
// panels count tokens). Callers that hold memory for the result check this first.
void checkModelTokens(const GptModel& model, const std::vector<int>& ids, const Limits& limits = {});

// Throws checkModelTokens's InputError, and one for a layer in request.map_layers that does not exist; ComputeError
// when a value overflows float32; Cancelled once exec.cancel is set (checked between blocks and inside the attention).
GptResult gptForward(const GptModel& model, const std::vector<int>& ids, const GptRequest& request = {},
                     const ExecutionOptions& exec = {}, const Limits& limits = {});

// The next-token logits of rows of the residual stream after the last block (T × d, every row
// finished): LayerNorm_f(x[p]) · headᵀ for each position p (P × V). gptForward's own last step.
Matrix gptLogits(const GptModel& model, const Matrix& final_x, const std::vector<int>& positions,
                 const ExecutionOptions& exec = {});
// The same from a pass's GptPrefix, whose rows at `positions` the pass left unfinished
// (GptRequest::final_rows) are finished first: the last block's MLP of those rows, read from its
// weights (GPT-2 small: 19 MB) beside the head's 154 MB.
Matrix gptLogits(const GptModel& model, const GptPrefix& pass, const std::vector<int>& positions,
                 const ExecutionOptions& exec = {});

}  // namespace attnscope
