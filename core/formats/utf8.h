// UTF-8 as Unicode defines it (RFC 3629): no overlong forms, no surrogates, nothing past U+10FFFF.
// One decoder for every place that meets user text — token names, file names, figure labels, the
// PyTorch script's string literals — so they agree on what is text.
#pragma once
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string>

namespace attnscope {

constexpr std::uint32_t kNotUtf8 = 0xFFFFFFFFu;

// The code point at s[*i], advancing *i past it; kNotUtf8 for a byte that does not start a
// well-formed sequence there (then *i advances by one byte).
inline std::uint32_t nextCodePoint(const std::string& s, std::size_t* i) {
  const auto c = static_cast<unsigned char>(s[*i]);
  const std::size_t len = c < 0x80                 ? 1
                          : c >= 0xC2 && c <= 0xDF ? 2
                          : c >= 0xE0 && c <= 0xEF ? 3
                          : c >= 0xF0 && c <= 0xF4 ? 4
                                                   : 0;
  if (len == 1) {
    ++*i;
    return c;
  }
  if (len == 0 || *i + len > s.size()) {
    ++*i;
    return kNotUtf8;
  }
  std::uint32_t cp = len == 2 ? c & 0x1Fu : len == 3 ? c & 0x0Fu : c & 0x07u;
  for (std::size_t k = 1; k < len; ++k) {
    const auto d = static_cast<unsigned char>(s[*i + k]);
    if ((d & 0xC0) != 0x80) {
      ++*i;
      return kNotUtf8;
    }
    cp = cp << 6 | (d & 0x3Fu);
  }
  const std::uint32_t least = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
  if (cp < least || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    ++*i;
    return kNotUtf8;
  }
  *i += len;
  return cp;
}

// Appends code point `cp` (at most U+10FFFF) to `out` as UTF-8: the encoder beside the decoder.
inline void appendUtf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | cp >> 6);
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | cp >> 12);
    out += static_cast<char>(0x80 | (cp >> 6 & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | cp >> 18);
    out += static_cast<char>(0x80 | (cp >> 12 & 0x3F));
    out += static_cast<char>(0x80 | (cp >> 6 & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// The byte offset of the first byte that is not UTF-8, or npos.
inline std::size_t firstNonUtf8(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t at = i;
    if (nextCodePoint(s, &i) == kNotUtf8) return at;
  }
  return std::string::npos;
}

// s with each character above U+FFFF (an emoji) written as its code point, "U+1F600": the UI's
// font draws 16-bit characters only, and two emoji would both read "?". A space parts a spelled
// code point from what would read as more of it: another (Unicode writes a sequence "U+1F44B
// U+1F3FD"; a hand and its skin tone had read "U+1F44BU+1F3FD"), a zero-width joiner, an ASCII
// letter or digit ("U+1F389 2024", not "U+1F3892024").
inline std::string beyondBmpSpelled(const std::string& s) {
  std::string out;
  bool spelled_last = false;
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t at = i;
    const std::uint32_t cp = nextCodePoint(s, &i);
    const bool spelled = cp != kNotUtf8 && cp > 0xFFFF;
    const bool runs_on = spelled || cp == 0x200D || (cp < 0x80 && std::isalnum(static_cast<int>(cp)));
    if (spelled_last && runs_on) out += ' ';
    if (spelled) {
      static const char kHex[] = "0123456789ABCDEF";
      std::string hex;
      for (std::uint32_t v = cp; v != 0; v >>= 4) hex.insert(hex.begin(), kHex[v & 0xF]);
      out += "U+" + hex;
    } else {
      out.append(s, at, i - at);
    }
    spelled_last = spelled;
  }
  return out;
}

// A noncharacter (U+FDD0–U+FDEF, U+xxFFFE, U+xxFFFF): valid UTF-8 that cairo and XML refuse.
inline bool isNoncharacter(std::uint32_t cp) { return (cp >= 0xFDD0 && cp <= 0xFDEF) || (cp & 0xFFFE) == 0xFFFE; }

}  // namespace attnscope
