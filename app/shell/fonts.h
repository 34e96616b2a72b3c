// DejaVu Sans from Debian (fonts-dejavu-core), with the glyphs the UI writes: √ − ∞ · × → Σ ≈,
// sub- and superscripts, Greek, and those of the words a sentence may bring (Latin Extended-A,
// Cyrillic).
#pragma once
#include <imgui.h>

#include <string>

namespace attnscope {

struct Fonts {
  ImFont* ui = nullptr;     // panels, titles
  ImFont* small = nullptr;  // heatmap cell values and axis labels
};

// Builds the atlas at `scale` (the monitor's content scale × the text size × a figure's k). Falls
// back to ImGui's font, with a warning on stderr, if DejaVu is missing.
Fonts loadFonts(float scale);
const Fonts& fonts();

// How many distinct characters of `utf8` the UI font has no glyph for (ImGui draws them as '?':
// CJK, emoji).
int missingGlyphs(const std::string& utf8);

}  // namespace attnscope
