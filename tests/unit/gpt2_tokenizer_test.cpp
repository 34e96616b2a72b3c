// GPT-2's tokenizer (core/lm/gpt2_tokenizer.h, docs/DESIGN.md §2.6) on small vocabularies made
// here: the 256 byte tokens plus the results of a few merges. The words of encoder.py's regex
// (contractions, whitespace runs and the lookahead, Python's \s), BPE by rank exactly as encoder.py's
// loop (one round merges every occurrence of the lowest pair), bytes that no merge covers,
// <|endoftext|>, invalid UTF-8, round trips of arbitrary bytes, threads, and one message for each
// kind of bad file. GPT-2's own vocabulary is the oracle test's (tests/oracle/test_tokenizer_oracle.py).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "engine/errors.h"
#include "formats/utf8.h"
#include "lm/gpt2_tokenizer.h"
#include "lm/vocabulary_tokenizer.h"
#include "test_support.h"

namespace attnscope {
namespace {

using test::errorOf;
using Strings = std::vector<std::string>;

// bytes_to_unicode's character of byte b, as UTF-8 (written out independently of the tokenizer).
std::string byteChar(int b) {
  const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
  int cp = b;
  if (!printable) {
    cp = 256;
    for (int k = 0; k < b; ++k)
      if (!((k >= '!' && k <= '~') || (k >= 0xA1 && k <= 0xAC) || (k >= 0xAE && k <= 0xFF))) ++cp;
  }
  if (cp < 0x80) return std::string(1, static_cast<char>(cp));
  return {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
}
// A text's bytes spelled as vocabulary tokens are ("a b" → "aĠb").
std::string spelled(const std::string& bytes) {
  std::string s;
  for (unsigned char c : bytes) s += byteChar(c);
  return s;
}

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\')
      out += '\\', out += static_cast<char>(c);
    else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else
      out += static_cast<char>(c);
  }
  return out + "\"";
}

// A vocabulary: the 256 byte tokens (ids 0 … 255 by byte), then each merge's result, then
// <|endoftext|> (unless told not to). Merges are written with their text bytes ("a b", " t h").
struct Files {
  std::string vocab, merges;
};
Files tiny(const Strings& merges, bool end_of_text = true) {
  Strings tokens;
  for (int b = 0; b < 256; ++b) tokens.push_back(byteChar(b));
  std::string merge_lines = "#version: 0.2\n";
  for (const std::string& m : merges) {
    const std::size_t space = m.find(' ', 1);  // the first part may begin with a space (" t")
    const std::string a = spelled(m.substr(0, space)), b = spelled(m.substr(space + 1));
    merge_lines += a + " " + b + "\n";
    if (std::find(tokens.begin(), tokens.end(), a + b) == tokens.end()) tokens.push_back(a + b);
  }
  if (end_of_text) tokens.push_back("<|endoftext|>");
  std::string vocab = "{";
  for (std::size_t i = 0; i < tokens.size(); ++i)
    vocab += (i ? ", " : "") + jsonString(tokens[i]) + ": " + std::to_string(i);
  return {vocab + "}", merge_lines};
}
std::shared_ptr<const Gpt2Tokenizer> make(const Strings& merges, bool end_of_text = true) {
  const Files f = tiny(merges, end_of_text);
  return Gpt2Tokenizer::fromContents(f.vocab, f.merges, "tiny");
}
// What encode() gives, as the bytes of each token.
Strings pieces(const Gpt2Tokenizer& t, const std::string& text) {
  Strings out;
  for (int id : t.encode(text)) out.push_back(t.tokenBytes(id));
  return out;
}

TEST(Words, Contractions) {
  const auto t = make({});
  for (const char* c : {"s", "t", "re", "ve", "m", "ll", "d"})
    EXPECT_EQ(t->words(std::string("it'") + c), (Strings{"it", std::string("'") + c})) << c;
  // Only lower case: encoder.py's regex has no IGNORECASE ('S is a quote, then a word).
  EXPECT_EQ(t->words("IT'S"), (Strings{"IT", "'", "S"}));
  EXPECT_EQ(t->words("we'Re"), (Strings{"we", "'", "Re"}));
  // A contraction is matched wherever it stands, even inside a word or after a space.
  EXPECT_EQ(t->words("'sup"), (Strings{"'s", "up"}));
  EXPECT_EQ(t->words("x 's"), (Strings{"x", " '", "s"}));
  EXPECT_EQ(t->words("don't"), (Strings{"don", "'t"}));
}

TEST(Words, LettersNumbersAndOthers) {
  const auto t = make({});
  EXPECT_EQ(t->words("Hello world"), (Strings{"Hello", " world"}));
  EXPECT_EQ(t->words("abc123def"), (Strings{"abc", "123", "def"}));
  EXPECT_EQ(t->words(" 2024 ½"), (Strings{" 2024", " ½"}));  // ½ is \p{N} (No)
  EXPECT_EQ(t->words("a, b!?"), (Strings{"a", ",", " b", "!?"}));
  EXPECT_EQ(t->words("naïve café"), (Strings{"naïve", " café"}));
  EXPECT_EQ(t->words("日本語 テスト"), (Strings{"日本語", " テスト"}));
  EXPECT_EQ(t->words("x=1;"), (Strings{"x", "=", "1", ";"}));
  EXPECT_EQ(t->words(" 😀😀"), (Strings{" 😀😀"}));
}

TEST(Words, WhitespaceRunsAndTheLookahead) {
  const auto t = make({});
  // \s+(?!\S): a run of spaces before a word leaves its last space to the word.
  EXPECT_EQ(t->words("a   b"), (Strings{"a", "  ", " b"}));
  EXPECT_EQ(t->words("a b"), (Strings{"a", " b"}));
  EXPECT_EQ(t->words("trailing  "), (Strings{"trailing", "  "}));
  EXPECT_EQ(t->words("\n\n"), (Strings{"\n\n"}));
  EXPECT_EQ(t->words("a\n\nb"), (Strings{"a", "\n", "\n", "b"}));
  EXPECT_EQ(t->words("a\n\n b"), (Strings{"a", "\n\n", " b"}));
  EXPECT_EQ(t->words("a\t b"), (Strings{"a", "\t", " b"}));
  EXPECT_EQ(t->words("  ,"), (Strings{" ", " ,"}));
  EXPECT_EQ(t->words(""), Strings{});
}

TEST(Words, PythonsWhiteSpace) {
  const auto t = make({});
  // U+0085 is \s in Python (and in PCRE2), not in JavaScript: " \u0085b" is " ", "\u0085", "b".
  EXPECT_EQ(t->words("a \u0085b"), (Strings{"a", " ", "\u0085", "b"}));
  // U+FEFF is not \s in Python (it is in JavaScript): a space and it are one word.
  EXPECT_EQ(t->words("a \uFEFFb"), (Strings{"a", " \uFEFF", "b"}));
  // U+180E is not \s in Python (PCRE2's \s has it): likewise.
  EXPECT_EQ(t->words("a \u180Eb"), (Strings{"a", " \u180E", "b"}));
  // U+3000 and U+00A0 are.
  EXPECT_EQ(t->words("a\u3000\u3000b"), (Strings{"a", "\u3000", "\u3000", "b"}));
  EXPECT_EQ(t->words("a\u00A0b"), (Strings{"a", "\u00A0", "b"}));
}

TEST(Bpe, MergesByRank) {
  // "b c" ranks before "a b": abc → a bc; the other way round → ab c.
  EXPECT_EQ(pieces(*make({"b c", "a b"}), "abc"), (Strings{"a", "bc"}));
  EXPECT_EQ(pieces(*make({"a b", "b c"}), "abc"), (Strings{"ab", "c"}));
  EXPECT_EQ(pieces(*make({"a b", "b c", "ab c"}), "abc"), (Strings{"abc"}));
  // Overlapping occurrences of one pair merge left to right.
  EXPECT_EQ(pieces(*make({"a a"}), "aaa"), (Strings{"aa", "a"}));
  EXPECT_EQ(pieces(*make({"a a"}), "aaaa"), (Strings{"aa", "aa"}));
  EXPECT_EQ(pieces(*make({"a a", "aa aa"}), "aaaaa"), (Strings{"aaaa", "a"}));
  EXPECT_EQ(pieces(*make({"a a", "aa a"}), "aaaaa"), (Strings{"aa", "aaa"}));  // aa aa a, then aa aaa
  // Words are merged on their own: no merge across " b".
  EXPECT_EQ(pieces(*make({"a  ", "  b"}), "a b"), (Strings{"a", " b"}));
}

TEST(Bpe, OneRoundMergesEveryOccurrenceFirst) {
  // encoder.py merges every "a b" of the word before it looks at the pairs that made: with "ab a"
  // ranked first, "abab" is ab ab (a merge of "ab a" as soon as it appears would give aba b).
  EXPECT_EQ(pieces(*make({"ab a", "a b"}), "abab"), (Strings{"ab", "ab"}));
  EXPECT_EQ(pieces(*make({"ab a", "a b"}), "ab a"), (Strings{"ab", " ", "a"}));
  // Merges in the order of learning, the usual case.
  EXPECT_EQ(pieces(*make({"a b", "ab a"}), "abab"), (Strings{"ab", "ab"}));
  EXPECT_EQ(pieces(*make({"a b", "ab a"}), "aba"), (Strings{"aba"}));
}

TEST(Bpe, BytesNoMergeCovers) {
  const auto t = make({"  w", " w o"});
  const std::vector<int> ids = t->encode("é wo\n");
  // é is two bytes, each its own token, spelled as bytes_to_unicode spells them.
  ASSERT_EQ(ids.size(), 4u);
  EXPECT_EQ(t->tokenString(ids[0]), "Ã");
  EXPECT_EQ(t->tokenString(ids[1]), "©");
  EXPECT_EQ(t->tokenString(ids[2]), "Ġwo");
  EXPECT_EQ(t->tokenString(ids[3]), "Ċ");
  EXPECT_EQ(t->tokenBytes(ids[2]), " wo");
  EXPECT_EQ(t->decode(ids), "é wo\n");
  for (int b = 0; b < 256; ++b) EXPECT_EQ(t->encode(std::string(1, static_cast<char>(b))), std::vector<int>{b});
}

TEST(Bpe, LongWordsStayFast) {
  // One word of 200 000 letters: encoder.py's loop would take minutes; merges are O(n log n) here.
  const auto t = make({"a a", "aa aa", "aaaa aaaa"});
  const std::string text(200000, 'a');
  const std::vector<int> ids = t->encode(text);
  EXPECT_EQ(ids.size(), 25000u);
  EXPECT_EQ(t->decode(ids), text);
}

TEST(EndOfText, IsOneTokenAndSplitsTheText) {
  const auto t = make({"a b"});
  const int eot = t->endOfText();
  EXPECT_EQ(eot, t->vocabularySize() - 1);
  EXPECT_EQ(t->tokenString(eot), "<|endoftext|>");
  EXPECT_EQ(t->encode("<|endoftext|>"), std::vector<int>{eot});
  const std::vector<int> ids = t->encode("ab<|endoftext|>ab");
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids[1], eot);
  EXPECT_EQ(t->tokenBytes(ids[0]), "ab");
  // The text before it is split on its own: two spaces at its end are one word, not " " + " <".
  EXPECT_EQ(t->words("x  <|endoftext|> y"), (Strings{"x", "  ", "<|endoftext|>", " y"}));
  EXPECT_EQ(t->decode(t->encode("x  <|endoftext|><|endoftext|> y")), "x  <|endoftext|><|endoftext|> y");
  // Half of one is text.
  EXPECT_EQ(t->words("<|endoftext|"), (Strings{"<|", "endoftext", "|"}));
  // A vocabulary without it: ordinary text, and endOfText() says so.
  const auto plain = make({}, false);
  EXPECT_EQ(plain->endOfText(), -1);
  EXPECT_EQ(plain->words("<|endoftext|>"), (Strings{"<|", "endoftext", "|>"}));
}

TEST(InvalidUtf8, EachBadByteIsItsByteToken) {
  const auto t = make({"a b"});
  const std::string bad[] = {"\xFF", "\xC3", "\xC0\x80", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\x80"};
  for (const std::string& b : bad) {
    std::vector<int> want;
    for (unsigned char c : b) want.push_back(c);
    EXPECT_EQ(t->encode(b), want);
  }
  // Valid text on each side is split on its own; the bytes stay in order.
  EXPECT_EQ(t->words("ab\xFF cd"), (Strings{"ab", "\xFF", " cd"}));
  EXPECT_EQ(t->words("a \xC3"), (Strings{"a", " ", "\xC3"}));
  EXPECT_EQ(pieces(*t, "ab\xE2\x82"), (Strings{"ab", "\xE2", "\x82"}));
  EXPECT_EQ(t->words("\xE2\x82\xAC"), (Strings{"\xE2\x82\xAC"}));  // € is valid
}

TEST(RoundTrip, ArbitraryBytes) {
  const auto t = make({"a b", "ab c", "  t", " t h", "\xC3 \xA9", "' s", "\n \n"});
  std::mt19937 rng(20240601);
  const std::string alphabet[] = {
      "a",  "b",  "c", " ",        "\n", "'s",   "é",           "\xC3", "\xA9", "\xFF", "<|endoftext|>",
      "\t", "日", "😀", "\xF0\x9F", "1",  "\x00", "\xE2\x80\xAF"};
  for (int trial = 0; trial < 2000; ++trial) {
    std::string text;
    const int n = static_cast<int>(rng() % 40);
    for (int k = 0; k < n; ++k) {
      if (rng() % 4 == 0)
        text += static_cast<char>(rng() % 256);
      else
        text += alphabet[rng() % std::size(alphabet)];
    }
    const std::vector<int> ids = t->encode(text);
    ASSERT_EQ(t->decode(ids), text) << "trial " << trial;
    std::string joined;
    for (const std::string& w : t->words(text)) joined += w;
    ASSERT_EQ(joined, text) << "trial " << trial;
  }
}

TEST(Threads, EncodeConcurrently) {
  const auto t = make({"a b", "ab c", "  t", " t h", "t h"});
  std::vector<std::string> texts;
  for (int i = 0; i < 200; ++i)
    texts.push_back("abc the " + std::to_string(i) + " thth abcab " + std::string(i % 7, ' '));
  std::vector<std::vector<int>> want;
  {
    const auto fresh = make({"a b", "ab c", "  t", " t h", "t h"});  // an empty cache
    for (const std::string& s : texts) want.push_back(fresh->encode(s));
  }
  std::vector<std::thread> threads;
  std::vector<int> wrong(4, 0);
  for (int k = 0; k < 4; ++k)
    threads.emplace_back([&, k] {
      for (int round = 0; round < 20; ++round)
        for (std::size_t i = 0; i < texts.size(); ++i)
          wrong[k] += t->encode(texts[(i + k * 31) % texts.size()]) != want[(i + k * 31) % texts.size()];
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong, std::vector<int>(4, 0));
}

TEST(Ids, UnknownIdsAreRefused) {
  const auto t = make({});
  EXPECT_EQ(t->vocabularySize(), 257);
  EXPECT_EQ(errorOf([&] { t->tokenString(257); }), "token id 257 is not in the vocabulary");
  EXPECT_EQ(errorOf([&] { t->decode({1, -1}); }), "token id -1 is not in the vocabulary");
  // Ids may have gaps (an id no token has is refused too).
  const Files f = tiny({});
  const auto gap = Gpt2Tokenizer::fromContents(f.vocab.substr(0, f.vocab.size() - 1) + ", \"zz\": 300}", f.merges,
                                               "gap");
  EXPECT_EQ(gap->vocabularySize(), 301);
  EXPECT_EQ(gap->tokenString(300), "zz");
  EXPECT_EQ(errorOf([&] { gap->tokenBytes(299); }), "token id 299 is not in the vocabulary");
  // A token that is not byte-level text (an added token) stands for its own UTF-8.
  const auto added = Gpt2Tokenizer::fromContents(f.vocab.substr(0, f.vocab.size() - 1) + ", \"中\": 300}", f.merges,
                                                 "added");
  EXPECT_EQ(added->tokenBytes(300), "中");
}

// A trained text's tokens (lm/vocabulary_tokenizer.h): the model's ids, its own names.
TEST(NamedTokens, CharactersOneByOne) {
  const auto t = characterTokenizer({" ", "a", "b", "é", "😀"});
  EXPECT_EQ(t->encode("ab é😀 a"), (std::vector<int>{1, 2, 0, 3, 4, 0, 1}));
  EXPECT_EQ(t->decode({4, 0, 3}), "😀 é");
  EXPECT_EQ(t->tokenString(3), "é");
  EXPECT_EQ(t->vocabularySize(), 5);
  EXPECT_EQ(t->endOfText(), -1);
  EXPECT_EQ(errorOf([&] { t->encode("ab\nc"); }),
            "text: “\\n” is not one of the 5 characters the model was trained on (character 3)");
  EXPECT_EQ(errorOf([&] { t->encode("a\xff"); }), "text: not UTF-8 at byte 2 (the model's tokens are characters)");
  EXPECT_EQ(errorOf([&] { t->decode({5}); }), "token id 5 is not in the vocabulary (0 … 4)");
  EXPECT_EQ(errorOf([&] {
              characterTokenizer({"a", "bc"});
            }),
            "vocabulary: “bc” is not one character, as a text's characters are");
  EXPECT_EQ(errorOf([&] { characterTokenizer({"a", "b", "a"}); }), "vocabulary: “a” is tokens 0 and 2");
  EXPECT_TRUE(allSingleCharacters({" ", "é", "😀"}));
  EXPECT_FALSE(allSingleCharacters({"a", "Ġb"}));
  EXPECT_FALSE(allSingleCharacters({""}));
}

TEST(NamedTokens, SomeOfGpt2sByItsTokenizer) {
  const auto gpt2 = make({"a b", "  ab"});  // ab, then " ab" of " " and "ab"
  // The model's own order: its ids, not GPT-2's (" ab" is GPT-2's 257 and the model's 0).
  const auto t = gpt2SubsetTokenizer({"Ġab", "<|endoftext|>", "a", "ab"}, gpt2);
  EXPECT_EQ(t->encode("ab ab<|endoftext|>a"), (std::vector<int>{3, 0, 1, 2}));
  EXPECT_EQ(t->decode({3, 0, 2}), "ab aba");
  EXPECT_EQ(t->tokenBytes(0), " ab");
  EXPECT_EQ(t->endOfText(), 1);
  EXPECT_EQ(errorOf([&] { t->encode("ab b"); }),
            "text: “Ġ” (GPT-2's token 32) is not one of the 4 tokens the model was trained on (token 2)");
  EXPECT_EQ(errorOf([&] {
              gpt2SubsetTokenizer({"a", "zz"}, gpt2);
            }),
            "vocabulary: “zz”, one of the model's tokens, is not in the GPT-2 tokenizer's");
  std::string why;
  EXPECT_EQ(tokenizerOfNames({{"a", "Ġb"}, "gpt2"}, "/nonexistent", "m.pth", &why), nullptr);
  EXPECT_NE(why.find("vocab.json + merges.txt"), std::string::npos) << why;
  EXPECT_EQ(errorOf([&] {
              tokenizerOfNames({{"ab"}, "characters"}, ".", "m.pth", &why);
            }),
            "m.pth: its metadata's vocabulary: “ab” is not one character, as a text's characters are");
}

// A token spelled in GPT-2's byte characters says what it reads as: “ café” for "ĠcafÃ©", an
// emoji's first bytes as bytes; an ASCII token (Ġ and all) says nothing more.
TEST(NamedTokens, WhatAByteSpelledTokenReadsAs) {
  const auto t = make({"\xc3 \xa9", "f \xc3\xa9", "  f\xc3\xa9", "\xf0 \x9f", "a b"});
  const auto idOf = [&](const std::string& bytes) {
    for (int id = 0; id < t->vocabularySize(); ++id)
      if (t->tokenBytes(id) == bytes) return id;
    return -1;
  };
  EXPECT_EQ(t->tokenString(idOf(" f\xc3\xa9")), "Ġf\xc3\x83\xc2\xa9");  // "ĠfÃ©"
  EXPECT_EQ(tokenReading(*t, idOf(" f\xc3\xa9")), "reads “ fé”");
  EXPECT_EQ(tokenReading(*t, idOf("\xc3\xa9")), "reads “é”");
  EXPECT_EQ(tokenReading(*t, idOf("\xf0\x9f")), "bytes F0 9F (part of a character)");
  EXPECT_EQ(tokenReading(*t, idOf("\xa9")), "bytes A9 (part of a character)");
  EXPECT_EQ(tokenReading(*t, idOf("ab")), "");
  EXPECT_EQ(tokenReading(*t, idOf(" ")), "");
  EXPECT_EQ(tokenReading(*t, -1), "");
  EXPECT_EQ(tokenReading(*t, t->vocabularySize()), "");
}

// The characters its tokens decode to: é from "Ã©" and "ĠfÃ©", コ (three bytes merged), each once;
// not the lone bytes 0x80 … 0xFF (none is a character alone), nor an emoji's first two bytes.
TEST(NamedTokens, TheCharactersTokensDecodeTo) {
  EXPECT_EQ(tokenCharacters(*make({"a b"})), std::vector<std::uint32_t>{});
  const auto t = make({"\xc3 \xa9", "f \xc3\xa9", "\xe3 \x82", "\xe3\x82 \xb3", "\xf0 \x9f", "\xce \xb1"});
  EXPECT_EQ(tokenCharacters(*t), (std::vector<std::uint32_t>{0xE9, 0x3B1, 0x30B3}));  // é α コ
  // A vocabulary whose ids skip some (fuzz_bpe: it had thrown "token id 268 is not in the vocabulary").
  const Files f = tiny({"\xc3 \xa9"});
  const std::string gap = f.vocab.substr(0, f.vocab.size() - 1) + ", \"x\u00e9\": 300}";
  EXPECT_EQ(tokenCharacters(*Gpt2Tokenizer::fromContents(gap, f.merges, "gap")), std::vector<std::uint32_t>{0xE9});
}

// The message fromContents gives for these files ("" if it accepts them).
std::string refusal(const std::string& vocab, const std::string& merges) {
  return errorOf([&] { Gpt2Tokenizer::fromContents(vocab, merges, "v.json", "m.txt"); });
}

TEST(BadFiles, Vocabulary) {
  const Files ok = tiny({"a b"});
  EXPECT_EQ(refusal(ok.vocab, ok.merges), "");
  const std::string head = ok.vocab.substr(0, ok.vocab.size() - 1);  // without the closing brace
  EXPECT_EQ(refusal("[1, 2]", ok.merges),
            "v.json: a vocabulary is a JSON object of token → id, and this is not an object");
  EXPECT_EQ(refusal("7", ok.merges), "v.json: a vocabulary is a JSON object of token → id, and this is not an object");
  EXPECT_EQ(refusal("{\"a\": 1", ok.merges), "v.json: not valid JSON (at byte 8)");
  EXPECT_EQ(refusal("", ok.merges), "v.json: not valid JSON (at byte 1)");
  EXPECT_EQ(refusal("{}", ""), "v.json: the vocabulary is empty");
  EXPECT_EQ(refusal(head + ", \"zz\": 1.5}", ok.merges), "v.json: the id of token \"zz\" is 1.5, not an integer");
  EXPECT_EQ(refusal(head + ", \"zz\": \"7\"}", ok.merges),
            "v.json: the id of token \"zz\" is a string, not an integer");
  EXPECT_EQ(refusal(head + ", \"zz\": [7]}", ok.merges), "v.json: the id of token \"zz\" is an array, not an integer");
  EXPECT_EQ(refusal(head + ", \"zz\": {}}", ok.merges), "v.json: the id of token \"zz\" is an object, not an integer");
  EXPECT_EQ(refusal(head + ", \"zz\": null}", ok.merges), "v.json: the id of token \"zz\" is null, not an integer");
  EXPECT_EQ(refusal(head + ", \"zz\": -1}", ok.merges), "v.json: the id of token \"zz\" is -1, outside 0 … 16777215");
  EXPECT_EQ(refusal(head + ", \"zz\": 99999999999999999999}", ok.merges),
            "v.json: the id of token \"zz\" is 99999999999999999999, not an integer");
  EXPECT_EQ(refusal(head + ", \"zz\": 1099511627776}", ok.merges),
            "v.json: the id of token \"zz\" is 1099511627776, outside 0 … 16777215");
  EXPECT_EQ(refusal(head + ", \"zz\": 16777216}", ok.merges),
            "v.json: the id of token \"zz\" is 16777216, outside 0 … 16777215");
  EXPECT_EQ(refusal(head + ", \"zz\": 33}", ok.merges), "v.json: the tokens \"!\" and \"zz\" have the same id 33");
  EXPECT_EQ(refusal(head + ", \"a\": 300}", ok.merges), "v.json: the token \"a\" is there twice");
  EXPECT_EQ(refusal(head + ", \"\": 300}", ok.merges), "v.json: the empty string is not a token");
  // The byte tokens: all 256.
  EXPECT_EQ(refusal("{\"a\": 0}", ""),
            "v.json: there is no token for the byte 0x00 (\"Ā\"); a byte-level vocabulary has all 256");
  std::string without_10 = ok.vocab;
  const std::string newline = "\"Ċ\": 10";
  without_10.replace(without_10.find(newline), newline.size(), "\"Ċx\": 10");
  EXPECT_EQ(refusal(without_10, ok.merges),
            "v.json: there is no token for the byte 0x0A (\"Ċ\"); a byte-level vocabulary has all 256");
  // Too large: refused before it is read.
  EXPECT_EQ(refusal(std::string((64 << 20) + 1, ' '), ok.merges),
            "v.json: 67108865 bytes is larger than the limit of 67108864 bytes");
}

TEST(BadFiles, Merges) {
  const Files ok = tiny({"a b", "b c", "ab c"});
  EXPECT_EQ(refusal(ok.vocab, ok.merges), "");
  EXPECT_EQ(refusal(ok.vocab, "a b\r\nb c\r\n"), "");             // CRLF
  EXPECT_EQ(refusal(ok.vocab, "a b\nb c"), "");                   // no newline at the end
  EXPECT_EQ(refusal(ok.vocab, ""), "");                           // no merges: bytes only
  EXPECT_EQ(refusal(ok.vocab, "#version: 0.2\n\nab c\n\n"), "");  // blank lines
  EXPECT_EQ(refusal(ok.vocab, "#version: 0.2\na b\nxyz\n"),
            "m.txt:3: expected two tokens separated by a space, got \"xyz\"");
  EXPECT_EQ(refusal(ok.vocab, "a b c\n"), "m.txt:1: expected two tokens separated by a space, got \"a b c\"");
  EXPECT_EQ(refusal(ok.vocab, "a  b\n"), "m.txt:1: expected two tokens separated by a space, got \"a  b\"");
  EXPECT_EQ(refusal(ok.vocab, " a\n"), "m.txt:1: expected two tokens separated by a space, got \" a\"");
  EXPECT_EQ(refusal(ok.vocab, "a\tb\n"), "m.txt:1: expected two tokens separated by a space, got \"a\\tb\"");
  EXPECT_EQ(refusal(ok.vocab, "#version: 0.2\na b\nb zq\n"), "m.txt:3: \"zq\" is not in the vocabulary (v.json)");
  EXPECT_EQ(refusal(ok.vocab, "#version: 0.2\nc a\n"),
            "m.txt:2: the merge \"c a\" makes \"ca\", which is not in the vocabulary (v.json)");
  EXPECT_EQ(refusal(ok.vocab, "a b\nb c\na b\n"), "m.txt:3: the merge \"a b\" is already on line 1");
  // A "#version" line anywhere but first is a merge like any other.
  EXPECT_EQ(refusal(ok.vocab, "a b\n#version: 0.2\n"), "m.txt:2: \"#version:\" is not in the vocabulary (v.json)");
  // Bytes that are not UTF-8 are shown as U+FFFD, never copied into the message.
  EXPECT_EQ(refusal(ok.vocab, "a \xFF\n"), "m.txt:1: \"\xEF\xBF\xBD\" is not in the vocabulary (v.json)");
  // The three-argument form names SOURCE[vocab] and SOURCE[merges].
  EXPECT_EQ(errorOf([&] { Gpt2Tokenizer::fromContents(ok.vocab, "qq r\n", "fuzz"); }),
            "fuzz[merges]:1: \"qq\" is not in the vocabulary (fuzz[vocab])");
}

// Tokens no merge makes: a merges file cut short or empty is taken (a byte-level vocabulary may
// have no merges), and said, naming the file; added tokens are made by no merge in any vocabulary.
TEST(BadFiles, MergesThatMakeTooFewTokens) {
  const Files ok = tiny({"a b", "b c", "ab c"});
  const auto whole = Gpt2Tokenizer::fromContents(ok.vocab, ok.merges, "v.json", "m.txt");
  EXPECT_EQ(whole->missingMerges(), "");
  const auto none = Gpt2Tokenizer::fromContents(ok.vocab, "", "v.json", "m.txt");
  EXPECT_EQ(pieces(*none, "abc"), (Strings{"a", "b", "c"}));
  EXPECT_EQ(none->missingMerges(),
            "m.txt: no merge makes 3 of the vocabulary's 3 tokens of two or more bytes (the file has 0 merges): text "
            "splits into other tokens than the model learned. Is the file whole?");
  const auto cut = Gpt2Tokenizer::fromContents(ok.vocab, "#version: 0.2\na b\n", "v.json", "m.txt");
  EXPECT_NE(cut->missingMerges().find("no merge makes 2 of the vocabulary's 3 tokens"), std::string::npos);
  // Bytes only, and added tokens (their own UTF-8, or spelled "<…>" or "[…]"): nothing missing.
  const Files bytes = tiny({});
  const std::string added = bytes.vocab.substr(0, bytes.vocab.size() - 1) +
                            ", \"<pad>\": 257, \"中文\": 258, \"[PAD]\": 259}";
  EXPECT_EQ(Gpt2Tokenizer::fromContents(added, "", "v.json", "m.txt")->missingMerges(), "");
  // A few other tokens no merge makes beside a whole file (a fine-tune's added "ĉĉĉĉ"): not said; a
  // file cut short by more than 16 tokens: said.
  Strings pairs;
  for (char a = 'a'; a <= 'z'; ++a)
    for (char b = 'a'; b <= 'h'; ++b) pairs.push_back(std::string(1, a) + " " + b);  // 208 merges
  const Files big = tiny(pairs);
  std::string extra = big.vocab.substr(0, big.vocab.size() - 1);
  for (int k = 0; k < 5; ++k) extra += ", \"xyzzy" + std::to_string(k) + "\": " + std::to_string(1000 + k);
  EXPECT_EQ(Gpt2Tokenizer::fromContents(extra + "}", big.merges, "v.json", "m.txt")->missingMerges(), "");
  const std::string cut_short = big.merges.substr(0, big.merges.find("\nc a\n") + 1);  // 16 of 208
  EXPECT_NE(Gpt2Tokenizer::fromContents(big.vocab, cut_short, "v.json", "m.txt")
                ->missingMerges()
                .find(
                    "no merge makes 192 of the vocabulary's 208 tokens of two or more bytes (the file has 16 merges)"),
            std::string::npos);
}

TEST(BadFiles, FilesAndFolders) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("attnscope_tokenizer_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const Files ok = tiny({"a b"});
  const auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name, std::ios::binary) << text;
  };
  EXPECT_EQ(errorOf([&] { Gpt2Tokenizer::fromFolder(dir.string()); }),
            dir.string() +
                ": holds no GPT-2 tokenizer (looked for vocab.json + merges.txt, then encoder.json + vocab.bpe)");
  EXPECT_EQ(errorOf([&] { Gpt2Tokenizer::fromFolder((dir / "nothing").string()); }),
            (dir / "nothing").string() +
                ": is not a folder (one holding vocab.json + merges.txt or encoder.json + vocab.bpe)");
  write("encoder.json", ok.vocab);
  EXPECT_EQ(errorOf([&] { Gpt2Tokenizer::fromFolder(dir.string()); }),
            (dir / "vocab.bpe").string() + ": cannot open the file (does it exist?)");
  write("vocab.bpe", ok.merges);
  EXPECT_EQ(Gpt2Tokenizer::fromFolder(dir.string())->tokenString(256), "ab");
  // Hugging Face's names come first.
  write("vocab.json", "[]");
  write("merges.txt", "");
  EXPECT_EQ(errorOf([&] { Gpt2Tokenizer::fromFolder(dir.string()); }),
            (dir / "vocab.json").string() + ": a vocabulary is a JSON object of token → id, and this is not an object");
  EXPECT_EQ(errorOf([&] { Gpt2Tokenizer::fromFiles((dir / "encoder.json").string(), (dir / "merges.txt").string()); }),
            "");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace attnscope

// Emoji as the views write them (the UI's font has no glyph above U+FFFF): each its code point,
// two in a row a space apart ("U+1F44BU+1F3FD" had read as one), other text as it is.
TEST(BeyondBmp, EmojiSpelledApartFromEachOther) {
  using attnscope::beyondBmpSpelled;
  EXPECT_EQ(beyondBmpSpelled("hi \xF0\x9F\x91\x8B\xF0\x9F\x8F\xBD!"), "hi U+1F44B U+1F3FD!");
  EXPECT_EQ(beyondBmpSpelled("\xF0\x9F\x98\x80 caf\xC3\xA9"), "U+1F600 caf\xC3\xA9");
  EXPECT_EQ(beyondBmpSpelled("\xF0\x9F\x8E\x89"
                             "2024"),
            "U+1F389 2024");
  EXPECT_EQ(beyondBmpSpelled("plain"), "plain");
}
