#include "widgets/thumbnail_atlas.h"

#include <glad/gl.h>

#include <cstdint>
#include <vector>

#include "state/snapshot.h"

namespace attnscope {

ThumbnailAtlas::~ThumbnailAtlas() {
  if (id_ != 0) glDeleteTextures(1, &id_);
}

ImTextureID ThumbnailAtlas::texture(const Snapshot& s, Colormap colormap) {
  if (!s.model || s.thumbnail_indices.empty()) return ImTextureID{};
  if (id_ != 0 && s.serial == serial_ && colormap == colormap_)
    return reinterpret_cast<ImTextureID>(static_cast<std::intptr_t>(id_));
  const ModelPass& pass = *s.model;
  const int S = pass.cells, L = pass.layers(), H = pass.headsPerLayer();
  const int stride = S + 1;  // a texel of gap: linear filtering never mixes two heads
  width_ = H * stride - 1;
  height_ = L * stride - 1;
  cells_ = S;
  const auto& table = colormapTable(colormap);
  const Rgb gap = table[0];
  std::vector<std::uint8_t> pixels(static_cast<std::size_t>(width_) * height_ * 4);
  for (std::size_t p = 0; p < pixels.size(); p += 4) {
    pixels[p] = gap.r, pixels[p + 1] = gap.g, pixels[p + 2] = gap.b, pixels[p + 3] = 255;
  }
  const std::size_t per_head = static_cast<std::size_t>(S) * S;
  for (int l = 0; l < L; ++l)
    for (int h = 0; h < H; ++h) {
      const std::uint8_t* index = s.thumbnail_indices.data() + (static_cast<std::size_t>(l) * H + h) * per_head;
      for (int r = 0; r < S; ++r) {
        std::uint8_t* out = pixels.data() + ((static_cast<std::size_t>(l) * stride + r) * width_ + h * stride) * 4;
        for (int c = 0; c < S; ++c, out += 4) {
          const Rgb rgb = table[index[r * S + c]];
          out[0] = rgb.r, out[1] = rgb.g, out[2] = rgb.b;
        }
      }
    }
  if (id_ == 0) glGenTextures(1, &id_);
  glBindTexture(GL_TEXTURE_2D, id_);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);  // a short text's cells stay crisp
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
  glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, width_, height_, 0, GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
  serial_ = s.serial;
  colormap_ = colormap;
  return reinterpret_cast<ImTextureID>(static_cast<std::intptr_t>(id_));
}

void ThumbnailAtlas::uv(int layer, int h, ImVec2* uv0, ImVec2* uv1) const {
  const float x0 = static_cast<float>(h * (cells_ + 1)), y0 = static_cast<float>(layer * (cells_ + 1));
  *uv0 = ImVec2(x0 / static_cast<float>(width_), y0 / static_cast<float>(height_));
  *uv1 = ImVec2((x0 + static_cast<float>(cells_)) / static_cast<float>(width_),
                (y0 + static_cast<float>(cells_)) / static_cast<float>(height_));
}

}  // namespace attnscope
