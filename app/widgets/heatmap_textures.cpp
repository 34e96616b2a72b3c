#include "widgets/heatmap_textures.h"

#include <glad/gl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>

#include "state/ui_wake.h"
#include "widgets/heatmap.h"
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

// A map's colours over a region: one RGBA texel per `step` × `step` cells.
struct Colouring {
  std::string id;
  std::uint64_t key;
  TextureRegion region;
  std::shared_ptr<const void> owner;  // keeps `values`' sources alive while a thread reads them
  StageMap values;                    // read only while `owner` is held
  ValueRange range;
  Colormap colormap;
  ColourScale scale;
  ImU32 masked;
  std::vector<std::uint32_t> pixels;  // the result, rows × cols texels
  int rows = 0, cols = 0;
};

void colour(Colouring& c) {
  const StageMap& m = c.values;
  const TextureRegion& g = c.region;
  const int step = g.step;
  c.rows = (g.rows + step - 1) / step;
  c.cols = (g.cols + step - 1) / step;
  const auto& table = colormapTable(c.colormap);
  std::array<std::uint32_t, 256> texel;
  for (std::size_t k = 0; k < texel.size(); ++k) texel[k] = toImColor(table[k]);
  c.pixels.assign(static_cast<std::size_t>(c.rows) * static_cast<std::size_t>(c.cols), 0);
  // A row at a time: its values (derived stages computed here), their table indices, the colours;
  // with step > 1 the colours of a block's cells summed and averaged (the masked colour included).
  std::vector<float> row(static_cast<std::size_t>(m.cols()));
  std::vector<std::uint8_t> index(row.size());
  std::vector<std::uint32_t> sum(static_cast<std::size_t>(c.cols) * 3);
  std::vector<std::uint32_t> count(static_cast<std::size_t>(c.cols));
  for (int ti = 0; ti < c.rows; ++ti) {
    std::fill(sum.begin(), sum.end(), 0u);
    std::fill(count.begin(), count.end(), 0u);
    for (int i = g.row0 + ti * step; i < std::min(g.row0 + (ti + 1) * step, g.row0 + g.rows); ++i) {
      m.readRow(i, row.data());
      rowIndices(row.data(), row.size(), c.range, c.scale, c.colormap == Colormap::Coolwarm, index.data());
      for (int j = g.col0; j < g.col0 + g.cols; ++j) {
        const float v = row[static_cast<std::size_t>(j)];
        const std::uint32_t rgba = isMasked(v) || zeroOffLogScale(v, c.range, c.scale)
                                       ? c.masked
                                       : texel[index[static_cast<std::size_t>(j)]];
        const std::size_t t = static_cast<std::size_t>((j - g.col0) / step);
        sum[3 * t] += rgba & 0xFF;
        sum[3 * t + 1] += (rgba >> 8) & 0xFF;
        sum[3 * t + 2] += (rgba >> 16) & 0xFF;
        ++count[t];
      }
    }
    std::uint32_t* out = c.pixels.data() + static_cast<std::size_t>(ti) * static_cast<std::size_t>(c.cols);
    for (int t = 0; t < c.cols; ++t) {
      const std::uint32_t n = std::max(count[static_cast<std::size_t>(t)], 1u);
      const std::size_t k = static_cast<std::size_t>(t);
      out[t] = IM_COL32((sum[3 * k] + n / 2) / n, (sum[3 * k + 1] + n / 2) / n, (sum[3 * k + 2] + n / 2) / n, 255);
    }
  }
}

// Colours large maps on a thread of its own: a new GPT-2 snapshot is 72 maps of a million cells,
// a third of a second of colouring that would otherwise freeze one frame. The UI thread uploads
// the finished pixels (GL calls belong to it) and draws a placeholder until then.
class Baker {
 public:
  void submit(Colouring job) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
    // A newer snapshot's colouring of the same map replaces a queued older one: the older would be
    // coloured for nothing and would keep its snapshot (a GPT-2 trace: 260 MB) alive meanwhile.
    for (Colouring& queued : jobs_)
      if (queued.id == job.id) {
        queued = std::move(job);
        return;
      }
    jobs_.push_back(std::move(job));
    wake_.notify_one();
  }
  std::vector<Colouring> finished() {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::exchange(done_, {});
  }
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
      jobs_.clear();
      wake_.notify_one();
    }
    if (thread_.joinable()) thread_.join();
    done_.clear();
  }

 private:
  void run() {
    // Below the engine: with two cores, the result the user waits for comes first; the colours of
    // a result already on its way out fill the gaps.
    setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 10);
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
      if (stop_) return;
      Colouring job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      colour(job);
      job.values = StageMap();  // the snapshot may go once nothing else holds it: the pixels are ours
      job.owner.reset();
      lock.lock();
      done_.push_back(std::move(job));
      // The window may be asleep: it uploads and draws the maps when the queue is empty (a frame
      // per map would cost more than the colouring; a software-rendered frame takes 25–45 ms).
      if (jobs_.empty()) wakeUi();
    }
  }
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Colouring> jobs_;
  std::vector<Colouring> done_;
  std::thread thread_;
  bool stop_ = false;
};

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
  Baker baker;
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
  Colouring job{s.id, key, want, s.owner, s.values, s.look.range, s.look.colormap, s.look.scale, theme().masked_cell,
                {},   0,   0};
  const std::int64_t cells = static_cast<std::int64_t>(want.rows) * want.cols;
  if (!synchronous_ && s.owner && cells >= kBakeAsyncCells) {
    if (t.pending_key != key || !(t.pending_region == want)) {
      t.pending_key = key;
      t.pending_region = want;
      cache_->baker.submit(std::move(job));
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
    if (it != cache_->textures.end() && it->second.pending_key == done.key && it->second.pending_region == done.region)
      upload(it->second, done);
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
