#include "display/colormap.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <mutex>
#include <sstream>

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
  if (!in) throw InputError(path + ": colormap table missing");
  std::array<Rgb, 256> table{};
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    int r, g, b;
    char c1, c2;
    std::istringstream row(line);
    if (!(row >> r >> c1 >> g >> c2 >> b) || n >= 256)
      throw InputError(path + ": expected 256 lines r,g,b");
    table[n++] = {static_cast<std::uint8_t>(r), static_cast<std::uint8_t>(g),
                  static_cast<std::uint8_t>(b)};
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

ValueRange finiteRange(const Matrix& m) {
  // Vectorized (a GPT-2 snapshot scans 60 M cells): |v| ≤ FLT_MAX is false for ±∞ and NaN.
  const float inf = std::numeric_limits<float>::infinity();
  const auto a = m.array();
  const auto finite = a.abs() <= std::numeric_limits<float>::max();
  const float lo = m.size() == 0 ? inf : finite.select(a, inf).minCoeff();
  const float hi = m.size() == 0 ? -inf : finite.select(a, -inf).maxCoeff();
  if (lo > hi) return {0, 0};  // nothing finite
  return {lo, hi};
}

ValueRange finiteRange(const StageMap& m) {
  if (const Matrix* stored = m.matrix()) return finiteRange(*stored);
  const float inf = std::numeric_limits<float>::infinity();
  float lo = inf, hi = -inf;
  Eigen::ArrayXf row(m.cols());
  for (Eigen::Index i = 0; i < m.rows(); ++i) {
    m.readRow(i, row.data());
    const auto finite = row.abs() <= std::numeric_limits<float>::max();
    lo = std::min(lo, finite.select(row, inf).minCoeff());
    hi = std::max(hi, finite.select(row, -inf).maxCoeff());
  }
  if (lo > hi) return {0, 0};
  return {lo, hi};
}

ValueRange merge(ValueRange a, ValueRange b) { return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)}; }

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

Rgb colormapColor(Colormap c, float v, ValueRange r) { return colormapTable(c)[colormapIndex(v, r)]; }

Rgb contrastingText(Rgb bg) {
  auto channel = [](std::uint8_t u) {
    const double s = u / 255.0;
    return s <= 0.03928 ? s / 12.92 : std::pow((s + 0.055) / 1.055, 2.4);
  };
  const double luminance = 0.2126 * channel(bg.r) + 0.7152 * channel(bg.g) + 0.0722 * channel(bg.b);
  // Contrast with black (L + 0.05)/0.05 against white 1.05/(L + 0.05): pick the larger.
  return (luminance + 0.05) / 0.05 > 1.05 / (luminance + 0.05) ? Rgb{0, 0, 0} : Rgb{255, 255, 255};
}

}  // namespace attnscope
