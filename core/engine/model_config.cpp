#include "engine/model_config.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "engine/errors.h"
#include "engine/parameters.h"

namespace attnscope {

ModelConfig defaultConfig(Variant variant) {
  ModelConfig m;
  m.variant = variant;
  switch (variant) {
    case Variant::Simple:  // section 3.3: no parameters, softmax over raw dot products
      m.d_out = 0;         // not used: the width is d_in
      m.num_heads = 1;
      m.causal = false;
      m.scale = Scale::None;
      m.batch_size = 1;
      break;
    case Variant::SelfAttentionV1:  // torch.manual_seed(123); SelfAttention_v1(d_in, 2)
    case Variant::SelfAttentionV2:  // torch.manual_seed(789); SelfAttention_v2(d_in, 2)
      m.num_heads = 1;
      m.causal = false;
      m.batch_size = 1;
      m.seed = variant == Variant::SelfAttentionV1 ? 123 : 789;
      break;
    case Variant::Causal:  // the v2 weights of seed 789 with the mask, on the stacked batch
      m.num_heads = 1;
      m.seed = 789;
      break;
    case Variant::MultiHeadWrapper:
    case Variant::MultiHead:  // torch.manual_seed(123); MultiHeadAttention(3, 2, 6, 0.0, 2)
      break;
  }
  return m;
}

const std::array<VariantName, 6>& variantNames() {
  static const std::array<VariantName, 6> table = {{
      {Variant::Simple, "simple", "1 · Simple self-attention (no weights)"},
      {Variant::SelfAttentionV1, "self_attention_v1", "2a · Trainable weights (SelfAttention_v1)"},
      {Variant::SelfAttentionV2, "self_attention_v2", "2b · Trainable weights (SelfAttention_v2)"},
      {Variant::Causal, "causal", "3 · Causal attention + dropout"},
      {Variant::MultiHeadWrapper, "multihead_wrapper", "4a · Multi-head wrapper"},
      {Variant::MultiHead, "multihead", "4b · Multi-head attention"},
  }};
  return table;
}

const std::array<ScaleName, 2>& scaleNames() {
  static const std::array<ScaleName, 2> table = {{{Scale::SqrtDk, "sqrt_dk"}, {Scale::None, "none"}}};
  return table;
}

const std::array<NormalizationName, 2>& normalizationNames() {
  static const std::array<NormalizationName, 2> table = {
      {{Normalization::Softmax, "softmax"}, {Normalization::Sum, "sum"}}};
  return table;
}

const std::array<CausalRouteName, 2>& causalRouteNames() {
  static const std::array<CausalRouteName, 2> table = {{
      {CausalRoute::NegInf, "neg_inf", "−∞ before softmax"},
      {CausalRoute::Tril, "tril", "× tril, ÷ row sums"},
  }};
  return table;
}

const std::array<DropoutStreamName, 2>& dropoutStreamNames() {
  static const std::array<DropoutStreamName, 2> table = {{
      {DropoutStream::Mkl, "mkl", "torch with MKL on an Intel CPU (pip's torch; the notebook's prints)"},
      {DropoutStream::Default, "default", "torch without MKL, or on AMD/ARM (Debian's torch, macOS arm64)"},
  }};
  return table;
}

namespace {

template <class Table, class E>
const char* idOf(const Table& table, E value) {
  for (const auto& n : table)
    if (n.value == value) return n.id;
  return "?";
}

template <class Table, class E>
const char* titleOf(const Table& table, E value) {
  for (const auto& n : table)
    if (n.value == value) return n.title;
  return "?";
}

template <class Table, class E>
bool parseId(const Table& table, const std::string& id, E* out) {
  for (const auto& n : table)
    if (id == n.id) {
      *out = n.value;
      return true;
    }
  return false;
}

}  // namespace

const char* variantId(Variant v) { return idOf(variantNames(), v); }
const char* variantTitle(Variant v) { return titleOf(variantNames(), v); }
std::string describeModel(const ModelConfig& m) {
  std::string s;
  switch (m.variant) {
    case Variant::Simple: s = "Simplified self-attention (no trainable weights)"; break;
    case Variant::SelfAttentionV1: s = "Self-attention with trainable weights (SelfAttention_v1)"; break;
    case Variant::SelfAttentionV2: s = "Self-attention with nn.Linear (SelfAttention_v2)"; break;
    case Variant::Causal: s = "Causal attention"; break;
    case Variant::MultiHeadWrapper:
      s = "Multi-head attention wrapper, " + std::to_string(m.num_heads) + " heads";
      break;
    case Variant::MultiHead: s = "Multi-head attention, " + std::to_string(m.num_heads) + " heads"; break;
  }
  if (m.variant == Variant::Simple && m.normalization == Normalization::Sum) s += ", weights by row sums";
  // The chapter's classes: the first three see every token, the others mask the future.
  const bool notebook_causal = hasDropout(m.variant);
  if (m.causal != notebook_causal) s += m.causal ? ", causal mask" : ", no causal mask";
  if (trilRoute(m)) s += ", masked by × tril and ÷ row sums";
  if (hasProjections(m.variant) && m.scale == Scale::None) s += ", not scaled by √d_k";
  if (hasDropout(m.variant) && m.dropout > 0) {
    char p[32];
    std::snprintf(p, sizeof p, "%g", m.dropout);
    s += std::string(", dropout ") + p + (m.training ? "" : " (off: eval mode)");
  }
  return s;
}

bool parseVariant(const std::string& id, Variant* out) { return parseId(variantNames(), id, out); }
const char* scaleId(Scale s) { return idOf(scaleNames(), s); }
bool parseScale(const std::string& id, Scale* out) { return parseId(scaleNames(), id, out); }
const char* normalizationId(Normalization n) { return idOf(normalizationNames(), n); }
bool parseNormalization(const std::string& id, Normalization* out) { return parseId(normalizationNames(), id, out); }
const char* causalRouteId(CausalRoute r) { return idOf(causalRouteNames(), r); }
const char* causalRouteTitle(CausalRoute r) { return titleOf(causalRouteNames(), r); }
bool parseCausalRoute(const std::string& id, CausalRoute* out) { return parseId(causalRouteNames(), id, out); }
const char* dropoutStreamId(DropoutStream d) { return idOf(dropoutStreamNames(), d); }
const char* dropoutStreamTitle(DropoutStream d) { return titleOf(dropoutStreamNames(), d); }
bool parseDropoutStream(const std::string& id, DropoutStream* out) { return parseId(dropoutStreamNames(), id, out); }

bool hasProjections(Variant v) { return v != Variant::Simple; }
bool hasLinearLayers(Variant v) { return v != Variant::Simple && v != Variant::SelfAttentionV1; }
bool hasDropout(Variant v) { return v == Variant::Causal || v == Variant::MultiHeadWrapper || v == Variant::MultiHead; }
bool isMultiHead(Variant v) { return v == Variant::MultiHeadWrapper || v == Variant::MultiHead; }
bool hasOutProj(Variant v) { return v == Variant::MultiHead; }

int headCount(const ModelConfig& m) { return isMultiHead(m.variant) ? m.num_heads : 1; }

int headWidth(const ModelConfig& m, int d_in) {
  if (m.variant == Variant::Simple) return d_in;
  if (m.variant == Variant::MultiHead) return m.d_out / m.num_heads;
  return m.d_out;
}

int contextWidth(const ModelConfig& m, int d_in) { return headCount(m) * headWidth(m, d_in); }
int outputWidth(const ModelConfig& m, int d_in) { return contextWidth(m, d_in); }

namespace {
[[noreturn]] void failModel(const std::string& field, const std::string& why) {
  throw InputError("model." + field + ": " + why);
}
}  // namespace

Cost estimateCost(const ModelConfig& m, int tokens, int d_in, int traced) {
  const double T = tokens, d = d_in, B = m.batch_size, H = headCount(m), w = headWidth(m, d_in);
  const double G = m.variant == Variant::MultiHeadWrapper ? m.num_heads : 1;  // projection groups
  const double width = hasProjections(m.variant) ? m.d_out : 0;               // of one group
  const double ctx = contextWidth(m, d_in);
  Cost c;
  double params = G * 3 * (d * width + (m.qkv_bias ? width : 0));
  if (hasOutProj(m.variant)) params += width * width + width;
  // The fused path packs every projection into GEMM panels: a second copy of them all, made from
  // one group's W_query, W_key and W_value stacked (a third copy of that group, while packing).
  if (hasProjections(m.variant)) params = 2 * params + 3 * (d * width + (m.qkv_bias ? width : 0));
  // The user's own values (ModelConfig::parameters) are a further copy of those they replace.
  if (m.parameters)
    for (const NamedTensor& t : *m.parameters) params += static_cast<double>(t.value.size());
  c.parameter_bytes = static_cast<std::int64_t>(4 * params);
  double working = T * d * 4;            // the embeddings (every element reads them)
  working += 3 * B * G * T * width * 4;  // Q, K, V
  // The fast path's key tiles, packed once a pass (attention_pass.h's PackedKeyTiles): a copy of
  // every head's K in panels of 32 keys, kept by the computing thread for the next pass.
  working += B * H * (std::ceil(T / 32) * 32) * w * 4;
  if (hasDropout(m.variant) && m.training && m.dropout > 0) working += B * H * T * T;  // draws
  working += B * H * T * w * 4 + 2 * B * T * ctx * 4;                                  // contexts, concat, output
  c.working_bytes = static_cast<std::int64_t>(working);
  // Per traced element and head: the scores and weights (the other stages are derived when read),
  // the keep mask with dropout, Q, K, V.
  const double keep_mask = hasDropout(m.variant) && m.training && m.dropout > 0 ? 1 : 0;
  c.map_bytes = static_cast<std::int64_t>(static_cast<double>(traced) * H *
                                          (T * T * (2 * 4 + keep_mask) + 3 * T * w * 4));
  const double flop = 2 * B * T * d * 3 * width * G + 2 * 2 * B * H * T * T * w +
                      (hasOutProj(m.variant) ? 2 * B * T * width * width : 0);
  c.gflop = flop / 1e9;
  return c;
}

std::string formatBytes(double bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  std::ostringstream s;
  s.precision(bytes < 10 && u > 0 ? 2 : 3);
  s << bytes << " " << units[u];
  return s.str();
}

void validateModel(const ModelConfig& m, int tokens, int d_in, const Limits& limits) {
  const char* id = variantId(m.variant);
  const std::string variant = std::string("the '") + id + "' variant";
  if (m.variant == Variant::Simple) {
    if (m.d_out != d_in && m.d_out != 0)
      failModel("d_out", variant + " has no projection, its width is d_in (" + str(d_in) + "); got " + str(m.d_out));
  } else if (m.d_out < 1 || m.d_out > limits.max_dim) {
    failModel("d_out", "must be between 1 and " + str(limits.max_dim) + ", got " + str(m.d_out));
  }
  if (isMultiHead(m.variant)) {
    if (m.num_heads < 1 || m.num_heads > limits.max_heads)
      failModel("num_heads", "must be between 1 and " + str(limits.max_heads) + ", got " + str(m.num_heads));
  } else if (m.num_heads != 1) {
    failModel("num_heads", variant + " has one head; use multihead_wrapper or multihead for " + str(m.num_heads));
  }
  if (m.variant == Variant::MultiHead && m.d_out % m.num_heads != 0)
    failModel("d_out", "d_out must be divisible by num_heads (the seed's assert), got d_out = " + str(m.d_out) +
                      ", num_heads = " + str(m.num_heads));
  if (!(m.dropout >= 0.0 && m.dropout <= 1.0)) {  // 1 as torch takes it: every weight dropped
    std::ostringstream s;
    s << "must be in [0, 1], got " << m.dropout;
    failModel("dropout", s.str());
  }
  if (m.dropout != 0.0 && !hasDropout(m.variant))
    failModel("dropout", variant + " has no dropout (only causal, multihead_wrapper and multihead do)");
  if (m.causal && m.variant == Variant::Simple) failModel("causal", variant + " has no mask; use causal or a later variant");
  if (m.qkv_bias && !hasLinearLayers(m.variant))
    failModel("qkv_bias", variant + " has no nn.Linear layers, so no bias (self_attention_v2 and later)");
  if (m.normalization == Normalization::Sum && m.variant != Variant::Simple)
    failModel("normalization", "\"sum\" is only for the 'simple' variant; " + variant + " uses softmax");
  if (m.batch_size < 1 || m.batch_size > limits.max_batch)
    failModel("batch_size", "must be between 1 and " + str(limits.max_batch) + ", got " + str(m.batch_size));
  if (m.draws_before < 0 || m.draws_before > limits.max_draws_before)
    failModel("draws_before", "must be between 0 and " + str(limits.max_draws_before) + ", got " + str(m.draws_before));
  const long long cells = static_cast<long long>(m.batch_size) * headCount(m) * tokens * tokens;
  if (cells > limits.max_attention_cells)
    failModel("batch_size", "batch_size × num_heads × T² = " + str(cells) + " attention cells exceeds the limit of " +
                           str(limits.max_attention_cells));
  checkParameterValues(m, d_in);  // the user's own parameters: names and shapes (docs/DESIGN.md §2.4)
  // The budgets, decided before anything is allocated. The message names the field that drives
  // the largest part of the cost.
  // Not capped by batch_size: the app holds its one element twice (on screen and computing).
  const int traced = limits.traced_elements == Limits::kNoMaps ? 0
                     : limits.traced_elements > 0              ? limits.traced_elements
                                                               : m.batch_size;
  Cost c = estimateCost(m, tokens, d_in, traced);
  c.held_bytes = limits.held_bytes;
  const char* field = c.parameter_bytes >= c.map_bytes && c.parameter_bytes >= c.working_bytes
                          ? (isMultiHead(m.variant) && m.num_heads > 1 ? "num_heads" : "d_out")
                      : m.batch_size > 1 && limits.traced_elements == 0 ? "batch_size"
                      : headCount(m) > 1                                ? "num_heads"
                                                                        : "d_out";
  if (c.bytes() > limits.max_memory_bytes)
    failModel(field, "this configuration needs about " + formatBytes(static_cast<double>(c.bytes())) + " (parameters " +
                    formatBytes(static_cast<double>(c.parameter_bytes)) + ", maps " +
                    formatBytes(static_cast<double>(c.map_bytes)) + ", the rest " +
                    formatBytes(static_cast<double>(c.working_bytes)) +
                    (c.held_bytes > 0 ? ", the pinned result " + formatBytes(static_cast<double>(c.held_bytes))
                                      : std::string()) +
                    "), over the memory budget of " + formatBytes(static_cast<double>(limits.max_memory_bytes)));
  if (c.gflop > limits.max_gflop) {
    std::ostringstream s;
    s.precision(3);
    s << "this configuration needs about " << c.gflop << " GFLOP, over the budget of " << limits.max_gflop
      << " GFLOP (about a minute on one core)";
    failModel(field, s.str());
  }
}

}  // namespace attnscope
