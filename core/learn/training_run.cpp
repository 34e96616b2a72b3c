#include "learn/training_run.h"

#include <nlohmann/json.hpp>

namespace attnscope {

TrainingRun::TrainingRun(const TrainTask& task)
    : task_(task),
      model_(task),
      init_(task.seed),
      data_(task.seed + 1u),
      optimizer_(task, model_.parameterCount()),
      probe_(probeSequence(task)) {
  model_.initialize(init_);
  recordScores();
}

double TrainingRun::step(std::vector<float>* gradients) {
  const TrainBatch batch = nextBatch(task_, data_);
  const double loss = lossAndGradients(model_, batch, &gradients_, task_.dropout, &init_, kTrainParts);
  if (gradients) *gradients = gradients_;
  optimizer_.step(model_.values, gradients_);
  losses_.push_back(loss);
  if (stepsDone() % task_.score_every == 0 || stepsDone() == task_.steps) recordScores();
  return loss;
}

void TrainingRun::recordScores() {
  const auto maps = attentionMaps(model_, probe_);
  const TokenPatterns patterns(probe_);
  const int T = static_cast<int>(probe_.size());
  ScoreRecord r;
  r.step = stepsDone();
  std::vector<HeadScoreRow> rows(static_cast<std::size_t>(T));
  last_maps_.clear();
  for (const auto& layer : maps) {
    r.scores.emplace_back();
    for (const Matrix& a : layer) {
      last_maps_.insert(last_maps_.end(), a.data(), a.data() + a.size());
      for (int i = 0; i < T; ++i) rows[static_cast<std::size_t>(i)] = headScoreRow(a.row(i).data(), i, i + 1, patterns);
      r.scores.back().push_back(headScoresOfRows(rows.data(), T));
    }
  }
  scores_.push_back(std::move(r));
}

std::vector<float> TrainingRun::probeMaps() const {
  std::vector<float> out;
  for (const auto& layer : attentionMaps(model_, probe_))
    for (const Matrix& a : layer) out.insert(out.end(), a.data(), a.data() + a.size());
  return out;
}

nlohmann::json TrainingRun::resultJson() const {
  nlohmann::json steps = nlohmann::json::array(), previous = nlohmann::json::array(),
                 induction = nlohmann::json::array(), first = nlohmann::json::array();
  for (const ScoreRecord& r : scores_) {
    steps.push_back(r.step);
    nlohmann::json p = nlohmann::json::array(), ind = nlohmann::json::array(), f = nlohmann::json::array();
    for (const auto& layer : r.scores) {
      nlohmann::json pl = nlohmann::json::array(), il = nlohmann::json::array(), fl = nlohmann::json::array();
      for (const HeadScores& s : layer) {
        pl.push_back(s.previous_token);
        il.push_back(s.has_induction ? nlohmann::json(s.induction) : nlohmann::json(nullptr));
        fl.push_back(s.first_token);
      }
      p.push_back(pl), ind.push_back(il), f.push_back(fl);
    }
    previous.push_back(p), induction.push_back(ind), first.push_back(f);
  }
  return {{"losses", losses_},
          {"head_scores",
           {{"steps", steps}, {"previous_token", previous}, {"induction", induction}, {"first_token", first}}}};
}

}  // namespace attnscope
