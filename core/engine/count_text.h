// A count in words, for messages and the UI alike: "1 token", "3 tokens".
#pragma once
#include <string>

namespace attnscope {

// The count and its noun, plural (a regular one) unless the count is one.
inline std::string countOf(long n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

}  // namespace attnscope
