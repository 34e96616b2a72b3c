// Parameters: the module's weights, drawn from TorchGenerator in the order the seed's class
// constructs them, and listed under the names of its state_dict().
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "engine/model_config.h"
#include "engine/tensor.h"
#include "engine/torch_generator.h"

namespace attnscope {

// y = x Wᵀ + b, with W in torch layout (out × in). SelfAttention_v1's x @ W is stored as Wᵀ here.
struct Linear {
  Matrix weight;      // out × in
  RowVector bias;     // out, or empty when the layer has no bias
};

struct Parameters {
  // Q, K, V projections: one per head for the wrapper (each d_in → d_out), one otherwise
  // (d_in → d_out, split into heads by multihead). Empty for 'simple'.
  std::vector<Linear> query, key, value;
  Linear out_proj;    // multihead only (d_out → d_out, with bias); empty weight otherwise
};

// Draws the parameters of m's module for inputs of width d_in, as torch.manual_seed(m.seed)
// followed by the seed class's constructor would.
Parameters initParameters(const ModelConfig& m, int d_in, TorchGenerator& generator);

// The parameters of m for width d_in, and the generator as it stands after drawing them (the
// dropout draws of a forward pass continue from there). The last few results are kept, so an edit
// of the embeddings, of dropout or of the batch redraws nothing (GPT-2: 2.4 M draws, 9 MB).
// Thread-safe.
struct DrawnParameters {
  std::shared_ptr<const Parameters> parameters;
  TorchGenerator generator;
};
DrawnParameters drawParameters(const ModelConfig& m, int d_in);

// One state_dict() entry: a matrix, or a vector (biases) stored as a 1 × n matrix.
struct NamedTensor {
  std::string name;   // e.g. "W_query.weight", "heads.1.W_key.weight", "out_proj.bias"
  Matrix value;
  bool is_vector;
};

// The seed class's state_dict() (buffers excluded), in its order and torch layouts.
std::vector<NamedTensor> stateDict(const ModelConfig& m, const Parameters& p);

}  // namespace attnscope
