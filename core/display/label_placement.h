// Where the names of plotted points go so that no name covers another name or another point
// (docs/DESIGN.md §3.4 "Inputs": the embedding vectors' plot). Headless: plain rectangles in,
// corners out; the app draws them, tests check them.
#pragma once
#include <optional>
#include <vector>

namespace attnscope {

struct LabelBox {
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;  // x0 ≤ x1, y0 ≤ y1 (screen: y grows downwards)
  bool overlaps(const LabelBox& o) const { return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1; }
  bool inside(const LabelBox& o) const { return x0 >= o.x0 && y0 >= o.y0 && x1 <= o.x1 && y1 <= o.y1; }
  float distanceTo(float x, float y) const;  // from a point outside (0 inside)
};

struct LabelSegment {
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  bool crosses(const LabelBox& b) const;  // any part of the segment inside the box
};

struct PointLabel {
  float x = 0, y = 0;           // the point
  float width = 0, height = 0;  // its name's text
  bool named = true;            // false: the point is only an obstacle (a name left out to thin a crowd)
  bool required = false;        // always shown (the selected token): at its first spot if no spot is free
  bool obstacle = true;         // no name may cover the point (false: a cloud too dense to keep clear)
};

struct LabelLayout {
  float gap = 4;                    // between a point and its name
  float far_gap = 16;               // the second ring of spots, where a name needs a line to its point
  float point_radius = 3;           // a point is an obstacle of this half-width
  LabelBox bounds;                  // names stay inside (a required one is moved inside)
  std::vector<LabelBox> taken;      // already drawn there (the axes' names): no name goes over them
  std::vector<LabelSegment> lines;  // lines drawn (axes, arrows): a name crosses one only where it must
};

// Each label's text box, or nothing where every spot around its point is taken. Labels are placed
// one at a time in `order` (indices into `labels`; those not listed are not named), each at the
// first free one of eight spots: right of the point, left, above, below, then the four corners;
// then the same eight `far_gap` away (the caller draws a line from the point to such a name).
// A spot is free when it lies inside the bounds and overlaps nothing taken, no name placed before
// it and no other point; each ring's spots are tried crossing no line first, then crossing lines
// (the caller draws names on a backdrop: near its point, a name over a line still reads). Same input, same
// layout: nothing moves from frame to frame unless the points do.
std::vector<std::optional<LabelBox>> placeLabels(const std::vector<PointLabel>& labels, const std::vector<int>& order,
                                                 const LabelLayout& layout);

}  // namespace attnscope
