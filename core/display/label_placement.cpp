#include "display/label_placement.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace attnscope {

float LabelBox::distanceTo(float x, float y) const {
  const float dx = std::max({x0 - x, 0.0f, x - x1}), dy = std::max({y0 - y, 0.0f, y - y1});
  return std::sqrt(dx * dx + dy * dy);
}

// Liang–Barsky: the part of the segment inside the box, if any, as parameters t0 ≤ t1 in [0, 1].
bool LabelSegment::crosses(const LabelBox& b) const {
  const float dx = x1 - x0, dy = y1 - y0;
  float t0 = 0, t1 = 1;
  const float p[4] = {-dx, dx, -dy, dy}, q[4] = {x0 - b.x0, b.x1 - x0, y0 - b.y0, b.y1 - y0};
  for (int k = 0; k < 4; ++k) {
    if (p[k] == 0) {
      if (q[k] <= 0) return false;  // parallel to this edge and outside it (or on it)
      continue;
    }
    const float t = q[k] / p[k];
    if (p[k] < 0)
      t0 = std::max(t0, t);
    else
      t1 = std::min(t1, t);
    if (t0 > t1) return false;
  }
  return t0 < t1;
}

namespace {

// The eight spots around a point, in the order they are tried: beside it first (where a reader
// looks for a point's name), then above and below, then the corners.
std::array<LabelBox, 8> spotsAround(const PointLabel& l, float gap) {
  const float w = l.width, h = l.height, x = l.x, y = l.y;
  auto box = [&](float left, float top) { return LabelBox{left, top, left + w, top + h}; };
  return {box(x + gap, y - h / 2),        // right
          box(x - gap - w, y - h / 2),    // left
          box(x - w / 2, y - gap - h),    // above
          box(x - w / 2, y + gap),        // below
          box(x + gap, y - gap - h),      // above right
          box(x + gap, y + gap),          // below right
          box(x - gap - w, y - gap - h),  // above left
          box(x - gap - w, y + gap)};     // below left
}

LabelBox movedInside(LabelBox b, const LabelBox& bounds) {
  const float dx = b.x1 > bounds.x1 ? bounds.x1 - b.x1 : 0, dy = b.y1 > bounds.y1 ? bounds.y1 - b.y1 : 0;
  b.x0 += dx, b.x1 += dx, b.y0 += dy, b.y1 += dy;
  const float ex = b.x0 < bounds.x0 ? bounds.x0 - b.x0 : 0, ey = b.y0 < bounds.y0 ? bounds.y0 - b.y0 : 0;
  b.x0 += ex, b.x1 += ex, b.y0 += ey, b.y1 += ey;
  return b;
}

}  // namespace

std::vector<std::optional<LabelBox>> placeLabels(const std::vector<PointLabel>& labels, const std::vector<int>& order,
                                                 const LabelLayout& layout) {
  const int n = static_cast<int>(labels.size());
  std::vector<std::optional<LabelBox>> placed(labels.size());
  std::vector<LabelBox> taken = layout.taken;
  const float r = layout.point_radius;
  auto free = [&](const LabelBox& b, int own, bool avoid_lines) {
    if (!b.inside(layout.bounds)) return false;
    if (avoid_lines)
      for (const LabelSegment& l : layout.lines)
        if (l.crosses(b)) return false;
    for (const LabelBox& t : taken)
      if (b.overlaps(t)) return false;
    for (int j = 0; j < n; ++j)
      if (j != own && labels[j].obstacle &&
          b.overlaps({labels[j].x - r, labels[j].y - r, labels[j].x + r, labels[j].y + r}))
        return false;
    return true;
  };
  for (int i : order) {
    if (i < 0 || i >= n || placed[i] || !labels[i].named) continue;
    for (const float gap : {layout.gap, layout.far_gap}) {
      for (const bool avoid_lines : {true, false}) {
        const auto spots = spotsAround(labels[i], gap);
        const auto spot = std::find_if(spots.begin(), spots.end(),
                                       [&](const LabelBox& b) { return free(b, i, avoid_lines); });
        if (spot == spots.end()) continue;
        placed[i] = *spot;
        break;
      }
      if (placed[i]) break;
    }
    if (!placed[i] && labels[i].required) placed[i] = movedInside(spotsAround(labels[i], layout.gap)[0], layout.bounds);
    if (placed[i]) taken.push_back(*placed[i]);
  }
  return placed;
}

}  // namespace attnscope
