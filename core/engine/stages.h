// The stages of one head's computation, listed once (docs/DESIGN.md §2.3). The trace JSON, the
// exports, the app's heatmaps and its capture panels all iterate this table: a new stage is one
// more row here and one more member of HeadTrace.
#pragma once
#include <array>
#include <string>

#include "engine/tensor.h"
#include "engine/trace.h"

namespace attnscope {

enum class Stage {
  Queries, Keys, Values, Scores, ScaledScores, Mask, MaskedScores, Weights, DropoutMask,
  DroppedWeights, Context
};
constexpr int kStageCount = 11;

struct StageInfo {
  Stage stage;
  const char* id;                  // "scaled_scores": trace JSON key, export file, --panel, dumps
  const char* title;               // "scaled  ÷ √dₖ": the heading of its map
  bool square;                     // T × T over query and key tokens (else T × head width)
  bool heatmap;                    // offered as a column of the app's heatmap grid
  Matrix HeadTrace::*values;       // the member holding it, for float stages …
  ByteMatrix HeadTrace::*flags;    // … or for 0/1 masks (exactly one of the two is set)
};

// In the order the trace keeps them.
const std::array<StageInfo, kStageCount>& stageTable();
const StageInfo& stageInfo(Stage s);
const char* stageId(Stage s);
// "weights" → Stage::Weights; false for an unknown id.
bool parseStage(const std::string& id, Stage* out);
// The stage's values as floats (masks as 0/1).
Matrix stageValues(const HeadTrace& h, Stage s);

}  // namespace attnscope
