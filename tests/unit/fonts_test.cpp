// The characters the font atlas takes beside DejaVu's (widgets/fonts.h useTokenGlyphs): built
// again only when a text brings one it lacks, a vocabulary's put in at once where they are few.
#include "widgets/fonts.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "formats/utf8.h"

namespace attnscope {
namespace {

using Strings = std::vector<std::string>;

// One process, one atlas: the steps in order.
TEST(TokenGlyphs, GrowWithTheTextsAndStay) {
  EXPECT_FALSE(useTokenGlyphs({"Hello", " world", "café Привет α→β"}));  // DejaVu's own
  EXPECT_TRUE(useTokenGlyphs({"コーヒー"}));                             // kana: built again
  EXPECT_TRUE(useTokenGlyphs({"مرحبا"}));                                // Arabic: again
  EXPECT_FALSE(useTokenGlyphs({"コーヒー"}));                            // the kana stayed: a text typed back and forth
  EXPECT_FALSE(useTokenGlyphs({"ヒー", "مر", "plain"}));
  // A model's vocabulary: its few characters DejaVu lacks go in with its first text, once.
  const std::vector<std::uint32_t> vocabulary = {0xE9, 0x4E2D, 0x6587, 0x3042, 0x20AC};  // é 中 文 あ €
  EXPECT_TRUE(useTokenGlyphs({"plain"}, vocabulary));
  EXPECT_FALSE(useTokenGlyphs({"中文", "あ"}, vocabulary));
  EXPECT_FALSE(useTokenGlyphs({"x"}, vocabulary));
  EXPECT_TRUE(useTokenGlyphs({"日本"}, vocabulary));  // past it: a text's own, still
  // U+FFFD (GPT-2 has tokens of it) would become the glyph of every character the atlas lacks.
  EXPECT_FALSE(useTokenGlyphs({"x"}, {0xFFFD}));
  EXPECT_TRUE(useTokenGlyphs({"\uFFFD"}, {0xFFFD}));
  // A vocabulary of many (a CJK model's) is not put in: the atlas takes the text's alone.
  std::vector<std::uint32_t> many;
  for (std::uint32_t c = 0x5000; c < 0x5000 + 3000; ++c) many.push_back(c);
  EXPECT_FALSE(useTokenGlyphs({"plain"}, many));
  EXPECT_TRUE(useTokenGlyphs({"\u5001"}, many));
}

// A full atlas starts again from the text's characters, and keeps at most 4096.
TEST(TokenGlyphs, BoundedAtlas) {
  std::string ideographs;
  for (std::uint32_t c = 0x6000; c < 0x6000 + 5000; ++c) appendUtf8(ideographs, c);  // three bytes each
  EXPECT_TRUE(useTokenGlyphs({ideographs}));
  EXPECT_FALSE(useTokenGlyphs({ideographs.substr(0, 3 * 100)}));  // within what it holds
  EXPECT_TRUE(useTokenGlyphs({"コ"}));                            // full: the text's alone
  EXPECT_FALSE(useTokenGlyphs({"コ"}));
}

}  // namespace
}  // namespace attnscope
