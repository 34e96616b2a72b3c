// How a map looks, one definition for every place that draws one (docs/DESIGN.md §3.4 "One map
// look"): the app's heatmap grid and its tabs, the SVG and PDF figures of a map, and the figures
// `attnscope-cli export --figures` writes. A map's heading (its title), and its MapLook: the colour
// range, colormap and scale, a mask's cell labels and colorbar words, the legend under it.
#pragma once
#include <array>
#include <functional>
#include <string>
#include <vector>

#include "display/colormap.h"
#include "engine/stages.h"
#include "engine/trace.h"

namespace attnscope {

struct MapLook {
  ValueRange range;                             // the colours span this …
  Colormap colormap = Colormap::Viridis;        // … of this map
  ColourScale scale = ColourScale::Linear;      // … on this scale (log, per row: display/colormap.h)
  std::function<std::string(float)> cell_text;  // a cell's label (a mask's "0"/"1"); empty: the cell-label policy
  std::array<std::string, 2> range_text;        // the colorbar's ends in words; empty: the range's numbers
  std::string legend;                           // a line under the colorbar; "▨" first: a masked-grey swatch
};

// The viewer's colour choices (the app's View menu); the defaults are a figure's without a view.
struct LookChoices {
  Colormap colormap = Colormap::Viridis;
  ColourScale scale = ColourScale::Linear;
  bool diverging_for_signed = true;  // coolwarm centred on 0 for a map with negative values
  bool weights_fixed = false;        // attention weights on their probability's 0–1 (0–1/(1−p) dropped)
};

// Values in `range` coloured by `choices`; `flags`: a 0/1 map, linear whatever the scale.
MapLook colouredBy(ValueRange range, bool flags, const LookChoices& choices);
// A map of one value: a range of no width on a scale that uses it (a per-row scale has each row's
// own). Its cells have one colour, the table's middle (colormapIndex), and so has its colorbar,
// which says the value once — in the app and in a figure alike (one token's weights of 1 showed a
// gradient between "1" and "1").
bool oneValued(const MapLook& look);
// A head's map of `stage`, its colours spanning `range` (its own, the heads' shared range, or a
// locked one: the caller's choice).
MapLook stageLook(const Trace& t, Stage stage, ValueRange range, const LookChoices& choices);

// A dropout mask's cell: the factor a kept weight is multiplied by ("×2.0", "1" with dropout off), or 0.
std::string dropoutCellText(bool active, float scale, float kept);

// The first of head `head`'s columns among the module's d_out, for the labels of its Q, K, V,
// context and W columns: MultiHeadAttention's heads are column slices of its one projection (head h
// has columns h·head_dim …), every other step's head has columns of its own, from 0.
int headFirstColumn(const Trace& t, int head);

// Whether a key's label stays across (horizontal) where the keys' labels read upwards: one
// character, which turned is another shape ("I" a dash, "-" a bar, "." and "," specks above the
// wrong side of their column). Every renderer of a map asks this (the window, SVG and PDF figures).
bool keyLabelStaysAcross(const std::string& label);

// An axis's names where its cells are smaller than the text: one every `axisNameStep` cells (`room`:
// the text's extent along the axis, with its gap), and a token's name (position ≥ 0, from 0; a
// dimension's "d15" is −1) then starts with its number, counted from 1 as the Inspector, the model's
// text and "go to token" count: "12 Ġon" (every sixth token's name alone read as a word: "T Ġ n a Ġ
// a t ."). One rule for the window, the SVG and PDF figures; a name cut to fit loses its end.
// With `ruler` (the names show their numbers) the step is the least of 1, 2, 5, 10, 20, 25, 50, … that
// holds them, and the names stand where the count is a multiple of it (axisNamed).
int axisNameStep(double room, double cell, bool ruler = false);
// The least share of its cells' size a map gives for its thinned rows' names to carry their
// positions (a wider band of names), its rows' names `font` px high on cells `cell` px: a tenth,
// and where the names without numbers stand every fifth row or sparser (axisNameStep off the
// ruler), most rows unnamed, 15 % (a 95-token map's "P,
// ant, Ġto, y" at 1280 × 800 and 150 % said no row's place, its numbers costing 10.01 %). One rule
// for the Heatmaps grid and Compare.
float numberedNamesShare(double font, double cell);
std::string axisName(const std::string& name, int position, int step);
// Whether a thinned axis on a ruler's steps names the entry at `position` (a token's, from 0) or,
// not a token (−1), at `index`: every `step`-th as the names count, a token's number from 1 ("5,
// 10, 15", not "1, 6, 11"), a dimension's from 0 ("d0, d10, d20"). Without numbers an axis names
// every `step`-th from its first shown: the most names.
bool axisNamed(int position, int index, int step);
// The entries a thinned axis names whatever its step: the selection first, then the caller's
// places in their order, each kept where none kept before stands within `step` of it. A place
// beside one that gave way is still named (a lecturer's three edited tokens, the middle one
// crowded out, showed one name: each had given way to the one before it, named or not).
std::vector<int> pinnedAxisNames(int selected, const std::vector<int>& places, int step);
// Whether such an axis names the entry at `index`: a pinned one is named and its neighbours within
// `step` give way to it; the others as `thinned` says (axisNamed, or every step-th).
bool pinnedAxisNamed(int index, const std::vector<int>& pinned, int step, bool thinned);
// The position of the name at `index` of an axis whose first name is the token at `first` (−1: the
// axis names no tokens).
inline int tokenPosition(int first, int index) { return first < 0 ? -1 : first + index; }

// A stage's heading as every map of it is titled: "weights (softmax)  6×6", "scaled  ÷ √2  6×6".
std::string stageHeading(const Trace& t, Stage s);
// The heading of one of the module's maps (the heads concatenated, out_proj, the output).
std::string moduleHeading(const Trace& t, const BatchTrace& bt, ModuleMap m);

}  // namespace attnscope
