// Colormaps and value ranges for heatmaps. Headless on purpose: the GUI tests compute the colour
// a cell must have from the same tables (assets/colormaps/*.csv) and the engine's values.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/stages.h"
#include "engine/tensor.h"

namespace attnscope {

enum class Colormap { Viridis, Cividis, Coolwarm };

struct Rgb {
  std::uint8_t r, g, b;
};

const char* colormapId(Colormap c);     // "viridis", the table's file name
const char* colormapTitle(Colormap c);  // "Viridis (default)", for menus
bool parseColormap(const std::string& id, Colormap* out);

// The 256-entry table of assets/colormaps/<id>.csv, loaded once. Throws InputError if missing.
const std::array<Rgb, 256>& colormapTable(Colormap c);

// One colour per head, the same wherever heads are told apart by colour — the Lines tab, its
// figures, the Learn tab's charts: Tableau's ten (they stay apart for the common colour blindnesses
// and on a projector; on the light theme's white the yellow and the grey are the faintest), by the
// head's place in the model counted layer by layer
// (layer 2's first of 2 heads is the third), then again. A colormap's samples did not: 12 heads
// were 12 greens, and the Learn tab's colours were not the Lines tab's. More than ten heads a
// layer (GPT-2's 12, 16, 20, 25) take Tableau 20, its darker ten first, by the head's place in its
// layer: one layer's heads stay apart up to 20 (with Tableau's ten heads 11 and 12 were heads 1 and
// 2's colours), and head 4 keeps its colour from layer to layer.
Rgb headColour(int layer, int head, int heads_per_layer);

// The range a map's colours span. Diverging maps are centred on 0: [−m, m] with m = max |v|.
struct ValueRange {
  float lo = 0, hi = 1;
  float positive = 0;  // the smallest value > 0 among them, where a log scale starts; 0: none
};
// Min and max (and the smallest positive value) over the finite values of m (−∞ cells are
// masked, not part of the range).
ValueRange finiteRange(const Matrix& m);
ValueRange finiteRange(const StageMap& m);  // a row at a time: derived stages are never held whole
// finiteRange of rows 1 … of m (of m whole when it has one row): a causal map's weights without
// row 0, whose one visible key always has weight 1 (a trained model's maps and thumbnails).
ValueRange finiteRangeBelowFirstRow(const StageMap& m);
ValueRange merge(ValueRange a, ValueRange b);
ValueRange centredOnZero(ValueRange r);

// Table index of v within r: round((v − lo)/(hi − lo)·255) (halves away from zero), clamped to
// 0 … 255 (+∞ → 255, NaN → 0); the middle entry if hi == lo.
int colormapIndex(float v, ValueRange r);
// colormapIndex of n values at once (vectorized: a GPT-2 snapshot colours 36 M cells).
void colormapIndices(const float* v, std::size_t n, ValueRange r, std::uint8_t* out);
Rgb colormapColor(Colormap c, float v, ValueRange r);
// An S × S map of indices drawn N × N (N ≤ S): out[i·N + j] is the largest index of the cells
// [i·S/N, (i+1)·S/N) × [j·S/N, (j+1)·S/N) (integer division: every cell in one block), so a
// one-cell peak keeps its colour however small the map is drawn. Indices keep the values' order,
// so it is the colour of the block's largest value.
void largestInBlocks(const std::uint8_t* index, int S, int N, std::uint8_t* out);

// How values map onto the colormap (docs/DESIGN.md §3.4 "Colour scales").
enum class ColourScale {
  Linear,  // the map's range, end to end
  Log,     // log10 over [positive, hi]: weights of ~1/T at T = 1024 spread over decades
  Row,     // each row over its own finite range: where each query looks, whatever its scale
};
struct ColourScaleInfo {
  ColourScale scale;
  const char* id;     // "log": the view's colour_scale
  const char* title;  // in menus
};
const std::array<ColourScaleInfo, 3>& colourScaleTable();
const char* colourScaleId(ColourScale s);
bool parseColourScale(const std::string& id, ColourScale* out);
// A log scale colours maps whose values are ≥ 0 with some > 0 and a top above the smallest
// positive; others (signed maps: scores) stay linear.
bool logApplies(ValueRange r);
// On a log scale an exact zero has no place (log10 0 = −∞): it is drawn in the masked cells' grey,
// not in the scale's bottom colour, which is the smallest positive value's (a masked or dropped
// weight would read as a small one). The legend says so with kZeroLegend (its swatch that grey).
inline constexpr const char* kZeroLegend = "▨ exactly 0: below a log scale";
bool zeroOffLogScale(float v, ValueRange map, ColourScale scale);

// One row of a map (n values) as table indices under `scale`, the map's range being `map`:
//   linear: colormapIndices over `map`;
//   log:    round((log10 max(v, p) − log10 p) / (log10 hi − log10 p) · 255), p = map.positive (zeros,
//           dropped weights and anything below p at the bottom); linear where logApplies is false;
//   row:    colormapIndices over the row's finite min … max, centred on 0 when `centred` (a
//           diverging colormap); a row without finite values gets the middle entry.
void rowIndices(const float* v, std::size_t n, ValueRange map, ColourScale scale, bool centred, std::uint8_t* out);

// A tick of a colorbar: where along it (0 … 1), its value and its label.
struct ColorbarTick {
  float at;
  float value;
  std::string label;
};
// The colorbar's inner ticks: linear, the multiples of 1, 2 or 5 × 10^k that make 2–6 ticks strictly
// inside the range (0 among them when it is signed); log, every power of ten inside; per row none
// (each row has its own range).
std::vector<ColorbarTick> colorbarTicks(ValueRange r, ColourScale scale);
// The texts at the colorbar's two ends: `words` where given (a mask's "dropped 0"), else the range's
// numbers (from its smallest positive value on a log scale), or "row min" … "row max" per row.
std::array<std::string, 2> colorbarEnds(ValueRange r, ColourScale scale, bool centred,
                                        const std::array<std::string, 2>& words);

// Black or white, whichever reads better on `background` (WCAG relative luminance).
Rgb contrastingText(Rgb background);

}  // namespace attnscope
