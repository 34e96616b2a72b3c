// A text in a CSV cell as spreadsheets take it (docs/DESIGN.md §2.5, `export`): one that starts with
// =, +, -, @, a tab or a carriage return would run as a formula ("=HYPERLINK(…)"), so it is written
// with a leading ' (OWASP's advice for CSV injection) and shows as the text it is; reading a CSV
// takes the mark off again. So that every text reads back as it was, the rule is one predicate for
// both: a text of apostrophes, then a formula's first character, is marked ("'=x" → "''=x"), and
// a cell of one apostrophe before such a text is read without it. Other apostrophes stay as they
// are (GPT-2's tokens "''" and "'s" in anyone's CSV).
#pragma once
#include <string>

namespace attnscope {

// Apostrophes from `at`, then one of = + - @ tab CR.
inline bool needsTextMark(const std::string& text, std::size_t at = 0) {
  while (at < text.size() && text[at] == '\'') ++at;
  return at < text.size() && std::string("=+-@\t\r").find(text[at]) != std::string::npos;
}

inline std::string markedCellText(const std::string& text) { return needsTextMark(text) ? "'" + text : text; }

// cellText(markedCellText(s)) == s for every s.
inline std::string cellText(const std::string& cell) {
  return !cell.empty() && cell[0] == '\'' && needsTextMark(cell, 1) ? cell.substr(1) : cell;
}

}  // namespace attnscope
