// DejaVu Sans from Debian (fonts-dejavu-core), with the glyphs the UI writes: √ − ∞ · × → Σ ≈,
// sub- and superscripts, Greek.
#pragma once
#include <imgui.h>

namespace attnscope {

struct Fonts {
  ImFont* ui = nullptr;     // panels, titles
  ImFont* small = nullptr;  // heatmap cell values and axis labels
};

// Builds the atlas at `scale` (the monitor's content scale × the text size × a figure's k). Falls
// back to ImGui's font, with a warning on stderr, if DejaVu is missing.
Fonts loadFonts(float scale);
const Fonts& fonts();

}  // namespace attnscope
