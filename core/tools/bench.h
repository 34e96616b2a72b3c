// Timing of the forward pass (outputs only) and of the full trace, for `attnscope-cli bench`, with
// what puts those times in proportion on this machine: the reference loops, the shared-element
// shortcut, the one-thread GEMM speed of each backend and the GEMM-bound limit it implies.
#pragma once
#include <nlohmann/json.hpp>

#include "engine/attention.h"
#include "formats/workspace_file.h"
#include "lm/gpt_model.h"

namespace attnscope {

struct BenchOptions {
  int repeat = 5;             // timed runs per measurement (after one warm-up run)
  int threads = 0;            // OpenMP threads; 0 = one per core
  int gemm_repeat = 5;        // runs per GEMM backend (after one warm-up); the best one counts
  bool forward_only = false;  // time only the OpenMP forward and its paired limit (make bench's rounds)
};

// {"variant", "tokens", "d_in", "d_out", "num_heads", "batch_size", "training", "dropout", "repeat",
//  "serial":  {"forward_ms": {"min", "median", "mean", "runs"}, "trace_ms": {…}},   fused, all B
//  "openmp":  {"forward_ms": {…}, "trace_ms": {…}, "threads"},                       fused, all B
//  "reference": {"forward_ms": {…}},            the serial reference loops (exec.fused = false)
//  "openmp_shared": {"forward_ms": {…}, "threads", "openmp_over_shared"},  share_identical = true
//  "gemm": {"backend", "shape": {"m", "n", "k"}, "gflops": {"packed"?, "eigen", "openblas"?}},
//      one thread; the limits use the backend's speed (the one the projections run on)
//  "flop": {"gflop", "projections_gflop", "attention_gflop", "causal_triangle"},
//  "limit_ms", "forward_over_limit",
//  "paired_limit": {"threads", "forward_ms", "gemm_gflops", "limit_ms", "forward_over_limit"}}
//      each a {"min", "median", "mean", "max", "runs"} over runs that alternate one OpenMP forward
//      with one GEMM on every thread at once (that run's limit), so the ratio sees one load.
// serial and openmp compute every batch element (share_identical = false), as torch does.
// With options.forward_only: the shape keys, "flop", "openmp" (or "serial") {"forward_ms",
// "threads"} and "paired_limit" only.
nlohmann::json benchWorkspace(const Workspace& ws, const BenchOptions& options);

// What one forward pass of all batch elements costs in floating-point operations (2 per
// multiply-add): the projections (Q, K, V and out_proj) and the products Q·Kᵀ and P·V, of the
// causal triangle only (T(T+1)/2 per head) when the mask is on, else of the full T × T.
nlohmann::json forwardFlop(const ModelConfig& m, int tokens, int d_in);

// A trained model's whole forward pass on `tokens` random ids (fixed seed), docs/DESIGN.md §2.6:
// {"model": {"layers", "heads", "d_model", "mlp_width", "vocab_size"}, "tokens", "threads",
//  "outputs": what both sides compute,
//  "flop": {"gflop", "linear_gflop", "attention_gflop", "head_gflop"},
//  "maps": {"forward_ms", "gemm_gflops", "limit_ms", "forward_over_limit"}: every head's weights
//      of every layer computed (and dropped) and the last position's logits; paired runs as
//      pairedLimit's, the limit being the MLP's first product (T × F × d) on every thread at once;
//  "fused": the same without any T × T map (outputs and logits only),
//  "head": {"forward_ms", "bytes_read", "gb_per_s"}: the logits at the last position alone, the
//      whole head read from memory (a floor the GEMM-bound limit does not count)}.
nlohmann::json benchModel(const GptModel& model, int tokens, const BenchOptions& options);

// One forward pass, outputs only, serial and untimed (`bench --forward-once`, for instruction
// counts): the fused path with every batch element computed, or the reference loops.
void forwardOnce(const Workspace& ws, bool reference = false);

}  // namespace attnscope
