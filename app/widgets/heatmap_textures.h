// HeatmapTextures: the GL textures of the maps on screen, cached by map id, and the thread that
// colours large maps off the UI thread (docs/DESIGN.md §3.4 "Textures"). One per window: the App
// owns it and hands it to the panels in PanelContext; drawHeatmap asks it for a map's texture. Its
// GL calls belong to the UI thread, and it goes before the GL context does.
#pragma once
#include <imgui.h>

#include <cmath>
#include <memory>

#include "display/colormap.h"

namespace attnscope {

struct HeatmapSpec;

// The part of a map a texture holds, and how coarsely: `step` × `step` cells a texel (docs/DESIGN.md
// §3.4 "Textures"). A texture holds about as many texels as its tile has pixels: a 4096-token map
// in a 500-px tile is coloured 8 × 8 cells a texel (each texel the mean colour of its cells, as a
// mipmap would), and a zoomed-in window of it at full resolution, so what a texture holds is
// bounded by the screen, not by T (full-resolution textures of 4096² maps took a gigabyte).
struct TextureRegion {
  int row0 = 0, col0 = 0, rows = 0, cols = 0;  // in cells
  int step = 1;                                // cells per texel side
  bool operator==(const TextureRegion& o) const {
    return row0 == o.row0 && col0 == o.col0 && rows == o.rows && cols == o.cols && step == o.step;
  }
  bool covers(int r0, int nr, int c0, int nc) const {
    return r0 >= row0 && c0 >= col0 && r0 + nr <= row0 + rows && c0 + nc <= col0 + cols;
  }
};

inline ImU32 toImColor(Rgb c) { return IM_COL32(c.r, c.g, c.b, 255); }
inline bool isMasked(float v) { return std::isinf(v) && v < 0; }  // a −∞ cell: drawn masked

class HeatmapTextures {
 public:
  HeatmapTextures();
  ~HeatmapTextures();  // stops the colouring thread, deletes the textures
  HeatmapTextures(const HeatmapTextures&) = delete;
  HeatmapTextures& operator=(const HeatmapTextures&) = delete;

  // The texture that shows the map's window [r0, r0 + nr) × [c0, c0 + nc), drawn `px_w` × `px_h`
  // pixels large, and the region it holds; id 0 while the thread colours it. While only the region
  // changes (a zoom, a pan) the texture of the old region stays on screen, mapped where it lies.
  struct Shown {
    unsigned int id = 0;  // GLuint
    TextureRegion region;
  };
  Shown texture(const HeatmapSpec& s, int r0, int nr, int c0, int nc, float px_w, float px_h);
  // A capture colours every map before it draws: no placeholders.
  void setSynchronous(bool on) { synchronous_ = on; }
  // After each frame: uploads what the thread finished, deletes textures unused for 120 frames.
  void endFrame();

 private:
  struct Cache;  // the textures and the colouring thread
  std::unique_ptr<Cache> cache_;
  int frame_ = 0;
  bool synchronous_ = false;
};

}  // namespace attnscope
