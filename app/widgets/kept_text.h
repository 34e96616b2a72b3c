// Text fields that keep every character of their text (docs/DESIGN.md §3.4 "Text fields keep every
// character").
//
// Debian's Dear ImGui (1.86) holds 16-bit characters (ImWchar): an emoji typed, pasted or already in
// a field's text became U+FFFD at the first edit, and the field's byte count then fell short of its
// string — "I love pizza 🍕 and my dog 🐶 says" edited came back "… � … � says hello" and two NULs,
// which the model read. While a field is edited its buffer holds each character above U+FFFF, each
// byte that is not UTF-8 and each NUL as a stand-in: a code point the text does not use, of the
// Private Use Area (U+E000 on) for the text and what is pasted, of the 32 noncharacters U+FDD0 …
// U+FDEF for what is typed (ImGui drops typed characters of the Private Use Area: macOS's GLFW sends
// arrow keys so). Stand-ins are drawn as ▯ (standInGlyphs). The clipboard and typed characters go
// through the same table, and the caller's string gets the characters back after every edit.
#pragma once
#include <imgui.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>

namespace attnscope {

// The stand-ins of one field's text: for each character or byte ImGui cannot hold, a code point
// of the Private Use Area that the text does not use of its own.
class StandIns {
 public:
  static constexpr std::uint32_t kFirst = 0xE000, kLast = 0xF8FF;            // the text's and the clipboard's
  static constexpr std::uint32_t kTypedFirst = 0xFDD0, kTypedLast = 0xFDEF;  // typed characters'
  static constexpr std::uint32_t kDrawn = 1024;  // U+E000 … U+E3FF (and the typed ones) drawn as ▯

  // `text` as the field edits it: each character above U+FFFF and each byte that is not UTF-8 as
  // its stand-in (new ones for characters not seen yet); a character of the Private Use Area that
  // already stands in for another gets a stand-in too, so that restore gives it back as itself.
  std::string hide(const std::string& text);
  // `field` with every stand-in given back as what it stands for.
  std::string restore(const std::string& field) const;
  // A typed code point above U+FFFF: its stand-in (0 when there is none left to give).
  std::uint32_t standInFor(std::uint32_t code_point);
  void clear();

 private:
  static bool isStandIn(std::uint32_t cp) {
    return (cp >= kFirst && cp <= kLast) || (cp >= kTypedFirst && cp <= kTypedLast);
  }
  std::uint32_t slotFor(const std::string& original, bool typed);  // 0: none left
  std::map<std::string, std::uint32_t> slot_of_;                   // what a stand-in stands for → its code point
  std::map<std::uint32_t, std::string> original_of_;
  std::set<std::uint32_t> literal_;  // code points of the stand-ins' ranges that the text has of its own
  std::uint32_t next_ = kFirst, next_typed_ = kTypedFirst;
};

// A field's state across frames: its buffer as ImGui edits it, the caller's text it was made from.
struct KeptField {
  std::string buffer, source;
  StandIns stand_ins;
  bool synced = false;
};

// ImGui's InputTextMultiline, and InputTextWithHint (`hint` may be null), over `text`, keeping every
// character (above). Return what ImGui's return.
bool inputTextMultilineKept(const char* id, std::string* text, KeptField& field, const ImVec2& size,
                            ImGuiInputTextFlags flags = 0);
bool inputTextKept(const char* id, const char* hint, std::string* text, KeptField& field,
                   ImGuiInputTextFlags flags = 0);

// A typed character above U+FFFF, for the field being edited: its stand-in, or 0 where no such
// field was drawn active in the last frame (the window's character callback: AppWindow).
unsigned typedStandIn(unsigned code_point);

// Draws the stand-ins U+E000 … U+E3FF as `glyph` in `font` (after the font atlas is built).
void standInGlyphs(ImFont* font, ImWchar glyph);

}  // namespace attnscope
