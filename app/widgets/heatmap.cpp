#include "widgets/heatmap.h"

#include <imgui_internal.h>  // ImTextCharFromUtf8

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <utility>

#include "widgets/fonts.h"
#include "widgets/layout_dump.h"
#include "widgets/text.h"
#include "widgets/theme.h"

namespace attnscope {

namespace {

// Text rotated 90° counter-clockwise (reading upwards), its baseline's start at `pos`.
// Glyph by glyph, not AddText: AddText drops the glyphs that lie beyond the clip rect *before*
// the rotation, so a label of the rightmost column, which runs out of the window only while it
// is still horizontal, lost its last character ("t102" for t1024).
void addTextVertical(ImDrawList* draw, ImFont* font, float size, ImVec2 pos, ImU32 col, const std::string& text) {
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

// An axis's name fitted to `width`, its position kept whole where one is shown ("12 Ġc…", never
// "1…": a cut number names another token).
std::string fitAxisName(ImFont* font, float size, const std::vector<std::string>& names, int at, bool tokens, int step,
                        float width) {
  if (step <= 1 || !tokens) return fitText(font, size, names[static_cast<std::size_t>(at)], width);
  const std::string position = axisName("", at, step);
  const float taken = font->CalcTextSizeA(size, FLT_MAX, 0, position.c_str()).x;
  return position + fitText(font, size, names[static_cast<std::size_t>(at)], width - taken);
}

}  // namespace

void drawColourRamp(ImDrawList* draw, const MapLook& look, ImVec2 p0, ImVec2 size, bool upright) {
  const auto& table = colormapTable(look.colormap);
  if (oneValued(look)) {  // its one colour
    const ImU32 one = toImColor(table[static_cast<std::size_t>(colormapIndex(look.range.lo, look.range))]);
    draw->AddRectFilled(p0, ImVec2(p0.x + size.x, p0.y + size.y), one);
    return;
  }
  const int segments = 48;
  for (int k = 0; k < segments; ++k) {
    const ImU32 a = toImColor(table[k * 255 / segments]);
    const ImU32 b = toImColor(table[(k + 1) * 255 / segments]);
    if (upright) {
      const float y0 = p0.y + size.y * (segments - k - 1) / segments, y1 = p0.y + size.y * (segments - k) / segments;
      draw->AddRectFilledMultiColor(ImVec2(p0.x, y0), ImVec2(p0.x + size.x, y1), b, b, a, a);
    } else {
      const float x0 = p0.x + size.x * k / segments, x1 = p0.x + size.x * (k + 1) / segments;
      draw->AddRectFilledMultiColor(ImVec2(x0, p0.y), ImVec2(x1, p0.y + size.y), a, b, b, a);
    }
  }
}

float drawMaskedSwatch(ImDrawList* draw, float x, float y, float fs) {
  draw->AddRectFilled(ImVec2(x, y + 2), ImVec2(x + fs - 2, y + fs - 1), theme().masked_cell);
  return x + fs + 2;
}

float widestAxisName(const std::vector<std::string>& names, int from, int n, bool numbered, float size, ImFont* font) {
  ImFont* small = font != nullptr ? font : fonts().small;
  float w = 0;
  for (int i = from; i < from + n && i < static_cast<int>(names.size()); ++i) {
    const std::string& name = names[static_cast<std::size_t>(i)];
    float x = small->CalcTextSizeA(size, FLT_MAX, 0, name.c_str(), name.c_str() + name.size()).x;
    if (numbered) x += small->CalcTextSizeA(size, FLT_MAX, 0, axisName("", i, 2).c_str()).x;  // no kerning
    w = std::max(w, x);
  }
  return w;
}

float heatmapCellFor(float label_width, float text_scale) {
  // Room on both sides of a label, and a cell at least as tall as the text.
  return std::max({label_width + px(5), fonts().small->FontSize * text_scale + px(2), px(16)});
}

float heatmapColorbarHeight(float text_scale) {
  return px(6) + px(8) + px(2) + fonts().small->FontSize * text_scale + px(4);
}

std::vector<std::string> heatmapLegendLines(const std::string& legend, float width, int most, float text_scale) {
  ImFont* small = fonts().small;
  const float fs = small->FontSize * text_scale;
  const auto wide = [&](const std::string& t) { return small->CalcTextSizeA(fs, FLT_MAX, 0, t.c_str()).x; };
  const std::string joint = " · ";
  std::vector<std::string> lines;
  for (std::size_t from = 0; from < legend.size();) {  // each part joins the line before it where the two fit
    const std::size_t to = std::min(legend.find(joint, from), legend.size());
    std::string part = legend.substr(from, to - from);
    if (!lines.empty() &&
        (static_cast<int>(lines.size()) == std::max(most, 1) || wide(lines.back() + joint + part) <= width))
      lines.back() += joint + part;
    else
      lines.push_back(std::move(part));
    from = to + joint.size();
  }
  if (lines.empty()) lines.emplace_back();
  // A part wider than the width alone breaks at its last space that fits, while lines remain ("dark
  // grey: B's own to…" at 1280 × 800 and 150 %: "dark grey: B's own" over "tokens").
  for (std::size_t k = 0; k < lines.size() && static_cast<int>(lines.size()) < most; ++k) {
    if (wide(lines[k]) <= width) continue;
    std::size_t cut = std::string::npos;
    for (std::size_t sp = lines[k].find(' '); sp != std::string::npos && wide(lines[k].substr(0, sp)) <= width;
         sp = lines[k].find(' ', sp + 1))
      cut = sp;
    if (cut == std::string::npos || cut == 0) continue;
    std::string rest = lines[k].substr(cut + 1);
    lines[k].resize(cut);
    lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(k) + 1, std::move(rest));
  }
  for (std::string& line : lines) line = fitText(small, fs, line, width);
  return lines;
}

namespace {

// A colorbar beside the cells: a gap, the bar, a gap, then its labels' column.
float besideBarLeft() { return px(8); }
float besideBarWidth() { return px(10); }
float besideLabelsLeft() { return besideBarLeft() + besideBarWidth() + px(6); }

// A legend's text, and whether a masked-grey square comes first ("▨ −∞ masked").
struct LegendText {
  bool swatch = false;
  std::string text;
};
LegendText legendText(const std::string& legend) {
  const std::string square = "▨";
  const bool swatch = legend.rfind(square, 0) == 0;
  return {swatch, swatch ? legend.substr(square.size()) : legend};
}

// The colorbar's words at its ends: the range's numbers, or the look's words for them.
std::array<std::string, 2> barEnds(const MapLook& look) {
  return colorbarEnds(look.range, look.scale, look.colormap == Colormap::Coolwarm, look.range_text);
}

// A map of one value, its ends' numbers said once: "0.229", or "±0.00615" for a range centred on 0;
// "" for a map of more values, or ends in words.
std::string oneValueText(const MapLook& look, const std::string& lo, const std::string& hi) {
  if (!look.range_text[0].empty()) return "";
  if (lo == hi) return hi;
  return look.colormap == Colormap::Coolwarm && lo == "−" + hi ? "±" + hi : "";
}

// The legend on the range labels' line is centred on the bar, 6 px clear of each end's label: the
// narrowest bar that holds it there, its labels `lo_w` and `hi_w` wide in a font `fs` high.
// drawHeatmap places it by this, and the grid sizes its maps by it (heatmapLegendRoom).
LegendRoom legendRoomBetween(const LegendText& legend, float fs, float lo_w, float hi_w) {
  const float text_w = fonts().small->CalcTextSizeA(fs, FLT_MAX, 0, legend.text.c_str()).x;
  return {text_w + (legend.swatch ? fs : 0) + 2 * std::max(lo_w, hi_w), (legend.swatch ? 2.0f : 0.0f) + 12};
}

}  // namespace

LegendRoom heatmapLegendRoom(const MapLook& look) {
  if (look.legend.empty()) return {};
  if (oneValued(look) && look.range_text[0].empty()) return {FLT_MAX, 0};  // the value mid-bar: always below
  ImFont* small = fonts().small;
  const float fs = small->FontSize;
  const auto width = [&](const std::string& t) { return small->CalcTextSizeA(fs, FLT_MAX, 0, t.c_str()).x; };
  const auto [lo, hi] = barEnds(look);
  return legendRoomBetween(legendText(look.legend), fs, width(lo), width(hi));
}

ColorbarBand heatmapColorbarBeside(const MapLook& look, float text_scale, bool legend_in_band) {
  ImFont* small = fonts().small;
  const float fs = small->FontSize * text_scale;
  const auto width = [&](const std::string& t) { return small->CalcTextSizeA(fs, FLT_MAX, 0, t.c_str()).x; };
  const auto [lo, hi] = barEnds(look);
  float labels = std::max(width(lo), width(hi));
  if (look.range_text[0].empty())
    for (const ColorbarTick& t : colorbarTicks(look.range, look.scale)) labels = std::max(labels, width(t.label));
  float height = 2 * fs + px(4);  // the ends' labels, top and bottom
  // The legend under the top label, wrapped to the column (wider where it can run on).
  if (!look.legend.empty() && legend_in_band) {
    const LegendText legend = legendText(look.legend);
    const float swatch = legend.swatch ? fs + 2 : 0;
    labels = std::max(labels, std::min(width(legend.text) + swatch, px(150)));
    height += small->CalcTextSizeA(fs, FLT_MAX, labels - swatch, legend.text.c_str()).y + px(6);
  }
  return {besideLabelsLeft() + labels, height};
}

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

HeatmapHit drawHeatmap(HeatmapTextures& textures, const HeatmapSpec& s, ImVec2 size) {
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
  const auto widest = [&](const std::vector<std::string>* names, int from, int n, bool numbered) {
    return names ? widestAxisName(*names, from, n, numbered, fs) : 0.0f;
  };
  const float label_w = widest(s.row_labels, r0, nr, false), col_label_w = widest(s.col_labels, c0, nc, false);
  // The colorbar: below the cells (a gap, the bar, then the range labels, the legend sharing their
  // line), or in a band right of them.
  const bool beside = s.colorbar_beside && !s.compact;
  const ColorbarBand band = beside ? heatmapColorbarBeside(s.look, s.text_scale, !s.legend_below) : ColorbarBand{};
  const float colorbar_h = s.compact || beside ? 0 : heatmapColorbarHeight(s.text_scale);
  // The row labels' band: at most 28 % of the width, or what the grid's cells leave.
  const float most_left = s.cell > 0 ? std::max(size.x - s.cell * nc - band.width - px(4), 0.0f) : size.x * 0.28f;
  float left = s.compact ? 0 : std::min(label_w, most_left) + px(4);
  const float title_h = s.compact || s.title.empty() ? 0 : ui;  // untitled: a grid's one map, named by its card
  const float avail_w = size.x - left - band.width;
  float top_band = s.compact ? 0 : fs + px(4);
  const float most = s.cell > 0 ? s.cell : FLT_MAX;
  float cell = std::min({avail_w / nc, (size.y - title_h - top_band - colorbar_h) / nr, most});
  // Key labels across while every one fits its column with room to spare (the same room the
  // thinning below asks for), else upright: never every other key's name missing.
  const float col_label_room = col_label_w + 6;
  const bool vertical = !s.compact && col_label_room > cell && nc > 1;
  if (vertical) {  // up to 48 px of the text's size, as a grid reserves (on its own, 18 % of the height)
    top_band = std::min(col_label_w, s.cell > 0 ? px(48) : std::min(size.y * 0.18f, px(48))) + px(6);
    cell = std::min({avail_w / nc, (size.y - title_h - top_band - colorbar_h) / nr, most});
  }
  if (!s.compact && s.cells_top > title_h + top_band) {  // level with the maps beside it
    top_band = s.cells_top - title_h;
    cell = std::min({avail_w / nc, (size.y - title_h - top_band - colorbar_h) / nr, most});
  }
  // Names thinned to one every `step` where the cells are smaller than the text. Thinned token names
  // start with their numbers (map_look.h: "12 Ġon"), on a ruler's steps for both axes (the keys'
  // marks over the rows'), where their band holds them at these cells: the rows' band widens into
  // room the cells leave beside it (or as a grid says: name_positions), the keys' holds them as it
  // is. Where that would take cell size the names stay as they are, each ticked (numbered, a
  // 14-token map beside the side panels at 200 % lost 20 px, a 43-token one's keys' band 27 px).
  int row_step = axisNameStep(fs + 1, cell);
  int col_step = axisNameStep(vertical ? fs + 1 : col_label_room, cell);
  int row_numbers = 1, col_numbers = 1;
  if (row_step > 1 && !s.compact && s.token_rows && s.name_positions != 0) {
    const float numbered = widest(s.row_labels, r0, nr, true);
    const float room = std::min(size.x - cell * nc - band.width - px(4), std::max(most_left, label_w));
    if (s.name_positions > 0 || numbered <= room) {  // (a grid's: cut to its band, positions whole)
      left = std::max(left, std::min(numbered, room) + px(4));
      row_step = row_numbers = axisNameStep(fs + 1, cell, true);
      col_step = axisNameStep(vertical ? fs + 1 : col_label_room, cell, true);
    }
  }
  const bool ruler = row_numbers > 1;
  if (vertical && col_step > 1 && s.token_cols && (row_numbers > 1 || !s.token_rows) &&
      widest(s.col_labels, c0, nc, true) <= top_band - px(6))
    col_numbers = col_step;  // (with the rows': a map's two axes named alike)
  cell = std::max(cell, 0.05f);
  const ImVec2 p0(origin.x + left, origin.y + title_h + top_band);
  const ImVec2 p1(p0.x + cell * nc, p0.y + cell * nr);
  auto cellMin = [&](int i, int j) { return ImVec2(p0.x + (j - c0) * cell, p0.y + (i - r0) * cell); };
  hit.cell = cell;
  if (s.selected_row >= r0 && s.selected_row < r0 + nr) hit.selected_y = cellMin(s.selected_row, c0).y + cell / 2;

  // Cells: the window of the texture's region, magnified without blur. A texture of another region
  // (shown while its successor is coloured) is drawn where it lies, clipped to the window.
  const HeatmapTextures::Shown shown = in_view ? textures.texture(s, r0, nr, c0, nc, p1.x - p0.x, p1.y - p0.y)
                                               : HeatmapTextures::Shown{};
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
        texts.push_back(s.blank && s.blank(i, j) ? std::string() : label(m(i, j)));
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
      rowIndices(row.data(), row.size(), s.look.range, s.look.scale, s.look.colormap == Colormap::Coolwarm,
                 index.data());
      for (int j = c0; j < c0 + nc; ++j, ++k) {
        const float v = row[static_cast<std::size_t>(j)];
        const ImVec2 ts = small->CalcTextSizeA(fs, FLT_MAX, 0, texts[k].c_str());
        const Rgb bg = isMasked(v) || zeroOffLogScale(v, s.look.range, s.look.scale)
                           ? masked
                           : table[index[static_cast<std::size_t>(j)]];
        const ImVec2 c = cellMin(i, j);
        draw->AddText(small, fs, ImVec2(c.x + cell / 2 - ts.x / 2, c.y + cell / 2 - ts.y / 2),
                      toImColor(contrastingText(bg)), texts[k].c_str());
      }
    }
  }

  // The thinned names drawn, each ticked; the selected row's and key's always (a lesson's text
  // names them) and the caller's places, their thinned neighbours giving way.
  const std::vector<int> pinned_rows = pinnedAxisNames(s.selected_row, s.named_rows, row_step);
  const std::vector<int> pinned_cols = pinnedAxisNames(s.selected_col, s.named_cols, col_step);
  const auto labelled = [ruler](int i, int first, bool token, int step, const std::vector<int>& pinned) {
    return pinnedAxisNamed(i, pinned, step,
                           ruler ? axisNamed(tokenPosition(token ? 0 : -1, i), i, step) : (i - first) % step == 0);
  };
  nlohmann::json named_rows = nlohmann::json::array(), named_cols = nlohmann::json::array();
  const float tick = 3;  // the names stand 4 px from the cells, at any text size
  for (int i = r0; i < r0 + nr && s.row_labels && !s.compact; ++i) {
    if (!labelled(i, r0, s.token_rows, row_step, pinned_rows)) continue;
    const std::string t = fitAxisName(small, fs, *s.row_labels, i, s.token_rows, row_numbers, left - 4);
    const ImVec2 ts = small->CalcTextSizeA(fs, FLT_MAX, 0, t.c_str());
    const float y = cellMin(i, c0).y + cell / 2;
    const ImU32 colour = i == s.selected_row ? th.selection : th.text_dim;
    if (row_step > 1) draw->AddLine(ImVec2(p0.x - tick, y), ImVec2(p0.x, y), colour);
    draw->AddText(small, fs, ImVec2(p0.x - 4 - ts.x, y - ts.y / 2), colour, t.c_str());
    named_rows.push_back({{"index", i}, {"text", t}});
  }
  for (int j = c0; j < c0 + nc && s.col_labels && !s.compact; ++j) {
    if (!labelled(j, c0, s.token_cols, col_step, pinned_cols)) continue;
    const float x = cellMin(r0, j).x + cell / 2;
    const ImU32 colour = j == s.selected_col ? th.selection : th.text_dim;
    const std::string name = axisName((*s.col_labels)[j], tokenPosition(s.token_cols ? 0 : -1, j), col_numbers);
    if (col_step > 1) draw->AddLine(ImVec2(x, p0.y - tick), ImVec2(x, p0.y), colour);
    if (vertical && !keyLabelStaysAcross(name)) {
      const std::string t = fitAxisName(small, fs, *s.col_labels, j, s.token_cols, col_numbers, top_band - 6);
      addTextVertical(draw, small, fs, ImVec2(x - fs / 2, p0.y - 4), colour, t);
      named_cols.push_back({{"index", j}, {"text", t}});
    } else {
      const ImVec2 ts = small->CalcTextSizeA(fs, FLT_MAX, 0, name.c_str());
      draw->AddText(small, fs, ImVec2(x - ts.x / 2, p0.y - ts.y - 3), colour, name.c_str());
      named_cols.push_back({{"index", j}, {"text", name}});
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
      draw->AddRect(ImVec2(c.x + 1, c.y + 1), ImVec2(c.x + cell - 1, c.y + cell - 1), line, 0, 0,
                    std::max(1.0f, px(2)));
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
    if (ImGui::IsMouseReleased(ImGuiMouseButton_Right) &&
        io.MouseDragMaxDistanceSqr[ImGuiMouseButton_Right] < px(4) * px(4))
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
  // Colorbar with its range, and the legend: beside the cells, or below them.
  ImVec2 legend_min, legend_max;  // where the legend's text went (none: legend_max.x = 0)
  bool legend_cut = false;
  float content_bottom = p1.y;  // the lowest thing the map drew
  nlohmann::json colorbar_dump;
  const auto width = [&](const std::string& t) { return small->CalcTextSizeA(fs, FLT_MAX, 0, t.c_str()).x; };
  // The legend's text on the range labels' line (from `cells_x`, at `ly`), or on lines of its own
  // there (`own_line`).
  const LegendText legend = legendText(s.look.legend);  // a masked-grey square, then the text?
  const auto drawLegend = [&](float cells_x, float ly, bool own_line) {
    float lx = cells_x;
    const std::string& whole = legend.text;
    const float swatch = legend.swatch ? fs + 2 : 0;
    // Within the tile and the free room right of it (legend_room): a trained model's 2 × 2 weights
    // wrote "top: the largest below row 1 (row 1 is 1)" over the next card's. On its own line
    // below the range labels it is broken between its parts where the caller left room for more
    // lines (Compare's "blue: B < A · red: B > A" was cut to "blue: B < …"), and starts at the
    // tile's edge, under the row labels, where it would be cut from the cells'. Cut with "…",
    // whole on hover.
    const float right = origin.x + size.x + std::max(0.0f, s.legend_room);
    const auto linesFrom = [&](float x, int most) {
      return heatmapLegendLines(whole, right - x - swatch, own_line ? most : 1, s.text_scale);
    };
    // Whether the lines hold the whole legend, none cut with "…": their text and the legend's
    // compared without spaces and "·" (a line may break between two parts or at a space within one).
    const auto letters = [](const std::string& text) {
      std::string out;
      for (std::size_t i = 0; i < text.size(); ++i)
        if (text.compare(i, 2, "·") == 0)
          ++i;
        else if (text[i] != ' ')
          out += text[i];
      return out;
    };
    const auto isWhole = [&](const std::vector<std::string>& lines) {
      std::string text;
      for (const std::string& line : lines) text += line;
      return letters(text) == letters(whole);
    };
    // The first whole of: one line from the cells' edge, one from the tile's, then the lines the
    // caller left room for (heatmapLegendLines from the tile's edge, as Compare reserves them) from
    // each — no more of them from the cells' edge than from the tile's (narrower, it could break
    // into one more line than the row has room for: "tokens" had hung below B − A's tile); else
    // the last, cut. Between the range labels, the one line it was placed on.
    const std::size_t reserved = own_line ? linesFrom(origin.x, s.legend_lines).size() : 1;
    std::vector<std::string> lines;
    for (const auto& [x, most] :
         {std::pair{cells_x, 1}, {origin.x, 1}, {cells_x, s.legend_lines}, {origin.x, s.legend_lines}}) {
      lx = x, lines = linesFrom(x, most);
      if (!own_line || (isWhole(lines) && lines.size() <= reserved)) break;
    }
    if (legend.swatch) lx = drawMaskedSwatch(draw, lx, ly, fs);
    legend_min = ImVec2(lx, ly), legend_max = ImVec2(lx, ly);
    for (const std::string& line : lines) {
      draw->AddText(small, fs, ImVec2(lx, legend_max.y), th.text_dim, line.c_str());
      legend_max = ImVec2(std::max(legend_max.x, lx + width(line)),
                          legend_max.y + fs + (&line == &lines.back() ? 0 : 2));
    }
    content_bottom = std::max(content_bottom, legend_max.y);
    legend_cut = !isWhole(lines);
    if (legend_cut && ImGui::IsWindowHovered() && ImGui::IsMouseHoveringRect(legend_min, ImVec2(right, legend_max.y)))
      ImGui::SetTooltip("%s", whole.c_str());
  };
  if (beside) {
    // As tall as the cells, or as the band's labels and legend where the cells are shorter (a
    // grid reserves that height: Margins::beside_cells).
    const float bar_x = p1.x + besideBarLeft(), bar_w = besideBarWidth();
    const float bar_h = std::max(p1.y - p0.y, band.least_height);
    drawColourRamp(draw, s.look, ImVec2(bar_x, p0.y), ImVec2(bar_w, bar_h), true);
    const float lx = p1.x + besideLabelsLeft();
    auto [lo_text, hi_text] = barEnds(s.look);
    // A map of one value says it once, in the middle; a range centred on 0 keeps its ends and its 0
    // (B − A's "±0.289" had stood mid-bar, where the colour is 0, with no tick labelled).
    const std::string once = oneValued(s.look) ? oneValueText(s.look, lo_text, hi_text) : "";
    if (!once.empty()) {
      draw->AddText(small, fs, ImVec2(lx, p0.y + (bar_h - fs) / 2), th.text_dim, once.c_str());
      lo_text.clear();
      hi_text.clear();
    }
    const float lo_y = p0.y + bar_h - fs;
    draw->AddText(small, fs, ImVec2(lx, p0.y), th.text_dim, hi_text.c_str());
    draw->AddText(small, fs, ImVec2(lx, lo_y), th.text_dim, lo_text.c_str());
    content_bottom = std::max(content_bottom, lo_y + fs);
    float labels_top = p0.y + fs + px(4);  // below the top label, and the legend
    if (!s.look.legend.empty() && !s.legend_below) {  // under the top label, wrapped to the column and the
                                                      // free room right of the tile
      float x = lx;
      const float y = p0.y + fs + px(6);
      if (legend.swatch) x = drawMaskedSwatch(draw, x, y, fs);
      const float wrap = origin.x + size.x + std::max(0.0f, s.legend_room) - x;
      const ImVec2 ls = small->CalcTextSizeA(fs, FLT_MAX, wrap, legend.text.c_str());
      draw->AddText(small, fs, ImVec2(x, y), th.text_dim, legend.text.c_str(), nullptr, wrap);
      legend_min = ImVec2(x, y), legend_max = ImVec2(x + ls.x, y + ls.y);
      content_bottom = std::max(content_bottom, legend_max.y);
      labels_top = legend_max.y + px(4);
    }
    // Ticks: a mark each; a label where it clears the ends, the legend and the label above it.
    nlohmann::json ticks_dump = nlohmann::json::array();
    if (s.look.range_text[0].empty()) {
      float free_below = lo_y - px(4);
      for (const ColorbarTick& t : colorbarTicks(s.look.range, s.look.scale)) {
        const float y = p0.y + bar_h - t.at * bar_h;
        // No mark beside the legend's lines: its wrapped "1)" beside the 0.4 mark read as that tick's label.
        const bool by_legend = legend_max.x > 0 && y >= legend_min.y - px(2) && y <= legend_max.y + px(2);
        if (!by_legend) draw->AddLine(ImVec2(bar_x + bar_w, y), ImVec2(bar_x + bar_w + px(3), y), th.text_dim);
        const bool labelled = once.empty() && y + fs / 2 <= free_below && y - fs / 2 >= labels_top;
        if (labelled) {
          draw->AddText(small, fs, ImVec2(lx, y - fs / 2), th.text_dim, t.label.c_str());
          free_below = y - fs / 2 - px(4);
        }
        ticks_dump.push_back({{"value", t.value}, {"y", y}, {"label", labelled ? t.label : ""}});
      }
    }
    // … or below the cells and the bar, on lines of their own from the tile's edge (Compare: the room a
    // bar below would take goes to the cells; B − A's legend, in its band, would take more than a bar).
    if (!s.look.legend.empty() && s.legend_below) drawLegend(p0.x, p0.y + bar_h + px(6), true);
    colorbar_dump = {{"beside", true}, {"x0", bar_x},   {"y0", p0.y},   {"width", bar_w},     {"height", bar_h},
                     {"lo", lo_text},  {"hi", hi_text}, {"once", once}, {"ticks", ticks_dump}};
  } else {
    const float bar_y = p1.y + px(6);  // keep in step with heatmapColorbarHeight
    const float bar_w = std::max(p1.x - p0.x, std::min(size.x - left, px(120)));
    drawColourRamp(draw, s.look, ImVec2(p0.x, bar_y), ImVec2(bar_w, px(8)), false);
    auto [lo_text, hi_text] = barEnds(s.look);
    // Words at the ends ("dropped 0", "kept ×1.11") that would run into each other on a narrow bar
    // (a mask among six maps a head) keep their values only: "0", "×1.11".
    if (width(lo_text) + width(hi_text) + px(6) > bar_w)
      for (std::string* end : {&lo_text, &hi_text}) end->erase(0, end->find_last_of(' ') + 1);
    // A map of one value says it once, in the middle (its bar one colour); so do numbers that would
    // still overlap (a one-cell-wide bar, or a 39-token map's 118-px bar, whose ends had read
    // "0.0140.392"): "±x", or the range "lo – hi", centred on the bar within the tile.
    const float room_from = origin.x, room_to = origin.x + size.x + std::max(0.0f, s.legend_room);
    const bool crowded = width(lo_text) + width(hi_text) + px(6) > bar_w;
    std::string once = oneValued(s.look) || crowded ? oneValueText(s.look, lo_text, hi_text) : "";
    // (A row scale's ends are words, "row min", cut to "min": no range to say.)
    if (once.empty() && crowded && s.look.range_text[0].empty() && s.look.scale != ColourScale::Row) {
      once = lo_text + " – " + hi_text;
      if (width(once) > room_to - room_from) once = fitText(small, fs, lo_text + "–" + hi_text, room_to - room_from);
    }
    const bool said_once = !once.empty();
    float once_from = 0, once_to = 0;  // where it is drawn
    if (said_once) {
      const float w = width(once);
      once_from = std::max(room_from, std::min(p0.x + (bar_w - w) / 2, room_to - w)), once_to = once_from + w;
      draw->AddText(small, fs, ImVec2(once_from, bar_y + px(10)), th.text_dim, once.c_str());
      lo_text.clear();
      hi_text.clear();
    }
    content_bottom = bar_y + px(10) + fs;  // the colorbar's labels (a legend below them: its line too)
    const char* lo = lo_text.c_str();
    const char* hi = hi_text.c_str();
    const ImVec2 hs = small->CalcTextSizeA(fs, FLT_MAX, 0, hi);
    const float lo_w = width(lo_text);
    draw->AddText(small, fs, ImVec2(p0.x, bar_y + px(10)), th.text_dim, lo);
    draw->AddText(small, fs, ImVec2(p0.x + bar_w - hs.x, bar_y + px(10)), th.text_dim, hi);
    // The legend: between the range labels, or below them when it does not fit (placed first: the
    // ticks' labels go where it is not).
    float legend_from = FLT_MAX, legend_to = -FLT_MAX;  // its extent on the range labels' line, if there
    float lx = p0.x, ly = bar_y + px(10);
    if (!s.look.legend.empty()) {
      const float lw = small->CalcTextSizeA(fs, FLT_MAX, 0, legend.text.c_str()).x + (legend.swatch ? fs + 2 : 0);
      lx = p0.x + (bar_w - lw) / 2;
      // Below as well where the value is said once mid-bar (the two were drawn over each other).
      if (said_once || s.legend_below || !legendRoomBetween(legend, fs, lo_w, hs.x).fits(bar_w)) {
        lx = p0.x;
        ly += fs + 2;
        content_bottom = std::max(content_bottom, ly + fs);
      } else {
        legend_from = lx - px(6), legend_to = lx + lw + px(6);
      }
    }
    // Ticks: a mark each; a label where it clears the ends, the label before it and the legend on
    // that line. (Every label was dropped beside any legend: the log scale's lesson step, whose
    // legend is "exactly 0: below a log scale", showed 0.000204 and 1 and no decade between.)
    // Masks and words at the ends have none.
    nlohmann::json ticks_dump = nlohmann::json::array();
    if (s.look.range_text[0].empty()) {
      float free_from = p0.x + lo_w + px(6);
      for (const ColorbarTick& t : colorbarTicks(s.look.range, s.look.scale)) {
        const float x = p0.x + t.at * bar_w;
        // No mark into the words on the labels' line: the legend's (it crossed "row 1" of its legend at
        // 100 %) and the ends' (over "0.648" it read as an accent).
        const bool mark = (x < legend_from || x > legend_to) && x > p0.x + lo_w + px(1) &&
                          (hi_text.empty() || x < p0.x + bar_w - hs.x - px(1)) &&
                          (!said_once || x < once_from - px(1) || x > once_to + px(1));
        if (mark) draw->AddLine(ImVec2(x, bar_y + px(8)), ImVec2(x, bar_y + px(11)), th.text_dim);
        const float tw = small->CalcTextSizeA(fs, FLT_MAX, 0, t.label.c_str()).x;
        const bool labelled = !said_once && x - tw / 2 >= free_from && x + tw / 2 <= p0.x + bar_w - hs.x - px(6) &&
                              (x + tw / 2 <= legend_from || x - tw / 2 >= legend_to);
        if (labelled) {
          draw->AddText(small, fs, ImVec2(x - tw / 2, bar_y + px(10)), th.text_dim, t.label.c_str());
          free_from = x + tw / 2 + px(6);
        }
        ticks_dump.push_back({{"value", t.value}, {"x", x}, {"label", labelled ? t.label : ""}, {"mark", mark}});
      }
    }
    if (!s.look.legend.empty()) drawLegend(lx, ly, ly > bar_y + px(10));

    // Where the ends' labels run: lo from x0 to lo_to, hi from hi_from to the bar's end.
    colorbar_dump = {{"beside", false},
                     {"x0", p0.x},
                     {"y0", bar_y},
                     {"width", bar_w},
                     {"lo", lo_text},
                     {"hi", hi_text},
                     {"once", once},
                     {"ticks", ticks_dump},
                     {"lo_to", p0.x + lo_w},
                     {"hi_from", p0.x + bar_w - hs.x},
                     {"once_from", once_from},
                     {"once_to", once_to}};
  }
  if (s.dimmed && in_view) {  // a lesson step is about other maps: this one recedes, still legible
    ImVec4 bg = ImGui::GetStyleColorVec4(ImGuiCol_WindowBg);
    bg.w = 0.62f;
    draw->AddRectFilled(origin, ImVec2(origin.x + size.x, origin.y + size.y), ImGui::GetColorU32(bg));
    if (legend_max.x > 0)  // a legend's line may run on beyond the tile
      draw->AddRectFilled(legend_min, legend_max, ImGui::GetColorU32(bg));
  }

  nlohmann::json entry = s.dump;
  entry["id"] = s.id;
  entry["dimmed"] = s.dimmed;
  entry["title"] = s.title;
  entry["cells"] = rectJson(p0, p1);
  entry["tile"] = rectJson(origin, ImVec2(origin.x + size.x, origin.y + size.y));
  entry["legend"] = nullptr;
  if (legend_max.x > 0) {
    entry["legend"] = rectJson(legend_min, legend_max);
    entry["legend"]["cut"] = legend_cut;  // tests: a legend with room is whole
    entry["legend"]["text"] = s.look.legend;
  }
  // What the map drew — title to colorbar labels, and a legend's line that runs on right of or
  // below the tile: a figure's crop (no blank below, no legend cut).
  entry["content"] = rectJson(origin, ImVec2(std::max(origin.x + size.x, legend_max.x), content_bottom));
  entry["rows"] = rows;
  entry["cols"] = cols;
  entry["window"] = {{"row0", r0}, {"rows", nr}, {"col0", c0}, {"cols", nc}};
  entry["cell"] = cell;
  entry["cell_font_px"] = fs;  // the numbers' size (a lesson step may fit them a little smaller)
  entry["range"] = {s.look.range.lo, s.look.range.hi};
  entry["colormap"] = colormapId(s.look.colormap);
  entry["outlined"] = outlined;  // cells outlined as just changed, in this frame
  entry["scale"] = colourScaleId(s.look.scale == ColourScale::Log && !logApplies(s.look.range) ? ColourScale::Linear
                                                                                               : s.look.scale);
  entry["positive"] = s.look.range.positive;
  entry["colorbar"] = std::move(colorbar_dump);
  entry["in_view"] = in_view;  // false: scrolled out of the grid's window; true: at least partly visible
  // The whole map — title, labels, cells, colorbar and a legend's line below it — within the
  // window's visible area (half a pixel for rounding): nothing of it needs scrolling.
  entry["wholly_in_view"] = in_view && origin.x >= visible_min.x - 0.5f && origin.y >= visible_min.y - 0.5f &&
                            origin.x + size.x <= visible_max.x + 0.5f &&
                            std::max(origin.y + size.y, content_bottom) <= visible_max.y + 0.5f;
  entry["values_shown"] = values_shown;
  // The axes' names as drawn (thinned: every `step`-th, with its position), and the steps.
  entry["axis_names"] = {{"rows", std::move(named_rows)},
                         {"cols", std::move(named_cols)},
                         {"row_step", row_step},
                         {"col_step", col_step}};
  if (values_shown) entry["label_format"] = s.look.cell_text ? "custom" : cellFormatId(format);
  layout().heatmap(std::move(entry));

  ImGui::SetCursorScreenPos(origin);
  ImGui::Dummy(size);
  return hit;
}

}  // namespace attnscope
