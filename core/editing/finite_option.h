// A floating-point option's check shared by attnscope and attnscope-cli: CLI11's Range compares,
// and every comparison with NaN is false, so "--memory-budget nan" passed it (a budget of −9e18
// bytes refused every workspace).
#pragma once
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdlib>
#include <string>

namespace attnscope {

// A finite number within [lo, hi], CLI11's Range message otherwise.
inline CLI::Validator finiteRange(double lo, double hi) {
  const CLI::Range range(lo, hi);
  return CLI::Validator(
      [range](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (end != text.c_str() && *end == '\0' && !std::isfinite(v))
          return "expected a finite number, got '" + text + "'";
        return range(text);
      },
      range.get_description());
}

}  // namespace attnscope
