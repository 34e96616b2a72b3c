// Colormaps and value ranges for heatmaps. Headless on purpose: the GUI tests compute the colour
// a cell must have from the same tables (assets/colormaps/*.csv) and the engine's values.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/stages.h"
#include "engine/tensor.h"

namespace attnscope {

enum class Colormap { Viridis, Cividis, Coolwarm };

struct Rgb {
  std::uint8_t r, g, b;
};

const char* colormapId(Colormap c);       // "viridis", the table's file name
const char* colormapTitle(Colormap c);    // "Viridis (default)", for menus
bool parseColormap(const std::string& id, Colormap* out);

// The 256-entry table of assets/colormaps/<id>.csv, loaded once. Throws InputError if missing.
const std::array<Rgb, 256>& colormapTable(Colormap c);

// The range a map's colours span. Diverging maps are centred on 0: [−m, m] with m = max |v|.
struct ValueRange {
  float lo = 0, hi = 1;
};
// Min and max over the finite values of m (−∞ cells are masked, not part of the range).
ValueRange finiteRange(const Matrix& m);
ValueRange finiteRange(const StageMap& m);  // a row at a time: derived stages are never held whole
ValueRange merge(ValueRange a, ValueRange b);
ValueRange centredOnZero(ValueRange r);

// Table index of v within r: round((v − lo)/(hi − lo)·255) (halves away from zero), clamped to
// 0 … 255 (+∞ → 255, NaN → 0); the middle entry if hi == lo.
int colormapIndex(float v, ValueRange r);
// colormapIndex of n values at once (vectorized: a GPT-2 snapshot colours 36 M cells).
void colormapIndices(const float* v, std::size_t n, ValueRange r, std::uint8_t* out);
Rgb colormapColor(Colormap c, float v, ValueRange r);

// Black or white, whichever reads better on `background` (WCAG relative luminance).
Rgb contrastingText(Rgb background);

}  // namespace attnscope
