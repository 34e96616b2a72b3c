// A text field's stand-ins (app/widgets/kept_text.h): what ImGui's 16-bit characters cannot hold
// goes through the field and comes back byte for byte.
#include "widgets/kept_text.h"

#include <gtest/gtest.h>

#include <random>

#include "formats/utf8.h"

namespace attnscope {
namespace {

// What ImGui's buffer may hold: UTF-8 of characters up to U+FFFF, no NUL.
void expectHoldable(const std::string& field) {
  for (std::size_t i = 0; i < field.size();) {
    const std::uint32_t cp = nextCodePoint(field, &i);
    ASSERT_NE(cp, kNotUtf8) << field;
    ASSERT_NE(cp, 0u) << field;
    ASSERT_LE(cp, 0xFFFFu) << field;
  }
}

TEST(StandIns, KeepEmojiBytesNotUtf8AndNuls) {
  const std::string texts[] = {
      "I love pizza \xF0\x9F\x8D\x95 and my dog \xF0\x9F\x90\xB6 says",    // 🍕 🐶
      "\xF0\x9F\x91\x8B\xF0\x9F\x8F\xBD\xE2\x80\x8D",                      // 👋🏽 and a joiner
      std::string("hel\0lo", 6),                                           // a NUL
      "GPT-2's half of an emoji: \xF0\x9F then \xFF and \xC3",             // bytes that are not UTF-8
      "private use of its own: \xEE\x80\x80 \xEE\x80\x81 \xF0\x9F\x8D\x95",  // U+E000, U+E001 beside 🍕
      "plain text, Łódź, 東京, ★",
  };
  for (const std::string& text : texts) {
    StandIns s;
    const std::string field = s.hide(text);
    expectHoldable(field);
    EXPECT_EQ(s.restore(field), text);
  }
}

TEST(StandIns, TheTextsOwnPrivateUseCharactersStayThemselves) {
  StandIns s;
  const std::string text = "\xEE\x80\x80 \xF0\x9F\x8D\x95";  // U+E000 of its own, then 🍕
  const std::string field = s.hide(text);
  EXPECT_EQ(field.substr(0, 3), "\xEE\x80\x80");  // not handed out: 🍕 stands as U+E001
  EXPECT_NE(field.substr(4), "\xEE\x80\x80");
  EXPECT_EQ(s.restore(field), text);
}

TEST(StandIns, APastedTextKeepsItsCharactersBesideTheFieldsOwn) {
  StandIns s;
  const std::string field = s.hide("my dog \xF0\x9F\x90\xB6");  // 🐶 → U+E000
  // Pasted: 🐶 again (its stand-in again), a new 🐱, and a U+E000 of the clipboard's own, which
  // must not come back as 🐶.
  const std::string pasted = s.hide(" and \xF0\x9F\x90\xB6 \xF0\x9F\x90\xB1 \xEE\x80\x80");
  expectHoldable(pasted);
  EXPECT_EQ(s.restore(field + pasted),
            "my dog \xF0\x9F\x90\xB6 and \xF0\x9F\x90\xB6 \xF0\x9F\x90\xB1 \xEE\x80\x80");
}

TEST(StandIns, ATypedEmojiComesBack) {
  StandIns s;
  std::string field = s.hide("cat ");
  const std::uint32_t stand_in = s.standInFor(0x1F431);  // 🐱, as the window's character callback gets it
  // Not of the Private Use Area, whose typed characters ImGui drops.
  ASSERT_GE(stand_in, StandIns::kTypedFirst);
  ASSERT_LE(stand_in, StandIns::kTypedLast);
  appendUtf8(field, stand_in);  // as ImGui writes it
  EXPECT_EQ(s.restore(field), "cat \xF0\x9F\x90\xB1");
  EXPECT_EQ(s.standInFor(0x1F431), stand_in);  // the same character, the same stand-in
}

// Any bytes at all — a model's text is GPT-2's bytes — and what is pasted into them, of any bytes too.
TEST(StandIns, AnyBytesComeBack) {
  std::mt19937 rng(7);
  const std::string pieces[] = {"a", " ", "\xF0\x9F\x8D\x95", "\xEE\x80\x80", "\xEF\xB7\x90", "\xC3\xA9",
                                "\xE6\x9D\xB1", "\xF0", "\x9F", std::string(1, '\0'), "\xFF", "\xED\xA0\x80"};
  const auto random_text = [&] {
    std::string t;
    for (int k = static_cast<int>(rng() % 24); k > 0; --k)
      t += rng() % 3 == 0 ? std::string(1, static_cast<char>(rng() % 256)) : pieces[rng() % std::size(pieces)];
    return t;
  };
  for (int round = 0; round < 3000; ++round) {
    StandIns s;
    const std::string text = random_text(), more = random_text();
    const std::string field = s.hide(text), pasted = s.hide(more);
    expectHoldable(field + pasted);
    ASSERT_EQ(s.restore(field), text);
    ASSERT_EQ(s.restore(field + pasted), text + more);
  }
}

TEST(StandIns, ClearedForAnotherText) {
  StandIns s;
  const std::string old_field = s.hide("\xF0\x9F\x8D\x95");
  s.clear();
  EXPECT_EQ(s.restore(old_field), old_field);  // no longer stands for anything
  EXPECT_EQ(s.restore(s.hide("\xF0\x9F\x90\xB6")), "\xF0\x9F\x90\xB6");
}

}  // namespace
}  // namespace attnscope
