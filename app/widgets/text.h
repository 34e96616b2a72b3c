// Numbers and strings as the UI shows them: one minus sign, one way to shorten text. The number
// formats themselves are headless (display/number_text.h), shared with the vector figures.
#pragma once
#include <imgui.h>

#include <string>
#include <vector>

#include "display/number_text.h"
#include "engine/count_text.h"

namespace attnscope {

// `text` shortened with "…" to fit `width` pixels, cutting whole UTF-8 characters.
std::string fitText(ImFont* font, float size, const std::string& text, float width);
// fitText in the current font.
std::string fitText(const std::string& text, float width);
// The first of `forms` (longest first) whose width in the current font, plus `extra`, is at most
// `width`; else the last, whole (a caller that must fit cuts it with fitText).
std::string firstFitting(const std::vector<std::string>& forms, float width, float extra = 0);
// `text` wrapped at spaces only, into lines at most `width` pixels wide in the current font joined by
// "\n" (a word wider than that has a line of its own): ImGui's own wrapping also breaks after '.',
// which splits a number ("largest |B − A| = 0.\n2620").
std::string wrapAtSpaces(const std::string& text, float width);
// The rows items `widths` wide take, placed left to right with `spacing` between them and a new
// row where the next would reach `width` (as ImGui's SameLine flow, or a list of chips, wraps).
int wrappedRows(const std::vector<float>& widths, float width, float spacing);

// Wrapped text in the disabled colour: notes and explanations.
void textDisabledWrapped(const char* fmt, ...) IM_FMTARGS(1);

// A checkbox whose label wraps at the window's edge, where ImGui's runs past it (at 175 % text the
// model's panel showed "start with <|endoftex"). A click on the label toggles it as one on the box
// does; the two are one item (hover, tooltips, the layout dump). Returns whether *v changed.
bool checkboxWrapped(const char* id, const char* label, bool* v);

// Whether a hovered control's tooltip (what a click does) is wanted: not while the mouse rests
// where it last clicked. A lecturer's click leaves the mouse there, and the tooltip covered what the
// click changed (the field's hint over the tokens typed, Append's over the next tokens). A tooltip
// that says why a control takes no click shows whatever the mouse did.
bool tooltipWanted();

}  // namespace attnscope
