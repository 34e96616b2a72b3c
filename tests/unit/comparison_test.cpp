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

// Two chapter workspaces that differ in their text alone: a token inserted, its neighbours' rows
// as they were — not when a shared token's row, the model or the parameters changed too.
TEST(WorkspaceDifferences, TextAloneWhenTheSharedTokensKeepTheirRows) {
  const Workspace a = bookExample();
  Workspace b = a;
  b.tokens.insert(b.tokens.begin() + 5, "small");
  b.embeddings.resize(7, 3);
  b.embeddings << a.embeddings.topRows(5), Matrix::Constant(1, 3, 0.25f), a.embeddings.bottomRows(1);
  const std::vector<int> a_of_b = tokenDifference(a.tokens, b.tokens).a_of_b;
  EXPECT_EQ(a_of_b, (std::vector<int>{0, 1, 2, 3, 4, -1, 5}));
  EXPECT_TRUE(differsInTextAlone(a, b, a_of_b));
  Workspace edited = b;
  edited.embeddings(6, 2) += 0.5f;  // "step", a token both have
  EXPECT_FALSE(differsInTextAlone(a, edited, a_of_b));
  Workspace reseeded = b;
  reseeded.model.seed = 5;
  EXPECT_FALSE(differsInTextAlone(a, reseeded, a_of_b));
  Workspace wider = b;
  wider.embeddings.conservativeResize(Eigen::NoChange, 4);
  EXPECT_FALSE(differsInTextAlone(a, wider, a_of_b));
  EXPECT_FALSE(differsInTextAlone(a, b, std::vector<int>(7, -1)));  // nothing shared
}

using Tokens = std::vector<std::string>;

TEST(TokenDifference, TheSameTextsSayNothing) {
  EXPECT_EQ(tokenDifference({"a", "b"}, {"a", "b"}).said, "");
  EXPECT_EQ(tokenDifference({}, {}).said, "");
}

TEST(TokenDifference, ReplacementsAreListedWithBothTokens) {
  EXPECT_EQ(tokenDifference({"The", "cat", "sat"}, {"The", "dog", "sat"}).said, "token 2 (cat → dog)");
  EXPECT_EQ(tokenDifference({"a", "b", "c", "d", "e"}, {"a", "x", "c", "d", "y"}).said, "tokens 2 (b → x), 5 (e → y)");
  // Two neighbours replaced are one place.
  EXPECT_EQ(tokenDifference({"a", "b", "c", "d"}, {"a", "x", "y", "d"}).said, "tokens 2–3 (b c → x y)");
}

TEST(TokenDifference, OneInsertionOrRemovalIsSaidSo) {
  EXPECT_EQ(tokenDifference({"The", "cat", "sat"}, {"The", "big", "black", "cat", "sat"}).said,
            "tokens 2–3 (big black) inserted");
  EXPECT_EQ(tokenDifference({"The", "cat", "sat", "down"}, {"The", "cat", "sat"}).said, "token 4 (down) removed");
  EXPECT_EQ(tokenDifference({"a", "e"}, {"a", "b", "c", "d", "e"}).said, "tokens 2–4 (b c d) inserted");
  EXPECT_EQ(tokenDifference({"a"}, {"a", "b", "c", "d", "e"}).said, "tokens 2–5 (b c d …) appended");
}

TEST(TokenDifference, EditsInSeveralPlacesAreEachSaidOnce) {
  // An insertion, then a replacement after it: B's positions for what B has, not every later
  // position named as changed.
  const Tokens a = {"The", "cat", "sat", "on", "the", "mat"};
  const Tokens b = {"The", "big", "cat", "sat", "on", "a", "mat"};
  EXPECT_EQ(tokenDifference(a, b).said, "token 2 (big) inserted, token 6 (the → a)");
  // A removal names A's position (B no longer has the token).
  EXPECT_EQ(tokenDifference(b, a).said, "token 2 (big) removed, token 5 (a → the)");
  // A removal and an insertion far apart.
  EXPECT_EQ(tokenDifference({"x", "a", "b", "c", "d"}, {"a", "b", "c", "d", "y"}).said,
            "token 1 (x) removed, token 5 (y) appended");
}

TEST(TokenDifference, BeyondThePlacesShownTheRestIsCounted) {
  const Tokens a = {"a", "b", "c", "d", "e", "f", "g", "h", "i"};
  const Tokens b = {"a", "B", "c", "D", "e", "F", "g", "H", "i"};
  EXPECT_EQ(tokenDifference(a, b).said, "tokens 2 (b → B), 4 (d → D), 6 (f → F) and 1 more");
  const Tokens c = {"a", "B", "c", "D", "e", "F", "g", "i", "j"};
  // h removed, j inserted: five places, the same length.
  EXPECT_EQ(tokenDifference(a, c).said, "token 2 (b → B), token 4 (d → D), token 6 (f → F) and 2 more");
  EXPECT_EQ(tokenDifference(a, {"a", "B", "c", "D", "e", "F", "g", "i"}).said,
            "token 2 (b → B), token 4 (d → D), token 6 (f → F) and 1 more (9 → 8 tokens)");
}

TEST(TokenDifference, NamesThePositionsOfThePlacesSaid) {
  const TokenDifference d = tokenDifference({"The", "cat", "sat", "on", "the", "mat"},
                                            {"The", "big", "cat", "sat", "on", "a", "mat"});
  EXPECT_EQ(d.in_a, (std::vector<int>{4}));     // "the"
  EXPECT_EQ(d.in_b, (std::vector<int>{1, 5}));  // "big", "a"
  // Up to three tokens of a place, and only the places said.
  const TokenDifference e = tokenDifference({"a", "b", "c", "d", "e"}, {"v", "w", "x", "y", "z"}, 1);
  EXPECT_EQ(e.in_a, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(e.in_b, (std::vector<int>{0, 1, 2}));
  const TokenDifference f = tokenDifference({"a", "b", "c", "d", "e"}, {"a", "B", "c", "D", "e"}, 1);
  EXPECT_EQ(f.said, "tokens 2 (b → B) and 1 more");
  EXPECT_EQ(f.in_b, (std::vector<int>{1}));
  EXPECT_TRUE(tokenDifference({"a"}, {"a"}).in_a.empty());
}

TEST(TokenDifference, AlignsBsTokensWithAs) {
  // An insertion, then a word for a word: B's tokens against A's of the same place.
  const TokenDifference d = tokenDifference({"The", "cat", "sat", "on", "the", "mat"},
                                            {"The", "big", "cat", "sat", "on", "a", "mat"});
  EXPECT_EQ(d.a_of_b, (std::vector<int>{0, -1, 1, 2, 3, 4, 5}));
  EXPECT_TRUE(d.shifted);
  // Replacements one for one keep every position: nothing shifted.
  const TokenDifference e = tokenDifference({"a", "b", "c", "d"}, {"a", "x", "y", "d"});
  EXPECT_EQ(e.a_of_b, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_FALSE(e.shifted);
  // A removal, and a place of other lengths: B's tokens there are its own.
  const TokenDifference f = tokenDifference({"a", "b", "c", "d", "e"}, {"a", "c", "X", "Y", "Z", "e"});
  EXPECT_EQ(f.said, "token 2 (b) removed, tokens 3–5 (d → X Y Z)");
  EXPECT_EQ(f.a_of_b, (std::vector<int>{0, 2, -1, -1, -1, 4}));
  EXPECT_TRUE(tokenDifference({"a"}, {"a"}).a_of_b == std::vector<int>{0});
}

TEST(AlignedDifference, ComparesTheCellsOfTheTokensBothHave) {
  // A: 3 tokens; B: a token inserted second. Causal weights-like maps.
  Matrix a(3, 3), b(4, 4);
  a << 1, 0, 0,       //
      0.5f, 0.5f, 0,  //
      0.2f, 0.3f, 0.5f;
  b << 1, 0, 0, 0,          //
      0.4f, 0.6f, 0, 0,     //
      0.5f, 0.1f, 0.4f, 0,  //
      0.2f, 0.05f, 0.25f, 0.5f;
  const std::vector<int> a_of_b = {0, -1, 1, 2};
  const MapDifference d = alignedDifference(StageMap(a), StageMap(b), a_of_b, true, true);
  ASSERT_TRUE(d.comparable);
  EXPECT_TRUE(d.aligned);
  ASSERT_EQ(d.delta.rows(), 4);
  ASSERT_EQ(d.delta.cols(), 4);
  EXPECT_EQ(d.delta(0, 0), 0.0f);
  EXPECT_EQ(d.delta(2, 0), 0.0f);          // B's (2, 0) against A's (1, 0)
  EXPECT_FLOAT_EQ(d.delta(2, 2), -0.1f);   // B's (2, 2) against A's (1, 1)
  EXPECT_FLOAT_EQ(d.delta(3, 3), 0.0f);    // against A's (2, 2)
  EXPECT_FLOAT_EQ(d.delta(3, 2), -0.05f);  // against A's (2, 1)
  EXPECT_EQ(d.delta(1, 0), -kInf);         // B's own row: nothing to subtract
  EXPECT_EQ(d.delta(3, 1), -kInf);         // B's own column
  EXPECT_EQ(d.blank(1, 0), 1);
  EXPECT_EQ(d.blank(3, 1), 1);
  EXPECT_EQ(d.blank(3, 2), 0);
  EXPECT_EQ(d.compared, 9);
  EXPECT_EQ(d.compared_lower, 6);  // rows 0, 2, 3 against columns 0, 2, 3 with j ≤ i
  EXPECT_EQ(d.changed, 2);         // B's (2, 2) and (3, 2)
  EXPECT_NEAR(d.max_abs, 0.1f, 1e-6f);
  EXPECT_EQ(d.row, 2);
  EXPECT_EQ(d.col, 2);
}

TEST(AlignedDifference, RefusesMapsItCannotMatch) {
  Matrix a(3, 2), b(4, 3);
  a.setZero();
  b.setZero();
  // Rows are tokens, but the columns (a head's width) differ: nothing compared.
  EXPECT_FALSE(alignedDifference(StageMap(a), StageMap(b), {0, -1, 1, 2}, true, false).comparable);
  // An alignment longer than B's rows, or pointing past A's.
  Matrix c(4, 2);
  c.setZero();
  EXPECT_FALSE(alignedDifference(StageMap(a), StageMap(c), {0, 1, 2}, true, false).comparable);
  EXPECT_FALSE(alignedDifference(StageMap(a), StageMap(c), {0, 1, 2, 3}, true, false).comparable);
  EXPECT_TRUE(alignedDifference(StageMap(a), StageMap(c), {0, -1, 1, 2}, true, false).comparable);
  // Every token B's own: nothing compared.
  EXPECT_FALSE(alignedDifference(StageMap(a), StageMap(c), {-1, -1, -1, -1}, true, false).comparable);
}

TEST(TokenDifference, AWholeNewTextIsOnePlace) {
  EXPECT_EQ(tokenDifference({"a", "b", "c", "d"}, {"w", "x", "y", "z", "v"}).said, "tokens 1–5 (a b c … → w x y …)");
}

TEST(TokenDifference, TextsBeyondTheDiffsCellsAreComparedPositionByPosition) {
  // Middles of 2099 × 2100 tokens exceed kTokenDiffCells: position by position, then the rest.
  Tokens a(2102, "t"), b(2103, "t");
  for (std::size_t i = 1; i <= 2100; ++i) a[i] = "a" + std::to_string(i), b[i] = "b" + std::to_string(i);
  b[1] = a[1];  // the same at position 2: the middles are 2099 and 2100 tokens
  ASSERT_GT(std::size_t{2099} * 2100, kTokenDiffCells);
  EXPECT_EQ(tokenDifference(a, b, 1).said, "tokens 3–2101 (a2 a3 a4 … → b2 b3 b4 …) and 1 more (2102 → 2103 tokens)");
}

}  // namespace
}  // namespace attnscope
