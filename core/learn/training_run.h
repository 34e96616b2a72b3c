// A training run (docs/DESIGN.md §2.7): a task's model from its initialization, stepped one batch
// at a time — the batch, the loss and its gradients, the optimizer's step — with the loss of every
// step and the heads' scores on the task's probe every score_every steps. What `attnscope-cli
// train` prints and the PyTorch script (learn/train_script.h) prints alike.
#pragma once
#include <nlohmann/json_fwd.hpp>
#include <vector>

#include "learn/optimizer.h"
#include "learn/train_model.h"
#include "lm/head_scores.h"

namespace attnscope {

struct ScoreRecord {
  int step = 0;                                 // optimizer steps done when measured
  std::vector<std::vector<HeadScores>> scores;  // [layer][head], on the probe
};

class TrainingRun {
 public:
  // torch.manual_seed(seed) and the model; the data generator seeded seed + 1; the scores at step 0.
  explicit TrainingRun(const TrainTask& task);

  // One optimizer step on the next batch; returns its loss (before the step). `gradients`, when
  // given, receives the step's gradients (laid out as model().values).
  double step(std::vector<float>* gradients = nullptr);
  int stepsDone() const { return optimizer_.steps(); }
  bool finished() const { return stepsDone() >= task_.steps; }

  const TrainTask& task() const { return task_; }
  const TrainModel& model() const { return model_; }
  const std::vector<int>& probe() const { return probe_; }
  const std::vector<double>& losses() const { return losses_; }
  const std::vector<ScoreRecord>& scores() const { return scores_; }
  // The probe's attention weights at the last score record: L·H maps of T × T, layer-major.
  const std::vector<float>& lastMaps() const { return last_maps_; }
  // The probe's attention weights now, laid out as lastMaps (a run paused between records).
  std::vector<float> probeMaps() const;

  // {"losses": [...], "head_scores": {"steps": [...], "previous_token": [[[L × H]] per record],
  // "induction": …, "first_token": …}} (an undefined induction score is null).
  nlohmann::json resultJson() const;

 private:
  void recordScores();

  TrainTask task_;
  TrainModel model_;
  TorchGenerator init_;  // torch's default generator: initialization, then dropout's draws
  TorchGenerator data_;
  Optimizer optimizer_;
  std::vector<int> probe_;
  std::vector<float> gradients_;
  std::vector<double> losses_;
  std::vector<ScoreRecord> scores_;
  std::vector<float> last_maps_;
};

}  // namespace attnscope
