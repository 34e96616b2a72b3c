// A text in a CSV cell as spreadsheets take it (docs/DESIGN.md §2.5, `export`): one that starts with
// =, +, -, @, a tab or a carriage return would run as a formula ("=HYPERLINK(…)"), so it is written
// with a leading ' (OWASP's advice for CSV injection) and shows as the text it is. Reading takes
// the mark off again. A text that starts with ' before one of those, or before another ', gets one
// more, so that reading takes exactly one: cellText(markedCellText(s)) == s for every s.
#pragma once
#include <string>

namespace attnscope {

inline bool startsFormula(const std::string& text, std::size_t at = 0) {
  return text.size() > at && std::string("=+-@\t\r").find(text[at]) != std::string::npos;
}

inline std::string markedCellText(const std::string& text) {
  const bool mark = startsFormula(text) ||
                    (text.size() >= 2 && text[0] == '\'' && (text[1] == '\'' || startsFormula(text, 1)));
  return mark ? "'" + text : text;
}

inline std::string cellText(const std::string& cell) {
  const bool marked = cell.size() >= 2 && cell[0] == '\'' && (cell[1] == '\'' || startsFormula(cell, 1));
  return marked ? cell.substr(1) : cell;
}

}  // namespace attnscope
