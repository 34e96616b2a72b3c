// Numbers as attnscope shows them, everywhere: one minus sign (−), no negative zero, and one label
// policy for heatmap cells (docs/DESIGN.md §3.4). Headless: the app's widgets and the vector
// figures (display/vector_figure.h) use the same functions, so a figure reads as the screen does.
#pragma once
#include <array>
#include <string>

namespace attnscope {

// "%.*f" with a true minus sign (−) and no negative zero; −∞ and ∞ as themselves.
std::string formatFixed(float v, int decimals = 4);
// A factor of a written product: formatFixed, in parentheses when negative, so that a sign never
// follows an operator: "−0.1353 · (−0.5888)", "0.2 + (−0.3) · 0.5".
std::string formatFactor(float v, int decimals = 4);
// A probability (0 … 1) as a percentage: "32.5 %" to one decimal, and one that would print as
// "0.0 %" in two significant digits ("0.023 %", below 0.0001 % "1.2e−7 %"), so that the next
// tokens of a flat distribution (an untrained model's, a high temperature's) keep their ranking on
// screen; an exact zero (greedy's others) "0.0 %".
std::string formatPercent(float p);
// "%.3g" likewise, for colorbar ranges and values too wide for fixed decimals.
std::string formatShort(float v);

// The labels of a heatmap's cells, from the notebook's four decimals down to the most compact form
// that still reads one way only: two decimals without the leading zero (".29", "−.11"). A map uses
// the first that fits every cell it shows; 10 and more keep three significant digits; always a
// true minus. A nonzero value never prints as zero: one too small for the format's decimals
// prints in one significant digit, scientific ("3e−4", "−4e−3"); an exact zero as the format
// prints it ("0.0000", compact "0").
enum class CellFormat { Decimals4, Decimals3, Decimals2, Compact };
const std::array<CellFormat, 4>& cellFormats();  // in that order
const char* cellFormatId(CellFormat f);          // "decimals4", …, "compact": the layout dump
std::string cellLabel(float v, CellFormat f);

}  // namespace attnscope
