#include "engine/stages.h"

namespace attnscope {

const std::array<StageInfo, kStageCount>& stageTable() {
  static const std::array<StageInfo, kStageCount> table = {{
      {Stage::Queries, "queries", "queries  Q = X W_q", false, false, &HeadTrace::queries, nullptr},
      {Stage::Keys, "keys", "keys  K = X W_k", false, false, &HeadTrace::keys, nullptr},
      {Stage::Values, "values", "values  V = X W_v", false, false, &HeadTrace::values, nullptr},
      {Stage::Scores, "scores", "scores  Q·Kᵀ", true, true, &HeadTrace::scores, nullptr},
      {Stage::ScaledScores, "scaled_scores", "scaled  ÷ √dₖ", true, true, &HeadTrace::scaled_scores, nullptr},
      {Stage::Mask, "mask", "causal mask (1 = hidden)", true, false, nullptr, &HeadTrace::mask},
      {Stage::MaskedScores, "masked_scores", "causal mask → −∞", true, true, &HeadTrace::masked_scores, nullptr},
      {Stage::Weights, "weights", "weights (softmax)", true, true, &HeadTrace::weights, nullptr},
      {Stage::DropoutMask, "dropout_mask", "dropout mask", true, true, nullptr, &HeadTrace::dropout_mask},
      {Stage::DroppedWeights, "dropped_weights", "weights after dropout", true, true, &HeadTrace::dropped_weights, nullptr},
      {Stage::Context, "context", "context  weights·V", false, true, &HeadTrace::context, nullptr},
  }};
  return table;
}

const StageInfo& stageInfo(Stage s) { return stageTable()[static_cast<int>(s)]; }

const char* stageId(Stage s) { return stageInfo(s).id; }

bool parseStage(const std::string& id, Stage* out) {
  for (const StageInfo& info : stageTable())
    if (id == info.id) {
      *out = info.stage;
      return true;
    }
  return false;
}

Matrix stageValues(const HeadTrace& h, Stage s) {
  const StageInfo& info = stageInfo(s);
  return info.values ? h.*info.values : (h.*info.flags).cast<float>();
}

}  // namespace attnscope
