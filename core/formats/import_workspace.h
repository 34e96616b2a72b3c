// A workspace from numbers a notebook printed or saved (docs/DESIGN.md §2.4, §2.5): the
// embeddings from a file (formats/tensor_import.h), token names, and a model — what
// `attnscope-cli import` prints and what the app's paste will build.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/model_config.h"
#include "formats/workspace_file.h"

namespace attnscope {

struct ImportRequest {
  std::string embeddings;             // a file, or "-" for standard input
  std::string array;                  // the .npz entry to use ("": the only 2-D one)
  std::optional<std::string> tokens;  // names split at whitespace ("Your journey starts")
  std::optional<Variant> variant;     // default: multihead
  std::optional<std::uint32_t> seed;  // default: the variant's (§2.1)
  std::optional<int> num_heads;       // default: the variant's
  std::string parameters;             // a file of the module's parameters ("": seeded only)
  std::optional<bool> training;       // default: a workspace file's mode, else training (as built)
};

struct ImportResult {
  Workspace workspace;             // validated
  std::vector<std::string> notes;  // what was decided for the user (e.g. tokens renamed t1 … tT)
};

// A module's parameters from a file: a .npz of its state_dict() (np.savez(path, **{k: v.numpy() for
// k, v in m.state_dict().items()})), a JSON object of state_dict names → nested lists, or a
// workspace (its "parameters"). Buffers (the causal mask: "mask", "heads.N.mask") are left out and
// listed in `buffers`. Names and shapes are checked against a model by validateModel, not here.
struct ImportedParameters {
  ParameterValues values;            // in the file's order; 1-D arrays are biases (is_vector)
  std::vector<std::string> buffers;  // names of the buffers left out
  int rounded_to = 0;                // a torch print's decimals when it rounded the values, else 0
  // A workspace's model (parameters aside): what its names and shapes cannot say — num_heads of
  // MultiHeadAttention, the training/eval mode — is in it.
  std::optional<ModelConfig> model;
};
ImportedParameters readParametersFile(const std::string& path, const Limits& limits = {});
// The same from text: a printed state_dict (print(m.state_dict()): OrderedDict([('W_query.weight',
// tensor([[…]])), …]), parseStateDictText) or JSON. Messages "SOURCE:LINE:COLUMN: why".
ImportedParameters parseParametersText(const std::string& text, const std::string& source, const Limits& limits = {});

// The variant, d_out, num_heads and qkv_bias a state_dict's names and shapes say (DESIGN §2.5):
// heads.N → multihead_wrapper (num_heads = the highest N + 1), out_proj → multihead, W_query
// without .weight → self_attention_v1, else causal with a mask buffer and self_attention_v2
// without; `variant` and `num_heads`, when given, are kept. MultiHeadAttention's split into heads
// is in no weight: without `num_heads` it is refused ("--num-heads: …") unless d_out = 1. A
// workspace's parameters come with its model, taken whole (the flags over it). `notes` gets what
// was guessed. The seed is the variant's; the mode the workspace's, else training.
ModelConfig modelForParameters(const ImportedParameters& p, std::optional<Variant> variant,
                               std::optional<int> num_heads, std::vector<std::string>* notes);

// Reads, names and validates. With `parameters`, the model is the one the parameters fit
// (modelForParameters) and carries them. Throws InputError: "FILE:LINE:COLUMN: why" for bad text,
// "FILE: why" for bad files (a parameter that does not fit: "FILE: parameters.NAME: why"),
// "model.…: why" or "--option: why" for settings.
ImportResult importWorkspace(const ImportRequest& request, const Limits& limits = {});

// What a state_dict's names and shapes say (modelForParameters, and the paste of editing/paste.h):
// the highest heads.N + 1 of the wrapper (0 without), the d_out its tensors give for `v` (-1 when
// none does), whether it has a bias of q, k or v, whether it names every projection of `v` with
// `heads` heads, and "1, 2 or 4"-style words for the divisors of d_out up to max_heads.
int headsNamed(const ParameterValues& values);
int dOutOf(const ParameterValues& values, Variant v);
bool hasQkvBias(const ParameterValues& values);
bool namesEveryProjection(const ParameterValues& values, Variant v, int heads);
std::string divisorWords(int d_out, int max_heads);

}  // namespace attnscope
