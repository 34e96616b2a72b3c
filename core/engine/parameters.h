// Parameters: the module's weights, drawn from TorchGenerator in the order the seed's class
// constructs them, and listed under the names of its state_dict().
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/model_config.h"
#include "engine/named_tensor.h"
#include "engine/tensor.h"
#include "engine/torch_generator.h"

namespace attnscope {

// y = x Wᵀ + b, with W in torch layout (out × in). SelfAttention_v1's x @ W is stored as Wᵀ here.
struct Linear {
  Matrix weight;   // out × in
  RowVector bias;  // out, or empty when the layer has no bias
};

struct Parameters {
  // Q, K, V projections: one per head for the wrapper (each d_in → d_out), one otherwise
  // (d_in → d_out, split into heads by multihead). Empty for 'simple'.
  std::vector<Linear> query, key, value;
  Linear out_proj;  // multihead only (d_out → d_out, with bias); empty weight otherwise
};

// Draws the parameters of m's module for inputs of width d_in, as torch.manual_seed(m.seed)
// followed by the seed class's constructor would.
Parameters initParameters(const ModelConfig& m, int d_in, TorchGenerator& generator);

// The parameters of m for width d_in, and the generator as it stands after drawing them (the
// dropout draws of a forward pass continue from there). The last few results are kept, so an edit
// of the embeddings, of dropout or of the batch redraws nothing (GPT-2: 2.4 M draws, 9 MB).
// m.parameters, when set, replace their entries of the seeded draw in a copy: the kept draws stay
// the seeded ones, and the generator is the seeded draw's (load_state_dict draws nothing).
// Thread-safe.
struct DrawnParameters {
  std::shared_ptr<const Parameters> parameters;
  TorchGenerator generator;
};
DrawnParameters drawParameters(const ModelConfig& m, int d_in);

// Bytes of every weight and bias held.
std::size_t parameterBytes(const Parameters& p);

// The seed class's state_dict() (buffers excluded), in its order and torch layouts.
std::vector<NamedTensor> stateDict(const ModelConfig& m, const Parameters& p);
// The same entries one at a time, without copying them (SelfAttention_v1's transposed weights are
// made one at a time): writers of large modules hold one tensor more, not the whole module again.
void forEachStateDictEntry(
    const ModelConfig& m, const Parameters& p,
    const std::function<void(const std::string& name, const Matrix& value, bool is_vector)>& visit);

// One parameter of m's module for inputs of width d_in: its state_dict() name and shape in torch's
// layout, and what the shape is made of, for messages.
struct ParameterShape {
  std::string name;  // "W_query.weight"
  int rows, cols;    // a vector has rows = 1
  bool is_vector;    // a bias
  std::string dims;  // "d_out × d_in", "d_in × d_out" (SelfAttention_v1), "d_out"
};
// Every parameter of the module, in state_dict() order (buffers such as the causal mask excluded).
std::vector<ParameterShape> parameterShapes(const ModelConfig& m, int d_in);

// The seed class of a variant ("MultiHeadAttention"; "simple_attention" for 'simple').
const char* seedClassName(Variant v);

// Throws InputError "parameters.NAME: why" unless each of m.parameters names a parameter of m's
// module for inputs of width d_in (once), with its shape, and holds finite values. Buffers (the
// causal mask), biases the module lacks (qkv_bias false), heads it lacks and other classes' names
// are each refused with a sentence saying so. Part of validateModel.
void checkParameterValues(const ModelConfig& m, int d_in);

// The parameters with m.parameters' values in place of the seeded ones (checked first).
void applyParameterValues(const ModelConfig& m, int d_in, Parameters& p);

}  // namespace attnscope
