#include "widgets/heatmap.h"

#include <glad/gl.h>
#include <imgui_internal.h>  // ImTextCharFromUtf8

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>

#include "widgets/fonts.h"
#include "widgets/layout_dump.h"
#include "widgets/text.h"
#include "widgets/theme.h"
#include "state/ui_wake.h"

namespace attnscope {

namespace {

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
std::unordered_map<std::string, CachedTexture> textures;
int frame_counter = 0;
bool synchronous = false;  // captures colour every map before they draw

ImU32 toImColor(Rgb c) { return IM_COL32(c.r, c.g, c.b, 255); }
bool isMasked(float v) { return std::isinf(v) && v < 0; }

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
        const std::uint32_t rgba =
            isMasked(v) || zeroOffLogScale(v, c.range, c.scale) ? c.masked : texel[index[static_cast<std::size_t>(j)]];
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
Baker baker;

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

// The texture that shows the map's window [r0, r0 + nr) × [c0, c0 + nc), drawn `px_w` × `px_h`
// pixels large, and the region it holds; id 0 while the baker colours it. While only the region
// changes (a zoom, a pan) the texture of the old region stays on screen, mapped where it lies.
struct ShownTexture {
  GLuint id = 0;
  TextureRegion region;
};
ShownTexture texture(const HeatmapSpec& s, int r0, int nr, int c0, int nc, float px_w, float px_h) {
  CachedTexture& t = textures[s.id];
  t.last_used = frame_counter;
  const std::uint64_t key = textureKey(s);
  const TextureRegion want = textureRegion(static_cast<int>(s.values.rows()), static_cast<int>(s.values.cols()), r0, nr,
                                           c0, nc, px_w, px_h);
  // The texture made for this window still serves: the same colours, covering the window, at the
  // resolution the window wants (a whole map's texture, or a block region that still covers it).
  if (t.id != 0 && t.key == key && t.region.step == want.step && t.region.covers(r0, nr, c0, nc))
    return {t.id, t.region};
  Colouring job{s.id, key, want, s.owner, s.values, s.look.range, s.look.colormap, s.look.scale, theme().masked_cell, {}, 0, 0};
  const std::int64_t cells = static_cast<std::int64_t>(want.rows) * want.cols;
  if (!synchronous && s.owner && cells >= kBakeAsyncCells) {
    if (t.pending_key != key || !(t.pending_region == want)) {
      t.pending_key = key;
      t.pending_region = want;
      baker.submit(std::move(job));
    }
    if (t.id != 0 && t.key == key) return {t.id, t.region};  // the same colours, another region: meanwhile
    return {};
  }
  colour(job);
  upload(t, job);
  return {t.id, t.region};
}

}  // namespace

void setHeatmapColouringSynchronous(bool on) { synchronous = on; }

namespace {

// Text rotated 90° counter-clockwise (reading upwards), its baseline's start at `pos`.
// Glyph by glyph, not AddText: AddText drops the glyphs that lie beyond the clip rect *before*
// the rotation, so a label of the rightmost column, which runs out of the window only while it
// is still horizontal, lost its last character ("t102" for t1024).
void addTextVertical(ImDrawList* draw, ImFont* font, float size, ImVec2 pos, ImU32 col,
                     const std::string& text) {
  const int first = draw->VtxBuffer.Size;
  const float scale = size / font->FontSize;
  float x = pos.x;
  for (const char* s = text.c_str(); *s != 0;) {
    unsigned int c = 0;
    s += ImTextCharFromUtf8(&c, s, nullptr);
    if (c == 0 || c > 0xFFFF) continue;
    font->RenderChar(draw, size, ImVec2(x, pos.y), col, static_cast<ImWchar>(c));
    x += font->GetCharAdvance(static_cast<ImWchar>(c)) * scale;
  }
  // Rotate around pos: (x, y) → (pos.x + (y − pos.y), pos.y − (x − pos.x)).
  for (int i = first; i < draw->VtxBuffer.Size; ++i) {
    ImVec2& p = draw->VtxBuffer[i].pos;
    const float dx = p.x - pos.x, dy = p.y - pos.y;
    p = ImVec2(pos.x + dy, pos.y - dx);
  }
}

void drawColorbar(ImDrawList* draw, const HeatmapSpec& s, ImVec2 p0, float width, float height) {
  const auto& table = colormapTable(s.look.colormap);
  const int segments = 48;
  for (int k = 0; k < segments; ++k) {
    const float x0 = p0.x + width * k / segments, x1 = p0.x + width * (k + 1) / segments;
    const ImU32 a = toImColor(table[k * 255 / segments]);
    const ImU32 b = toImColor(table[(k + 1) * 255 / segments]);
    draw->AddRectFilledMultiColor(ImVec2(x0, p0.y), ImVec2(x1, p0.y + height), a, b, b, a);
  }
}

}  // namespace

float heatmapCellFor(float label_width, float text_scale) {
  // Room on both sides of a label, and a cell at least as tall as the text.
  return std::max({label_width + px(5), fonts().small->FontSize * text_scale + px(2), px(16)});
}

float heatmapColorbarHeight(float text_scale) { return px(6) + px(8) + px(2) + fonts().small->FontSize * text_scale + px(4); }

namespace {

// Where a map scrolled out of view draws: nowhere. Its layout and labels are still worked out, so
// the layout dump lists every map of the grid with what it would show.
ImDrawList* discardedDrawList() {
  static ImDrawList list(ImGui::GetDrawListSharedData());
  list._ResetForNewFrame();
  list.PushClipRectFullScreen();
  list.PushTextureID(ImGui::GetIO().Fonts->TexID);
  return &list;
}

}  // namespace

HeatmapHit drawHeatmap(const HeatmapSpec& s, ImVec2 size) {
  HeatmapHit hit;
  const bool in_view = ImGui::IsRectVisible(size);  // scrolled away: no texture, nothing drawn
  ImDrawList* window_draw = ImGui::GetWindowDrawList();
  const ImVec2 visible_min = window_draw->GetClipRectMin(), visible_max = window_draw->GetClipRectMax();
  ImDrawList* draw = in_view ? window_draw : discardedDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  ImFont* small = fonts().small;
  const float fs = small->FontSize * s.text_scale, ui = ImGui::GetTextLineHeight();
  const StageMap& m = s.values;
  const int rows = static_cast<int>(m.rows()), cols = static_cast<int>(m.cols());
  // The visible window of cells (all of them unless zoomed).
  const int r0 = std::clamp(s.window.row0, 0, rows - 1);
  const int nr = s.window.rows > 0 ? std::min(s.window.rows, rows - r0) : rows - r0;
  const int c0 = std::clamp(s.window.col0, 0, cols - 1);
  const int nc = s.window.cols > 0 ? std::min(s.window.cols, cols - c0) : cols - c0;
  const Theme& th = theme();

  if (!s.compact)
    draw->AddText(ImVec2(origin.x, origin.y), ImGui::GetColorU32(ImGuiCol_Text),
                  fitText(ImGui::GetFont(), ImGui::GetFontSize(), s.title, size.x).c_str());

  // Label bands: rows on the left, columns on top (vertical text when they do not fit across).
  float label_w = 0, col_label_w = 0;
  for (int i = r0; i < r0 + nr && s.row_labels; ++i)
    label_w = std::max(label_w, small->CalcTextSizeA(fs, FLT_MAX, 0, (*s.row_labels)[i].c_str()).x);
  for (int j = c0; j < c0 + nc && s.col_labels; ++j)
    col_label_w = std::max(col_label_w, small->CalcTextSizeA(fs, FLT_MAX, 0, (*s.col_labels)[j].c_str()).x);
  // The row labels' band: at most 28 % of the width, or what the grid's cells leave.
  const float left = s.compact ? 0 : std::min(label_w, s.cell > 0 ? std::max(size.x - s.cell * nc - px(4), 0.0f) : size.x * 0.28f) + px(4);
  // Colorbar: a gap, the bar, then the range labels (the legend shares their line).
  const float colorbar_h = s.compact ? 0 : heatmapColorbarHeight(s.text_scale);
  const float title_h = s.compact ? 0 : ui;
  const float avail_w = size.x - left;
  float top_band = s.compact ? 0 : fs + px(4);
  const float most = s.cell > 0 ? s.cell : FLT_MAX;
  float cell = std::min({avail_w / nc, (size.y - title_h - top_band - colorbar_h) / nr, most});
  // Key labels across while every one fits its column with room to spare (the same room the
  // thinning below asks for), else upright: never every other key's name missing.
  const float col_label_room = col_label_w + 6;
  const bool vertical = !s.compact && col_label_room > cell && nc > 1;
  if (vertical) {
    top_band = std::min(col_label_w, std::min(size.y * 0.18f, px(48))) + px(6);
    cell = std::min({avail_w / nc, (size.y - title_h - top_band - colorbar_h) / nr, most});
  }
  cell = std::max(cell, 0.05f);
  const ImVec2 p0(origin.x + left, origin.y + title_h + top_band);
  const ImVec2 p1(p0.x + cell * nc, p0.y + cell * nr);
  auto cellMin = [&](int i, int j) { return ImVec2(p0.x + (j - c0) * cell, p0.y + (i - r0) * cell); };

  // Cells: the window of the texture's region, magnified without blur. A texture of another region
  // (shown while its successor is coloured) is drawn where it lies, clipped to the window.
  const ShownTexture shown = in_view ? texture(s, r0, nr, c0, nc, p1.x - p0.x, p1.y - p0.y) : ShownTexture{};
  const TextureRegion& g = shown.region;
  const int ar0 = std::max(r0, g.row0), ar1 = std::min(r0 + nr, g.row0 + g.rows);
  const int ac0 = std::max(c0, g.col0), ac1 = std::min(c0 + nc, g.col0 + g.cols);
  const bool covered = shown.id && ar1 > ar0 && ac1 > ac0;  // else nothing of the window is coloured yet
  if (!in_view) {
  } else if (covered) {
    if (ar0 > r0 || ar1 < r0 + nr || ac0 > c0 || ac1 < c0 + nc)  // the rest of the window is being coloured
      draw->AddRectFilled(p0, p1, th.grid_line);
    // Texel coordinates: the region is ceil(rows / step) texels of `step` cells each.
    const float tex_w = static_cast<float>((g.cols + g.step - 1) / g.step) * g.step;
    const float tex_h = static_cast<float>((g.rows + g.step - 1) / g.step) * g.step;
    const ImVec2 uv0((ac0 - g.col0) / tex_w, (ar0 - g.row0) / tex_h);
    const ImVec2 uv1((ac1 - g.col0) / tex_w, (ar1 - g.row0) / tex_h);
    draw->AddImage(reinterpret_cast<ImTextureID>(static_cast<std::intptr_t>(shown.id)), cellMin(ar0, ac0),
                   cellMin(ar1, ac1), uv0, uv1);
  } else {  // being coloured: a quiet placeholder, never the colours of an older map
    draw->AddRectFilled(p0, p1, th.grid_line);
    draw->AddText(small, fs, ImVec2(p0.x + px(4), p0.y + px(4)), th.text_dim, "colouring…");
  }
  if (cell >= px(6)) {
    for (int j = 1; j < nc; ++j)
      draw->AddLine(ImVec2(p0.x + j * cell, p0.y), ImVec2(p0.x + j * cell, p1.y), th.grid_line);
    for (int i = 1; i < nr; ++i)
      draw->AddLine(ImVec2(p0.x, p0.y + i * cell), ImVec2(p1.x, p0.y + i * cell), th.grid_line);
  }
  const auto& table = colormapTable(s.look.colormap);
  // Value labels only when every visible one fits its cell: all or none reads better. The first
  // format that fits, from the notebook's four decimals to the compact two (widgets/text.h).
  std::vector<std::string> texts;
  bool values_shown = false;
  CellFormat format = CellFormat::Decimals4;
  for (CellFormat f : cellFormats()) {
    texts.clear();
    format = f;
    values_shown = !s.compact;
    const auto label = [&](float v) { return s.look.cell_text ? s.look.cell_text(v) : cellLabel(v, f); };
    const auto fits = [&](const std::string& text) {
      // (a hair of slack: a grid sizes cells to the widest label exactly, and its sums round)
      return heatmapCellFor(small->CalcTextSizeA(fs, FLT_MAX, 0, text.c_str()).x, s.text_scale) <= cell + 0.05f;
    };
    for (int i = r0; i < r0 + nr && values_shown; ++i)
      for (int j = c0; j < c0 + nc && values_shown; ++j) {
        texts.push_back(label(m(i, j)));
        values_shown = fits(texts.back());
      }
    for (const StageMap& peer : s.label_peers)  // the same cells of the maps beside it
      for (Eigen::Index i = r0; i < std::min<Eigen::Index>(r0 + nr, peer.rows()) && values_shown; ++i)
        for (Eigen::Index j = c0; j < std::min<Eigen::Index>(c0 + nc, peer.cols()) && values_shown; ++j)
          values_shown = fits(label(peer(i, j)));
    if (values_shown || s.look.cell_text) break;
  }
  if (values_shown && !s.look.cell_text)
    hit.decimals = format == CellFormat::Decimals4 ? 4 : format == CellFormat::Decimals3 ? 3 : 2;
  if (values_shown) {
    const Rgb masked{static_cast<std::uint8_t>(th.masked_cell & 0xFF),
                     static_cast<std::uint8_t>((th.masked_cell >> 8) & 0xFF),
                     static_cast<std::uint8_t>((th.masked_cell >> 16) & 0xFF)};
    std::size_t k = 0;
    std::vector<float> row(static_cast<std::size_t>(m.cols()));
    std::vector<std::uint8_t> index(row.size());
    for (int i = r0; i < r0 + nr; ++i) {
      m.readRow(i, row.data());  // the texture's colours: a row at a time, as a per-row scale needs
      rowIndices(row.data(), row.size(), s.look.range, s.look.scale, s.look.colormap == Colormap::Coolwarm, index.data());
      for (int j = c0; j < c0 + nc; ++j, ++k) {
        const float v = row[static_cast<std::size_t>(j)];
        const ImVec2 ts = small->CalcTextSizeA(fs, FLT_MAX, 0, texts[k].c_str());
        const Rgb bg = isMasked(v) || zeroOffLogScale(v, s.look.range, s.look.scale) ? masked : table[index[static_cast<std::size_t>(j)]];
        const ImVec2 c = cellMin(i, j);
        draw->AddText(small, fs, ImVec2(c.x + cell / 2 - ts.x / 2, c.y + cell / 2 - ts.y / 2),
                      toImColor(contrastingText(bg)), texts[k].c_str());
      }
    }
  }

  // Axis labels, thinned to one every `step` when cells are smaller than the text.
  const int row_step = std::max(1, static_cast<int>(std::ceil((fs + 1) / cell)));
  for (int i = r0; i < r0 + nr && s.row_labels && !s.compact; i += row_step) {
    const std::string t = fitText(small, fs, (*s.row_labels)[i], left - 4);
    const ImVec2 ts = small->CalcTextSizeA(fs, FLT_MAX, 0, t.c_str());
    draw->AddText(small, fs, ImVec2(p0.x - 4 - ts.x, cellMin(i, c0).y + cell / 2 - ts.y / 2),
                  i == s.selected_row ? th.selection : th.text_dim, t.c_str());
  }
  const int col_step =
      std::max(1, static_cast<int>(std::ceil((vertical ? fs + 1 : col_label_room) / cell)));
  for (int j = c0; j < c0 + nc && s.col_labels && !s.compact; j += col_step) {
    const float x = cellMin(r0, j).x + cell / 2;
    if (vertical) {
      const std::string t = fitText(small, fs, (*s.col_labels)[j], top_band - 6);
      addTextVertical(draw, small, fs, ImVec2(x - fs / 2, p0.y - 4), th.text_dim, t);
    } else {
      const std::string& t = (*s.col_labels)[j];
      const ImVec2 ts = small->CalcTextSizeA(fs, FLT_MAX, 0, t.c_str());
      draw->AddText(small, fs, ImVec2(x - ts.x / 2, p0.y - ts.y - 3), th.text_dim, t.c_str());
    }
  }

  // The cells an edit just changed, outlined in the hover colour while it fades.
  int outlined = 0;
  if (s.outline_alpha > 0 && !s.outlined.empty()) {
    ImVec4 colour = ImGui::ColorConvertU32ToFloat4(th.hover);
    colour.w *= std::clamp(s.outline_alpha, 0.0f, 1.0f);
    const ImU32 line = ImGui::ColorConvertFloat4ToU32(colour);
    for (const auto& [i, j] : s.outlined) {
      if (i < r0 || i >= r0 + nr || j < c0 || j >= c0 + nc) continue;
      const ImVec2 c = cellMin(i, j);
      draw->AddRect(ImVec2(c.x + 1, c.y + 1), ImVec2(c.x + cell - 1, c.y + cell - 1), line, 0, 0, std::max(1.0f, px(2)));
      ++outlined;
    }
  }
  // Selection, hover, click, wheel zoom and drag to pan.
  if (s.selected_row >= r0 && s.selected_row < r0 + nr)
    draw->AddRect(ImVec2(p0.x - 1, cellMin(s.selected_row, c0).y - 1),
                  ImVec2(p1.x + 1, cellMin(s.selected_row, c0).y + cell + 1), th.selection, 0, 0, px(2));
  if (s.selected_col >= c0 && s.selected_col < c0 + nc)
    draw->AddRect(ImVec2(cellMin(r0, s.selected_col).x - 1, p0.y - 1),
                  ImVec2(cellMin(r0, s.selected_col).x + cell + 1, p1.y + 1), th.selection, 0, 0, 1.5f);
  ImGui::SetCursorScreenPos(p0);
  ImGui::InvisibleButton((s.id + "##cells").c_str(), ImVec2(p1.x - p0.x, std::max(p1.y - p0.y, 1.0f)),
                         ImGuiButtonFlags_MouseButtonLeft | ImGuiButtonFlags_MouseButtonRight);
  const ImGuiIO& io = ImGui::GetIO();
  if (ImGui::IsItemHovered()) {
    const int i = std::clamp(r0 + static_cast<int>((io.MousePos.y - p0.y) / cell), r0, r0 + nr - 1);
    const int j = std::clamp(c0 + static_cast<int>((io.MousePos.x - p0.x) / cell), c0, c0 + nc - 1);
    const ImVec2 c = cellMin(i, j);
    draw->AddRect(c, ImVec2(c.x + cell, c.y + cell), th.hover, 0, 0, 1.5f);
    if (s.describe && !ImGui::IsMouseDown(ImGuiMouseButton_Right)) {
      const std::string tip = s.describe(i, j);
      ImGui::SetTooltip("%s", tip.c_str());
      layout().state()["tooltip"] = {{"map", s.id}, {"row", i}, {"col", j}, {"text", tip}};  // tests read it
    }
    if (ImGui::IsItemClicked(ImGuiMouseButton_Left)) hit.clicked_row = i;
    if (ImGui::IsMouseReleased(ImGuiMouseButton_Right) && io.MouseDragMaxDistanceSqr[ImGuiMouseButton_Right] < px(4) * px(4))
      hit.context_menu = true;
    hit.wheel = io.MouseWheel;
    hit.hover_row = r0 + (io.MousePos.y - p0.y) / cell;
    hit.hover_col = c0 + (io.MousePos.x - p0.x) / cell;
  }
  if (ImGui::IsItemActive() && ImGui::IsMouseDragging(ImGuiMouseButton_Right, 0)) {
    hit.pan_rows = -io.MouseDelta.y / cell;
    hit.pan_cols = -io.MouseDelta.x / cell;
  }

  if (s.compact) {  // a thumbnail: cells and interaction only
    ImGui::SetCursorScreenPos(origin);
    ImGui::Dummy(size);
    return hit;
  }
  // Colorbar with its range, and the legend.
  const float bar_y = p1.y + px(6);  // keep in step with heatmapColorbarHeight
  const float bar_w = std::max(p1.x - p0.x, std::min(size.x - left, px(120)));
  drawColorbar(draw, s, ImVec2(p0.x, bar_y), bar_w, px(8));
  const bool centred = s.look.colormap == Colormap::Coolwarm;
  auto [lo_text, hi_text] = colorbarEnds(s.look.range, s.look.scale, centred, s.look.range_text);
  const auto width = [&](const std::string& t) { return small->CalcTextSizeA(fs, FLT_MAX, 0, t.c_str()).x; };
  // Words at the ends ("dropped 0", "kept ×1.11") that would run into each other on a narrow bar
  // (a mask among six maps a head) keep their values only: "0", "×1.11".
  if (width(lo_text) + width(hi_text) + px(6) > bar_w)
    for (std::string* end : {&lo_text, &hi_text}) end->erase(0, end->find_last_of(' ') + 1);
  // Numbers that would still overlap (one token: a map of one value, its bar one cell wide) say it
  // once, in the middle: "0.229", or "±0.00615" for a range centred on 0.
  const std::string minus = "−";
  const bool one_value = lo_text == hi_text || (centred && lo_text == minus + hi_text);
  const bool said_once = width(lo_text) + width(hi_text) + px(6) > bar_w && one_value && s.look.range_text[0].empty();
  std::string once;
  if (said_once) {
    once = lo_text == hi_text ? hi_text : "±" + hi_text;
    draw->AddText(small, fs, ImVec2(p0.x + std::max(0.0f, (bar_w - width(once)) / 2), bar_y + px(10)), th.text_dim,
                  once.c_str());
    lo_text.clear();
    hi_text.clear();
  }
  float content_bottom = bar_y + px(10) + fs;  // the colorbar's labels (a legend below them: its line too)
  const char* lo = lo_text.c_str();
  const char* hi = hi_text.c_str();
  const ImVec2 hs = small->CalcTextSizeA(fs, FLT_MAX, 0, hi);
  const float lo_w = width(lo_text);
  draw->AddText(small, fs, ImVec2(p0.x, bar_y + px(10)), th.text_dim, lo);
  draw->AddText(small, fs, ImVec2(p0.x + bar_w - hs.x, bar_y + px(10)), th.text_dim, hi);
  // Ticks: a mark each; a label where it clears the ends and the label before it (and no legend
  // sits on that line). Masks and words at the ends have none.
  nlohmann::json ticks_dump = nlohmann::json::array();
  if (s.look.range_text[0].empty()) {
    float free_from = p0.x + lo_w + px(6);
    for (const ColorbarTick& t : colorbarTicks(s.look.range, s.look.scale)) {
      const float x = p0.x + t.at * bar_w;
      draw->AddLine(ImVec2(x, bar_y + px(8)), ImVec2(x, bar_y + px(11)), th.text_dim);
      const float tw = small->CalcTextSizeA(fs, FLT_MAX, 0, t.label.c_str()).x;
      const bool labelled = s.look.legend.empty() && !said_once && x - tw / 2 >= free_from && x + tw / 2 <= p0.x + bar_w - hs.x - px(6);
      if (labelled) {
        draw->AddText(small, fs, ImVec2(x - tw / 2, bar_y + px(10)), th.text_dim, t.label.c_str());
        free_from = x + tw / 2 + px(6);
      }
      ticks_dump.push_back({{"value", t.value}, {"x", x}, {"label", labelled ? t.label : ""}});
    }
  }
  if (!s.look.legend.empty()) {  // between the range labels, or below them when it does not fit
    const bool swatch = s.look.legend.rfind("▨", 0) == 0;  // a masked-grey square, then the text
    const std::string text = swatch ? s.look.legend.substr(std::string("▨").size()) : s.look.legend;
    const float lw = small->CalcTextSizeA(fs, FLT_MAX, 0, text.c_str()).x + (swatch ? fs + 2 : 0);
    float lx = p0.x + (bar_w - lw) / 2, ly = bar_y + px(10);
    if (lx < p0.x + lo_w + 6 || lx + lw > p0.x + bar_w - hs.x - 6) {
      lx = p0.x;
      ly += fs + 2;
      content_bottom = std::max(content_bottom, ly + fs);
    }
    if (swatch) {
      draw->AddRectFilled(ImVec2(lx, ly + 2), ImVec2(lx + fs - 2, ly + fs - 1), th.masked_cell);
      lx += fs + 2;
    }
    draw->AddText(small, fs, ImVec2(lx, ly), th.text_dim, text.c_str());
  }

  if (s.dimmed && in_view) {  // a lesson step is about other maps: this one recedes, still legible
    ImVec4 bg = ImGui::GetStyleColorVec4(ImGuiCol_WindowBg);
    bg.w = 0.62f;
    draw->AddRectFilled(origin, ImVec2(origin.x + size.x, origin.y + size.y), ImGui::GetColorU32(bg));
  }

  nlohmann::json entry = s.dump;
  entry["id"] = s.id;
  entry["dimmed"] = s.dimmed;
  entry["title"] = s.title;
  entry["cells"] = rectJson(p0, p1);
  entry["tile"] = rectJson(origin, ImVec2(origin.x + size.x, origin.y + size.y));
  // What the map drew — title to colorbar labels — within its tile: a figure's crop (no blank below).
  entry["content"] = rectJson(origin, ImVec2(origin.x + size.x, std::min(origin.y + size.y, content_bottom)));
  entry["rows"] = rows;
  entry["cols"] = cols;
  entry["window"] = {{"row0", r0}, {"rows", nr}, {"col0", c0}, {"cols", nc}};
  entry["cell"] = cell;
  entry["cell_font_px"] = fs;  // the numbers' size (a lesson step may fit them a little smaller)
  entry["range"] = {s.look.range.lo, s.look.range.hi};
  entry["colormap"] = colormapId(s.look.colormap);
  entry["outlined"] = outlined;  // cells outlined as just changed, in this frame
  entry["scale"] = colourScaleId(s.look.scale == ColourScale::Log && !logApplies(s.look.range) ? ColourScale::Linear : s.look.scale);
  entry["positive"] = s.look.range.positive;
  entry["colorbar"] = {{"x0", p0.x}, {"width", bar_w}, {"lo", lo_text}, {"hi", hi_text}, {"once", once}, {"ticks", ticks_dump}};
  entry["in_view"] = in_view;  // false: scrolled out of the grid's window; true: at least partly visible
  // The whole map — title, labels, cells, colorbar — within the window's visible area (half a
  // pixel for rounding): nothing of it needs scrolling.
  entry["wholly_in_view"] = in_view && origin.x >= visible_min.x - 0.5f && origin.y >= visible_min.y - 0.5f &&
                            origin.x + size.x <= visible_max.x + 0.5f && origin.y + size.y <= visible_max.y + 0.5f;
  entry["values_shown"] = values_shown;
  if (values_shown) entry["label_format"] = s.look.cell_text ? "custom" : cellFormatId(format);
  layout().heatmap(std::move(entry));

  ImGui::SetCursorScreenPos(origin);
  ImGui::Dummy(size);
  return hit;
}

void collectHeatmapTextures() {
  ++frame_counter;
  for (Colouring& done : baker.finished()) {  // upload what the baker finished, if still wanted
    auto it = textures.find(done.id);
    // The colours and the region asked for last: a pan's earlier region, finished late, is dropped.
    if (it != textures.end() && it->second.pending_key == done.key && it->second.pending_region == done.region)
      upload(it->second, done);
  }
  for (auto it = textures.begin(); it != textures.end();) {
    if (frame_counter - it->second.last_used > 120) {
      glDeleteTextures(1, &it->second.id);
      it = textures.erase(it);
    } else {
      ++it;
    }
  }
}

void releaseHeatmapTextures() {
  baker.stop();
  for (auto& [id, t] : textures) glDeleteTextures(1, &t.id);
  textures.clear();
}

}  // namespace attnscope
