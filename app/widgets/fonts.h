// DejaVu Sans from Debian (fonts-dejavu-core), with the glyphs the UI writes: √ − ∞ · × → Σ ≈,
// sub- and superscripts, Greek, and those of the words a sentence may bring (Latin Extended-A,
// Cyrillic).
#pragma once
#include <imgui.h>

#include <cstdint>
#include <string>
#include <vector>

namespace attnscope {

struct Fonts {
  ImFont* ui = nullptr;     // panels, titles
  ImFont* small = nullptr;  // heatmap cell values and axis labels
};

// Builds the atlas at `scale` (the monitor's content scale × the text size × a figure's k). Falls
// back to ImGui's font, with a warning on stderr, if DejaVu is missing.
Fonts loadFonts(float scale);
const Fonts& fonts();

// How many distinct characters of `utf8` the UI font has no glyph for (ImGui draws them as '?').
int missingGlyphs(const std::string& utf8);

// The tokens' characters DejaVu Sans lacks (CJK, emoji): loadFonts merges them from Debian's
// fallback fonts — Droid Sans Fallback (fonts-droid-fallback: CJK), then Symbola (fonts-symbola:
// emoji, symbols) — those glyphs only, so the atlas grows by what the tokens use, not by 20 000
// ideographs. `vocabulary`: the characters a model's tokens decode to (lm/gpt2_tokenizer.h
// tokenCharacters), put in with the first text where there are few. What was put in stays while
// the atlas has room. True when the set changed: the atlas must be built again (loadFonts).
bool useTokenGlyphs(const std::vector<std::string>& tokens, const std::vector<std::uint32_t>& vocabulary = {});

}  // namespace attnscope
