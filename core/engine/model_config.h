// ModelConfig: one attention module of the chapter and its hyper-parameters, as a plain struct
// with defaults. Each variant is the seed notebook's class of the same name (docs/DESIGN.md §2.1).
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "engine/named_tensor.h"

namespace attnscope {

enum class Variant { Simple, SelfAttentionV1, SelfAttentionV2, Causal, MultiHeadWrapper, MultiHead };
enum class Scale { SqrtDk, None };
enum class Normalization { Softmax, Sum };
// How a causal model hides later tokens (docs/DESIGN.md §2.1): −∞ on the scores before the softmax
// (the classes, the notebook's [29]–[30]), or the first route of [26]–[28]: the softmax over every
// key, times tril, divided by the row sums.
enum class CausalRoute { NegInf, Tril };
// Which torch draws the dropout masks (docs/DESIGN.md §2.2 "Two dropout streams").
enum class DropoutStream { Mkl, Default };

struct ModelConfig {
  Variant variant = Variant::MultiHead;  // which step of the chapter
  int d_out = 2;                         // projection width: per head for the wrapper, all heads for multihead
  int num_heads = 2;                     // heads; 1 for the single-head variants
  double dropout = 0.0;                  // dropout p in [0, 1] on the attention weights (dropout variants)
  std::uint32_t seed = 123;              // torch.manual_seed(seed) right before the module is built
  bool qkv_bias = false;                 // nn.Linear(d_in, d_out, bias=qkv_bias) for W_query, W_key, W_value
  bool causal = true;                    // no future tokens: −∞ above the diagonal before softmax (or causal_route)
  CausalRoute causal_route = CausalRoute::NegInf;  // how `causal` hides them
  Scale scale = Scale::SqrtDk;                     // divide scores by √d_k, or not
  bool training = true;                            // a fresh nn.Module trains: dropout acts only in training mode
  int batch_size = 2;                              // B: the inputs stacked this many times (dropout differs per copy)
  Normalization normalization = Normalization::Softmax;  // simple only: softmax or ÷ row sum
  // torch with MKL on an Intel CPU (pip's torch on x86-64 Linux and Windows: the notebook's prints)
  // or torch's own stream (Debian's torch, macOS arm64, any torch on an AMD or ARM CPU).
  DropoutStream dropout_rng = DropoutStream::Mkl;
  // torch.manual_seed(dropout_seed) right before the forward's dropout, as the notebook's cells
  // [31] and [32] do; none: the dropout draws follow the module's initialization.
  std::optional<std::uint32_t> dropout_seed;
  // 32-bit draws of torch's generator consumed after manual_seed(seed) before the module is built:
  // what earlier cells drew (the notebook's [36] comes after one MKL dropout: 1; [38] after [36]: 19).
  std::int64_t draws_before = 0;
  // The user's own parameters (docs/DESIGN.md §2.4 "parameters"), loaded over the seeded
  // initialization as torch.manual_seed(seed); m = Class(…); m.load_state_dict(values,
  // strict=False) does: the initialization's draws are still made, so dropout masks do not change.
  // Null (or empty): the seeded parameters only. Shared and never changed once set.
  std::shared_ptr<const ParameterValues> parameters;
};

// The seed notebook's settings for each variant (the defaults of missing workspace fields).
ModelConfig defaultConfig(Variant variant);

// One name table per enum, used for parsing and printing everywhere (workspaces, commands, the
// model panel, messages). Ids are as in workspaces ("multihead"); titles as a learner reads
// them ("4b · Multi-head attention"), in chapter order.
struct VariantName {
  Variant value;
  const char* id;
  const char* title;
};
struct ScaleName {
  Scale value;
  const char* id;
};
struct NormalizationName {
  Normalization value;
  const char* id;
};
struct CausalRouteName {
  CausalRoute value;
  const char* id;     // "neg_inf", "tril"
  const char* title;  // for the model panel
};
struct DropoutStreamName {
  DropoutStream value;
  const char* id;     // "mkl", "default"
  const char* title;  // which torch draws it, for the model panel and the PyTorch script
};
const std::array<VariantName, 6>& variantNames();
const std::array<ScaleName, 2>& scaleNames();
const std::array<NormalizationName, 2>& normalizationNames();
const std::array<CausalRouteName, 2>& causalRouteNames();
const std::array<DropoutStreamName, 2>& dropoutStreamNames();

const char* variantId(Variant variant);
const char* variantTitle(Variant variant);
// What the model computes in the notebook's words, for captions: "Causal attention, dropout 0.5",
// "Multi-head attention, 2 heads", "Simplified self-attention, weights by row sums" — dropout only
// where it acts (training mode, p > 0), options named only where they differ from the notebook.
std::string describeModel(const ModelConfig& m);
bool parseVariant(const std::string& id, Variant* out);
const char* scaleId(Scale scale);
bool parseScale(const std::string& id, Scale* out);
const char* normalizationId(Normalization normalization);
bool parseNormalization(const std::string& id, Normalization* out);
const char* causalRouteId(CausalRoute route);
const char* causalRouteTitle(CausalRoute route);
bool parseCausalRoute(const std::string& id, CausalRoute* out);
// The tril route is taken: causal, and the weights renormalized after × tril.
inline bool trilRoute(const ModelConfig& m) { return m.causal && m.causal_route == CausalRoute::Tril; }
const char* dropoutStreamId(DropoutStream stream);
const char* dropoutStreamTitle(DropoutStream stream);
bool parseDropoutStream(const std::string& id, DropoutStream* out);
// "simple, self_attention_v1, …": the ids of a name table, for messages.
template <class Table>
std::string idList(const Table& table) {
  std::string out;
  for (const auto& n : table) out += (out.empty() ? "" : ", ") + std::string(n.id);
  return out;
}

// What each variant has, so validation, the app and the CLI agree.
bool hasProjections(Variant v);   // W_query/W_key/W_value (all but simple)
bool hasLinearLayers(Variant v);  // nn.Linear, so qkv_bias applies (v2 and later)
bool hasDropout(Variant v);       // nn.Dropout on the weights (causal, wrapper, multihead)
bool isMultiHead(Variant v);      // num_heads may exceed 1
bool hasOutProj(Variant v);       // multihead's out_proj

// Sizes derived from the config for inputs of width d_in.
int headWidth(const ModelConfig& m, int d_in);     // columns of each head's Q, K, V
int headCount(const ModelConfig& m);               // heads actually computed
int contextWidth(const ModelConfig& m, int d_in);  // width of the concatenated context
int outputWidth(const ModelConfig& m, int d_in);   // width of the module's return value

// Sizes the engine refuses beyond (docs/DESIGN.md §2.4); a plain struct so tests and tools can lower them.
struct Limits {
  int max_tokens = 4096;                                       // T
  int max_dim = 4096;                                          // d_in and d_out
  int max_heads = 64;                                          // num_heads
  int max_batch = 64;                                          // batch_size
  std::int64_t max_attention_cells = std::int64_t{1} << 28;    // B·H·T·T, bounds the trace's memory
  std::int64_t max_file_bytes = std::int64_t{64} << 20;        // a file imported or text pasted
  std::int64_t max_workspace_bytes = std::int64_t{512} << 20;  // a workspace file or a PNG's workspace
  std::int64_t max_memory_bytes = std::int64_t{1} << 30;       // what one computation may take (1 GiB)
  // What a trained model opened may hold (GptLoadOptions::max_model_bytes), estimated from its
  // shapes before anything is read: its own default (GPT-2 medium holds some 3 GiB); a
  // --memory-budget given sets it too (a 4.6-MB deflated file of 4 GB had read past a budget of 64 MiB).
  std::int64_t max_model_bytes = std::int64_t{12} << 30;
  std::int64_t max_draws_before = 100000000;                   // model.draws_before: skipped in about 0.2 s
  double max_gflop = 200;  // what one forward pass may cost: about a minute on one slow core
  // What a program holds besides one computation (docs/DESIGN.md §2.4 "What the app holds"): the
  // T × T maps of how many batch elements at once (0: every element of one trace, as the CLI's
  // trace does; kNoMaps: none, its --outputs-only; the app holds the element shown twice, on
  // screen and computing), and bytes held already (a result pinned in Compare and the difference
  // maps drawn beside it).
  static constexpr int kNoMaps = -1;
  int traced_elements = 0;
  std::int64_t held_bytes = 0;
};

// What a computation costs, estimated up front from the sizes alone, so that a workspace that is
// accepted always completes in bounded time and memory (docs/DESIGN.md §2.4).
struct Cost {
  std::int64_t parameter_bytes =
      0;  // W_query, W_key, W_value (per head for the wrapper), out_proj, and their packed copy
  std::int64_t working_bytes = 0;  // Q, K, V, dropout draws, contexts and outputs of every element
  std::int64_t map_bytes = 0;      // the T × T maps of the traced batch elements
  double gflop = 0;                // multiply-adds × 2 of the projections, Q Kᵀ, weights · V, out_proj
  std::int64_t held_bytes = 0;     // what the program holds besides (Limits::held_bytes)
  std::int64_t bytes() const { return parameter_bytes + working_bytes + map_bytes + held_bytes; }
};
// `traced` batch elements keep their intermediates (the worst case, all of them, when validating).
Cost estimateCost(const ModelConfig& m, int tokens, int d_in, int traced);
// "1.5 GiB", "320 MiB": sizes in messages.
std::string formatBytes(double bytes);

// Throws InputError naming the field ("model.num_heads: …") if the config cannot be computed,
// including when its estimated cost (every batch element traced) exceeds the limits' budgets.
void validateModel(const ModelConfig& m, int tokens, int d_in, const Limits& limits);

}  // namespace attnscope
