// The names of plotted points (display/label_placement.h): beside their points, never over another
// name or point, inside the plot; the selected one always shown.
#include <gtest/gtest.h>

#include <random>

#include "display/label_placement.h"

namespace attnscope {
namespace {

const LabelLayout kLayout{4, 16, 3, {0, 0, 400, 300}, {}, {}};

PointLabel at(float x, float y, float w = 40, float h = 12) { return {x, y, w, h, true, false, true}; }

std::vector<int> inOrder(int n) {
  std::vector<int> order(n);
  for (int i = 0; i < n; ++i) order[i] = i;
  return order;
}

TEST(LabelPlacement, ALonePointIsNamedOnItsRight) {
  const auto spots = placeLabels({at(100, 100)}, {0}, kLayout);
  ASSERT_TRUE(spots[0]);
  EXPECT_FLOAT_EQ(spots[0]->x0, 104);
  EXPECT_FLOAT_EQ(spots[0]->y0, 94);
  EXPECT_FLOAT_EQ(spots[0]->x1, 144);
  EXPECT_FLOAT_EQ(spots[0]->y1, 106);
}

TEST(LabelPlacement, TwoPointsInOnePlaceGetTwoSpots) {
  // The book's "journey" and "starts" project almost onto each other.
  const auto spots = placeLabels({at(100, 100), at(101, 99)}, {0, 1}, kLayout);
  ASSERT_TRUE(spots[0] && spots[1]);
  EXPECT_FLOAT_EQ(spots[0]->x0, 104);           // the first in order keeps the right side …
  EXPECT_FALSE(spots[0]->overlaps(*spots[1]));  // … and the second goes elsewhere
}

TEST(LabelPlacement, TheOrderDecidesWhoKeepsTheBestSpot) {
  const auto spots = placeLabels({at(100, 100), at(101, 99)}, {1, 0}, kLayout);
  ASSERT_TRUE(spots[0] && spots[1]);
  EXPECT_FLOAT_EQ(spots[1]->x0, 105);
  EXPECT_NE(spots[0]->x0, 104);
}

TEST(LabelPlacement, NamesStayInsideThePlot) {
  // At the right edge the name goes left; in the top-left corner, right or below.
  auto spots = placeLabels({at(390, 150), at(2, 2)}, {0, 1}, kLayout);
  ASSERT_TRUE(spots[0] && spots[1]);
  EXPECT_FLOAT_EQ(spots[0]->x1, 386);
  for (const auto& s : spots) EXPECT_TRUE(s->inside(kLayout.bounds));
}

TEST(LabelPlacement, NothingTakenIsCovered) {
  LabelLayout layout = kLayout;
  layout.taken = {{104, 90, 150, 110}};  // an axis's name where the right spot would be
  const auto spots = placeLabels({at(100, 100)}, {0}, layout);
  ASSERT_TRUE(spots[0]);
  EXPECT_FALSE(spots[0]->overlaps(layout.taken[0]));
}

TEST(LabelPlacement, LinesAreAvoidedWhereTheyCanBe) {
  LabelLayout layout = kLayout;
  layout.lines = {{100, 100, 300, 100}};  // an axis running right from the point, through the right spot
  auto spots = placeLabels({at(100, 100)}, {0}, layout);
  ASSERT_TRUE(spots[0]);
  EXPECT_FALSE(layout.lines[0].crosses(*spots[0]));
  EXPECT_FLOAT_EQ(spots[0]->x1, 96) << "the left spot, the next one tried";
  // Lines through every near spot: the name stays near, over a line, rather than further off.
  for (float y : {88.0f, 94.0f, 100.0f, 106.0f, 112.0f}) layout.lines.push_back({0, y, 400, y});
  spots = placeLabels({at(100, 100)}, {0}, layout);
  ASSERT_TRUE(spots[0]);
  EXPECT_LE(spots[0]->distanceTo(100, 100), kLayout.gap + 0.01f);
}

TEST(LabelPlacement, ASegmentCrossesABoxOnlyThroughIt) {
  const LabelBox box{10, 10, 20, 20};
  EXPECT_TRUE((LabelSegment{0, 15, 30, 15}.crosses(box)));   // straight through
  EXPECT_TRUE((LabelSegment{12, 12, 14, 14}.crosses(box)));  // inside
  EXPECT_TRUE((LabelSegment{0, 0, 30, 30}.crosses(box)));    // the diagonal
  EXPECT_FALSE((LabelSegment{0, 0, 9, 9}.crosses(box)));     // short of it
  EXPECT_FALSE((LabelSegment{0, 25, 30, 25}.crosses(box)));  // below it
  EXPECT_FALSE((LabelSegment{0, 19, 19, 0}.crosses(box)));   // past its corner
  EXPECT_TRUE((LabelSegment{0, 21, 21, 0}.crosses(box)));    // just inside its corner
}

TEST(LabelPlacement, ACrowdedPointGetsAFarSpotOrNone) {
  // A point ringed by eight others whose names fill the near spots: its own goes further out.
  std::vector<PointLabel> labels;
  for (int i = 0; i < 9; ++i) labels.push_back(at(200 + (i % 3 - 1) * 6.0f, 150 + (i / 3 - 1) * 6.0f, 30, 10));
  std::vector<int> order = inOrder(9);
  std::swap(order[0], order[4]);  // the middle one last
  std::swap(order[4], order[8]);
  const auto spots = placeLabels(labels, order, kLayout);
  int far = 0;
  for (int i = 0; i < 9; ++i)
    if (spots[i] && spots[i]->distanceTo(labels[i].x, labels[i].y) > kLayout.gap + 1) ++far;
  EXPECT_GT(far, 0);
}

TEST(LabelPlacement, TheRequiredNameIsShownEvenWithoutRoom) {
  LabelLayout layout = kLayout;
  layout.taken = {layout.bounds};  // nothing free anywhere
  std::vector<PointLabel> labels = {at(395, 295), at(100, 100)};
  labels[0].required = true;
  const auto spots = placeLabels(labels, {0, 1}, layout);
  ASSERT_TRUE(spots[0]);
  EXPECT_TRUE(spots[0]->inside(layout.bounds));  // moved in from beyond the corner
  EXPECT_FALSE(spots[1]);
}

TEST(LabelPlacement, UnnamedPointsAreObstaclesOnly) {
  std::vector<PointLabel> labels = {at(100, 100), at(120, 100)};
  labels[1].named = false;
  const auto spots = placeLabels(labels, {0, 1}, kLayout);
  EXPECT_FALSE(spots[1]);
  ASSERT_TRUE(spots[0]);
  EXPECT_FALSE(spots[0]->overlaps({117, 97, 123, 103}));  // not over the unnamed point
  labels[1].obstacle = false;                             // a dense cloud: names may cover it
  EXPECT_FLOAT_EQ(placeLabels(labels, {0, 1}, kLayout)[0]->x0, 104);
}

TEST(LabelPlacement, RandomCloudsNeverOverlap) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> x(0, 400), y(0, 300), w(10, 70);
  for (int round = 0; round < 300; ++round) {
    const int n = 1 + round % 40;
    std::vector<PointLabel> labels;
    for (int i = 0; i < n; ++i) labels.push_back(at(x(rng), y(rng), w(rng), 12));
    labels[0].required = true;
    const auto spots = placeLabels(labels, inOrder(n), kLayout);
    ASSERT_TRUE(spots[0]);
    for (int i = 0; i < n; ++i) {
      if (!spots[i]) continue;
      EXPECT_TRUE(spots[i]->inside(kLayout.bounds));
      if (i == 0) continue;  // the required one may have been put where there was no room
      for (int j = 0; j < n; ++j) {
        if (j == i) continue;
        if (spots[j]) {
          EXPECT_FALSE(spots[i]->overlaps(*spots[j])) << "round " << round;
        }
        const LabelBox dot{labels[j].x - 3, labels[j].y - 3, labels[j].x + 3, labels[j].y + 3};
        EXPECT_FALSE(spots[i]->overlaps(dot)) << "round " << round;
      }
    }
  }
}

}  // namespace
}  // namespace attnscope
