// Numbers and strings as the UI shows them: one minus sign, one way to shorten text. The number
// formats themselves are headless (display/number_text.h), shared with the vector figures.
#pragma once
#include <imgui.h>

#include <string>

#include "display/number_text.h"

namespace attnscope {

// `text` shortened with "…" to fit `width` pixels, cutting whole UTF-8 characters.
std::string fitText(ImFont* font, float size, const std::string& text, float width);
// fitText in the current font.
std::string fitText(const std::string& text, float width);

// Wrapped text in the disabled colour: notes and explanations.
void textDisabledWrapped(const char* fmt, ...) IM_FMTARGS(1);

}  // namespace attnscope
