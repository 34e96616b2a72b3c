#include "display/colormap.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <mutex>
#include <sstream>
#include <vector>

#include "display/number_text.h"
#include "engine/errors.h"
#include "formats/presets.h"

namespace attnscope {

const char* colormapId(Colormap c) {
  switch (c) {
    case Colormap::Viridis: return "viridis";
    case Colormap::Cividis: return "cividis";
    case Colormap::Coolwarm: return "coolwarm";
  }
  return "viridis";
}

const char* colormapTitle(Colormap c) {
  switch (c) {
    case Colormap::Viridis: return "Viridis (default)";
    case Colormap::Cividis: return "Cividis (colour-blind safe)";
    case Colormap::Coolwarm: return "Coolwarm (diverging)";
  }
  return "Viridis";
}

bool parseColormap(const std::string& id, Colormap* out) {
  for (Colormap c : {Colormap::Viridis, Colormap::Cividis, Colormap::Coolwarm})
    if (id == colormapId(c)) {
      *out = c;
      return true;
    }
  return false;
}

namespace {

std::array<Rgb, 256> loadTable(Colormap c) {
  const std::string path = assetsDir() + "/colormaps/" + colormapId(c) + ".csv";
  std::ifstream in(path);
  if (!in) {
    const std::string folder = missingAssets();  // the whole data folder, not only this table
    throw InputError(folder.empty() ? path + ": colormap table missing" : folder);
  }
  std::array<Rgb, 256> table{};
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    int r, g, b;
    char c1, c2;
    std::istringstream row(line);
    if (!(row >> r >> c1 >> g >> c2 >> b) || n >= 256) throw InputError(path + ": expected 256 lines r,g,b");
    table[n++] = {static_cast<std::uint8_t>(r), static_cast<std::uint8_t>(g), static_cast<std::uint8_t>(b)};
  }
  if (n != 256) throw InputError(path + ": expected 256 lines r,g,b");
  return table;
}

}  // namespace

const std::array<Rgb, 256>& colormapTable(Colormap c) {
  static std::mutex mutex;
  static std::array<std::array<Rgb, 256>, 3> tables;
  static std::array<bool, 3> loaded{};
  std::lock_guard<std::mutex> lock(mutex);
  const int i = static_cast<int>(c);
  if (!loaded[i]) {
    tables[i] = loadTable(c);
    loaded[i] = true;
  }
  return tables[i];
}

namespace {

// The three reductions of finiteRange over a stream of values, in kLanes independent lanes: each
// lane's min and max is one vector instruction (x < y ? x : y is exactly what vminps computes,
// so the compiler vectorizes it without fast-math), where Eigen's select(…).minCoeff() ran
// scalar: 3.7 ms for a 1024 × 1024 map, 50 ms of every GPT-2 edit. |v| ≤ FLT_MAX is false for
// ±∞ and NaN, which are no part of a range.
class RangeAccumulator {
 public:
  RangeAccumulator() { lo_.fill(kInf), hi_.fill(-kInf), positive_.fill(kInf); }
  void add(const float* v, Eigen::Index n) {
    Eigen::Index i = 0;
    for (; i + kLanes <= n; i += kLanes)
      for (int k = 0; k < kLanes; ++k) addTo(k, v[i + k]);
    for (; i < n; ++i) addTo(0, v[i]);  // the tail, in lane 0
  }
  ValueRange range() const {
    float l = kInf, h = -kInf, p = kInf;
    for (int k = 0; k < kLanes; ++k) l = std::min(l, lo_[k]), h = std::max(h, hi_[k]), p = std::min(p, positive_[k]);
    if (l > h) return {0, 0};  // nothing finite
    return {l, h, p == kInf ? 0.0f : p};
  }

 private:
  static constexpr int kLanes = 16;
  static constexpr float kInf = std::numeric_limits<float>::infinity();
  void addTo(int k, float x) {
    const bool finite = std::fabs(x) <= std::numeric_limits<float>::max();
    const float low = finite ? x : kInf, high = finite ? x : -kInf, pos = finite && x > 0 ? x : kInf;
    lo_[k] = low < lo_[k] ? low : lo_[k];
    hi_[k] = high > hi_[k] ? high : hi_[k];
    positive_[k] = pos < positive_[k] ? pos : positive_[k];
  }
  std::array<float, kLanes> lo_, hi_, positive_;  // per lane: min, max, smallest positive
};

}  // namespace

ValueRange finiteRange(const Matrix& m) {
  RangeAccumulator r;
  r.add(m.data(), m.size());
  return r.range();
}

namespace {
// Rows [first, rows) of m: a stored (row-major) map in one pass over its memory, a derived one a
// row at a time.
ValueRange rowsRange(const StageMap& m, Eigen::Index first) {
  RangeAccumulator r;
  if (const Matrix* stored = m.matrix()) {
    r.add(stored->data() + first * stored->cols(), (stored->rows() - first) * stored->cols());
    return r.range();
  }
  if (const float* weight = m.weightRows(); weight != nullptr && first == 0) {  // the same values, in memory order
    r.add(weight, m.size());
    return r.range();
  }
  Eigen::ArrayXf row(m.cols());
  for (Eigen::Index i = first; i < m.rows(); ++i) {
    m.readRow(i, row.data());
    r.add(row.data(), row.size());
  }
  return r.range();
}
}  // namespace

ValueRange finiteRange(const StageMap& m) { return rowsRange(m, 0); }

ValueRange finiteRangeBelowFirstRow(const StageMap& m) { return rowsRange(m, m.rows() < 2 ? 0 : 1); }

ValueRange merge(ValueRange a, ValueRange b) {
  const float positive = a.positive > 0 && b.positive > 0 ? std::min(a.positive, b.positive)
                                                          : std::max(a.positive, b.positive);
  return {std::min(a.lo, b.lo), std::max(a.hi, b.hi), positive};
}

ValueRange centredOnZero(ValueRange r) {
  const float m = std::max(std::fabs(r.lo), std::fabs(r.hi));
  return {-m, m};
}

namespace {

// x = t·255 clamped to [0, 255] (NaN → 0), rounded half away from zero: for x ≥ 0.5, x + 0.5 is
// exact in double and truncation is floor, as lround; below 0.5 the answer is 0. Branch-free, so
// the compiler vectorizes the loop in colormapIndices.
inline int roundedIndex(float v, double lo, double span) {
  const double t = (static_cast<double>(v) - lo) / span;
  const double x = std::min(255.0, std::max(0.0, t * 255.0));
  return x < 0.5 ? 0 : static_cast<int>(x + 0.5);
}

}  // namespace

int colormapIndex(float v, ValueRange r) {
  if (!(r.hi > r.lo)) return 128;
  return roundedIndex(v, r.lo, static_cast<double>(r.hi) - r.lo);
}

void colormapIndices(const float* v, std::size_t n, ValueRange r, std::uint8_t* out) {
  if (!(r.hi > r.lo)) {
    std::fill(out, out + n, std::uint8_t{128});
    return;
  }
  const double lo = r.lo, span = static_cast<double>(r.hi) - r.lo;
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::uint8_t>(roundedIndex(v[i], lo, span));
}

void largestInBlocks(const std::uint8_t* index, int S, int N, std::uint8_t* out) {
  if (N == S) {
    std::copy_n(index, static_cast<std::size_t>(S) * static_cast<std::size_t>(S), out);
    return;
  }
  // Block i: cells [start[i], start[i + 1]). Drawn at more than half its side (N > S/2, as a
  // thumbnail mostly is) every block is one or two cells wide, and a texel is the larger of its
  // block's first and last column: two loads, no loop per texel (the atlas of 144 heads makes
  // 0.5 M texels on the UI thread every result).
  thread_local std::vector<int> start, last;
  thread_local std::vector<std::uint8_t> column_top;
  start.resize(static_cast<std::size_t>(N) + 1);
  last.resize(static_cast<std::size_t>(N));
  column_top.resize(static_cast<std::size_t>(S));
  for (int i = 0; i <= N; ++i) start[static_cast<std::size_t>(i)] = static_cast<int>(std::int64_t{i} * S / N);
  bool narrow = true;
  for (int j = 0; j < N; ++j) {
    last[static_cast<std::size_t>(j)] = start[static_cast<std::size_t>(j) + 1] - 1;
    narrow = narrow && last[static_cast<std::size_t>(j)] - start[static_cast<std::size_t>(j)] <= 1;
  }
  std::uint8_t* top = column_top.data();
  for (int i = 0; i < N; ++i) {
    // Over the block's rows, each column's largest; then over each block of columns.
    std::copy_n(index + static_cast<std::size_t>(start[static_cast<std::size_t>(i)]) * S, S, top);
    for (int r = start[static_cast<std::size_t>(i)] + 1; r < start[static_cast<std::size_t>(i) + 1]; ++r) {
      const std::uint8_t* row = index + static_cast<std::size_t>(r) * S;
      for (int c = 0; c < S; ++c) top[c] = std::max(top[c], row[c]);
    }
    std::uint8_t* texels = out + static_cast<std::size_t>(i) * N;
    if (narrow) {
      for (int j = 0; j < N; ++j)
        texels[j] = std::max(top[start[static_cast<std::size_t>(j)]], top[last[static_cast<std::size_t>(j)]]);
      continue;
    }
    for (int j = 0; j < N; ++j) {
      std::uint8_t t = top[start[static_cast<std::size_t>(j)]];
      for (int c = start[static_cast<std::size_t>(j)] + 1; c <= last[static_cast<std::size_t>(j)]; ++c)
        t = std::max(t, top[c]);
      texels[j] = t;
    }
  }
}

Rgb colormapColor(Colormap c, float v, ValueRange r) { return colormapTable(c)[colormapIndex(v, r)]; }

Rgb headColour(int layer, int head, int heads_per_layer) {
  static constexpr Rgb kTableau10[] = {{78, 121, 167}, {242, 142, 43}, {225, 87, 89},   {118, 183, 178},
                                       {89, 161, 79},  {237, 201, 72}, {176, 122, 161}, {255, 157, 167},
                                       {156, 117, 95}, {186, 176, 172}};
  // Tableau 20, its ten darker tones first, then their lighter partners in the same order.
  static constexpr Rgb kTableau20[] = {
      {78, 121, 167},  {242, 142, 43},  {89, 161, 79},   {182, 153, 45},  {73, 152, 148},
      {225, 87, 89},   {121, 112, 110}, {211, 114, 149}, {176, 122, 161}, {157, 118, 96},
      {160, 203, 232}, {255, 190, 125}, {140, 209, 125}, {241, 206, 99},  {134, 188, 182},
      {255, 157, 154}, {186, 176, 172}, {250, 191, 210}, {212, 166, 200}, {215, 181, 166}};
  if (heads_per_layer > 10) return kTableau20[std::max(head, 0) % 20];
  const int index = std::max(layer, 0) * std::max(heads_per_layer, 1) + std::max(head, 0);
  return kTableau10[index % 10];
}

const std::array<ColourScaleInfo, 3>& colourScaleTable() {
  static const std::array<ColourScaleInfo, 3> table = {{
      {ColourScale::Linear, "linear", "Linear"},
      {ColourScale::Log, "log", "Logarithmic (maps ≥ 0)"},
      {ColourScale::Row, "row", "Per row (each query its own range)"},
  }};
  return table;
}

const char* colourScaleId(ColourScale s) { return colourScaleTable()[static_cast<std::size_t>(s)].id; }

bool parseColourScale(const std::string& id, ColourScale* out) {
  for (const ColourScaleInfo& info : colourScaleTable())
    if (id == info.id) {
      *out = info.scale;
      return true;
    }
  return false;
}

bool logApplies(ValueRange r) { return r.lo >= 0 && r.positive > 0 && r.hi > r.positive; }

bool zeroOffLogScale(float v, ValueRange map, ColourScale scale) {
  return v == 0 && scale == ColourScale::Log && logApplies(map);
}

void rowIndices(const float* v, std::size_t n, ValueRange map, ColourScale scale, bool centred, std::uint8_t* out) {
  if (scale == ColourScale::Log && logApplies(map)) {
    const double lo = std::log10(static_cast<double>(map.positive));
    const double span = std::log10(static_cast<double>(map.hi)) - lo;
    for (std::size_t i = 0; i < n; ++i) {
      const double x = std::log10(static_cast<double>(std::max(v[i], map.positive)));  // NaN stays NaN → 0
      const double t = std::min(255.0, std::max(0.0, (x - lo) / span * 255.0));
      out[i] = static_cast<std::uint8_t>(t < 0.5 ? 0 : static_cast<int>(t + 0.5));
    }
    return;
  }
  if (scale == ColourScale::Row) {
    float lo = std::numeric_limits<float>::infinity(), hi = -lo;
    for (std::size_t i = 0; i < n; ++i)
      if (std::fabs(v[i]) <= std::numeric_limits<float>::max()) lo = std::min(lo, v[i]), hi = std::max(hi, v[i]);
    if (lo > hi) lo = hi = 0;  // nothing finite: the middle entry
    ValueRange row{lo, hi};
    if (centred) row = centredOnZero(row);
    colormapIndices(v, n, row, out);
    return;
  }
  colormapIndices(v, n, map, out);
}

Rgb contrastingText(Rgb bg) {
  auto channel = [](std::uint8_t u) {
    const double s = u / 255.0;
    return s <= 0.03928 ? s / 12.92 : std::pow((s + 0.055) / 1.055, 2.4);
  };
  const double luminance = 0.2126 * channel(bg.r) + 0.7152 * channel(bg.g) + 0.0722 * channel(bg.b);
  // Contrast with black (L + 0.05)/0.05 against white 1.05/(L + 0.05): pick the larger.
  return (luminance + 0.05) / 0.05 > 1.05 / (luminance + 0.05) ? Rgb{0, 0, 0} : Rgb{255, 255, 255};
}

std::array<std::string, 2> colorbarEnds(ValueRange r, ColourScale scale, bool centred,
                                        const std::array<std::string, 2>& words) {
  if (!words[0].empty()) return words;
  if (scale == ColourScale::Row)
    return centred ? std::array<std::string, 2>{"−|row| max", "|row| max"}
                   : std::array<std::string, 2>{"row min", "row max"};
  return {formatShort(scale == ColourScale::Log && logApplies(r) ? r.positive : r.lo), formatShort(r.hi)};
}

std::vector<ColorbarTick> colorbarTicks(ValueRange r, ColourScale scale) {
  std::vector<ColorbarTick> ticks;
  if (scale == ColourScale::Log && logApplies(r)) {
    const double lo = std::log10(static_cast<double>(r.positive)), hi = std::log10(static_cast<double>(r.hi));
    for (double k = std::floor(lo) + 1; k < hi; k += 1) {
      const float v = static_cast<float>(std::pow(10.0, k));
      ticks.push_back({static_cast<float>((k - lo) / (hi - lo)), v, formatShort(v)});
    }
    return ticks;
  }
  if (scale == ColourScale::Row || !(r.hi > r.lo)) return ticks;
  const double span = static_cast<double>(r.hi) - r.lo;
  const double base = std::pow(10.0, std::floor(std::log10(span)));
  double step = base / 5;
  for (double m : {5.0, 2.0, 1.0, 0.5, 0.2}) {  // the coarsest step that gives at least two inner ticks
    const double s = base * m;
    int n = 0;
    for (double v = std::floor(r.lo / s) * s + s; v < r.hi - s * 1e-6; v += s) n += v > r.lo + s * 1e-6;
    if (n >= 2) {
      step = s;
      break;
    }
  }
  for (double v = std::floor(r.lo / step) * step + step; v < r.hi - step * 1e-6 && ticks.size() < 9; v += step) {
    const double snapped = std::fabs(v) < step * 1e-6 ? 0.0 : v;  // 0, not 1e-17
    if (snapped <= r.lo + step * 1e-6) continue;
    ticks.push_back({static_cast<float>((snapped - r.lo) / span), static_cast<float>(snapped),
                     formatShort(static_cast<float>(snapped))});
  }
  return ticks;
}

}  // namespace attnscope
