// Numbers and strings as the UI shows them: one minus sign, one way to shorten text. The number
// formats themselves are headless (display/number_text.h), shared with the vector figures.
#pragma once
#include <imgui.h>

#include <string>

#include "display/number_text.h"
#include "engine/count_text.h"

namespace attnscope {

// `text` shortened with "…" to fit `width` pixels, cutting whole UTF-8 characters.
std::string fitText(ImFont* font, float size, const std::string& text, float width);
// fitText in the current font.
std::string fitText(const std::string& text, float width);

// Wrapped text in the disabled colour: notes and explanations.
void textDisabledWrapped(const char* fmt, ...) IM_FMTARGS(1);

// A checkbox whose label wraps at the window's edge, where ImGui's runs past it (at 175 % text the
// model's panel showed "start with <|endoftex"). A click on the label toggles it as one on the box
// does; the two are one item (hover, tooltips, the layout dump). Returns whether *v changed.
bool checkboxWrapped(const char* id, const char* label, bool* v);

}  // namespace attnscope
