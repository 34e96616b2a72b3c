// A module parameter read from its state_dict name: what it makes, its shape in words and its axes'
// labels, as the Weights tab and the exported figures show them (headless, for both).
#pragma once
#include <string>
#include <vector>

#include "engine/named_tensor.h"

namespace attnscope {

struct ParameterKind {
  std::string head;  // "heads.1." of the wrapper, else ""
  std::string base;  // "W_query", "W_key", "W_value", "out_proj"
  bool bias = false;
  bool bare = false;      // SelfAttention_v1's W (d_in × d_out, x @ W)
  const char* out = "q";  // the letter of what it makes: q, k, v, o (out_proj)
};
ParameterKind kindOf(const NamedTensor& t);

// "2 × 3 (d_out × d_in)"; a bias "2 (d_out)".
std::string shapeWords(const NamedTensor& t, const ParameterKind& k);

// Its rows' and columns' labels in torch's layout: an nn.Linear weight's rows are the outputs it
// makes (q0, q1, …; out_proj's o0, …) and its columns the inputs (d0, …; out_proj's context c0, …);
// SelfAttention_v1's bare W the other way round; a bias one row "b" of outputs.
struct ParameterAxes {
  std::vector<std::string> rows, cols;
};
ParameterAxes parameterAxes(const NamedTensor& t, const ParameterKind& k);

}  // namespace attnscope
