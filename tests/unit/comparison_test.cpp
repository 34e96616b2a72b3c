// Compare mode's core (display/comparison.h): B − A of one map and the words for what differs
// between two workspaces. Expected values are written out by hand.
#include <gtest/gtest.h>

#include <limits>

#include "display/comparison.h"
#include "formats/workspace_file.h"

namespace attnscope {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(MapDifference, SubtractsFiniteCellsAndFindsTheLargest) {
  Matrix a(2, 3), b(2, 3);
  a << 1, 2, -kInf, 0.5f, 0.25f, 3;
  b << 1, 2.5f, -kInf, -0.5f, 0.25f, -kInf;
  const MapDifference d = mapDifference(StageMap(a), StageMap(b));
  ASSERT_TRUE(d.comparable);
  EXPECT_EQ(d.delta(0, 0), 0.0f);
  EXPECT_EQ(d.delta(0, 1), 0.5f);
  EXPECT_EQ(d.delta(0, 2), -kInf);  // masked in both: no difference
  EXPECT_EQ(d.delta(1, 0), -1.0f);
  EXPECT_EQ(d.delta(1, 2), -kInf);  // masked in one: none either, but it changed
  EXPECT_EQ(d.max_abs, 1.0f);
  EXPECT_EQ(d.row, 1);
  EXPECT_EQ(d.col, 0);
  EXPECT_EQ(d.changed, 3);
  EXPECT_EQ(d.masked_in_b, 1);
  EXPECT_EQ(d.masked_in_a, 0);
  const MapDifference back = mapDifference(StageMap(b), StageMap(a));
  EXPECT_EQ(back.masked_in_b, 0);
  EXPECT_EQ(back.masked_in_a, 1);
}

TEST(MapDifference, ChangedCellsAreTheCellsItCounts) {
  Matrix a(2, 2), b(2, 2);
  a << 1, -kInf, 0.0f, 2;
  b << 1, -kInf, -0.0f, 3;  // −0 differs from 0 bit for bit
  EXPECT_EQ(changedCells(StageMap(a), StageMap(b)), (std::vector<std::pair<int, int>>{{1, 0}, {1, 1}}));
  EXPECT_EQ(mapDifference(StageMap(a), StageMap(b)).changed, 2);
  EXPECT_TRUE(changedCells(StageMap(a), StageMap(Matrix::Zero(3, 3))).empty());
}

TEST(MapDifference, EqualMapsChangeNothing) {
  Matrix a(2, 2);
  a << 0.1f, 0.2f, -kInf, 0.4f;
  const MapDifference d = mapDifference(StageMap(a), StageMap(a));
  EXPECT_TRUE(d.comparable);
  EXPECT_EQ(d.changed, 0);
  EXPECT_EQ(d.max_abs, 0.0f);
  EXPECT_EQ(d.row, 0);  // the first finite cell
  EXPECT_EQ(d.col, 0);
}

TEST(MapDifference, DifferentShapesAreNotCompared) {
  const Matrix a = Matrix::Zero(6, 6), b = Matrix::Zero(3, 3);
  const MapDifference d = mapDifference(StageMap(a), StageMap(b));
  EXPECT_FALSE(d.comparable);
  EXPECT_EQ(d.delta.size(), 0);
  EXPECT_EQ(d.row, -1);
}

TEST(WorkspaceDifferences, NamesTheModelFieldsThatChanged) {
  const Workspace a = bookExample();
  Workspace b = a;
  EXPECT_TRUE(workspaceDifferences(a, b).empty());
  b.model.seed = 5;
  b.model.dropout = 0.5;
  const std::vector<std::string> d = workspaceDifferences(a, b);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0], "dropout 0.00 → 0.50");
  EXPECT_EQ(d[1], "seed 123 → 5");
}

TEST(WorkspaceDifferences, CellsTokensAndTheirCounts) {
  const Workspace a = bookExample();
  Workspace b = a;
  b.embeddings(1, 0) = 0.6f;
  b.tokens[2] = "begins";
  EXPECT_EQ(workspaceDifferences(a, b),
            (std::vector<std::string>{"token 3 'starts' → 'begins'", "x2 d0 ('journey') 0.5500 → 0.6000"}));
  for (int j = 0; j < 3; ++j) b.embeddings(0, j) += 1;
  const std::vector<std::string> many = workspaceDifferences(a, b, 3);
  EXPECT_EQ(many.back(), "4 embedding cells");
  Workspace fewer = a;
  fewer.tokens.resize(3);
  fewer.embeddings.conservativeResize(3, Eigen::NoChange);
  const std::vector<std::string> f = workspaceDifferences(a, fewer);
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0], "tokens 6 → 3");
  EXPECT_EQ(f.size(), 1u);  // the three rows both have are equal
}

}  // namespace
}  // namespace attnscope
