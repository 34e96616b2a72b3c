#include "widgets/thumbnail_atlas.h"

#include <glad/gl.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "state/snapshot.h"
#include "widgets/heatmap_textures.h"

namespace attnscope {

ThumbnailAtlas::~ThumbnailAtlas() {
  if (id_ != 0) glDeleteTextures(1, &id_);
}

ImTextureID ThumbnailAtlas::texture(const Snapshot& s, Colormap colormap, int side) {
  if (!s.model || s.thumbnail_indices.empty()) return ImTextureID{};
  const ModelPass& pass = *s.model;
  const int S = pass.cells, L = pass.layers(), H = pass.headsPerLayer();
  const int N = std::clamp(side, 1, S);
  if (id_ != 0 && s.serial == serial_ && colormap == colormap_ && N == texels_)
    return reinterpret_cast<ImTextureID>(static_cast<std::intptr_t>(id_));
  const int stride = N + 1;  // a texel of gap between heads
  const int width = H * stride - 1, height = L * stride - 1;
  // Each index's colour as the four bytes GL_RGBA reads (toImColor, as the maps' textures), one
  // store a texel.
  const auto& table = colormapTable(colormap);
  std::uint32_t rgba[256];
  for (std::size_t i = 0; i < 256; ++i) rgba[i] = toImColor(table[i]);
  std::vector<std::uint32_t> pixels(static_cast<std::size_t>(width) * height, rgba[0]);  // the gaps: the table's first
  const std::size_t per_head = static_cast<std::size_t>(S) * S;
  std::vector<std::uint8_t> texels(static_cast<std::size_t>(N) * N);
  for (int l = 0; l < L; ++l)
    for (int h = 0; h < H; ++h) {
      largestInBlocks(s.thumbnail_indices.data() + (static_cast<std::size_t>(l) * H + h) * per_head, S, N,
                      texels.data());
      for (int i = 0; i < N; ++i) {
        std::uint32_t* out = pixels.data() + (static_cast<std::size_t>(l) * stride + i) * width + h * stride;
        const std::uint8_t* in = texels.data() + static_cast<std::size_t>(i) * N;
        for (int j = 0; j < N; ++j) out[j] = rgba[in[j]];
      }
    }
  const bool same_size = id_ != 0 && width == width_ && height == height_;
  if (id_ == 0) glGenTextures(1, &id_);
  glBindTexture(GL_TEXTURE_2D, id_);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
  if (same_size) {
    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, width, height, GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
  } else {
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);  // a short text's cells stay crisp
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);  // never smaller than drawn
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
    glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, width, height, 0, GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
  }
  width_ = width, height_ = height, texels_ = N;
  serial_ = s.serial;
  colormap_ = colormap;
  return reinterpret_cast<ImTextureID>(static_cast<std::intptr_t>(id_));
}

void ThumbnailAtlas::uv(int layer, int h, ImVec2* uv0, ImVec2* uv1) const {
  const float x0 = static_cast<float>(h * (texels_ + 1)), y0 = static_cast<float>(layer * (texels_ + 1));
  *uv0 = ImVec2(x0 / static_cast<float>(width_), y0 / static_cast<float>(height_));
  *uv1 = ImVec2((x0 + static_cast<float>(texels_)) / static_cast<float>(width_),
                (y0 + static_cast<float>(texels_)) / static_cast<float>(height_));
}

}  // namespace attnscope
