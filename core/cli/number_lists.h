// Options that take a comma-separated list of whole numbers (--heads 0,3, --ids 464,2068,
// --layers 0,5): one parser for all of them.
#pragma once
#include <string>
#include <vector>

#include "engine/errors.h"

namespace attnscope {

// "0,3" → {0, 3}: at least one, each a whole number (the caller checks the range). Anything else
// is one InputError "OPTION: expected comma-separated WHAT, got 'LIST'".
inline std::vector<int> parseNumberList(const std::string& list, const std::string& option, const std::string& what) {
  std::vector<int> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = std::min(list.find(',', start), list.size());
    const std::string item = list.substr(start, end - start);
    std::size_t used = 0;
    int value = 0;
    try {
      value = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = std::string::npos;
    }
    if (item.empty() || used != item.size())
      throw InputError(option + ": expected comma-separated " + what + ", got '" + list + "'");
    out.push_back(value);
    if (end == list.size()) break;
    start = end + 1;
  }
  return out;
}

}  // namespace attnscope
