#include "widgets/text.h"

#include <algorithm>
#include <cfloat>
#include <cstdarg>

namespace attnscope {

std::string fitText(ImFont* font, float size, const std::string& text, float width) {
  // A hundredth of a pixel to spare: a room worked out as the widest name + 4 − 4 lost the last
  // bit of a float, and cut the widest name itself ("Ġm…" for "Ġmat" with room for "Ġmat").
  width += 0.01f;
  const char* begin = text.c_str();
  if (font->CalcTextSizeA(size, FLT_MAX, 0, begin, begin + text.size()).x <= width) return text;
  // The longest first whole characters that fit with "…" after them: a binary search over the
  // bytes, each cut moved back to a character's lead byte (widths grow with the prefix). Dropping
  // a character at a time measured a 50 000-character token 50 000 times a frame: minutes.
  const auto cut = [&](std::size_t n) {
    while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
    return n;
  };
  const auto fits = [&](std::size_t n) {
    const std::string t = text.substr(0, n) + "…";
    return font->CalcTextSizeA(size, FLT_MAX, 0, t.c_str(), t.c_str() + t.size()).x <= width;
  };
  if (!fits(0)) return "";
  std::size_t lo = 0, hi = text.size();  // fits(lo); the whole text does not
  while (hi - lo > 1) {
    const std::size_t mid = cut(lo + (hi - lo) / 2);
    if (mid <= lo) {  // no character starts between lo and the middle: try the next one up
      std::size_t next = lo + 1;
      while (next < hi && (static_cast<unsigned char>(text[next]) & 0xC0) == 0x80) ++next;
      if (next >= hi || !fits(next)) break;
      lo = next;
    } else if (fits(mid)) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return text.substr(0, lo) + "…";
}

std::string fitText(const std::string& text, float width) {
  return fitText(ImGui::GetFont(), ImGui::GetFontSize(), text, width);
}

std::string firstFitting(const std::vector<std::string>& forms, float width, float extra) {
  for (const std::string& form : forms)
    if (ImGui::CalcTextSize(form.c_str()).x + extra <= width) return form;
  return forms.empty() ? std::string() : forms.back();
}

std::string wrapAtSpaces(const std::string& text, float width) {
  std::string out, line;
  const auto wider = [&](const std::string& t) { return ImGui::CalcTextSize(t.c_str()).x > width; };
  for (std::size_t at = 0; at < text.size();) {
    if (text[at] == '\n') {  // a line the text ends itself
      out += line + "\n";
      line.clear();
      ++at;
      continue;
    }
    const std::size_t end = std::min(text.find_first_of(" \n", at), text.size());
    const std::string word = text.substr(at, end - at);
    if (!line.empty() && wider(line + " " + word)) {
      out += line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    at = end < text.size() && text[end] == ' ' ? end + 1 : end;
  }
  return out + line;
}

int wrappedRows(const std::vector<float>& widths, float width, float spacing) {
  int rows = 1;
  float x = 0;
  for (std::size_t i = 0; i < widths.size(); ++i) {
    if (i > 0 && x + spacing + widths[i] >= width) ++rows, x = 0;
    x += (x > 0 ? spacing : 0.0f) + widths[i];
  }
  return rows;
}

bool tooltipWanted() {
  const ImGuiIO& io = ImGui::GetIO();
  const float dx = io.MousePos.x - io.MouseClickedPos[0].x, dy = io.MousePos.y - io.MouseClickedPos[0].y;
  return dx * dx + dy * dy > 16.0f;  // moved more than 4 px since
}

bool checkboxWrapped(const char* id, const char* label, bool* v) {
  ImGui::PushID(id);
  ImGui::BeginGroup();
  bool changed = ImGui::Checkbox("##box", v);
  ImGui::SameLine(0, ImGui::GetStyle().ItemInnerSpacing.x);
  const float top = ImGui::GetCursorPosY();
  ImGui::SetCursorPosY(top + ImGui::GetStyle().FramePadding.y);  // the first line level with the box's
  ImGui::TextWrapped("%s", label);
  if (ImGui::IsItemClicked()) {  // never while disabled: a disabled item is not hovered
    *v = !*v;
    changed = true;
  }
  ImGui::EndGroup();
  ImGui::PopID();
  return changed;
}

void textDisabledWrapped(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  ImGui::TextWrappedV(fmt, args);
  ImGui::PopStyleColor();
  va_end(args);
}

}  // namespace attnscope
