#include "widgets/kept_text.h"

#include <imgui_internal.h>
#include <imgui_stdlib.h>

#include <utility>

#include "formats/utf8.h"

namespace attnscope {

namespace {

// The stand-ins of the field being edited, and the frame it was last drawn active in.
StandIns* edited = nullptr;
int edited_frame = -1;

// The clipboard as the window gives and takes it, while a kept field is edited: pasted through its
// stand-ins, copied with the characters given back.
const char* (*window_get_clipboard)(void*) = nullptr;
void (*window_set_clipboard)(void*, const char*) = nullptr;

const char* clipboardHidden(void* user) {
  static std::string text;  // ImGui copies it at once
  const char* got = window_get_clipboard != nullptr ? window_get_clipboard(user) : nullptr;
  text = edited != nullptr ? edited->hide(got != nullptr ? got : "") : (got != nullptr ? got : "");
  return text.c_str();
}

void clipboardRestored(void* user, const char* text) {
  if (window_set_clipboard == nullptr) return;
  window_set_clipboard(user, edited != nullptr ? edited->restore(text).c_str() : text);
}

// One edit of a kept field: `call` runs ImGui's field on the buffer, the clipboard going through
// the field's stand-ins while it is the active one.
template <class Call>
bool keptEdit(const char* id, std::string* text, KeptField& f, Call call) {
  ImGuiIO& io = ImGui::GetIO();
  const bool active = ImGui::GetActiveID() == ImGui::GetID(id);
  // A new text, or one changed from outside the field — not while it is edited: ImGui keeps its
  // own copy then, and a caller that reads the text anew each frame (a token's name, renamed once
  // the edit ends) would have cleared the stand-ins of what is being typed.
  if (!f.synced || (*text != f.source && !active)) {
    f.stand_ins.clear();
    f.buffer = f.stand_ins.hide(*text);
    f.source = *text;
    f.synced = true;
  }
  if (active) {
    edited = &f.stand_ins;
    window_get_clipboard = std::exchange(io.GetClipboardTextFn, clipboardHidden);
    window_set_clipboard = std::exchange(io.SetClipboardTextFn, clipboardRestored);
  }
  const bool result = call(&f.buffer);
  if (active) {
    io.GetClipboardTextFn = window_get_clipboard;
    io.SetClipboardTextFn = window_set_clipboard;
  }
  if (ImGui::IsItemActive()) {
    edited = &f.stand_ins;
    edited_frame = ImGui::GetFrameCount();
  } else if (edited == &f.stand_ins) {
    edited = nullptr;
  }
  // Always the field's text, with its characters: the caller's may be a copy made this frame.
  f.source = f.stand_ins.restore(f.buffer);
  *text = f.source;
  return result;
}

}  // namespace

// [SECTION] Stand-ins

void StandIns::clear() {
  slot_of_.clear();
  original_of_.clear();
  literal_.clear();
  next_ = kFirst;
  next_typed_ = kTypedFirst;
}

std::uint32_t StandIns::slotFor(const std::string& original, bool typed) {
  if (const auto it = slot_of_.find(original); it != slot_of_.end()) return it->second;
  std::uint32_t& next = typed ? next_typed_ : next_;
  const std::uint32_t last = typed ? kTypedLast : kLast;
  while (next <= last && literal_.count(next) != 0) ++next;
  if (next > last) return 0;
  slot_of_[original] = next;
  original_of_[next] = original;
  return next++;
}

std::string StandIns::hide(const std::string& text) {
  // The text's own Private Use Area characters are never handed out as stand-ins.
  for (std::size_t i = 0; i < text.size();) {
    const std::uint32_t cp = nextCodePoint(text, &i);
    if (isStandIn(cp) && original_of_.count(cp) == 0) literal_.insert(cp);
  }
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t at = i;
    const std::uint32_t cp = nextCodePoint(text, &i);
    // (A NUL too: ImGui's buffer is a C string, which it would end.)
    const bool held = cp != kNotUtf8 && cp != 0 && cp <= 0xFFFF && original_of_.count(cp) == 0;
    const std::uint32_t slot = held ? 0 : slotFor(text.substr(at, i - at), false);
    if (slot != 0)
      appendUtf8(out, slot);
    else
      out.append(text, at, i - at);  // (none left to give: as it was)
  }
  return out;
}

std::string StandIns::restore(const std::string& field) const {
  if (original_of_.empty()) return field;
  std::string out;
  out.reserve(field.size());
  for (std::size_t i = 0; i < field.size();) {
    const std::size_t at = i;
    const std::uint32_t cp = nextCodePoint(field, &i);
    if (const auto it = original_of_.find(cp); cp != kNotUtf8 && it != original_of_.end())
      out += it->second;
    else
      out.append(field, at, i - at);
  }
  return out;
}

std::uint32_t StandIns::standInFor(std::uint32_t code_point) {
  std::string original;
  appendUtf8(original, code_point);
  return slotFor(original, true);
}

// [SECTION] Fields

bool inputTextMultilineKept(const char* id, std::string* text, KeptField& field, const ImVec2& size,
                            ImGuiInputTextFlags flags) {
  return keptEdit(id, text, field,
                  [&](std::string* buffer) { return ImGui::InputTextMultiline(id, buffer, size, flags); });
}

bool inputTextKept(const char* id, const char* hint, std::string* text, KeptField& field, ImGuiInputTextFlags flags) {
  return keptEdit(id, text, field, [&](std::string* buffer) {
    return hint != nullptr ? ImGui::InputTextWithHint(id, hint, buffer, flags) : ImGui::InputText(id, buffer, flags);
  });
}

unsigned typedStandIn(unsigned code_point) {
  if (edited == nullptr || edited_frame < ImGui::GetFrameCount() - 1) return 0;
  return edited->standInFor(code_point);
}

void standInGlyphs(ImFont* font, ImWchar glyph) {
  if (font == nullptr || font->FindGlyphNoFallback(glyph) == nullptr) return;
  const auto drawAs = [&](std::uint32_t first, std::uint32_t last) {
    for (std::uint32_t cp = first; cp <= last; ++cp)
      if (font->FindGlyphNoFallback(static_cast<ImWchar>(cp)) == nullptr)  // a font's own glyph stays
        font->AddRemapChar(static_cast<ImWchar>(cp), glyph);
  };
  drawAs(StandIns::kFirst, StandIns::kFirst + StandIns::kDrawn - 1);
  drawAs(StandIns::kTypedFirst, StandIns::kTypedLast);
}

}  // namespace attnscope
