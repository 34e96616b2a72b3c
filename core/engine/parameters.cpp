#include "engine/parameters.h"

#include <list>
#include <mutex>

#include "engine/errors.h"
#include "engine/recent_cache.h"

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

void forEachStateDictEntry(
    const ModelConfig& m, const Parameters& p,
    const std::function<void(const std::string& name, const Matrix& value, bool is_vector)>& visit) {
  auto linear = [&visit](const std::string& name, const Linear& l) {
    visit(name + ".weight", l.weight, false);
    if (l.bias.size() > 0) visit(name + ".bias", l.bias, true);
  };
  if (m.variant == Variant::SelfAttentionV1) {  // x @ W: stored as Wᵀ, listed as d_in × d_out
    visit("W_query", p.query[0].weight.transpose(), false);
    visit("W_key", p.key[0].weight.transpose(), false);
    visit("W_value", p.value[0].weight.transpose(), false);
    return;
  }
  for (std::size_t i = 0; i < p.query.size(); ++i) {
    const std::string prefix = m.variant == Variant::MultiHeadWrapper ? "heads." + std::to_string(i) + "." : "";
    linear(prefix + "W_query", p.query[i]);
    linear(prefix + "W_key", p.key[i]);
    linear(prefix + "W_value", p.value[i]);
  }
  if (hasOutProj(m.variant)) linear("out_proj", p.out_proj);
}

std::vector<NamedTensor> stateDict(const ModelConfig& m, const Parameters& p) {
  std::vector<NamedTensor> out;
  forEachStateDictEntry(m, p, [&out](const std::string& name, const Matrix& value, bool is_vector) {
    out.push_back({name, value, is_vector});
  });
  return out;
}

namespace {

// Where a state_dict() entry lives in Parameters.
struct Slot {
  ParameterShape shape;
  std::vector<Linear> Parameters::*group = nullptr;  // query, key or value (index `index`) …
  int index = 0;                                     // … or, if null, out_proj
  bool bias = false;
  bool transposed = false;  // SelfAttention_v1's x @ W: stored as Wᵀ
};

std::vector<Slot> slots(const ModelConfig& m, int d_in) {
  std::vector<Slot> out;
  if (!hasProjections(m.variant)) return out;
  const bool v1 = m.variant == Variant::SelfAttentionV1;
  const bool wrapper = m.variant == Variant::MultiHeadWrapper;
  struct Projection {
    const char* name;
    std::vector<Linear> Parameters::*group;
  };
  const Projection projections[] = {{"W_query", &Parameters::query},
                                    {"W_key", &Parameters::key},
                                    {"W_value", &Parameters::value}};
  for (int g = 0; g < (wrapper ? m.num_heads : 1); ++g) {
    const std::string prefix = wrapper ? "heads." + std::to_string(g) + "." : "";
    for (const Projection& p : projections) {
      if (v1) {
        out.push_back({{prefix + p.name, d_in, m.d_out, false, "d_in × d_out"}, p.group, g, false, true});
        continue;
      }
      out.push_back({{prefix + p.name + ".weight", m.d_out, d_in, false, "d_out × d_in"}, p.group, g, false, false});
      if (m.qkv_bias) out.push_back({{prefix + p.name + ".bias", 1, m.d_out, true, "d_out"}, p.group, g, true, false});
    }
  }
  if (hasOutProj(m.variant)) {
    out.push_back({{"out_proj.weight", m.d_out, m.d_out, false, "d_out × d_out"}, nullptr, 0, false, false});
    out.push_back({{"out_proj.bias", 1, m.d_out, true, "d_out"}, nullptr, 0, true, false});
  }
  return out;
}

[[noreturn]] void refuse(const std::string& name, const std::string& why) {
  throw InputError("parameters." + name + ": " + why);
}

std::string shapeText(const NamedTensor& t) {
  if (t.is_vector)
    return "a list of " + std::to_string(t.value.cols()) + (t.value.cols() == 1 ? " number" : " numbers");
  return "a " + std::to_string(t.value.rows()) + " × " + std::to_string(t.value.cols()) + " matrix";
}

// Why `name` is no parameter of m's module: the closest reason there is.
[[noreturn]] void refuseUnknown(const ModelConfig& m, const std::string& name, const std::vector<Slot>& all) {
  const std::string cls = seedClassName(m.variant);
  auto ends = [&](const std::string& tail) {
    return name.size() >= tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
  };
  auto known = [&](const std::string& n) {
    for (const Slot& s : all)
      if (s.shape.name == n) return true;
    return false;
  };
  if (name == "mask" || (name.rfind("heads.", 0) == 0 && ends(".mask")))
    refuse(name, "a buffer (the causal mask), not a parameter: leave it out");
  if (ends(".bias") && known(name.substr(0, name.size() - 5) + ".weight") && !m.qkv_bias)
    refuse(name, cls + " has no " + name + ": qkv_bias is false (set model.qkv_bias to true to load biases)");
  if (m.variant == Variant::SelfAttentionV1 && ends(".weight") && known(name.substr(0, name.size() - 7)))
    refuse(name, "SelfAttention_v1 holds " + name.substr(0, name.size() - 7) +
                     " itself (d_in × d_out, torch.rand), not an nn.Linear: name it " +
                     name.substr(0, name.size() - 7));
  if (m.variant != Variant::SelfAttentionV1 && known(name + ".weight"))
    refuse(name, cls + "'s " + name + " is an nn.Linear: its weight is " + name + ".weight (d_out × d_in)");
  if (m.variant != Variant::MultiHeadWrapper && name.rfind("heads.", 0) == 0)
    refuse(name,
           cls + " has no heads.N modules: that is MultiHeadAttentionWrapper's state_dict (variant multihead_wrapper)");
  if (m.variant == Variant::MultiHeadWrapper && name.rfind("heads.", 0) == 0)
    refuse(name, "the wrapper has num_heads = " + std::to_string(m.num_heads) + " heads: heads.0 … heads." +
                     std::to_string(m.num_heads - 1));
  std::string list;
  const std::size_t shown = std::min<std::size_t>(all.size(), 8);
  for (std::size_t i = 0; i < shown; ++i) list += (i ? ", " : "") + all[i].shape.name;
  if (shown < all.size()) list += ", … (" + std::to_string(all.size()) + " in all)";
  refuse(name, "not a parameter of " + cls + " (its parameters: " + list + ")");
}

}  // namespace

const char* seedClassName(Variant v) {
  switch (v) {
    case Variant::Simple: return "simple_attention";
    case Variant::SelfAttentionV1: return "SelfAttention_v1";
    case Variant::SelfAttentionV2: return "SelfAttention_v2";
    case Variant::Causal: return "CausalAttention";
    case Variant::MultiHeadWrapper: return "MultiHeadAttentionWrapper";
    case Variant::MultiHead: return "MultiHeadAttention";
  }
  return "";
}

std::vector<ParameterShape> parameterShapes(const ModelConfig& m, int d_in) {
  std::vector<ParameterShape> out;
  for (const Slot& s : slots(m, d_in)) out.push_back(s.shape);
  return out;
}

void checkParameterValues(const ModelConfig& m, int d_in) {
  if (!m.parameters || m.parameters->empty()) return;
  if (!hasProjections(m.variant))
    throw InputError(std::string("parameters: the '") + variantId(m.variant) + "' variant has no parameters");
  const std::vector<Slot> all = slots(m, d_in);
  std::vector<bool> seen(all.size(), false);
  for (const NamedTensor& t : *m.parameters) {
    std::size_t k = 0;
    while (k < all.size() && all[k].shape.name != t.name) ++k;
    if (k == all.size()) refuseUnknown(m, t.name, all);
    if (seen[k]) refuse(t.name, "given twice");
    seen[k] = true;
    const ParameterShape& want = all[k].shape;
    const bool fits = t.is_vector == want.is_vector && t.value.rows() == want.rows && t.value.cols() == want.cols;
    if (!fits) {
      const std::string expected = want.is_vector
                                       ? "a list of " + std::to_string(want.cols) + " numbers (" + want.dims + ")"
                                       : std::to_string(want.rows) + " × " + std::to_string(want.cols) + " (" +
                                             want.dims + ")";
      const bool transposed = !t.is_vector && !want.is_vector && t.value.rows() == want.cols &&
                              t.value.cols() == want.rows;
      refuse(t.name,
             "expected " + expected + ", got " + shapeText(t) +
                 (transposed ? (want.dims == "d_in × d_out" ? " (transposed? SelfAttention_v1's W is d_in × d_out)"
                                                            : " (transposed? nn.Linear stores its weight as out × in)")
                             : ""));
    }
    if (!t.value.allFinite()) refuse(t.name, "every value must be a finite number");
  }
}

void applyParameterValues(const ModelConfig& m, int d_in, Parameters& p) {
  checkParameterValues(m, d_in);
  if (!m.parameters) return;
  const std::vector<Slot> all = slots(m, d_in);
  for (const NamedTensor& t : *m.parameters)
    for (const Slot& s : all) {
      if (s.shape.name != t.name) continue;
      Linear& layer = s.group ? (p.*s.group)[static_cast<std::size_t>(s.index)] : p.out_proj;
      if (s.bias)
        layer.bias = t.value.row(0);
      else if (s.transposed)
        layer.weight = t.value.transpose();
      else
        layer.weight = t.value;
    }
}

std::size_t parameterBytes(const Parameters& p) {
  std::size_t n = 0;
  auto linear = [&n](const Linear& l) { n += static_cast<std::size_t>(l.weight.size() + l.bias.size()); };
  for (const auto* group : {&p.query, &p.key, &p.value})
    for (const Linear& l : *group) linear(l);
  linear(p.out_proj);
  return n * sizeof(float);
}

namespace {

DrawnParameters drawSeeded(const ModelConfig& m, int d_in) {
  // What initParameters reads of the config: everything else (dropout, batch, mask, scale) may
  // change without a redraw.
  struct Key {
    Variant variant;
    int d_out, num_heads, d_in;
    std::uint32_t seed;
    std::int64_t draws_before;
    bool qkv_bias;
    bool operator==(const Key& o) const {
      return variant == o.variant && d_out == o.d_out && num_heads == o.num_heads && d_in == o.d_in && seed == o.seed &&
             draws_before == o.draws_before && qkv_bias == o.qkv_bias;
    }
  };
  // Recent configs (undo/redo of a model edit finds its own), 64 MiB of them beyond the newest.
  static RecentCache<Key, DrawnParameters> recent(4, std::size_t{64} << 20);
  const Key key{m.variant, m.d_out, m.num_heads, d_in, m.seed, m.draws_before, m.qkv_bias};
  if (auto hit = recent.find([&key](const Key& k) { return k == key; })) return *hit;
  TorchGenerator generator(m.seed);
  generator.discard(static_cast<std::uint64_t>(m.draws_before));  // what earlier cells drew
  auto parameters = std::make_shared<const Parameters>(initParameters(m, d_in, generator));
  const std::size_t bytes = parameterBytes(*parameters);
  DrawnParameters drawn{std::move(parameters), generator};
  recent.insert(key, drawn, bytes);
  return drawn;
}

}  // namespace

DrawnParameters drawParameters(const ModelConfig& m, int d_in) {
  DrawnParameters seeded = drawSeeded(m, d_in);
  if (!m.parameters || m.parameters->empty()) return seeded;
  // The user's values over a copy of the seeded draw. The last result is kept for as long as the
  // same values meet the same seeded draw (the app recomputes on every edit of the inputs).
  static std::mutex mutex;
  static std::shared_ptr<const ParameterValues> last_values;
  static std::shared_ptr<const Parameters> last_seeded, last_result;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (last_values == m.parameters && last_seeded == seeded.parameters) return {last_result, seeded.generator};
  }
  auto p = std::make_shared<Parameters>(*seeded.parameters);
  applyParameterValues(m, d_in, *p);
  std::shared_ptr<const Parameters> result = std::move(p);
  const std::lock_guard<std::mutex> lock(mutex);
  last_values = m.parameters;
  last_seeded = seeded.parameters;
  last_result = result;
  return {result, seeded.generator};
}

}  // namespace attnscope
