// Numbers and strings as the UI shows them: one minus sign, one way to shorten text.
#pragma once
#include <imgui.h>

#include <string>

namespace attnscope {

// "%.*f" with a true minus sign (−) and no negative zero; −∞ and ∞ as themselves.
std::string formatFixed(float v, int decimals = 4);
// "%.3g" likewise, for colorbar ranges and values too wide for fixed decimals.
std::string formatShort(float v);
// "−0.25" → "-0.25": a hyphen is narrower, for cells where every pixel counts.
std::string withHyphen(const std::string& s);

// `text` shortened with "…" to fit `width` pixels, cutting whole UTF-8 characters.
std::string fitText(ImFont* font, float size, const std::string& text, float width);
// fitText in the current font.
std::string fitText(const std::string& text, float width);

// Wrapped text in the disabled colour: notes and explanations.
void textDisabledWrapped(const char* fmt, ...) IM_FMTARGS(1);

}  // namespace attnscope
