// Colour indices: the vectorized form colours whole maps, the scalar one single cells (the
// inspector, small maps); both must give the table entry round((v − lo)/(hi − lo)·255) as lround
// computes it, so a cell looks the same in a texture and in a figure.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "display/colormap.h"
#include "engine/stages.h"

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
  for (ValueRange r :
       {ValueRange{-2.f, 4.f}, ValueRange{0.f, 1.f}, ValueRange{-1e-6f, 1e-6f}, ValueRange{-60.f, 61.5f}}) {
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
  EXPECT_EQ(got[0], 1);      // 0.5 → 1
  EXPECT_EQ(got[254], 255);  // 254.5 → 255
}

TEST(Colormap, FlatRangeIsTheMiddleEntry) {
  const std::vector<float> v{0.f, 3.f, -1.f};
  expectAll(v, ValueRange{3.f, 3.f});
}

// A thumbnail drawn smaller than its cells: each drawn texel the largest of its block, every cell
// in exactly one block; a map drawn at its own size is itself.
TEST(Colormap, LargestInBlocksKeepsAOneCellPeak) {
  std::mt19937 rng(3);
  for (auto [S, N] :
       {std::pair{64, 36}, std::pair{64, 60}, std::pair{64, 64}, std::pair{9, 4}, std::pair{10, 3}, std::pair{5, 1}}) {
    std::vector<std::uint8_t> cells(static_cast<std::size_t>(S) * S);
    for (auto& c : cells) c = static_cast<std::uint8_t>(rng() % 200);
    cells[static_cast<std::size_t>(S - 1) * S + S - 2] = 255;  // one bright key, next to the last
    std::vector<std::uint8_t> got(static_cast<std::size_t>(N) * N);
    largestInBlocks(cells.data(), S, N, got.data());
    std::vector<int> owner(static_cast<std::size_t>(S), -1);  // the block each row (and column) is in
    for (int i = 0; i < N; ++i)
      for (int r = i * S / N; r < (i + 1) * S / N; ++r) owner[static_cast<std::size_t>(r)] = i;
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < N; ++j) {
        int want = 0;
        for (int r = 0; r < S; ++r)
          for (int c = 0; c < S; ++c)
            if (owner[r] == i && owner[c] == j) want = std::max(want, int{cells[static_cast<std::size_t>(r) * S + c]});
        EXPECT_EQ(int{got[static_cast<std::size_t>(i) * N + j]}, want) << S << " → " << N << " at " << i << "," << j;
      }
    EXPECT_EQ(std::count(owner.begin(), owner.end(), -1), 0);
    EXPECT_EQ(got[static_cast<std::size_t>(owner[S - 1]) * N + owner[S - 2]], 255) << S << " → " << N << ": the peak";
    if (N == S) {
      EXPECT_EQ(got, cells);
    }
  }
}

// Colour scales: the formulas written out by hand.
TEST(ColourScale, FiniteRangeFindsTheSmallestPositiveValue) {
  Matrix m(2, 3);
  m << 0, 0.5f, -std::numeric_limits<float>::infinity(), 0.001f, 1, 0;
  const ValueRange r = finiteRange(m);
  EXPECT_EQ(r.lo, 0.0f);
  EXPECT_EQ(r.hi, 1.0f);
  EXPECT_EQ(r.positive, 0.001f);
  EXPECT_EQ(finiteRange(StageMap(m)).positive, 0.001f);
  EXPECT_EQ(merge(r, ValueRange{-1, 0.5f, 0}).positive, 0.001f);  // none in one: the other's
  EXPECT_EQ(merge(r, ValueRange{0, 2, 0.0001f}).positive, 0.0001f);
}

TEST(ColourScale, FiniteRangeOfALargeMapSkipsInfinitiesAndNaN) {
  // 37 × 53 cells (not a multiple of any vector width), the extremes in the last cells, where a
  // vector loop's tail is; ±∞ and NaN beside them are no part of the range.
  Matrix m = Matrix::Random(37, 53);
  const float inf = std::numeric_limits<float>::infinity();
  m(0, 0) = inf, m(3, 7) = -inf, m(5, 5) = std::numeric_limits<float>::quiet_NaN();
  m(36, 52) = -7.5f, m(36, 51) = 9.25f, m(36, 50) = 1e-7f;
  float lo = inf, hi = -inf, positive = inf;  // the plain definition, cell by cell
  for (Eigen::Index i = 0; i < m.size(); ++i) {
    const float v = m.data()[i];
    if (!std::isfinite(v)) continue;
    lo = std::min(lo, v), hi = std::max(hi, v);
    if (v > 0) positive = std::min(positive, v);
  }
  ASSERT_EQ(lo, -7.5f);
  ASSERT_EQ(hi, 9.25f);
  ASSERT_EQ(positive, 1e-7f);
  for (const ValueRange r : {finiteRange(m), finiteRange(StageMap(m))}) {
    EXPECT_EQ(r.lo, lo);
    EXPECT_EQ(r.hi, hi);
    EXPECT_EQ(r.positive, positive);
  }
  const Matrix none = Matrix::Constant(3, 20, -inf);
  EXPECT_EQ(finiteRange(none).lo, 0.0f);
  EXPECT_EQ(finiteRange(none).hi, 0.0f);
  // A head's columns of a torch weight (out × in), its map in × n: the range of those columns
  // alone, whether read row by row or as the weight's rows in memory order; and below the first row.
  const StageMap columns = StageMap::weightColumns(m, 30, 6);  // m's rows 30 … 35: the extremes of row 36 outside
  const Matrix shown = columns.toMatrix();
  ASSERT_EQ(shown.rows(), 53);
  ASSERT_EQ(shown.cols(), 6);
  for (const auto& [got, want] :
       {std::pair{finiteRange(columns), finiteRange(shown)},
        std::pair{finiteRangeBelowFirstRow(columns), finiteRange(Matrix(shown.bottomRows(52)))}}) {
    EXPECT_EQ(got.lo, want.lo);
    EXPECT_EQ(got.hi, want.hi);
    EXPECT_EQ(got.positive, want.positive);
  }
  EXPECT_GT(finiteRange(shown).hi, -7.5f);
  EXPECT_LT(finiteRange(shown).hi, 9.25f) << "row 36 of the weight is not among these columns";
}

TEST(ColourScale, LogIndexIsTheLog10PositionBetweenTheSmallestPositiveAndTheTop) {
  const ValueRange r{0, 1, 0.001f};
  const float v[] = {0, 0.001f, 0.01f, 0.1f, 1, 0.0005f};
  std::uint8_t out[6];
  rowIndices(v, 6, r, ColourScale::Log, false, out);
  EXPECT_EQ(out[0], 0);   // zero: at the bottom
  EXPECT_EQ(out[1], 0);   // p
  EXPECT_EQ(out[2], 85);  // one decade of three: 255/3
  EXPECT_EQ(out[3], 170);
  EXPECT_EQ(out[4], 255);
  EXPECT_EQ(out[5], 0);  // below p
  // Signed maps stay linear.
  const ValueRange signed_range{-1, 1, 0.5f};
  EXPECT_FALSE(logApplies(signed_range));
  const float w[] = {-1, 0, 1};
  rowIndices(w, 3, signed_range, ColourScale::Log, true, out);
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(out[1], 128);
  EXPECT_EQ(out[2], 255);
}

TEST(ColourScale, PerRowUsesEachRowsOwnRange) {
  const float v[] = {0.25f, 0.5f, 0.75f, -std::numeric_limits<float>::infinity()};
  std::uint8_t out[4];
  rowIndices(v, 4, ValueRange{0, 1}, ColourScale::Row, false, out);
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(out[1], 128);  // 127.5 rounds away from zero
  EXPECT_EQ(out[2], 255);
  const float s[] = {-0.5f, 0.25f, 0};
  rowIndices(s, 3, ValueRange{-9, 9}, ColourScale::Row, true, out);  // centred: ±0.5
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(out[1], 191);  // (0.25 + 0.5) / 1 · 255 = 191.25
  EXPECT_EQ(out[2], 128);
}

TEST(ColourScale, ColorbarTicks) {
  auto values = [](ValueRange r, ColourScale s) {
    std::vector<float> v;
    for (const ColorbarTick& t : colorbarTicks(r, s)) v.push_back(t.value);
    return v;
  };
  EXPECT_EQ(values({0, 1}, ColourScale::Linear), (std::vector<float>{0.2f, 0.4f, 0.6f, 0.8f}));
  EXPECT_EQ(values({-0.313f, 0.313f}, ColourScale::Linear), (std::vector<float>{-0.2f, 0, 0.2f}));
  EXPECT_EQ(values({0, 1, 0.000149f}, ColourScale::Log), (std::vector<float>{0.001f, 0.01f, 0.1f}));
  EXPECT_TRUE(values({0, 1}, ColourScale::Row).empty());
  const std::vector<ColorbarTick> t = colorbarTicks({0, 1}, ColourScale::Linear);
  EXPECT_FLOAT_EQ(t[0].at, 0.2f);
  EXPECT_EQ(t[0].label, "0.2");
  EXPECT_EQ(colorbarEnds({0, 1, 0.000149f}, ColourScale::Log, false, {})[0], "0.000149");
  EXPECT_EQ(colorbarEnds({0, 1}, ColourScale::Row, false, {})[0], "row min");
  EXPECT_EQ(colorbarEnds({0, 1}, ColourScale::Linear, false, {"dropped 0", "kept"})[1], "kept");
}

// Heads told apart by colour (Lines, Learn): Tableau's published palettes — ten, by the head's
// place in the model for up to ten heads a layer; Tableau 20, darker ten first, by the head's
// place in its layer beyond.
TEST(HeadColour, TableausPalettesOneColourPerHeadOfALayer) {
  const auto hex = [](const char* h) {
    const unsigned v = static_cast<unsigned>(std::stoul(h, nullptr, 16));
    return Rgb{static_cast<std::uint8_t>(v >> 16), static_cast<std::uint8_t>(v >> 8), static_cast<std::uint8_t>(v)};
  };
  const char* tableau10[] = {"4e79a7", "f28e2b", "e15759", "76b7b2", "59a14f",
                             "edc948", "b07aa1", "ff9da7", "9c755f", "bab0ac"};
  // Tableau 20 as published: pairs of a darker and a lighter tone.
  const char* tableau20[] = {"4e79a7", "a0cbe8", "f28e2b", "ffbe7d", "59a14f", "8cd17d", "b6992d",
                             "f1ce63", "499894", "86bcb6", "e15759", "ff9d9a", "79706e", "bab0ac",
                             "d37295", "fabfd2", "b07aa1", "d4a6c8", "9d7660", "d7b5a6"};
  const auto same = [](Rgb a, Rgb b) { return a.r == b.r && a.g == b.g && a.b == b.b; };
  for (int h = 0; h < 2; ++h) {  // the Learn tab's 2 layers × 2 heads: four colours, layer by layer
    EXPECT_TRUE(same(headColour(0, h, 2), hex(tableau10[h]))) << h;
    EXPECT_TRUE(same(headColour(1, h, 2), hex(tableau10[2 + h]))) << h;
  }
  for (int heads : {12, 16, 20}) {
    for (int h = 0; h < heads; ++h) {
      const Rgb c = headColour(0, h, heads);
      EXPECT_TRUE(same(c, hex(tableau20[h < 10 ? 2 * h : 2 * (h - 10) + 1]))) << heads << " heads, head " << h;
      EXPECT_TRUE(same(c, headColour(7, h, heads))) << "head " << h << " changes colour with the layer";
      for (int g = 0; g < h; ++g) EXPECT_FALSE(same(c, headColour(0, g, heads))) << heads << ": " << g << ", " << h;
    }
  }
}

}  // namespace
}  // namespace attnscope
