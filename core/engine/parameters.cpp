#include "engine/parameters.h"

namespace attnscope {

namespace {

Linear makeLinear(int in, int out, bool bias, TorchGenerator& g) {
  Linear l;
  l.weight.resize(out, in);
  g.fillLinearWeight(l.weight.data(), out, in);
  if (bias) {
    l.bias.resize(out);
    g.fillLinearBias(l.bias.data(), out, in);
  }
  return l;
}

// SelfAttention_v1: nn.Parameter(torch.rand(d_in, d_out)), used as x @ W.
Linear makeRandParameter(int d_in, int d_out, TorchGenerator& g) {
  Matrix w(d_in, d_out);
  g.fillUniform(w.data(), w.size(), 0.0, 1.0);
  return Linear{w.transpose(), RowVector()};
}

}  // namespace

Parameters initParameters(const ModelConfig& m, int d_in, TorchGenerator& g) {
  Parameters p;
  if (!hasProjections(m.variant)) return p;
  // The wrapper builds num_heads CausalAttention modules in turn, each W_query, W_key, W_value.
  const int groups = m.variant == Variant::MultiHeadWrapper ? m.num_heads : 1;
  for (int i = 0; i < groups; ++i) {
    if (m.variant == Variant::SelfAttentionV1) {
      p.query.push_back(makeRandParameter(d_in, m.d_out, g));
      p.key.push_back(makeRandParameter(d_in, m.d_out, g));
      p.value.push_back(makeRandParameter(d_in, m.d_out, g));
    } else {
      p.query.push_back(makeLinear(d_in, m.d_out, m.qkv_bias, g));
      p.key.push_back(makeLinear(d_in, m.d_out, m.qkv_bias, g));
      p.value.push_back(makeLinear(d_in, m.d_out, m.qkv_bias, g));
    }
  }
  if (hasOutProj(m.variant)) p.out_proj = makeLinear(m.d_out, m.d_out, true, g);
  return p;
}

std::vector<NamedTensor> stateDict(const ModelConfig& m, const Parameters& p) {
  std::vector<NamedTensor> out;
  auto addLinear = [&out](const std::string& name, const Linear& l) {
    out.push_back({name + ".weight", l.weight, false});
    if (l.bias.size() > 0) out.push_back({name + ".bias", l.bias, true});
  };
  if (m.variant == Variant::SelfAttentionV1) {
    out.push_back({"W_query", p.query[0].weight.transpose(), false});
    out.push_back({"W_key", p.key[0].weight.transpose(), false});
    out.push_back({"W_value", p.value[0].weight.transpose(), false});
    return out;
  }
  for (std::size_t i = 0; i < p.query.size(); ++i) {
    const std::string prefix =
        m.variant == Variant::MultiHeadWrapper ? "heads." + std::to_string(i) + "." : "";
    addLinear(prefix + "W_query", p.query[i]);
    addLinear(prefix + "W_key", p.key[i]);
    addLinear(prefix + "W_value", p.value[i]);
  }
  if (hasOutProj(m.variant)) addLinear("out_proj", p.out_proj);
  return out;
}

}  // namespace attnscope
