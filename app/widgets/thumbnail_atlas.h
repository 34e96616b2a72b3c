// ThumbnailAtlas: every head's thumbnail of a trained model in one GL texture (docs/DESIGN.md §3.4
// "Layers"): L rows × H columns of S × S texels with a texel of gap between them. The engine worker
// has turned each thumbnail into colormap indices (Snapshot::thumbnail_indices); making the atlas is
// a table lookup per texel on the UI thread, once per result or colormap. Its GL calls belong to the
// UI thread; it goes before the GL context does.
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

  // The atlas of the snapshot's thumbnails in `colormap` (made again when either changed); 0 when
  // the snapshot has no model.
  ImTextureID texture(const Snapshot& s, Colormap colormap);
  // Where head h of layer l lies in the last atlas made.
  void uv(int layer, int h, ImVec2* uv0, ImVec2* uv1) const;

 private:
  unsigned int id_ = 0;  // GLuint
  std::uint64_t serial_ = 0;
  Colormap colormap_ = Colormap::Viridis;
  int cells_ = 0, width_ = 0, height_ = 0;
};

}  // namespace attnscope
