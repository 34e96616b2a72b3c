#include "engine/parameters.h"

#include <list>
#include <mutex>

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

DrawnParameters drawParameters(const ModelConfig& m, int d_in) {
  // What initParameters reads of the config: everything else (dropout, batch, mask, scale) may
  // change without a redraw.
  struct Key {
    Variant variant;
    int d_out, num_heads, d_in;
    std::uint32_t seed;
    bool qkv_bias;
    bool operator==(const Key& o) const {
      return variant == o.variant && d_out == o.d_out && num_heads == o.num_heads && d_in == o.d_in &&
             seed == o.seed && qkv_bias == o.qkv_bias;
    }
  };
  constexpr std::size_t kKept = 4;  // recent configs (undo/redo of a model edit finds its own)
  static std::mutex mutex;
  static std::list<std::pair<Key, DrawnParameters>> recent;  // most recent first
  const Key key{m.variant, m.d_out, m.num_heads, d_in, m.seed, m.qkv_bias};
  {
    const std::lock_guard<std::mutex> lock(mutex);
    for (auto it = recent.begin(); it != recent.end(); ++it)
      if (it->first == key) {
        recent.splice(recent.begin(), recent, it);
        return it->second;
      }
  }
  TorchGenerator generator(m.seed);
  auto parameters = std::make_shared<const Parameters>(initParameters(m, d_in, generator));
  DrawnParameters drawn{std::move(parameters), generator};
  const std::lock_guard<std::mutex> lock(mutex);
  recent.emplace_front(key, drawn);
  if (recent.size() > kKept) recent.pop_back();
  return drawn;
}

}  // namespace attnscope
