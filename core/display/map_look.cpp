#include "display/map_look.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "display/number_text.h"
#include "formats/utf8.h"

namespace attnscope {

std::string dropoutCellText(bool active, float scale, float kept) {
  return kept > 0.5f ? (active ? "×" + formatFixed(scale, 1) : "1") : "0";
}

bool oneValued(const MapLook& look) { return !(look.range.hi > look.range.lo) && look.scale != ColourScale::Row; }

MapLook colouredBy(ValueRange range, bool flags, const LookChoices& choices) {
  MapLook look;
  look.range = range;
  look.colormap = choices.colormap;
  look.scale = flags ? ColourScale::Linear : choices.scale;  // a 0/1 mask reads the same on any scale
  if (choices.diverging_for_signed && !flags && range.lo < 0) {
    look.colormap = Colormap::Coolwarm;
    look.range = centredOnZero(range);
  }
  return look;
}

MapLook stageLook(const Trace& t, Stage stage, ValueRange range, const LookChoices& choices) {
  // The weights on a probability's fixed range, where they are within it (a row sum of signed
  // scores is not); the smallest positive value stays a log scale's floor.
  if (choices.weights_fixed && (stage == Stage::Weights || stage == Stage::DroppedWeights ||
                                stage == Stage::UnmaskedWeights || stage == Stage::TrilWeights)) {
    const float top = stage == Stage::DroppedWeights && t.dropout_active ? t.dropout_scale : 1.0f;
    if (range.lo >= 0 && range.hi <= top * (1 + 1e-6f)) range.lo = 0, range.hi = top;
  }
  MapLook look = colouredBy(range, stageInfo(stage).flags, choices);
  if (stage == Stage::DropoutMask) {
    const bool active = t.dropout_active;
    const float scale = t.dropout_scale;
    look.cell_text = [active, scale](float v) { return dropoutCellText(active, scale, v); };
    look.range_text = {"dropped 0", active ? "kept ×" + formatFixed(scale, 2) : "kept 1"};
  } else if (stage == Stage::Mask) {  // 0/1, as torch.triu(…, diagonal=1) prints it
    look.cell_text = [](float v) { return std::string(v > 0.5f ? "1" : "0"); };
    look.range_text = {"0 visible", "1 masked"};
  } else if (stage == Stage::Tril) {  // 0/1, as torch.tril(torch.ones(T, T)) prints it
    look.cell_text = [](float v) { return std::string(v > 0.5f ? "1" : "0"); };
    look.range_text = {"0 later key", "1 visible"};
  } else if ((stage == Stage::MaskedScores || stage == Stage::ScaledScores) && t.model.causal && !trilRoute(t.model)) {
    look.legend = "▨ −∞ masked";
  } else if (look.scale == ColourScale::Log && logApplies(look.range) && look.range.lo == 0) {
    look.legend = kZeroLegend;  // its zeros grey, as masked: the bottom colour is the smallest positive value's
  }
  return look;
}

int headFirstColumn(const Trace& t, int head) {
  return t.model.variant == Variant::MultiHead && t.heads > 1 ? head * t.head_width : 0;
}

bool keyLabelStaysAcross(const std::string& label) {
  std::size_t i = 0;
  return !label.empty() && nextCodePoint(label, &i) != kNotUtf8 && i == label.size();
}

float numberedNamesShare(double font, double cell) { return axisNameStep(font + 1, cell) >= 5 ? 0.85f : 0.9f; }

int axisNameStep(double room, double cell, bool ruler) {
  const double least = cell > 0 ? std::max(1.0, std::ceil(room / cell)) : 1;
  if (!ruler) return static_cast<int>(std::min(least, 1e9));
  // (25 too: a 99-token map whose names need 23 cells had only its selected row named at 50)
  for (int step = 1;; step *= 10)
    for (int nice : {step, 2 * step, step >= 10 ? 5 * step / 2 : 2 * step, 5 * step})
      if (nice >= least || nice >= (1 << 28)) return nice;
}

bool axisNamed(int position, int index, int step) {
  return step <= 1 || (position >= 0 ? (position + 1) % step == 0 : index % step == 0);
}

std::vector<int> pinnedAxisNames(int selected, const std::vector<int>& places, int step) {
  std::vector<int> pinned;
  const auto keep = [&](int i) {
    if (i < 0) return;
    for (const int p : pinned)
      if (std::abs(i - p) < step) return;
    pinned.push_back(i);
  };
  keep(selected);
  for (const int p : places) keep(p);
  return pinned;
}

bool pinnedAxisNamed(int index, const std::vector<int>& pinned, int step, bool thinned) {
  for (const int p : pinned)
    if (std::abs(index - p) < step) return index == p;
  return thinned;
}

std::string axisName(const std::string& name, int position, int step) {
  return step > 1 && position >= 0 ? std::to_string(position + 1) + " " + name : name;  // counted from 1
}

std::string stageHeading(const Trace& t, Stage s) {
  const std::string n = std::to_string(t.tokens);
  const std::string tt = "  " + n + "×" + n;
  switch (s) {
    case Stage::ScaledScores:
      return t.model.scale == Scale::SqrtDk ? "scaled  ÷ √" + std::to_string(t.head_width) + tt : "scaled: none" + tt;
    case Stage::Scores:  // step 1 has no Q or K of its own: inputs @ inputs.T
      return t.model.variant == Variant::Simple ? "scores  X·Xᵀ" + tt : stageInfo(s).title + tt;
    case Stage::MaskedScores:
      return t.model.causal ? std::string("masked  −∞ above the diagonal") + tt : "mask: none (not causal)" + tt;
    case Stage::DropoutMask:
      return t.dropout_active ? "dropout mask  p = " + formatFixed(static_cast<float>(t.model.dropout), 2) + tt
                              : "dropout mask: off" + tt;
    case Stage::Weights:  // the step's own normalization, not always softmax
      return (trilRoute(t.model)                            ? std::string("weights  ÷ row sum")
              : t.model.normalization == Normalization::Sum ? std::string("weights  ÷ row sum")
                                                            : std::string("weights (softmax)")) +
             tt;
    case Stage::Context:
    case Stage::Queries:
    case Stage::Keys:
    case Stage::Values:
      if (t.model.variant == Variant::Simple && s != Stage::Context)
        return std::string(stageInfo(s).label) + " = X  " + n + "×" + std::to_string(t.head_width);
      return std::string(stageInfo(s).title) + "  " + n + "×" + std::to_string(t.head_width);
    case Stage::WQuery:
    case Stage::WKey:
    case Stage::WValue: {  // as X·W uses it; of multihead's one projection, this head's columns
      std::string heading = std::string(stageInfo(s).title) + "  " + std::to_string(t.d_in) + "×" +
                            std::to_string(t.head_width);
      if (t.model.variant == Variant::MultiHead && t.heads > 1)
        heading += "  (this head's columns)";
      else if (t.model.variant != Variant::SelfAttentionV1)
        heading += "  (.weightᵀ)";
      return heading;
    }
    default: return stageInfo(s).title + tt;
  }
}

// The heading of one of the module's maps.
std::string moduleHeading(const Trace& t, const BatchTrace& bt, ModuleMap m) {
  const std::string n = std::to_string(t.tokens);
  switch (m) {
    case ModuleMap::Concat:
      return "context  " + std::to_string(t.heads) + " heads concatenated  " + n + "×" +
             std::to_string(bt.context.cols());
    case ModuleMap::OutProj:
      return "out_proj  " + std::to_string(t.model.d_out) + "×" + std::to_string(t.model.d_out) + "  (.weightᵀ)";
    case ModuleMap::Output:
      return std::string(hasOutProj(t.model.variant) ? "output  out_proj(context)  " : "output  = the context  ") + n +
             "×" + std::to_string(bt.output.cols());
  }
  return "";
}

}  // namespace attnscope
