// torch.optim.AdamW and SGD, single-tensor form (learn/optimizer.h).
#include "learn/optimizer.h"

#include <cmath>

namespace attnscope {

Optimizer::Optimizer(const TrainTask& task, std::size_t parameters)
    : kind_(task.optimizer), lr_(task.lr), weight_decay_(task.weight_decay), momentum_(task.momentum) {
  first_.assign(parameters, 0.0f);
  if (kind_ == OptimizerKind::AdamW) second_.assign(parameters, 0.0f);
}

void Optimizer::step(std::vector<float>& p, const std::vector<float>& g) {
  ++steps_;
  const std::size_t n = p.size();
  if (kind_ == OptimizerKind::AdamW) {
    const double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
    // param.mul_(1 − lr·wd); exp_avg.mul_(β₁).add_(g, alpha = 1 − β₁);
    // exp_avg_sq.mul_(β₂).addcmul_(g, g, value = 1 − β₂);
    // denom = (exp_avg_sq.sqrt() / √(1 − β₂ᵗ)).add_(eps); param.addcdiv_(exp_avg, denom, value = −lr / (1 − β₁ᵗ))
    const float decay = static_cast<float>(1 - lr_ * weight_decay_);
    const float b1 = static_cast<float>(beta1), a1 = static_cast<float>(1 - beta1);
    const float b2 = static_cast<float>(beta2), a2 = static_cast<float>(1 - beta2);
    const double correction1 = 1 - std::pow(beta1, steps_), correction2 = 1 - std::pow(beta2, steps_);
    const float step_size = static_cast<float>(-(lr_ / correction1));
    const float root2 = static_cast<float>(std::sqrt(correction2));
    const float epsf = static_cast<float>(eps);
    for (std::size_t i = 0; i < n; ++i) {
      p[i] = p[i] * decay;
      first_[i] = first_[i] * b1 + a1 * g[i];
      second_[i] = second_[i] * b2 + a2 * g[i] * g[i];
      const float denom = std::sqrt(second_[i]) / root2 + epsf;
      p[i] = p[i] + step_size * first_[i] / denom;
    }
    return;
  }
  // SGD: d = g + wd·p; with momentum the buffer starts as d, then buf·μ + d; p −= lr·d
  const float wd = static_cast<float>(weight_decay_), mu = static_cast<float>(momentum_);
  const float lr = static_cast<float>(-lr_);
  for (std::size_t i = 0; i < n; ++i) {
    float d = weight_decay_ != 0 ? g[i] + wd * p[i] : g[i];
    if (momentum_ != 0) {
      first_[i] = steps_ == 1 ? d : first_[i] * mu + d;
      d = first_[i];
    }
    p[i] = p[i] + lr * d;
  }
}

}  // namespace attnscope
