#include "engine/torch_generator.h"

#include <cmath>

namespace attnscope {

std::uint64_t TorchGenerator::random64() {
  const std::uint64_t hi = random();
  const std::uint64_t lo = random();
  return (hi << 32) | lo;
}

float TorchGenerator::uniformFloat(float from, float to) {
  // torch computes x in double (dist_acctype<float> on CPU), to − from in float.
  const double x = static_cast<double>(random() & ((1u << 24) - 1)) * std::ldexp(1.0, -24);
  const float range = to - from;
  return static_cast<float>(x * range + from);
}

double TorchGenerator::uniformDouble(double from, double to) {
  const double x =
      static_cast<double>(random64() & ((std::uint64_t{1} << 53) - 1)) * std::ldexp(1.0, -53);
  return x * (to - from) + from;
}

void TorchGenerator::fillUniform(float* data, std::size_t n, double from, double to) {
  const float f = static_cast<float>(from), t = static_cast<float>(to);
  for (std::size_t i = 0; i < n; ++i) data[i] = uniformFloat(f, t);
}

double TorchGenerator::normalDouble(double mean, double std) {
  if (next_double_normal_) {
    const double cached = *next_double_normal_;
    next_double_normal_.reset();
    return cached * std + mean;
  }
  const double u1 = uniformDouble(0.0, 1.0);
  const double u2 = uniformDouble(0.0, 1.0);
  const double r = std::sqrt(-2.0 * std::log1p(-u2));
  const double theta = 2.0 * M_PI * u1;
  next_double_normal_ = r * std::sin(theta);
  return r * std::cos(theta) * std + mean;
}

// normal_fill_16: Box–Muller on 16 uniforms in place; the first 8 give the radii, the last 8 the
// angles (torch's layout, so value k of a block depends on uniforms k and k+8).
static void normalFill16(float* data, float mean, float std) {
  for (int j = 0; j < 8; ++j) {
    const float u1 = 1 - data[j];  // in (0, 1] so the log is finite
    const float u2 = data[j + 8];
    const float radius = std::sqrt(-2 * std::log(u1));
    const float theta = 2.0f * static_cast<float>(M_PI) * u2;
    data[j] = radius * std::cos(theta) * std + mean;
    data[j + 8] = radius * std::sin(theta) * std + mean;
  }
}

void TorchGenerator::fillNormal(float* data, std::size_t n, double mean, double std) {
  if (n < 16) {
    for (std::size_t i = 0; i < n; ++i) data[i] = static_cast<float>(normalDouble(mean, std));
    return;
  }
  const float m = static_cast<float>(mean), s = static_cast<float>(std);
  for (std::size_t i = 0; i < n; ++i) data[i] = uniformFloat(0.0f, 1.0f);
  for (std::size_t i = 0; i + 16 <= n; i += 16) normalFill16(data + i, m, s);
  if (n % 16 != 0) {  // torch redraws the last 16 values and transforms them again
    float* tail = data + n - 16;
    for (int i = 0; i < 16; ++i) tail[i] = uniformFloat(0.0f, 1.0f);
    normalFill16(tail, m, s);
  }
}

void TorchGenerator::fillLinearWeight(float* data, std::size_t fan_out, std::size_t fan_in) {
  // torch.nn.init.kaiming_uniform_(w, a=math.sqrt(5)), all in double as Python computes it.
  const double a = std::sqrt(5.0);
  const double gain = std::sqrt(2.0 / (1 + std::pow(a, 2)));
  const double std_ = gain / std::sqrt(static_cast<double>(fan_in));
  const double bound = std::sqrt(3.0) * std_;
  fillUniform(data, fan_out * fan_in, -bound, bound);
}

void TorchGenerator::fillLinearBias(float* data, std::size_t fan_out, std::size_t fan_in) {
  const double bound = fan_in > 0 ? 1 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
  fillUniform(data, fan_out, -bound, bound);
}

void TorchGenerator::fillDropoutKeep(std::uint8_t* keep, std::size_t n, double p) {
  if (p == 0) {
    for (std::size_t i = 0; i < n; ++i) keep[i] = 1;
    return;
  }
  const double keep_probability = 1 - p;  // bernoulli_(1 − p) then div_(1 − p)
  for (std::size_t i = 0; i < n; ++i) keep[i] = uniformDouble(0.0, 1.0) < keep_probability;
}

}  // namespace attnscope
