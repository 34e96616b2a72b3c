// An independent reference for the property tests: torch's random stream re-derived from the
// docs/DESIGN.md §2.2 formulas on a plain std::mt19937 (parameters and dropout draws), and the attention
// arithmetic redone in double. Nothing here calls the engine's TorchGenerator or kernels.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "engine/model_config.h"

namespace attnscope::ref {

// torch.manual_seed(seed) followed by the CPU distribution kernels, as docs/DESIGN.md §2.2 states them.
class Stream {
 public:
  explicit Stream(std::uint32_t seed) : mt_(seed) {}
  // float uniform on [from, to): 24 bits scaled in double; to − from taken in float.
  float uniformFloat(double from_d, double to_d) {
    const float from = static_cast<float>(from_d), to = static_cast<float>(to_d);
    const double x = static_cast<double>(mt_() & 0xFFFFFFu) / 16777216.0;
    return static_cast<float>(x * static_cast<double>(to - from) + static_cast<double>(from));
  }
  std::uint32_t draw() { return mt_(); }
  // Dropout: one 64-bit value from two draws (first = high half), 53 bits; kept iff u < 1 − p.
  bool dropoutKeeps(double p) {
    const std::uint64_t hi = mt_(), lo = mt_();
    const std::uint64_t v = (hi << 32) | lo;
    const double u = static_cast<double>(v & ((std::uint64_t{1} << 53) - 1)) / 9007199254740992.0;
    return u < 1.0 - p;
  }

 private:
  std::mt19937 mt_;
};

// Dropout as torch with MKL on an Intel CPU draws one call of n elements (docs/DESIGN.md §2.2):
// one draw seeds MKL's MCG31m1 (x₀ = seed mod m, 1 if 0; xᵢ₊₁ = a·xᵢ mod m); element i is kept iff
// float(xᵢ/m) < float(1 − p), MKL's Bernoulli comparing in single precision.
inline std::vector<std::uint8_t> mklCall(Stream& s, std::size_t n, double p) {
  const std::uint64_t m = 2147483647u, a = 1132489760u;
  std::uint64_t x = s.draw() % m;
  if (x == 0) x = 1;
  std::vector<std::uint8_t> keep(n);
  for (std::size_t i = 0; i < n; ++i) {
    keep[i] = static_cast<float>(static_cast<double>(x) / static_cast<double>(m)) < static_cast<float>(1.0 - p);
    x = x * a % m;
  }
  return keep;
}

// A projection in torch layout: y = x Wᵀ + b, W is out × in (row-major), b may be empty.
struct Layer {
  int out = 0, in = 0;
  std::vector<float> weight, bias;
  float w(int o, int i) const { return weight[static_cast<std::size_t>(o) * in + i]; }
};

// nn.Linear(in, out, bias): kaiming_uniform_(a=√5) as torch/nn/init.py computes the bound, then
// the bias uniform(−1/√in, 1/√in).
inline Layer linear(Stream& s, int in, int out, bool bias) {
  Layer l{out, in, {}, {}};
  const double a = std::sqrt(5.0);
  const double gain = std::sqrt(2.0 / (1 + a * a));
  const double bound = std::sqrt(3.0) * (gain / std::sqrt(static_cast<double>(in)));
  for (int k = 0; k < out * in; ++k) l.weight.push_back(s.uniformFloat(-bound, bound));
  if (bias) {
    const double b = 1 / std::sqrt(static_cast<double>(in));
    for (int k = 0; k < out; ++k) l.bias.push_back(s.uniformFloat(-b, b));
  }
  return l;
}

// nn.Parameter(torch.rand(in, out)) used as x @ W: stored here transposed, as out × in.
inline Layer randParameter(Stream& s, int in, int out) {
  std::vector<float> w;  // in × out, as drawn
  for (int k = 0; k < in * out; ++k) w.push_back(s.uniformFloat(0.0, 1.0));
  Layer l{out, in, std::vector<float>(static_cast<std::size_t>(in) * out), {}};
  for (int i = 0; i < in; ++i)
    for (int o = 0; o < out; ++o) l.weight[static_cast<std::size_t>(o) * in + i] = w[i * out + o];
  return l;
}

// The module's parameters drawn in construction order, then its dropout draws.
struct Module {
  std::vector<Layer> query, key, value;  // per group (the wrapper's heads), else one
  Layer out_proj;                        // multihead only
  // keep[b][h][i*T + j], in the engine's (batch, head) indexing; empty when dropout draws nothing.
  std::vector<std::vector<std::vector<std::uint8_t>>> keep;
};

inline Module build(const ModelConfig& m, int T, int d_in) {
  Module mod;
  Stream s(m.seed);
  for (std::int64_t k = 0; k < m.draws_before; ++k) s.draw();
  if (m.variant != Variant::Simple) {
    const int groups = m.variant == Variant::MultiHeadWrapper ? m.num_heads : 1;
    for (int g = 0; g < groups; ++g) {
      if (m.variant == Variant::SelfAttentionV1) {
        mod.query.push_back(randParameter(s, d_in, m.d_out));
        mod.key.push_back(randParameter(s, d_in, m.d_out));
        mod.value.push_back(randParameter(s, d_in, m.d_out));
      } else {
        mod.query.push_back(linear(s, d_in, m.d_out, m.qkv_bias));
        mod.key.push_back(linear(s, d_in, m.d_out, m.qkv_bias));
        mod.value.push_back(linear(s, d_in, m.d_out, m.qkv_bias));
      }
    }
    if (m.variant == Variant::MultiHead) mod.out_proj = linear(s, m.d_out, m.d_out, true);
  }
  const bool has_dropout = m.variant == Variant::Causal || m.variant == Variant::MultiHeadWrapper ||
                           m.variant == Variant::MultiHead;
  if (!(has_dropout && m.training && m.dropout > 0)) return mod;
  const int B = m.batch_size;
  const int H = (m.variant == Variant::MultiHead || m.variant == Variant::MultiHeadWrapper) ? m.num_heads : 1;
  mod.keep.assign(B, std::vector<std::vector<std::uint8_t>>(H, std::vector<std::uint8_t>(static_cast<std::size_t>(T) *
                                                                                         T)));
  if (m.dropout_seed) s = Stream(*m.dropout_seed);  // torch.manual_seed before the forward
  const std::size_t tt = static_cast<std::size_t>(T) * T;
  // multihead: one (B, H, T, T) tensor; the wrapper: each head its own (B, T, T), head by head.
  if (m.dropout_rng == DropoutStream::Default) {
    auto draw = [&](int b, int h) {
      for (auto& k : mod.keep[b][h]) k = s.dropoutKeeps(m.dropout);
    };
    if (m.variant == Variant::MultiHeadWrapper) {
      for (int h = 0; h < H; ++h)
        for (int b = 0; b < B; ++b) draw(b, h);
    } else {
      for (int b = 0; b < B; ++b)
        for (int h = 0; h < H; ++h) draw(b, h);
    }
  } else if (m.variant == Variant::MultiHeadWrapper) {  // one MKL call per head
    for (int h = 0; h < H; ++h) {
      const std::vector<std::uint8_t> call = mklCall(s, B * tt, m.dropout);
      for (int b = 0; b < B; ++b)
        std::copy_n(call.begin() + static_cast<std::ptrdiff_t>(b * tt), tt, mod.keep[b][h].begin());
    }
  } else {  // one call over the whole tensor
    const std::vector<std::uint8_t> call = mklCall(s, B * H * tt, m.dropout);
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < H; ++h)
        std::copy_n(call.begin() + static_cast<std::ptrdiff_t>((b * H + h) * tt), tt, mod.keep[b][h].begin());
  }
  return mod;
}

}  // namespace attnscope::ref
