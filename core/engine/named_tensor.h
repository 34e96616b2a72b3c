// One state_dict() entry by name: a module's parameter as torch lists it.
#pragma once
#include <string>
#include <vector>

#include "engine/tensor.h"

namespace attnscope {

// A matrix, or a vector (biases) stored as a 1 × n matrix.
struct NamedTensor {
  std::string name;  // e.g. "W_query.weight", "heads.1.W_key.weight", "out_proj.bias"
  Matrix value;
  bool is_vector;
};

// The user's own values for some of a module's parameters, by state_dict() name, in torch's
// layouts (nn.Linear's weight is out × in; SelfAttention_v1's W_query is d_in × d_out).
using ParameterValues = std::vector<NamedTensor>;

}  // namespace attnscope
