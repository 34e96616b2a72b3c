// TorchGenerator: PyTorch's CPU random generator (torch.manual_seed + the CPU distribution kernels
// of Debian's torch 1.13), reproduced bit for bit so parameters and dropout masks equal the
// notebook's. The kernels it mirrors are in libtorch-dev's ATen/core/TransformationHelper.h,
// DistributionsHelper.h and native/cpu/DistributionTemplates.h.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>

#include "engine/mt19937.h"

namespace attnscope {

class TorchGenerator {
 public:
  // torch.manual_seed(seed): a standard MT19937 seeded with the 32-bit seed. `impl` forces the
  // block draws' SIMD code (tests, measurements); every choice draws the same numbers. A copy of a
  // generator continues the identical stream.
  explicit TorchGenerator(std::uint32_t seed, Isa impl = Isa::Auto) : engine_(seed, impl) {}

  // One 32-bit draw (CPUGeneratorImpl::random).
  std::uint32_t random() { return engine_.next(); }
  // n 32-bit draws thrown away: what earlier cells of a notebook consumed (ModelConfig::draws_before).
  void discard(std::uint64_t n);
  // Two 32-bit draws, the first is the high half (CPUGeneratorImpl::random64).
  std::uint64_t random64();

  // uniform_real_distribution<float>: 24 random bits scaled in double, then x·(to−from)+from.
  float uniformFloat(float from, float to);
  // uniform_real_distribution<double>: 53 random bits from random64().
  double uniformDouble(double from, double to);

  // tensor.uniform_(from, to) on n contiguous floats; torch.rand is uniform(0, 1). Drawn in blocks,
  // the same numbers as n uniformFloat calls.
  void fillUniform(float* data, std::size_t n, double from, double to);
  // tensor.normal_(mean, std) on n contiguous floats (torch.randn is normal(0, 1)): the 16-wide
  // Box–Muller fill for n ≥ 16, the scalar double path below that.
  void fillNormal(float* data, std::size_t n, double mean, double std);

  // nn.Linear(fan_in, fan_out) weight: kaiming_uniform_(a=√5) on fan_out × fan_in floats.
  void fillLinearWeight(float* data, std::size_t fan_out, std::size_t fan_in);
  // nn.Linear bias: uniform(−1/√fan_in, 1/√fan_in) on fan_out floats.
  void fillLinearBias(float* data, std::size_t fan_out, std::size_t fan_in);

  // Dropout in training mode with 0 < p < 1: one random64 draw per element, in row-major order;
  // keep[i] = 1 when the element survives (u < 1 − p, u = uniformDouble(0, 1)). Draws nothing
  // when p == 0.
  void fillDropoutKeep(std::uint8_t* keep, std::size_t n, double p);
  // The same draws and decisions as a bitmask: element i is kept iff bit i % 64 of words[i / 64]
  // is set; the (n + 63) / 64 words are written, bits past n zero.
  void fillDropoutKeepBits(std::uint64_t* words, std::size_t n, double p);
  // The integer form of the decision: with b = random64() & (2⁵³ − 1), u < 1 − p ⇔
  // b < dropoutKeepThreshold(p) (see torch_generator.cpp for why this is exact).
  static std::uint64_t dropoutKeepThreshold(double p);
  // Dropout as torch built with MKL draws it on an Intel CPU (pip's torch on x86-64: the notebook's
  // prints; on other CPUs torch falls back to fillDropoutKeepBits's draws). bernoulli_(1 − p) takes
  // one 32-bit draw as the seed of MKL's MCG31m1 stream, x ← 1132489760·x mod (2³¹ − 1) from
  // x₀ = seed mod (2³¹ − 1) (1 if that is 0); element i uses xᵢ whatever the thread split (MKL skips
  // ahead), and is kept iff float(xᵢ/(2³¹ − 1)) < float(1 − p): MKL's Bernoulli compares in single
  // precision, so the keep rule is xᵢ < mklKeepBelow(p). One draw per call whatever n; none when p
  // is 0 or 1 (torch returns the input, or zeros). Writes the bits of elements first … first + n − 1
  // as fillDropoutKeepBits numbers them, and no other bit.
  void fillDropoutKeepBitsMkl(std::uint64_t* words, std::size_t first, std::size_t n, double p);
  // The smallest x with float(x/(2³¹ − 1)) ≥ float(1 − p): MKL keeps xᵢ below it.
  static std::uint32_t mklKeepBelow(double p);
  static constexpr std::uint64_t kMklModulus = 2147483647u;  // 2³¹ − 1
  // The factor torch multiplies kept elements by: 1/(1 − p); at p = 1 torch returns zeros (no
  // scaling of what is not kept): 0, not ∞ (0·∞ is NaN).
  static float dropoutScale(double p) { return p >= 1 ? 0.0f : 1.0f / static_cast<float>(1.0 - p); }

 private:
  double normalDouble(double mean, double std);  // at::normal_distribution<double>

  Mt19937 engine_;
  std::optional<double> next_double_normal_;  // Box–Muller's second value, cached like torch does
};

}  // namespace attnscope
