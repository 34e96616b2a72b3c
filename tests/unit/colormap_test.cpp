// Colour indices: the vectorized form colours whole maps, the scalar one single cells (the
// inspector, small maps); both must give the table entry round((v − lo)/(hi − lo)·255) as lround
// computes it, so a cell looks the same in a texture and in a figure.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "display/colormap.h"

namespace attnscope {
namespace {

// Independent of the code under test: the formula with lround, clamped.
int expectedIndex(float v, ValueRange r) {
  if (!(r.hi > r.lo)) return 128;
  const double t = (static_cast<double>(v) - r.lo) / (static_cast<double>(r.hi) - r.lo);
  if (std::isnan(t)) return 0;
  if (t * 255.0 >= 255.0) return 255;
  if (t * 255.0 <= 0.0) return 0;
  return static_cast<int>(std::lround(t * 255.0));
}

void expectAll(const std::vector<float>& values, ValueRange r) {
  std::vector<std::uint8_t> got(values.size());
  colormapIndices(values.data(), values.size(), r, got.data());
  for (std::size_t i = 0; i < values.size(); ++i) {
    SCOPED_TRACE(testing::Message() << "v = " << values[i] << " in [" << r.lo << ", " << r.hi << "]");
    EXPECT_EQ(int{got[i]}, expectedIndex(values[i], r));
    EXPECT_EQ(colormapIndex(values[i], r), expectedIndex(values[i], r));
  }
}

TEST(Colormap, IndicesMatchRoundedPositionForRandomValues) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-3.f, 5.f);
  for (ValueRange r : {ValueRange{-2.f, 4.f}, ValueRange{0.f, 1.f}, ValueRange{-1e-6f, 1e-6f}, ValueRange{-60.f, 61.5f}}) {
    std::vector<float> v(10007);
    for (float& x : v) x = u(rng) * (r.hi - r.lo) / 4;
    expectAll(v, r);
  }
}

TEST(Colormap, HalfwayValuesRoundAwayFromZeroAndEndsClamp) {
  const ValueRange r{0.f, 255.f};  // v is its own position ×255: every .5 is a tie
  std::vector<float> v;
  for (int k = 0; k < 255; ++k) v.push_back(static_cast<float>(k) + 0.5f);
  const float inf = std::numeric_limits<float>::infinity();
  for (float x : {-1.f, -0.f, 0.49999997f, 254.5f, 255.f, 256.f, 1e30f, inf, std::nanf("")}) v.push_back(x);
  expectAll(v, r);
  std::vector<std::uint8_t> got(v.size());
  colormapIndices(v.data(), v.size(), r, got.data());
  EXPECT_EQ(got[0], 1);    // 0.5 → 1
  EXPECT_EQ(got[254], 255);  // 254.5 → 255
}

TEST(Colormap, FlatRangeIsTheMiddleEntry) {
  const std::vector<float> v{0.f, 3.f, -1.f};
  expectAll(v, ValueRange{3.f, 3.f});
}

}  // namespace
}  // namespace attnscope
