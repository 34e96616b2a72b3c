// One heatmap as an SVG or PDF figure, drawn with cairo (docs/DESIGN.md §3.6).
//
// The layout is worked out once, in points, with cairo's own text metrics (unhinted, so the
// measuring context and the page agree), then painted. In a PDF cairo draws everything, the text
// with its toy font API (DejaVu Sans, embedded as a subset with its Unicode map: pdftotext reads
// it). Cairo's SVG surface would draw text as glyph outlines, which no editor or search can read as
// text, so in an SVG cairo draws the shapes — cells, grid, colorbar, swatch — and the same text
// items, at the same positions, become <text> elements appended to cairo's document.
#include "display/vector_figure.h"

#include <cairo-ft.h>
#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <cairo.h>
#include <ft2build.h>
#include FT_FREETYPE_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>

#include "display/number_text.h"
#include "engine/errors.h"
#include "formats/atomic_file.h"
#include "formats/utf8.h"
#include "formats/workspace_file.h"

namespace attnscope {

bool figureFormatOf(const std::string& path, FigureFormat* out) {
  const std::size_t slash = path.find_last_of('/');
  const std::size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return false;
  std::string ext = path.substr(dot + 1);
  for (char& c : ext) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  if (ext == "png")
    *out = FigureFormat::Png;
  else if (ext == "svg")
    *out = FigureFormat::Svg;
  else if (ext == "pdf")
    *out = FigureFormat::Pdf;
  else
    return false;
  return true;
}

bool isVectorFigurePath(const std::string& path) {
  FigureFormat f;
  return figureFormatOf(path, &f) && f != FigureFormat::Png;
}

namespace {

// The light theme of the app (app/shell/theme.cpp): figures are for slides and paper.
constexpr Rgb kText{13, 13, 20};
constexpr Rgb kTextDim{70, 70, 80};
constexpr Rgb kMasked{150, 150, 156};
constexpr Rgb kGridLine{255, 255, 255};

// Valid UTF-8 without control characters or noncharacters: cairo refuses invalid strings and the 66
// noncharacters (U+FDD0–U+FDEF, U+xxFFFE, U+xxFFFF: its UNICODE_VALID), XML refuses controls and
// U+FFFE/U+FFFF. Each becomes U+FFFD (a control, a space), so a token's name never fails a figure.
std::string cleanText(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t at = i;
    const std::uint32_t cp = nextCodePoint(s, &i);
    if (cp == kNotUtf8 || isNoncharacter(cp))
      out += "\xEF\xBF\xBD";  // U+FFFD
    else if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp < 0xA0))
      out += ' ';
    else
      out.append(s, at, i - at);
  }
  return out;
}

std::string xmlEscaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// A coordinate in the SVG: three decimals, no trailing zeros.
std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  std::string s = buf;
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

enum class Anchor { Start, Middle, End };

// The font file as a cairo face, loaded once per process and kept (null if it cannot be read);
// the caller owns one reference.
// A face from the file itself, as the app loads its fonts, rather than cairo's toy API: the same
// glyphs on every machine, and no fontconfig, whose pattern cache leaks a few hundred bytes a
// process (LeakSanitizer).
cairo_font_face_t* fileFace(const std::string& path) {
  static std::mutex mutex;
  static std::string loaded_path;
  static cairo_font_face_t* face = nullptr;
  static FT_Library library = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  if (face && loaded_path == path) return cairo_font_face_reference(face);
  if (!library && FT_Init_FreeType(&library) != 0) return nullptr;
  FT_Face ft = nullptr;
  if (path.empty() || FT_New_Face(library, path.c_str(), 0, &ft) != 0) return nullptr;
  cairo_font_face_t* created = cairo_ft_font_face_create_for_ft_face(ft, 0);
  static const cairo_user_data_key_t key{};
  if (cairo_font_face_set_user_data(created, &key, ft, [](void* f) { FT_Done_Face(static_cast<FT_Face>(f)); }) !=
      CAIRO_STATUS_SUCCESS) {
    cairo_font_face_destroy(created);
    FT_Done_Face(ft);
    return nullptr;
  }
  if (face) cairo_font_face_destroy(face);  // another file asked for: the old face goes when cairo is done
  face = created;
  loaded_path = path;
  return cairo_font_face_reference(face);
}

// Text measured and drawn with one font face at unhinted metrics; in an SVG, text becomes elements.
class Painter {
 public:
  Painter(cairo_t* cr, const FigureOptions& o, std::string* svg_text) : cr_(cr), svg_text_(svg_text), k_(o.scale) {
    if (cairo_font_face_t* face = fileFace(o.font_file)) {
      cairo_set_font_face(cr_, face);  // which keeps its own reference
      cairo_font_face_destroy(face);
    } else {  // no file: the family through fontconfig
      cairo_select_font_face(cr_, o.font.c_str(), CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    }
    cairo_font_options_t* f = cairo_font_options_create();
    cairo_font_options_set_hint_metrics(f, CAIRO_HINT_METRICS_OFF);
    cairo_font_options_set_hint_style(f, CAIRO_HINT_STYLE_NONE);
    cairo_set_font_options(cr_, f);
    cairo_font_options_destroy(f);
  }

  double width(const std::string& s, double size) {
    cairo_set_font_size(cr_, size);
    cairo_text_extents_t e;
    cairo_text_extents(cr_, s.c_str(), &e);
    return e.x_advance;
  }
  // Height of a capital or a digit: text is centred on it.
  double capHeight(double size) {
    cairo_set_font_size(cr_, size);
    cairo_text_extents_t e;
    cairo_text_extents(cr_, "H", &e);
    return e.height;
  }
  // `s` shortened with "…" to at most `w` wide, cutting whole UTF-8 characters.
  std::string fit(const std::string& s, double size, double w) {
    if (width(s, size) <= w) return s;
    std::string t = s;
    while (!t.empty()) {
      while (!t.empty() && (static_cast<unsigned char>(t.back()) & 0xC0) == 0x80) t.pop_back();
      if (!t.empty()) t.pop_back();
      if (width(t + "…", size) <= w) return t + "…";
    }
    return "";
  }

  void rect(double x, double y, double w, double h, Rgb c) {
    cairo_set_source_rgb(cr_, c.r / 255.0, c.g / 255.0, c.b / 255.0);
    cairo_rectangle(cr_, x, y, w, h);
    cairo_fill(cr_);
  }
  void line(double x0, double y0, double x1, double y1, double w, Rgb c) {
    cairo_set_source_rgb(cr_, c.r / 255.0, c.g / 255.0, c.b / 255.0);
    cairo_set_line_width(cr_, w);
    cairo_move_to(cr_, x0, y0);
    cairo_line_to(cr_, x1, y1);
    cairo_stroke(cr_);
  }
  void line(double x0, double y0, double x1, double y1, double w, Rgb c, double alpha) {
    cairo_set_source_rgba(cr_, c.r / 255.0, c.g / 255.0, c.b / 255.0, alpha);
    cairo_set_line_width(cr_, w);
    cairo_set_line_cap(cr_, CAIRO_LINE_CAP_ROUND);
    cairo_move_to(cr_, x0, y0);
    cairo_line_to(cr_, x1, y1);
    cairo_stroke(cr_);
    cairo_set_line_cap(cr_, CAIRO_LINE_CAP_BUTT);
  }
  void dot(double x, double y, double r, Rgb c) {
    cairo_set_source_rgb(cr_, c.r / 255.0, c.g / 255.0, c.b / 255.0);
    cairo_arc(cr_, x, y, r, 0, 2 * M_PI);
    cairo_fill(cr_);
  }
  // `s` with its baseline at y, anchored at x; vertical text reads upwards, its start at (x, y).
  void text(const std::string& s, double x, double y, double size, Rgb c, Anchor a, bool vertical = false) {
    if (s.empty()) return;
    if (svg_text_) {
      const char* anchor = a == Anchor::Start ? "start" : a == Anchor::Middle ? "middle" : "end";
      // Outside cairo's drawing, in the page's coordinates: scaled here as cairo scales the shapes.
      x *= k_, y *= k_;
      *svg_text_ += "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" font-size=\"" + num(size * k_) + "\" fill=\"rgb(" +
                    std::to_string(c.r) + "," + std::to_string(c.g) + "," + std::to_string(c.b) + ")\"";
      if (a != Anchor::Start) *svg_text_ += std::string(" text-anchor=\"") + anchor + "\"";
      if (vertical) *svg_text_ += " transform=\"rotate(-90 " + num(x) + " " + num(y) + ")\"";
      *svg_text_ += ">" + xmlEscaped(s) + "</text>\n";
      return;
    }
    const double w = width(s, size);
    const double shift = a == Anchor::Start ? 0 : a == Anchor::Middle ? w / 2 : w;
    cairo_save(cr_);
    cairo_set_source_rgb(cr_, c.r / 255.0, c.g / 255.0, c.b / 255.0);
    cairo_translate(cr_, x, y);
    if (vertical) cairo_rotate(cr_, -M_PI / 2);
    cairo_move_to(cr_, -shift, 0);
    cairo_show_text(cr_, s.c_str());
    cairo_new_path(cr_);
    cairo_restore(cr_);
  }
  // rows × cols colours (row-major) as one image of a pixel per cell, scaled to `cell` points a
  // pixel without smoothing: the cells of a map too large for one shape each.
  void image(double x, double y, double cell, int rows, int cols, const std::vector<Rgb>& colours) {
    cairo_surface_t* img = cairo_image_surface_create(CAIRO_FORMAT_RGB24, cols, rows);
    cairo_surface_flush(img);
    unsigned char* data = cairo_image_surface_get_data(img);
    const int stride = cairo_image_surface_get_stride(img);
    for (int i = 0; data && i < rows; ++i) {
      auto* px = reinterpret_cast<std::uint32_t*>(data + static_cast<std::ptrdiff_t>(i) * stride);
      for (int j = 0; j < cols; ++j) {
        const Rgb c =
            colours[static_cast<std::size_t>(i) * static_cast<std::size_t>(cols) + static_cast<std::size_t>(j)];
        px[j] = std::uint32_t{c.r} << 16 | std::uint32_t{c.g} << 8 | c.b;
      }
    }
    cairo_surface_mark_dirty(img);
    cairo_save(cr_);
    cairo_translate(cr_, x, y);
    cairo_scale(cr_, cell, cell);
    cairo_set_source_surface(cr_, img, 0, 0);
    cairo_pattern_set_filter(cairo_get_source(cr_), CAIRO_FILTER_NEAREST);
    cairo_rectangle(cr_, 0, 0, cols, rows);
    cairo_fill(cr_);
    cairo_restore(cr_);
    cairo_surface_destroy(img);
  }
  // A left-to-right ramp through the colormap's 256 entries; one colour for a map of one value.
  void colorbar(double x, double y, double w, double h, const MapLook& look) {
    const Colormap map = look.colormap;
    if (oneValued(look)) {
      const Rgb one = colormapTable(map)[static_cast<std::size_t>(colormapIndex(look.range.lo, look.range))];
      cairo_set_source_rgb(cr_, one.r / 255.0, one.g / 255.0, one.b / 255.0);
      cairo_rectangle(cr_, x, y, w, h);
      cairo_fill(cr_);
      return;
    }
    cairo_pattern_t* ramp = cairo_pattern_create_linear(x, 0, x + w, 0);
    const auto& table = colormapTable(map);
    for (std::size_t k = 0; k < table.size(); ++k)
      cairo_pattern_add_color_stop_rgb(ramp, k / 255.0, table[k].r / 255.0, table[k].g / 255.0, table[k].b / 255.0);
    cairo_set_source(cr_, ramp);
    cairo_rectangle(cr_, x, y, w, h);
    cairo_fill(cr_);
    cairo_pattern_destroy(ramp);
  }

 private:
  cairo_t* cr_;
  std::string* svg_text_;  // null: cairo draws the text
  double k_;               // FigureOptions::scale: the page's points per layout point
};

bool isMasked(float v) { return std::isinf(v) && v < 0; }

// Everything's place, in points from the figure's top left corner.
struct Layout {
  int rows = 0, cols = 0;
  double cell = 0;
  bool values = false;                              // cell numbers shown
  std::vector<std::string> labels;                  // row-major, when shown
  std::vector<std::string> row_labels, col_labels;  // shortened to fit
  bool vertical_cols = false;                       // key labels read upwards
  int row_step = 1, col_step = 1;                   // every how many rows and columns a label
  double title_y = 0;                               // baseline
  double x0 = 0, y0 = 0;                            // the cells' top left corner
  double bar_y = 0, bar_w = 0, bar_h = 8;
  double range_y = 0;  // baseline of the colorbar's range text
  std::string lo_text, hi_text;
  std::vector<std::pair<double, std::string>> ticks;  // x of each inner tick, its label ("" where it would collide)
  bool legend_swatch = false;
  std::string legend;
  double legend_x = 0, legend_y = 0;  // baseline
  double caption_y = 0;
  double width = 0, height = 0;
};

Layout layOut(const FigureSpec& s, const FigureOptions& o, Painter& p) {
  Layout L;
  L.rows = static_cast<int>(s.values.rows());
  L.cols = static_cast<int>(s.values.cols());
  const double fs = o.font_size, cap = p.capHeight(fs), pad = fs * 0.8;  // room either side of a number
  auto value = [&](int i, int j) { return s.values(i, j); };
  auto label = [&](float v, CellFormat f) {
    return cleanText(s.look.cell_text ? s.look.cell_text(v) : cellLabel(v, f));
  };

  // Cells: as wide as the four-decimal labels need, within the bounds, and small enough for the
  // whole map to fit max_extent.
  const double upper = std::min(o.max_cell, o.max_extent / std::max(L.rows, L.cols));
  const bool may_label = o.cell_values && upper >= fs + 2;
  double need = 0;
  if (may_label)
    for (int i = 0; i < L.rows; ++i)
      for (int j = 0; j < L.cols; ++j)
        need = std::max(need, p.width(label(value(i, j), CellFormat::Decimals4), fs) + pad);
  L.cell = std::min(upper, std::max(o.min_cell, need));
  // The first format whose every label fits its cell, as on screen (a custom label has one format).
  if (may_label && L.cell >= fs + 2) {
    for (CellFormat f : cellFormats()) {
      L.labels.clear();
      L.values = true;
      for (int i = 0; i < L.rows && L.values; ++i)
        for (int j = 0; j < L.cols && L.values; ++j) {
          L.labels.push_back(label(value(i, j), f));
          L.values = p.width(L.labels.back(), fs) + pad <= L.cell;
        }
      if (L.values || s.look.cell_text) break;
    }
    if (!L.values) L.labels.clear();
  }

  // Token labels, shortened to max_label_width; keys across when each fits its column; thinned
  // names start with their positions (map_look.h).
  double row_w = 0, col_w = 0;
  for (const std::string& t : s.col_labels)
    col_w = std::max(col_w, p.width(p.fit(cleanText(t), fs, o.max_label_width), fs));
  L.vertical_cols = !s.col_labels.empty() && col_w + 6 > L.cell && L.cols > 1;
  // A token axis shows its numbers when thinned: on a ruler's steps (map_look.h).
  L.row_step = axisNameStep(fs + 1, L.cell, s.first_row_token >= 0);
  L.col_step = axisNameStep(L.vertical_cols ? fs + 1 : col_w + 6, L.cell, s.first_col_token >= 0);
  col_w = 0;
  for (std::size_t i = 0; i < s.row_labels.size(); ++i) {
    const std::string name = axisName(cleanText(s.row_labels[i]), tokenPosition(s.first_row_token, static_cast<int>(i)),
                                      L.row_step);
    L.row_labels.push_back(p.fit(name, fs, o.max_label_width));
    row_w = std::max(row_w, p.width(L.row_labels.back(), fs));
  }
  for (std::size_t j = 0; j < s.col_labels.size(); ++j) {
    const std::string name = axisName(cleanText(s.col_labels[j]), tokenPosition(s.first_col_token, static_cast<int>(j)),
                                      L.col_step);
    L.col_labels.push_back(p.fit(name, fs, o.max_label_width));
    col_w = std::max(col_w, p.width(L.col_labels.back(), fs));
  }
  const double left = L.row_labels.empty() ? 0 : row_w + 6;
  const double top_band = L.col_labels.empty() ? 4 : L.vertical_cols ? col_w + 8 : fs * 1.5;

  const std::string title = cleanText(s.title);
  const double title_h = title.empty() ? 0 : o.title_size * 1.5;
  L.title_y = o.margin + o.title_size;
  L.x0 = o.margin + left;
  L.y0 = o.margin + title_h + top_band;
  const double map_w = L.cell * L.cols, map_h = L.cell * L.rows;

  // Colorbar under the cells, its range (or words) at its ends, the legend between or below them.
  L.bar_y = L.y0 + map_h + 8;
  L.bar_w = std::max(map_w, 140.0);
  const std::array<std::string, 2> ends = colorbarEnds(s.look.range, s.look.scale,
                                                       s.look.colormap == Colormap::Coolwarm, s.look.range_text);
  L.lo_text = cleanText(ends[0]);
  L.hi_text = cleanText(ends[1]);
  const double lo_w = p.width(L.lo_text, fs), hi_w = p.width(L.hi_text, fs);
  L.bar_w = std::max(L.bar_w, lo_w + hi_w + 12);
  L.range_y = L.bar_y + L.bar_h + 4 + cap;
  // Inner ticks as the app draws them (linear: 1, 2, 5 × 10^k; log: every power of ten): a label
  // where it clears the ends and the label before it.
  if (s.look.range_text[0].empty()) {
    double free_from = L.x0 + lo_w + 6;
    for (const ColorbarTick& t : colorbarTicks(s.look.range, s.look.scale)) {
      const double x = L.x0 + t.at * L.bar_w, tw = p.width(t.label, fs);
      const bool labelled = x - tw / 2 >= free_from && x + tw / 2 <= L.x0 + L.bar_w - hi_w - 6;
      if (labelled) free_from = x + tw / 2 + 6;
      L.ticks.emplace_back(x, labelled ? cleanText(t.label) : "");
    }
  }
  double bottom = L.range_y + fs * 0.3;
  double right = std::max(L.x0 + map_w, L.x0 + L.bar_w);
  if (!title.empty()) right = std::max(right, o.margin + p.width(title, o.title_size));
  const std::string swatch = "▨";
  L.legend_swatch = s.look.legend.rfind(swatch, 0) == 0;
  L.legend = cleanText(L.legend_swatch ? s.look.legend.substr(swatch.size()) : s.look.legend);
  while (!L.legend.empty() && L.legend[0] == ' ') L.legend.erase(0, 1);
  if (!L.legend.empty()) {
    const double cs = o.caption_size;
    const double lw = p.width(L.legend, cs) + (L.legend_swatch ? cs + 3 : 0);
    L.legend_x = L.x0 + (L.bar_w - lw) / 2;
    L.legend_y = L.range_y;
    // Between the range's ends where it clears them and every tick's label (a trained model's
    // "top: the largest below row 1 (row 1 is 1)" was written over "0.4"), else below the range.
    bool clear = L.legend_x >= L.x0 + lo_w + 8 && L.legend_x + lw <= L.x0 + L.bar_w - hi_w - 8;
    for (const auto& [x, label] : L.ticks) {
      const double half = label.empty() ? 0 : p.width(label, fs) / 2 + 6;
      if (half > 0 && x + half > L.legend_x && x - half < L.legend_x + lw) clear = false;
    }
    if (!clear) {  // below the range
      L.legend_x = L.x0;
      L.legend_y = bottom + cs * 1.2;
      bottom = L.legend_y + cs * 0.3;
    }
    right = std::max(right, L.legend_x + lw);
  }
  const std::string caption = cleanText(s.caption);
  if (!caption.empty()) {
    L.caption_y = bottom + o.caption_size * 1.6;
    bottom = L.caption_y + o.caption_size * 0.3;
    right = std::max(right, o.margin + p.width(caption, o.caption_size));
  }
  L.width = std::ceil(right + o.margin);
  L.height = std::ceil(bottom + o.margin);
  return L;
}

void paint(const FigureSpec& s, const FigureOptions& o, const Layout& L, Painter& p) {
  const double fs = o.font_size, cap = p.capHeight(fs);
  p.rect(0, 0, L.width, L.height, Rgb{255, 255, 255});
  const std::string title = cleanText(s.title);
  p.text(title, o.margin, L.title_y, o.title_size, kText, Anchor::Start);

  // Cells, a row at a time; neighbours of one colour are one rectangle. Cells smaller than
  // min_shape_cell (maps of more than 320 tokens) are one image, a pixel per cell: a rectangle each
  // would make a 1024² map a 240 MB SVG that no slide program opens.
  std::vector<float> row(static_cast<std::size_t>(L.cols));
  std::vector<Rgb> colours(row.size());
  std::vector<std::uint8_t> index(row.size());
  const auto& table = colormapTable(s.look.colormap);
  const bool centred = s.look.colormap == Colormap::Coolwarm;
  const bool as_image = L.cell < o.min_shape_cell;
  std::vector<Rgb> pixels(as_image ? static_cast<std::size_t>(L.rows) * row.size() : 0);
  for (int i = 0; i < L.rows; ++i) {
    s.values.readRow(i, row.data());
    rowIndices(row.data(), row.size(), s.look.range, s.look.scale, centred, index.data());
    for (int j = 0; j < L.cols; ++j)
      colours[static_cast<std::size_t>(j)] = isMasked(row[j]) || zeroOffLogScale(row[j], s.look.range, s.look.scale)
                                                 ? kMasked
                                                 : table[index[static_cast<std::size_t>(j)]];
    if (as_image) {
      std::copy(colours.begin(), colours.end(), pixels.begin() + static_cast<std::ptrdiff_t>(i) * L.cols);
      continue;
    }
    for (int j = 0; j < L.cols;) {
      int k = j + 1;
      const Rgb c = colours[static_cast<std::size_t>(j)];
      while (k < L.cols && colours[static_cast<std::size_t>(k)].r == c.r &&
             colours[static_cast<std::size_t>(k)].g == c.g && colours[static_cast<std::size_t>(k)].b == c.b)
        ++k;
      p.rect(L.x0 + j * L.cell, L.y0 + i * L.cell, (k - j) * L.cell, L.cell, c);
      j = k;
    }
  }
  if (as_image) p.image(L.x0, L.y0, L.cell, L.rows, L.cols, pixels);
  const double map_w = L.cell * L.cols, map_h = L.cell * L.rows;
  if (L.cell >= 6) {  // the app's grid lines, in the page's colour
    const double w = std::min(1.0, L.cell * 0.04);
    for (int j = 1; j < L.cols; ++j) p.line(L.x0 + j * L.cell, L.y0, L.x0 + j * L.cell, L.y0 + map_h, w, kGridLine);
    for (int i = 1; i < L.rows; ++i) p.line(L.x0, L.y0 + i * L.cell, L.x0 + map_w, L.y0 + i * L.cell, w, kGridLine);
  }
  if (L.values) {
    std::size_t k = 0;
    for (int i = 0; i < L.rows; ++i) {
      s.values.readRow(i, row.data());
      rowIndices(row.data(), row.size(), s.look.range, s.look.scale, centred, index.data());
      for (int j = 0; j < L.cols; ++j, ++k) {
        const Rgb bg = isMasked(row[j]) || zeroOffLogScale(row[j], s.look.range, s.look.scale)
                           ? kMasked
                           : table[index[static_cast<std::size_t>(j)]];
        p.text(L.labels[k], L.x0 + (j + 0.5) * L.cell, L.y0 + (i + 0.5) * L.cell + cap / 2, fs, contrastingText(bg),
               Anchor::Middle);
      }
    }
  }

  // Queries on the left, keys on top; a thinned axis ticks the cells it names.
  for (int i = 0; i < L.rows && i < static_cast<int>(L.row_labels.size()); ++i) {
    if (!axisNamed(tokenPosition(s.first_row_token, i), i, L.row_step)) continue;
    const double y = L.y0 + (i + 0.5) * L.cell;
    if (L.row_step > 1) p.line(L.x0 - 3, y, L.x0, y, 0.6, kTextDim);
    p.text(L.row_labels[i], L.x0 - 5, y + cap / 2, fs, kTextDim, Anchor::End);
  }
  for (int j = 0; j < L.cols && j < static_cast<int>(L.col_labels.size()); ++j) {
    if (!axisNamed(tokenPosition(s.first_col_token, j), j, L.col_step)) continue;
    const double x = L.x0 + (j + 0.5) * L.cell;
    if (L.col_step > 1) p.line(x, L.y0 - 3, x, L.y0, 0.6, kTextDim);
    if (L.vertical_cols && !keyLabelStaysAcross(L.col_labels[j]))
      p.text(L.col_labels[j], x + cap / 2, L.y0 - 5, fs, kTextDim, Anchor::Start, true);
    else
      p.text(L.col_labels[j], x, L.y0 - 5, fs, kTextDim, Anchor::Middle);
  }

  p.colorbar(L.x0, L.bar_y, L.bar_w, L.bar_h, s.look);
  if (oneValued(s.look) && s.look.range_text[0].empty()) {  // its value said once, mid-bar
    p.text(L.hi_text, L.x0 + L.bar_w / 2, L.range_y, fs, kTextDim, Anchor::Middle);
  } else {
    p.text(L.lo_text, L.x0, L.range_y, fs, kTextDim, Anchor::Start);
    p.text(L.hi_text, L.x0 + L.bar_w, L.range_y, fs, kTextDim, Anchor::End);
  }
  for (const auto& [x, label] : L.ticks) {
    p.line(x, L.bar_y + L.bar_h, x, L.bar_y + L.bar_h + 3, 0.6, kTextDim);
    if (!label.empty()) p.text(label, x, L.range_y, fs, kTextDim, Anchor::Middle);
  }
  if (!L.legend.empty()) {
    const double cs = o.caption_size;
    double x = L.legend_x;
    if (L.legend_swatch) {
      p.rect(x, L.legend_y - p.capHeight(cs) - 0.5, cs, p.capHeight(cs) + 1, kMasked);
      x += cs + 3;
    }
    p.text(L.legend, x, L.legend_y, cs, kTextDim, Anchor::Start);
  }
  p.text(cleanText(s.caption), o.margin, L.caption_y, o.caption_size, kTextDim, Anchor::Start);
}

cairo_status_t appendTo(void* closure, const unsigned char* data, unsigned int length) {
  static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
  return CAIRO_STATUS_SUCCESS;
}

struct SurfaceDeleter {
  void operator()(cairo_surface_t* s) const { cairo_surface_destroy(s); }
};
struct ContextDeleter {
  void operator()(cairo_t* c) const { cairo_destroy(c); }
};
using Surface = std::unique_ptr<cairo_surface_t, SurfaceDeleter>;
using Context = std::unique_ptr<cairo_t, ContextDeleter>;

std::string cairoError(cairo_status_t status) {
  return std::string("cairo could not draw the figure: ") + cairo_status_to_string(status);
}

}  // namespace

namespace {

// Measures with `measure` on a recording surface (returning the page's size), then draws with
// `paint` on an SVG or PDF page, adds the SVG's text elements and title, and writes the file.
std::string writeFigure(const std::string& path, FigureFormat format, const std::string& title,
                        const FigureOptions& options, const std::function<std::pair<double, double>(Painter&)>& measure,
                        const std::function<void(Painter&)>& draw) {
  std::pair<double, double> size;
  {
    Surface scratch(cairo_recording_surface_create(CAIRO_CONTENT_COLOR, nullptr));
    Context cr(cairo_create(scratch.get()));
    Painter measuring(cr.get(), options, nullptr);
    size = measure(measuring);
    if (cairo_status(cr.get()) != CAIRO_STATUS_SUCCESS) return cairoError(cairo_status(cr.get()));
  }
  std::string data, text;
  if (!(options.scale >= 1 && options.scale <= 8)) return "the figure's scale must be between 1 and 8";
  {
    // Laid out at 1×, drawn k× larger (FigureOptions::scale).
    const double k = options.scale;
    Surface page(format == FigureFormat::Svg
                     ? cairo_svg_surface_create_for_stream(appendTo, &data, size.first * k, size.second * k)
                     : cairo_pdf_surface_create_for_stream(appendTo, &data, size.first * k, size.second * k));
    if (format == FigureFormat::Svg) {
      cairo_svg_surface_set_document_unit(page.get(), CAIRO_SVG_UNIT_PT);
    } else {
      cairo_pdf_surface_set_metadata(page.get(), CAIRO_PDF_METADATA_TITLE, cleanText(title).c_str());
      cairo_pdf_surface_set_metadata(page.get(), CAIRO_PDF_METADATA_CREATOR, "attnscope");
    }
    Context cr(cairo_create(page.get()));
    cairo_scale(cr.get(), k, k);
    Painter painter(cr.get(), options, format == FigureFormat::Svg ? &text : nullptr);
    draw(painter);
    if (cairo_status(cr.get()) != CAIRO_STATUS_SUCCESS) return cairoError(cairo_status(cr.get()));
    cr.reset();
    cairo_surface_finish(page.get());
    if (cairo_surface_status(page.get()) != CAIRO_STATUS_SUCCESS) return cairoError(cairo_surface_status(page.get()));
  }
  if (format == FigureFormat::Svg) {
    const std::size_t end = data.rfind("</svg>");
    if (end == std::string::npos) return "cairo wrote no SVG document";
    const std::string family = options.font + ", Verdana, sans-serif";
    data.insert(end, "<g font-family=\"" + xmlEscaped(family) + "\" xml:space=\"preserve\">\n" + text + "</g>\n");
    // The title for readers and search, as the SVG's first child.
    const std::size_t open = data.find("<svg");
    const std::size_t open_end = open == std::string::npos ? open : data.find('>', open);
    if (open_end != std::string::npos && !cleanText(title).empty())
      data.insert(open_end + 1, "\n<title>" + xmlEscaped(cleanText(title)) + "</title>");
  }
  try {
    writeFileAtomically(path, data);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

std::string writeLinesFigure(const LinesFigureSpec& spec, const std::string& path, const FigureOptions& o) {
  FigureFormat format;
  if (!figureFormatOf(path, &format) || format == FigureFormat::Png) return path + ": a vector figure is .svg or .pdf";
  const int T = static_cast<int>(spec.tokens.size());
  if (T == 0) return "no tokens: nothing to draw";
  for (const auto& l : spec.lines)
    if (l.i < 0 || l.i >= T || l.j < 0 || l.j >= T) return "a line joins a token the figure does not have";
  const double fs = o.font_size, cs = o.caption_size;
  const double pitch = std::clamp(720.0 / T, 0.5, 24.0);
  const int every = axisNameStep(fs + 2, pitch, true);  // thinned: numbered, on a ruler's steps (map_look.h)
  const double span = 320, gap = 8;
  double label_w = 0, top = 0, legend_y = 0, caption_y = 0, x0 = 0, width = 0, height = 0;
  std::vector<std::string> labels;
  auto measure = [&](Painter& p) {
    for (int i = 0; i < T; ++i)
      labels.push_back(
          p.fit(axisName(cleanText(spec.tokens[static_cast<std::size_t>(i)]), i, every), fs, o.max_label_width));
    for (const std::string& t : labels) label_w = std::max(label_w, p.width(t, fs));
    x0 = o.margin;
    const double title_h = spec.title.empty() ? 0 : o.title_size * 1.6;
    top = o.margin + title_h + fs * 1.8;  // the "queries" and "keys" headings above the first row
    const double rows_h = pitch * T;
    legend_y = top + rows_h + fs * 1.6;
    caption_y = legend_y + (spec.legend.empty() ? 0 : cs * 1.5) + (spec.caption.empty() ? 0 : cs * 1.5);
    double legend_w = 0;
    for (const auto& h : spec.heads) legend_w += cs + 3 + p.width(h.first, cs) + 10;
    width = std::max({2 * (label_w + gap) + span + 2 * o.margin, legend_w + 2 * o.margin,
                      p.width(cleanText(spec.title), o.title_size) + 2 * o.margin});
    height = caption_y + cs * 0.8 + o.margin;
    return std::make_pair(width, height);
  };
  auto draw = [&](Painter& p) {
    const double cap = p.capHeight(fs);
    p.rect(0, 0, width, height, Rgb{255, 255, 255});
    p.text(cleanText(spec.title), o.margin, o.margin + o.title_size, o.title_size, kText, Anchor::Start);
    const double xq = x0 + label_w, xl = xq + gap, xr = xl + span, xk = xr + gap;
    auto rowY = [&](double i) { return top + (i + 0.5) * pitch; };
    p.text("queries", xq, top - fs * 0.6, fs, kTextDim, Anchor::End);
    p.text("keys", xk, top - fs * 0.6, fs, kTextDim, Anchor::Start);
    for (const auto& l : spec.lines)
      p.line(xl, rowY(l.i + l.offset), xr, rowY(l.j + l.offset), l.width * 0.75, l.colour, l.alpha);
    for (int i = 0; i < T; ++i) {
      if (!axisNamed(i, i, every)) continue;
      p.text(labels[static_cast<std::size_t>(i)], xq - 4, rowY(i) + cap / 2, fs, kText, Anchor::End);
      p.text(labels[static_cast<std::size_t>(i)], xk + 4, rowY(i) + cap / 2, fs, kText, Anchor::Start);
    }
    if (pitch >= 4)
      for (int i = 0; i < T; ++i) {
        p.dot(xl, rowY(i), 1.2, kTextDim);
        p.dot(xr, rowY(i), 1.2, kTextDim);
      }
    double x = o.margin;
    const double y = legend_y;
    for (const auto& h : spec.heads) {
      p.rect(x, y - p.capHeight(cs) - 0.5, cs, p.capHeight(cs) + 1, h.second);
      x += cs + 3;
      p.text(h.first, x, y, cs, kTextDim, Anchor::Start);
      x += p.width(h.first, cs) + 10;
    }
    if (!spec.legend.empty()) p.text(cleanText(spec.legend), o.margin, y + cs * 1.5, cs, kTextDim, Anchor::Start);
    p.text(cleanText(spec.caption), o.margin, caption_y, cs, kTextDim, Anchor::Start);
  };
  return writeFigure(path, format, spec.title, o, measure, draw);
}

std::string writeVectorFigure(const FigureSpec& spec, const std::string& path, const FigureOptions& options) {
  FigureFormat format;
  if (!figureFormatOf(path, &format) || format == FigureFormat::Png) return path + ": a vector figure is .svg or .pdf";
  if (spec.values.rows() <= 0 || spec.values.cols() <= 0) return "the map is empty: nothing to draw";
  if (!spec.row_labels.empty() && static_cast<Eigen::Index>(spec.row_labels.size()) != spec.values.rows())
    return "the figure has " + std::to_string(spec.row_labels.size()) + " row labels for " +
           std::to_string(spec.values.rows()) + " rows";
  if (!spec.col_labels.empty() && static_cast<Eigen::Index>(spec.col_labels.size()) != spec.values.cols())
    return "the figure has " + std::to_string(spec.col_labels.size()) + " column labels for " +
           std::to_string(spec.values.cols()) + " columns";

  // Measure on a recording surface with the page's font settings, then draw on the page.
  Layout layout;
  return writeFigure(
      path, format, spec.title, options,
      [&](Painter& p) {
        layout = layOut(spec, options, p);
        return std::make_pair(layout.width, layout.height);
      },
      [&](Painter& p) { paint(spec, options, layout, p); });
}

}  // namespace attnscope
