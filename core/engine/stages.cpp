#include "engine/stages.h"

#include <algorithm>
#include <limits>

namespace attnscope {

const std::array<StageInfo, kStageCount>& stageTable() {
  static const std::array<StageInfo, kStageCount> table = {{
      // stage, id, title, label, square, heatmap, flags, stored, parameter, shown, tril_route
      {Stage::WQuery, "w_query", "W_query", "W_q", false, true, false, false, true, false, false},
      {Stage::WKey, "w_key", "W_key", "W_k", false, true, false, false, true, false, false},
      {Stage::WValue, "w_value", "W_value", "W_v", false, true, false, false, true, false, false},
      {Stage::Queries, "queries", "queries  Q = X W_q", "Q", false, true, false, true, false, false, false},
      {Stage::Keys, "keys", "keys  K = X W_k", "K", false, true, false, true, false, false, false},
      {Stage::Values, "values", "values  V = X W_v", "V", false, true, false, true, false, false, false},
      {Stage::Scores, "scores", "scores  Q·Kᵀ", "scores", true, true, false, true, false, true, false},
      {Stage::Mask, "mask", "causal mask (1 = hidden)", "mask", true, true, true, false, false, false, false},
      {Stage::MaskedScores, "masked_scores", "masked scores  −∞ above the diagonal", "masked", true, true, false, false,
       false, true, false},
      {Stage::ScaledScores, "scaled_scores", "scaled  ÷ √dₖ", "scaled", true, true, false, false, false, true, false},
      {Stage::UnmaskedWeights, "unmasked_weights", "softmax over every key", "softmax", true, true, false, true, false,
       false, true},
      {Stage::Tril, "tril", "tril  (1 = visible)", "tril", true, true, true, false, false, false, true},
      {Stage::TrilWeights, "tril_weights", "× tril  (before ÷ row sum)", "× tril", true, true, false, false, false,
       false, true},
      {Stage::Weights, "weights", "weights (softmax)", "weights", true, true, false, true, false, true, false},
      {Stage::DropoutMask, "dropout_mask", "dropout mask", "dropout", true, true, true, true, false, true, false},
      {Stage::DroppedWeights, "dropped_weights", "weights after dropout", "dropped", true, true, false, false, false,
       true, false},
      {Stage::Context, "context", "context  weights·V", "context", false, true, false, true, false, false, false},
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

bool stageHeld(const Trace& t, Stage s) { return !stageInfo(s).tril_route || trilRoute(t.model); }

bool emptiedAboveDiagonal(const ModelConfig& m, Stage s) {
  if (!m.causal) return false;
  switch (s) {
    case Stage::MaskedScores:
    case Stage::ScaledScores: return !trilRoute(m);
    case Stage::TrilWeights:
    case Stage::Weights:
    case Stage::DroppedWeights: return true;
    default: return false;
  }
}

StageMap::StageMap(const Matrix& m) : values_(&m), rows_(m.rows()), cols_(m.cols()) {}

StageMap StageMap::weightColumns(const Matrix& weight, Eigen::Index c0, Eigen::Index n) {
  StageMap m;
  m.kind_ = Kind::WeightColumns;
  m.values_ = &weight;
  m.first_column_ = c0;
  m.rows_ = weight.cols();
  m.cols_ = n;
  return m;
}

StageMap::StageMap(const Trace& t, const HeadTrace& h, Stage s) {
  if (stageInfo(s).parameter) {  // the head's slice of its projection (simple has none: 0 × 0)
    const Parameters& p = *t.parameters;
    const std::vector<Linear>& layers = s == Stage::WQuery ? p.query : s == Stage::WKey ? p.key : p.value;
    if (layers.empty()) return;
    const bool wrapper = t.model.variant == Variant::MultiHeadWrapper;
    const Linear& l = layers.at(wrapper ? static_cast<std::size_t>(h.index) : 0);
    const Eigen::Index c0 = t.model.variant == Variant::MultiHead ? static_cast<Eigen::Index>(h.index) * t.head_width
                                                                  : 0;
    *this = weightColumns(l.weight, c0, t.head_width);
    return;
  }
  rows_ = h.scores.rows();
  cols_ = h.scores.cols();
  divide_ = t.model.scale == Scale::SqrtDk;
  divisor_ = t.scale_divisor;
  causal_ = t.model.causal;
  neg_inf_ = t.model.causal && !trilRoute(t.model);
  dropout_scale_ = t.dropout_scale;
  const ByteMatrix* keep = h.dropout_mask.size() > 0 ? &h.dropout_mask : nullptr;
  switch (s) {
    case Stage::WQuery:
    case Stage::WKey:
    case Stage::WValue: break;  // above
    case Stage::Queries: values_ = &h.queries; break;
    case Stage::Keys: values_ = &h.keys; break;
    case Stage::Values: values_ = &h.values; break;
    case Stage::Scores: values_ = &h.scores; break;
    case Stage::Weights: values_ = &h.weights; break;
    case Stage::Context: values_ = &h.context; break;
    case Stage::ScaledScores: kind_ = Kind::Scaled, values_ = &h.scores; break;
    case Stage::Mask: kind_ = Kind::Mask; break;
    case Stage::MaskedScores: kind_ = Kind::Masked, values_ = &h.scores; break;
    case Stage::UnmaskedWeights: values_ = &h.unmasked_weights; break;
    case Stage::Tril: kind_ = Kind::Tril; break;
    case Stage::TrilWeights:  // 0 × 0 off the tril route, as the unmasked weights are
      values_ = &h.unmasked_weights;
      if (h.unmasked_weights.size() > 0) kind_ = Kind::TrilWeights;
      break;
    case Stage::DropoutMask:
      kind_ = keep ? Kind::Flags : Kind::AllOnes;
      flags_ = keep;
      break;
    case Stage::DroppedWeights: kind_ = Kind::Dropped, values_ = &h.weights, flags_ = keep; break;
  }
  if (kind_ == Kind::Values) rows_ = values_->rows(), cols_ = values_->cols();
}

float StageMap::operator()(Eigen::Index i, Eigen::Index j) const {
  switch (kind_) {
    case Kind::Values: return (*values_)(i, j);
    case Kind::Flags: return (*flags_)(i, j);
    case Kind::AllOnes: return 1.0f;
    case Kind::Mask: return causal_ && j > i ? 1.0f : 0.0f;
    case Kind::Tril: return j <= i ? 1.0f : 0.0f;
    case Kind::TrilWeights: return j <= i ? (*values_)(i, j) : 0.0f;
    case Kind::Masked:
    case Kind::Scaled:
      if (neg_inf_ && j > i) return -std::numeric_limits<float>::infinity();
      if (kind_ == Kind::Masked) return (*values_)(i, j);
      return divide_ ? (*values_)(i, j) / divisor_ : (*values_)(i, j);
    case Kind::Dropped:
      if (flags_ == nullptr) return (*values_)(i, j);
      return (*flags_)(i, j) ? (*values_)(i, j) * dropout_scale_ : 0.0f;
    case Kind::WeightColumns: return (*values_)(first_column_ + j, i);
  }
  return 0.0f;
}

void StageMap::readRow(Eigen::Index i, float* out) const {
  Eigen::Map<Eigen::ArrayXf> o(out, cols_);
  const Eigen::Index visible = causal_ ? std::min(i + 1, cols_) : cols_;  // keys not masked
  const Eigen::Index below = std::min(i + 1, cols_);                      // keys j ≤ i: tril's ones
  switch (kind_) {
    case Kind::Values: o = values_->row(i).transpose().array(); return;
    case Kind::Flags: o = flags_->row(i).transpose().cast<float>().array(); return;
    case Kind::AllOnes: o.setOnes(); return;
    case Kind::Mask:
      o.head(visible).setZero();
      o.tail(cols_ - visible).setOnes();
      return;
    case Kind::Scaled:
    case Kind::Masked:
      if (divide_ && kind_ == Kind::Scaled)
        o = values_->row(i).transpose().array() / divisor_;
      else
        o = values_->row(i).transpose().array();
      if (neg_inf_) o.tail(cols_ - visible).setConstant(-std::numeric_limits<float>::infinity());
      return;
    case Kind::Tril:
      o.head(below).setOnes();
      o.tail(cols_ - below).setZero();
      return;
    case Kind::TrilWeights:
      o = values_->row(i).transpose().array();
      o.tail(cols_ - below).setZero();
      return;
    case Kind::Dropped:
      if (flags_ == nullptr) {
        o = values_->row(i).transpose().array();
        return;
      }
      for (Eigen::Index j = 0; j < cols_; ++j) o[j] = (*flags_)(i, j) ? (*values_)(i, j) * dropout_scale_ : 0.0f;
      return;
    case Kind::WeightColumns: o = values_->col(i).segment(first_column_, cols_).array(); return;
  }
}

RowVector StageMap::row(Eigen::Index i) const {
  RowVector r(cols_);
  readRow(i, r.data());
  return r;
}

Matrix StageMap::toMatrix() const {
  if (const Matrix* m = matrix()) return *m;
  Matrix m(rows_, cols_);
  for (Eigen::Index i = 0; i < rows_; ++i) readRow(i, m.data() + i * cols_);
  return m;
}

Matrix stageValues(const Trace& t, const HeadTrace& h, Stage s) { return StageMap(t, h, s).toMatrix(); }

const std::array<ModuleMapInfo, kModuleMapCount>& moduleMapTable() {
  static const std::array<ModuleMapInfo, kModuleMapCount> table = {{
      // map, id, title, label, parameter, shown
      {ModuleMap::Concat, "concat", "context  heads concatenated", "concat", false, false},
      {ModuleMap::OutProj, "out_proj", "out_proj weight", "W_out", true, false},
      {ModuleMap::Output, "output", "output", "output", false, false},
  }};
  return table;
}

const ModuleMapInfo& moduleMapInfo(ModuleMap m) { return moduleMapTable()[static_cast<int>(m)]; }

bool parseModuleMap(const std::string& id, ModuleMap* out) {
  for (const ModuleMapInfo& info : moduleMapTable())
    if (id == info.id) {
      *out = info.map;
      return true;
    }
  return false;
}

StageMap moduleMapValues(const Trace& t, const BatchTrace& bt, ModuleMap m) {
  switch (m) {
    case ModuleMap::Concat: return StageMap(bt.context);
    case ModuleMap::Output: return StageMap(bt.output);
    case ModuleMap::OutProj: {
      const Matrix& w = t.parameters->out_proj.weight;
      return w.size() > 0 ? StageMap::weightColumns(w, 0, w.rows()) : StageMap();
    }
  }
  return StageMap();
}

}  // namespace attnscope
