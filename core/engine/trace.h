// Trace: one forward pass with every intermediate kept, per batch element and head (docs/DESIGN.md §2.3).
// The app and the CLI read only this structure.
#pragma once
#include <memory>
#include <vector>

#include "engine/model_config.h"
#include "engine/parameters.h"
#include "engine/tensor.h"

namespace attnscope {

// One head of one batch element. T = tokens, w = head width. Only what cannot be derived cheaply is
// stored; mask, masked_scores, scaled_scores and dropped_weights are computed from it on demand by
// StageMap (engine/stages.h) with the kernels' own float operations, so they read the same bits.
struct HeadTrace {
  Matrix queries, keys, values;  // T × w
  Matrix scores;                 // T × T, Q Kᵀ
  Matrix weights;                // T × T, softmax rows (or ÷ row sum; with the tril route, renormalized)
  Matrix unmasked_weights;       // T × T, the tril route's softmax over every key; else empty
  ByteMatrix dropout_mask;       // T × T, 1 where kept; empty when dropout is inactive (all kept)
  Matrix context;                // T × w, dropped weights · V
  int index = 0;                 // which head of its batch element it is (its weights' columns)
  // False for a head whose maps were not requested (TraceRequest::heads): all members are empty.
  bool hasMaps() const { return scores.size() > 0; }
};

struct BatchTrace {
  std::vector<HeadTrace> heads;  // empty when this element's intermediates were not requested
  Matrix context;                // T × (heads · w), the heads concatenated
  Matrix output;                 // the module's return value: out_proj(context) or context
};

struct Trace {
  ModelConfig model;                             // the config it was computed with
  int tokens = 0, d_in = 0;                      // T and the embedding width
  int heads = 0, head_width = 0;                 // heads computed and their width
  float scale_divisor = 1;                       // √d_k as float, 1 with scale = none
  float dropout_scale = 1;                       // 1/(1 − p) applied to kept weights, 1 without dropout
  bool dropout_active = false;                   // training with p > 0 on a dropout variant
  std::shared_ptr<const Parameters> parameters;  // shared with other traces of the same weights
  std::vector<BatchTrace> batches;               // batch_size entries
};

}  // namespace attnscope
