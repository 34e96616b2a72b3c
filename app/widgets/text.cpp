#include "widgets/text.h"

#include <cfloat>
#include <cstdarg>

namespace attnscope {

std::string fitText(ImFont* font, float size, const std::string& text, float width) {
  if (font->CalcTextSizeA(size, FLT_MAX, 0, text.c_str()).x <= width) return text;
  std::string s = text;
  while (!s.empty()) {
    // Drop one whole UTF-8 character: its continuation bytes, then its lead byte.
    while (!s.empty() && (static_cast<unsigned char>(s.back()) & 0xC0) == 0x80) s.pop_back();
    if (!s.empty()) s.pop_back();
    const std::string t = s + "…";
    if (font->CalcTextSizeA(size, FLT_MAX, 0, t.c_str()).x <= width) return t;
  }
  return "";
}

std::string fitText(const std::string& text, float width) {
  return fitText(ImGui::GetFont(), ImGui::GetFontSize(), text, width);
}

std::string firstFitting(const std::vector<std::string>& forms, float width, float extra) {
  for (const std::string& form : forms)
    if (ImGui::CalcTextSize(form.c_str()).x + extra <= width) return form;
  return forms.empty() ? std::string() : forms.back();
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
