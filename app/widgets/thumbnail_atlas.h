// ThumbnailAtlas: every head's thumbnail of a trained model in one GL texture (docs/DESIGN.md §3.4
// "Layers"): L rows × H columns of N × N texels with a texel of gap between them, N the thumbnail's
// S cells or, drawn smaller, its side in pixels — each texel then the largest cell of its block, as
// each cell is the largest weight of its block, so that a one-key row stays as bright drawn at 36
// px as at 64 (a GPU's linear filtering averaged it away), and drawn texel for pixel (llvmpipe's
// filtered sampling of 144 minified thumbnails cost a 1600 × 1000 frame 1.3 ms more). The engine worker
// has turned each thumbnail into colormap indices (Snapshot::thumbnail_indices), in the values'
// order; making the atlas is a table lookup per texel on the UI thread, once per result, colormap
// or size. Its GL calls belong to the UI thread; it goes before the GL context does.
#pragma once
#include <imgui.h>

#include <cstdint>

#include "display/colormap.h"

namespace attnscope {

struct Snapshot;

class ThumbnailAtlas {
 public:
  ThumbnailAtlas() = default;
  ThumbnailAtlas(const ThumbnailAtlas&) = delete;
  ThumbnailAtlas& operator=(const ThumbnailAtlas&) = delete;
  ~ThumbnailAtlas();

  // The atlas of the snapshot's thumbnails in `colormap`, for thumbnails drawn `side` pixels wide
  // (made again when any changed); 0 when the snapshot has no model.
  ImTextureID texture(const Snapshot& s, Colormap colormap, int side);
  // Where head h of layer l lies in the last atlas made.
  void uv(int layer, int h, ImVec2* uv0, ImVec2* uv1) const;

 private:
  unsigned int id_ = 0;  // GLuint
  std::uint64_t serial_ = 0;
  Colormap colormap_ = Colormap::Viridis;
  int texels_ = 0, width_ = 0, height_ = 0;  // N, and the whole atlas's
};

}  // namespace attnscope
