// The optimizers a task trains with, as torch.optim defines them (docs/DESIGN.md §2.7): AdamW
// (decoupled weight decay, bias correction; betas 0.9 and 0.999, eps 1e-8, torch's defaults) and
// SGD (weight decay into the gradient, momentum without dampening). Each step is torch's
// single-tensor code (foreach=False) written out element by element, in float32 as torch computes
// it, with the Python scalars it computes in double.
#pragma once
#include <vector>

#include "learn/train_task.h"

namespace attnscope {

class Optimizer {
 public:
  Optimizer(const TrainTask& task, std::size_t parameters);
  // One optimizer.step() on every parameter with its gradient (laid out alike).
  void step(std::vector<float>& parameters, const std::vector<float>& gradients);
  int steps() const { return steps_; }

 private:
  OptimizerKind kind_;
  double lr_, weight_decay_, momentum_;
  int steps_ = 0;
  std::vector<float> first_, second_;  // AdamW's exp_avg and exp_avg_sq; SGD's momentum buffer
};

}  // namespace attnscope
