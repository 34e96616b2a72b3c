#include "widgets/heatmap_textures.h"

#include <glad/gl.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <unordered_map>
#include <utility>

#include "state/ui_wake.h"
#include "widgets/heatmap.h"
#include "widgets/map_colouring.h"
#include "widgets/theme.h"

namespace attnscope {

namespace {

// A map is coloured whole (panning and zooming within it keep the texture) while that takes at most
// this many texels (1024², 4 MB: GPT-2's maps at full resolution) or 4 × its tile's pixels.
constexpr std::int64_t kWholeMapTexels = std::int64_t{1024} * 1024;
constexpr int kRegionBlock = 256;  // a zoomed window's region is whole blocks: panning within keeps it

TextureRegion textureRegion(int rows, int cols, int r0, int nr, int c0, int nc, float px_w, float px_h) {
  // Cells per screen pixel of the window, in the direction with more of them.
  const double per_px = std::max(nc / std::max(px_w, 1.0f), nr / std::max(px_h, 1.0f));
  const int step = std::max(1, static_cast<int>(std::floor(per_px)));
  const auto blocks = [&](int at, int n, int total) {  // [first, end) in whole blocks
    const int first = at / kRegionBlock * kRegionBlock;
    return std::make_pair(first, std::min(total, (at + n + kRegionBlock - 1) / kRegionBlock * kRegionBlock));
  };
  TextureRegion r{0, 0, rows, cols, step};
  const std::int64_t whole = static_cast<std::int64_t>((rows + step - 1) / step) * ((cols + step - 1) / step);
  const double tile_px = static_cast<double>(std::max(px_w, 1.0f)) * std::max(px_h, 1.0f);
  if (whole <= std::max(static_cast<double>(kWholeMapTexels), 4 * tile_px)) return r;  // the whole map
  const auto [rf, re] = blocks(r0, nr, rows);
  const auto [cf, ce] = blocks(c0, nc, cols);
  return TextureRegion{rf, cf, re - rf, ce - cf, step};
}

struct CachedTexture {
  GLuint id = 0;
  std::uint64_t key = 0;          // what the texture shows (values, colours)
  TextureRegion region;           // … of which part, how coarsely
  std::uint64_t pending_key = 0;  // what the baker is colouring for it, 0 = nothing
  TextureRegion pending_region;
  const void* pending_owner = nullptr;  // … for the result that owns these (compared, never read)
  int last_used = 0;
};

std::uint64_t textureKey(const HeatmapSpec& s) {
  std::uint64_t h = s.version * 1000003u + 1;
  auto mix = [&h](std::uint64_t v) { h = (h ^ v) * 0x100000001b3ull; };
  std::uint32_t lo, hi;
  std::memcpy(&lo, &s.look.range.lo, 4);
  std::memcpy(&hi, &s.look.range.hi, 4);
  mix(lo);
  mix(hi);
  std::uint32_t positive;
  std::memcpy(&positive, &s.look.range.positive, 4);
  mix(positive);
  mix(static_cast<std::uint64_t>(s.look.colormap));
  mix(static_cast<std::uint64_t>(s.look.scale) + 17);
  mix(theme().masked_cell);
  mix(static_cast<std::uint64_t>(s.values.rows()) << 32 | static_cast<std::uint64_t>(s.values.cols()));
  return h | 1;  // never 0, which means "none"
}

constexpr Eigen::Index kBakeAsyncCells = 1 << 16;  // below this, colouring takes well under a millisecond

void upload(CachedTexture& t, const Colouring& c) {
  if (t.id == 0) glGenTextures(1, &t.id);
  glBindTexture(GL_TEXTURE_2D, t.id);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);  // crisp cells
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR);   // large maps shrink smoothly
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
  glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, c.cols, c.rows, 0, GL_RGBA, GL_UNSIGNED_BYTE, c.pixels.data());
  t.key = c.key;
  t.region = c.region;
  t.pending_key = 0;
}

}  // namespace

struct HeatmapTextures::Cache {
  std::unordered_map<std::string, CachedTexture> textures;  // by map id
  MapColouringThread baker;
};

HeatmapTextures::HeatmapTextures() : cache_(std::make_unique<Cache>()) {}

HeatmapTextures::Shown HeatmapTextures::texture(const HeatmapSpec& s, int r0, int nr, int c0, int nc, float px_w,
                                                float px_h) {
  CachedTexture& t = cache_->textures[s.id];
  t.last_used = frame_;
  const std::uint64_t key = textureKey(s);
  const TextureRegion want = textureRegion(static_cast<int>(s.values.rows()), static_cast<int>(s.values.cols()), r0, nr,
                                           c0, nc, px_w, px_h);
  // The texture made for this window still serves: the same colours, covering the window, at the
  // resolution the window wants (a whole map's texture, or a block region that still covers it).
  if (t.id != 0 && t.key == key && t.region.step == want.step && t.region.covers(r0, nr, c0, nc))
    return {t.id, t.region};
  Colouring job;
  job.id = s.id, job.key = key, job.region = want, job.owner = s.owner, job.values = s.values;
  job.range = s.look.range, job.colormap = s.look.colormap, job.scale = s.look.scale, job.masked = theme().masked_cell;
  const std::int64_t cells = static_cast<std::int64_t>(want.rows) * want.cols;
  if (!synchronous_ && s.owner && cells >= kBakeAsyncCells) {
    if (t.pending_key != key || !(t.pending_region == want)) {
      t.pending_key = key;
      t.pending_region = want;
      t.pending_owner = s.owner.get();
      cache_->baker.submit(std::move(job));
    } else if (t.pending_owner != s.owner.get()) {  // the same colours of a newer result
      t.pending_owner = s.owner.get();
      cache_->baker.adopt(std::move(job));
    }
    if (t.id != 0 && t.key == key) return {t.id, t.region};  // the same colours, another region: meanwhile
    return {};
  }
  colour(job);
  upload(t, job);
  return {t.id, t.region};
}

void HeatmapTextures::endFrame() {
  ++frame_;
  for (Colouring& done : cache_->baker.finished()) {  // upload what the baker finished, if still wanted
    auto it = cache_->textures.find(done.id);
    // The colours and the region asked for last: a pan's earlier region, finished late, is dropped.
    if (it != cache_->textures.end() && it->second.pending_key == done.key &&
        it->second.pending_region == done.region) {
      if (!done.dropped) {
        upload(it->second, done);
      } else {  // its result went meanwhile: a view that still shows these colours asks again, next frame
        it->second.pending_key = 0;
        wakeUi();
      }
    }
  }
  for (auto it = cache_->textures.begin(); it != cache_->textures.end();) {
    if (frame_ - it->second.last_used > 120) {
      glDeleteTextures(1, &it->second.id);
      it = cache_->textures.erase(it);
    } else {
      ++it;
    }
  }
}

HeatmapTextures::~HeatmapTextures() {
  cache_->baker.stop();
  for (auto& [id, t] : cache_->textures) glDeleteTextures(1, &t.id);
}

}  // namespace attnscope
