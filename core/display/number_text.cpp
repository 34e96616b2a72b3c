#include "display/number_text.h"

#include <cmath>
#include <cstdio>

namespace attnscope {

namespace {

std::string withTrueMinus(std::string s) {
  if (s.empty() || s[0] != '-') return s;
  if (s.find_first_not_of("-0.") == std::string::npos) return s.substr(1);  // "-0.00" is 0
  return "−" + s.substr(1);
}

// A value too small for `decimals` decimals ("0.00" would say zero) in 1 + `digits` significant
// digits, scientific: "3e−4", "−5e−3", "1.2e−7"; true minus in the mantissa and the exponent.
std::string tinyLabel(float v, int digits = 0) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*e", digits, static_cast<double>(v));  // "-3e-04"
  std::string s = buf;
  const std::size_t e = s.find('e');
  std::string mantissa = s.substr(0, e), exponent = s.substr(e + 1);
  const bool negative_exponent = exponent[0] == '-';
  exponent = exponent.substr(
      exponent.find_first_not_of("+-0") == std::string::npos ? exponent.size() - 1 : exponent.find_first_not_of("+-0"));
  return withTrueMinus(mantissa) + "e" + (negative_exponent ? "−" : "") + exponent;
}

// Whether v, nonzero, prints as zero with `decimals` decimals ("0.000", "−0.000").
bool roundsToZero(float v, int decimals) {
  if (v == 0 || std::isinf(v)) return false;
  const std::string s = formatFixed(v, decimals);
  return s.find_first_of("123456789") == std::string::npos;
}

}  // namespace

std::string formatFixed(float v, int decimals) {
  if (std::isinf(v)) return v < 0 ? "−∞" : "∞";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, static_cast<double>(v));
  return withTrueMinus(buf);
}

std::string formatFactor(float v, int decimals) {
  const std::string s = formatFixed(v, decimals);
  return s.rfind("−", 0) == 0 ? "(" + s + ")" : s;
}

std::string formatPercent(float p) {
  const float pct = p * 100;
  if (!std::isfinite(pct) || pct < 0 || !roundsToZero(pct, 1)) return formatFixed(pct, 1) + " %";
  if (pct >= 1e-4f) {
    int decimals = 1 - static_cast<int>(std::floor(std::log10(static_cast<double>(pct)) + 1e-6));
    // Rounded up to the next power of ten (0.009996 → 0.0100) it would show three digits.
    const double scale = std::pow(10.0, decimals);
    if (std::round(static_cast<double>(pct) * scale) >= 100) --decimals;
    return formatFixed(pct, decimals) + " %";
  }
  return tinyLabel(pct, 1) + " %";
}

std::string formatShort(float v) {
  if (std::isinf(v)) return v < 0 ? "−∞" : "∞";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3g", static_cast<double>(v));
  return withTrueMinus(buf);
}

const std::array<CellFormat, 4>& cellFormats() {
  static const std::array<CellFormat, 4> all = {CellFormat::Decimals4, CellFormat::Decimals3, CellFormat::Decimals2,
                                                CellFormat::Compact};
  return all;
}

const char* cellFormatId(CellFormat f) {
  switch (f) {
    case CellFormat::Decimals4: return "decimals4";
    case CellFormat::Decimals3: return "decimals3";
    case CellFormat::Decimals2: return "decimals2";
    case CellFormat::Compact: return "compact";
  }
  return "";
}

std::string cellLabel(float v, CellFormat f) {
  if (!(std::fabs(v) < 9.995f) && !std::isinf(v)) return formatShort(v);
  const int decimals = f == CellFormat::Decimals4 ? 4 : f == CellFormat::Decimals3 ? 3 : 2;
  if (roundsToZero(v, decimals)) return tinyLabel(v);  // never "0.00" for a value that is not 0
  switch (f) {
    case CellFormat::Decimals4: return formatFixed(v, 4);
    case CellFormat::Decimals3: return formatFixed(v, 3);
    case CellFormat::Decimals2: return formatFixed(v, 2);
    case CellFormat::Compact: {
      if (v == 0) return "0";             // an exact zero only: a tiny value took the branch above
      std::string s = formatFixed(v, 2);  // "0.29" → ".29", "−0.11" → "−.11"; "1.00" stays
      const std::string minus = "−";
      const std::size_t digits = s.rfind(minus, 0) == 0 ? minus.size() : 0;
      if (s.compare(digits, 2, "0.") == 0) s.erase(digits, 1);
      return s;
    }
  }
  return formatFixed(v, 4);
}

}  // namespace attnscope
