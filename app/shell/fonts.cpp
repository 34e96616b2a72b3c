#include "shell/fonts.h"

#include <cstdio>
#include <filesystem>
#include <set>

#include <imgui_internal.h>  // ImTextCharFromUtf8

namespace attnscope {

namespace {
Fonts loaded;
constexpr const char* kDejaVu = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
}  // namespace

const Fonts& fonts() { return loaded; }

Fonts loadFonts(float scale) {
  ImGuiIO& io = ImGui::GetIO();
  io.Fonts->Clear();
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
  if (std::filesystem::exists(kDejaVu)) {
    ImFontConfig config;
    // Horizontal oversampling sharpens small text; large text (a projector's 250 %, a 3× figure of
    // it) does not need it, and it would double an atlas that is already large.
    config.OversampleH = 15.0f * scale >= 36 ? 1 : 2;
    loaded.ui = io.Fonts->AddFontFromFileTTF(kDejaVu, 15.0f * scale, &config, ranges);
    config.OversampleH = 12.0f * scale >= 36 ? 1 : 2;
    loaded.small = io.Fonts->AddFontFromFileTTF(kDejaVu, 12.0f * scale, &config, ranges);
  }
  if (!loaded.ui || !loaded.small) {
    std::fprintf(stderr, "warning: %s not found (install fonts-dejavu-core); using ImGui's font\n",
                 kDejaVu);
    ImFontConfig config;
    config.SizePixels = 13.0f * scale;
    loaded.ui = loaded.small = io.Fonts->AddFontDefault(&config);
  }
  return loaded;
}

int missingGlyphs(const std::string& utf8) {
  if (loaded.ui == nullptr) return 0;
  std::set<unsigned> missing;
  for (const char* p = utf8.c_str(); *p != 0;) {
    unsigned c = 0;
    const int bytes = ImTextCharFromUtf8(&c, p, nullptr);
    if (bytes <= 0) break;
    p += bytes;
    if (c >= 0x20 && loaded.ui->FindGlyphNoFallback(static_cast<ImWchar>(c)) == nullptr) missing.insert(c);
  }
  return static_cast<int>(missing.size());
}

}  // namespace attnscope
