#include "widgets/fonts.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include "formats/utf8.h"
#include "widgets/kept_text.h"

namespace attnscope {

namespace {
Fonts loaded;
constexpr const char* kDejaVu = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
// For the tokens' characters DejaVu lacks, in this order (the first that has a glyph draws it).
constexpr const char* kFallbacks[] = {"/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf",
                                      "/usr/share/fonts/truetype/ancient-scripts/Symbola_hint.ttf"};
std::set<unsigned> token_glyphs;    // the tokens' characters outside the ranges loaded from DejaVu
std::vector<ImWchar> token_ranges;  // … as ImGui glyph ranges (pairs, 0-terminated), kept alive for the atlas

// Whether loadFonts' ranges (below) take c from DejaVu.
bool inDejaVuRanges(unsigned c, const ImWchar* ranges) {
  for (const ImWchar* r = ranges; r[0] != 0; r += 2)
    if (c >= r[0] && c <= r[1]) return true;
  return false;
}
const ImWchar* dejaVuRanges();
}  // namespace

namespace {
const ImWchar* dejaVuRanges() {
  static const ImWchar ranges[] = {
      0x0020, 0x00FF,  // Latin-1: · × ² ³
      0x0100, 0x017F,  // Latin Extended-A: the words of a typed sentence (Łódź, češtině, İstanbul)
      0x0400, 0x045F,  // Cyrillic (Привет)
      0x0370, 0x03FF,  // Greek: α Σ
      0x2000, 0x206F,  // punctuation: – … ′
      0x2070, 0x209F,  // super- and subscripts: ᵀ ₖ ₁
      0x1D00, 0x1DBF,  // phonetic extensions: ᵀ (U+1D40)
      0x2190, 0x21FF,  // arrows: →
      0x2C60, 0x2C7F,  // Latin Extended-C: the subscript ⱼ
      0x2200, 0x22FF,  // maths: √ − ∞ ≈ ∑
      0x25A0, 0x25FF,  // shapes: ▨ ■
      0,
  };
  return ranges;
}
}  // namespace

const Fonts& fonts() { return loaded; }

Fonts loadFonts(float scale) {
  ImGuiIO& io = ImGui::GetIO();
  io.Fonts->Clear();
  const ImWchar* ranges = dejaVuRanges();
  // The tokens' CJK and emoji, merged into the font added just before (MergeMode): each of the two.
  auto mergeTokenGlyphs = [&](float size) {
    if (token_ranges.empty()) return;
    for (const char* file : kFallbacks) {
      if (!std::filesystem::exists(file)) continue;
      ImFontConfig merge;
      merge.MergeMode = true;
      merge.OversampleH = 1;
      io.Fonts->AddFontFromFileTTF(file, size, &merge, token_ranges.data());
    }
  };
  if (std::filesystem::exists(kDejaVu)) {
    ImFontConfig config;
    // Horizontal oversampling sharpens small text; large text (a projector's 250 %, a 3× figure of
    // it) does not need it, and it would double an atlas that is already large.
    config.OversampleH = 15.0f * scale >= 36 ? 1 : 2;
    loaded.ui = io.Fonts->AddFontFromFileTTF(kDejaVu, 15.0f * scale, &config, ranges);
    if (loaded.ui) mergeTokenGlyphs(15.0f * scale);
    config.OversampleH = 12.0f * scale >= 36 ? 1 : 2;
    loaded.small = io.Fonts->AddFontFromFileTTF(kDejaVu, 12.0f * scale, &config, ranges);
    if (loaded.small) mergeTokenGlyphs(12.0f * scale);
  }
  if (!loaded.ui || !loaded.small) {
    std::fprintf(stderr, "warning: %s not found (install fonts-dejavu-core); using ImGui's font\n", kDejaVu);
    ImFontConfig config;
    config.SizePixels = 13.0f * scale;
    loaded.ui = loaded.small = io.Fonts->AddFontDefault(&config);
  }
  // A field's stand-ins for the characters ImGui cannot hold (widgets/kept_text.h) as ▯, not "?".
  io.Fonts->Build();
  standInGlyphs(loaded.ui, 0x25AF);
  if (loaded.small != loaded.ui) standInGlyphs(loaded.small, 0x25AF);
  return loaded;
}

bool useTokenGlyphs(const std::vector<std::string>& tokens, const std::vector<std::uint32_t>& vocabulary) {
  constexpr std::size_t kMostGlyphs = 4096;  // a bound on the atlas
  // A vocabulary's characters are put in only where they are few (GPT-2's: 200; a CJK model's
  // tens of thousands would make the atlas huge), and the characters put in stay while the atlas
  // has room: a new text seldom brings any, and every atlas built again (10–30 ms at 1600 × 1000)
  // had come with a text that brought one and dropped another.
  constexpr std::size_t kMostPreloaded = 1024;
  const auto outsideDejaVu = [](std::uint32_t c) {
    // ImGui 1.86 draws 16-bit characters only (ImWchar): emoji above them stay out of the atlas.
    return c >= 0x20 && c <= 0xFFFF && !inDejaVuRanges(c, dejaVuRanges());
  };
  std::set<unsigned> text;
  for (const std::string& token : tokens)
    for (std::size_t i = 0; i < token.size() && text.size() < kMostGlyphs;) {
      const std::uint32_t c = nextCodePoint(token, &i);
      if (outsideDejaVu(c)) text.insert(c);
      if (c == 0) text.insert(0x2400);  // a model's text field shows a NUL as ␀ (Symbola has it)
    }
  std::set<unsigned> wanted = token_glyphs;
  if (const std::size_t n = static_cast<std::size_t>(
          std::count_if(vocabulary.begin(), vocabulary.end(), outsideDejaVu));
      n <= kMostPreloaded)
    for (std::uint32_t c : vocabulary)  // U+FFFD only from a text: in the atlas it becomes ImGui's
      if (outsideDejaVu(c) && c != 0xFFFD) wanted.insert(c);  // fallback, and Arabic read � for ?
  if (std::includes(wanted.begin(), wanted.end(), text.begin(), text.end())) {
    if (wanted.size() == token_glyphs.size()) return false;  // nothing new
  } else {
    wanted.insert(text.begin(), text.end());
    if (wanted.size() > kMostGlyphs) wanted = std::move(text);  // full: the text's alone
  }
  token_glyphs = std::move(wanted);
  token_ranges.clear();
  for (unsigned c : token_glyphs)
    token_ranges.insert(token_ranges.end(), {static_cast<ImWchar>(c), static_cast<ImWchar>(c)});
  if (!token_ranges.empty()) token_ranges.push_back(0);
  return true;
}

int missingGlyphs(const std::string& utf8) {
  if (loaded.ui == nullptr) return 0;
  std::set<std::uint32_t> missing;
  for (std::size_t i = 0; i < utf8.size();) {
    const std::uint32_t c = nextCodePoint(utf8, &i);
    if (c >= 0x20 && (c > 0xFFFF || loaded.ui->FindGlyphNoFallback(static_cast<ImWchar>(c)) == nullptr))
      missing.insert(c);
  }
  return static_cast<int>(missing.size());
}

}  // namespace attnscope
