// The stages of one head's computation, listed once (docs/DESIGN.md §2.3). The trace JSON, the
// exports, the app's heatmaps and its capture panels all iterate this table: a new stage is one
// more row here and one more member of HeadTrace.
#pragma once
#include <array>
#include <string>

#include "engine/tensor.h"
#include "engine/trace.h"

namespace attnscope {

// In the order of the notebook's classes: a causal class masks the raw scores, then divides by √dₖ
// (CausalAttention.forward: attn_scores.masked_fill_(…), then softmax(attn_scores / d_k**0.5)).
// The head's weights come first: the columns of W_query, W_key, W_value that make its Q, K, V.
// The tril route of cells [26]–[28] (ModelConfig::causal_route) has three stages of its own
// between the scaled scores and the weights: the softmax over every key, tril, and their product.
enum class Stage {
  WQuery,
  WKey,
  WValue,
  Queries,
  Keys,
  Values,
  Scores,
  Mask,
  MaskedScores,
  ScaledScores,
  UnmaskedWeights,
  Tril,
  TrilWeights,
  Weights,
  DropoutMask,
  DroppedWeights,
  Context
};
constexpr int kStageCount = 17;

struct StageInfo {
  Stage stage;
  const char* id;     // "scaled_scores": trace JSON key, export file, --panel, dumps
  const char* title;  // "scaled  ÷ √dₖ": the heading of its map
  const char* label;  // "scaled": its toggle in the grid's header
  bool square;        // T × T over query and key tokens (else T × head width)
  bool heatmap;       // offered as a column of the app's heatmap grid
  bool flags;         // 0/1 values (the masks), written as integers
  bool stored;        // a HeadTrace member holds it; else StageMap derives it
  bool parameter;     // d_in × head width, read from the parameters as X·W uses
                      // them; not among a trace's heads (its "parameters" hold them)
  bool shown;         // a column of the heatmap grid until the user hides it
  bool tril_route;    // held only on the tril route (stageHeld)
};

// In the order the trace keeps them.
const std::array<StageInfo, kStageCount>& stageTable();
const StageInfo& stageInfo(Stage s);
const char* stageId(Stage s);
// "weights" → Stage::Weights; false for an unknown id.
bool parseStage(const std::string& id, Stage* out);
// Whether the trace has stage s at all: the tril route's own stages on that route only. Writers
// (trace JSON, exports) leave out the others; views say why.
bool stageHeld(const Trace& t, Stage s);
// Whether a causal mask leaves stage s of model m empty above the diagonal (−∞ or 0 there, whatever
// the inputs): the masked and scaled scores off the tril route, and every weights stage.
bool emptiedAboveDiagonal(const ModelConfig& m, Stage s);

// The values of one map, read the same way whether a matrix holds them or they are derived on
// demand from what a head stores (docs/DESIGN.md §2.3): a view, valid while its sources live.
//   mask    = 1 where masked (causal: key j > query i), else 0
//   masked  = −∞ where masked, else the raw scores (the notebook's attn_scores.masked_fill_)
//   scaled  = masked (causal) or scores ÷ scale_divisor, −∞ staying −∞ (as they are with scale = none);
//             on the tril route the scores of every key ÷ scale_divisor
//   tril    = 1 where key j ≤ query i (torch.tril(torch.ones(T, T))), else 0
//   tril_weights = the unmasked weights × tril (the notebook's masked_simple)
//   dropout_mask = the stored keep mask, all 1 when dropout is inactive
//   dropped = weights × dropout_scale where kept, 0 where dropped (weights without dropout)
//   w_query, w_key, w_value = the head's columns of the projection in X·W form: (i, j) is
//                 weight(c0 + j, i) of the torch Linear (out × in), c0 = the head's first column
// Each is the kernels' own float operation on the stored values, so it reads the very bits the
// engine computed the context from.
class StageMap {
 public:
  StageMap() = default;
  StageMap(const Matrix& m);  // NOLINT: any matrix (inputs, context, output) is a map as it is
  StageMap(const Trace& t, const HeadTrace& h, Stage s);  // h must have its maps (but for parameters)
  // Columns [c0, c0 + n) of X·W for a torch weight W (out × in): an in × n map, no copy.
  static StageMap weightColumns(const Matrix& weight, Eigen::Index c0, Eigen::Index n);
  Eigen::Index rows() const { return rows_; }
  Eigen::Index cols() const { return cols_; }
  Eigen::Index size() const { return rows_ * cols_; }
  float operator()(Eigen::Index i, Eigen::Index j) const;
  // Row i into out[0 … cols()): a derived map costs one vectorized pass over its source row.
  void readRow(Eigen::Index i, float* out) const;
  RowVector row(Eigen::Index i) const;
  Matrix toMatrix() const;
  // The matrix itself when the map is one (not derived): zero-copy reads.
  const Matrix* matrix() const { return kind_ == Kind::Values ? values_ : nullptr; }
  // A weightColumns map's values, transposed: the weight's rows [c0, c0 + n), contiguous (a
  // range or a sum reads them in memory order, not a strided column per map row); else null.
  const float* weightRows() const {
    return kind_ == Kind::WeightColumns ? values_->data() + first_column_ * values_->cols() : nullptr;
  }

 private:
  enum class Kind { Values, Flags, AllOnes, Scaled, Mask, Masked, Dropped, WeightColumns, Tril, TrilWeights };
  Kind kind_ = Kind::Values;
  const Matrix* values_ = nullptr;     // Values; the scores (Scaled, Masked); the weights (Dropped);
                                       // the unmasked weights (TrilWeights)
  const ByteMatrix* flags_ = nullptr;  // Flags; the keep mask (Dropped), null without dropout
  Eigen::Index rows_ = 0, cols_ = 0;
  bool divide_ = false;  // Scaled, Masked: ÷ divisor_
  float divisor_ = 1;
  bool causal_ = false;            // Mask, Masked, Scaled
  bool neg_inf_ = false;           // Masked, Scaled: −∞ where masked (not on the tril route)
  float dropout_scale_ = 1;        // Dropped
  Eigen::Index first_column_ = 0;  // WeightColumns: c0 (values_ is the torch weight)
};

// The stage's values as a matrix (masks as 0/1).
Matrix stageValues(const Trace& t, const HeadTrace& h, Stage s);

// The module's maps: one per batch element, made from every head together.
enum class ModuleMap { Concat, OutProj, Output };
constexpr int kModuleMapCount = 3;

struct ModuleMapInfo {
  ModuleMap map;
  const char* id;     // "output": the view's columns, --panel, dumps
  const char* title;  // "output  out_proj(context)": the heading of its map
  const char* label;  // "output": its toggle in the grid's header
  bool parameter;     // a weight, d_out × d_out in X·W form (else T rows of tokens)
  bool shown;         // a column of the heatmap grid until the user hides it
};

const std::array<ModuleMapInfo, kModuleMapCount>& moduleMapTable();
const ModuleMapInfo& moduleMapInfo(ModuleMap m);
bool parseModuleMap(const std::string& id, ModuleMap* out);
// concat = the heads' contexts side by side; out_proj = its weight as X·W uses it (multihead
// only: else an empty map); output = what the module returns (out_proj(concat), or concat).
StageMap moduleMapValues(const Trace& t, const BatchTrace& bt, ModuleMap m);

}  // namespace attnscope
