// Numbers and strings as the UI shows them: one minus sign, one way to shorten text.
#pragma once
#include <imgui.h>

#include <array>
#include <string>

namespace attnscope {

// "%.*f" with a true minus sign (−) and no negative zero; −∞ and ∞ as themselves.
std::string formatFixed(float v, int decimals = 4);
// "%.3g" likewise, for colorbar ranges and values too wide for fixed decimals.
std::string formatShort(float v);

// The labels of a heatmap's cells, from the notebook's four decimals down to the most compact form
// that still reads one way only: two decimals without the leading zero (".29", "−.11"). A map uses
// the first that fits every cell it shows; 10 and more keep three significant digits; always a
// true minus.
enum class CellFormat { Decimals4, Decimals3, Decimals2, Compact };
const std::array<CellFormat, 4>& cellFormats();  // in that order
const char* cellFormatId(CellFormat f);          // "decimals4", …, "compact": the layout dump
std::string cellLabel(float v, CellFormat f);

// `text` shortened with "…" to fit `width` pixels, cutting whole UTF-8 characters.
std::string fitText(ImFont* font, float size, const std::string& text, float width);
// fitText in the current font.
std::string fitText(const std::string& text, float width);

// Wrapped text in the disabled colour: notes and explanations.
void textDisabledWrapped(const char* fmt, ...) IM_FMTARGS(1);

}  // namespace attnscope
