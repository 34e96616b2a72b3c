// Vector figures of one heatmap, for slides and print: SVG and PDF drawn with cairo (docs/DESIGN.md
// §3.6). Cells are rectangles (for maps too large for that, one embedded image of a pixel per cell);
// the title, the token labels, the cell numbers and the colorbar's range are real text (selectable
// in a PDF, <text> elements in an SVG). Light colours, the same
// colormaps (display/colormap.h) and the same cell label policy as the app's heatmaps
// (display/number_text.h). Headless: it knows nothing of the window; the app and attnscope-cli
// hand it the map and its labels.
#pragma once
#include <array>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "display/colormap.h"
#include "display/map_look.h"
#include "engine/stages.h"

namespace attnscope {

// What a file name asks for, by its extension (case-insensitive).
enum class FigureFormat { Png, Svg, Pdf };
// ".png", ".svg", ".pdf" → true and *out; anything else (no extension included) → false.
bool figureFormatOf(const std::string& path, FigureFormat* out);
bool isVectorFigurePath(const std::string& path);  // .svg or .pdf

// One map and everything drawn around it.
struct FigureSpec {
  StageMap values;                      // the cells (a view: its sources must outlive the call)
  std::vector<std::string> row_labels;  // one per row (query tokens), or none
  std::vector<std::string> col_labels;  // one per column (key tokens, d0, d1, …), or none
  int first_row_token = -1;             // the first row's token's position in the text; −1: the rows are
  int first_col_token = -1;             // not tokens (a thinned token's name starts with its position)
  std::string title;                    // above the map, e.g. "weights (softmax)  6×6"
  MapLook look;                         // the cells' colours, labels and legend, as the app draws them
  std::string caption;                  // a small line under everything (step, head, seed), or none
  std::shared_ptr<const Matrix> owned;  // the cells, when `values` views a copy made for the figure (a zoom)
};

// Sizes in points (1/72 inch). A map's cells are as wide as its four-decimal labels need (within
// min_cell … max_cell) unless the map would pass max_extent; its numbers follow the app's policy:
// the first cell format that fits every cell, or none.
struct FigureOptions {
  double font_size = 10;         // cell numbers and token labels
  double title_size = 13;        // the title
  double caption_size = 8.5;     // the legend and the caption lines
  double min_cell = 24;          // cells never smaller than this …
  double max_cell = 64;          // … nor larger, unless the map must shrink to fit max_extent
  double max_extent = 640;       // the cells of a large map fit this many points a side
  double min_shape_cell = 2;     // smaller cells (maps over 320 tokens) are one image, a pixel per cell
  double max_label_width = 130;  // token labels longer than this are shortened with "…"
  double margin = 10;            // white space around the figure
  std::string font_file = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";  // the app's font (fonts-dejavu-core)
  std::string font = "DejaVu Sans";  // the SVG's font-family first; through fontconfig without font_file
  bool cell_values = true;           // numbers in the cells where the policy allows them
  // The whole figure this many times larger: the app's text size (View › Text size). As a PNG of one
  // map is laid out as at 100 % and rendered that much larger (docs/DESIGN.md §3), so is the figure:
  // the same figure, its page, text and cells k× as many points.
  double scale = 1;
};

// Attention as lines between tokens (the app's Lines view): queries on the left, keys on the
// right, one straight line per entry, in its colour at its opacity and width; a legend swatch per head.
struct LinesFigureSpec {
  struct Line {
    int i = 0, j = 0;  // query row, key row
    float alpha = 1;   // 0 … 1
    float width = 1;   // in px at 1× (drawn as that many × 0.75 pt)
    float offset = 0;  // vertical shift of both ends within the row, as a fraction of the row
    Rgb colour{0, 0, 0};
  };
  std::vector<std::string> tokens;  // queries and keys alike
  std::vector<Line> lines;
  std::vector<std::pair<std::string, Rgb>> heads;  // "head 1" and its colour, in the legend
  std::string title, legend, caption;
};
// Writes the lines figure to `path`, SVG or PDF by its extension: rows 24 pt apart, closer for long
// inputs (the whole figure at most ~720 pt tall), labels thinned to every n-th when they would touch.
std::string writeLinesFigure(const LinesFigureSpec& spec, const std::string& path, const FigureOptions& options = {});

// Writes the figure to `path` (atomically), SVG or PDF by its extension. Returns "" or one sentence
// saying why not (an unknown extension, a write failure, cairo's error).
std::string writeVectorFigure(const FigureSpec& spec, const std::string& path, const FigureOptions& options = {});

}  // namespace attnscope
