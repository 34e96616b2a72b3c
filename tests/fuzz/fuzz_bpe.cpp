// fuzz_bpe: GPT-2's tokenizer (core/lm/gpt2_tokenizer.h, docs/DESIGN.md §2.6) on files and text of
// the fuzzer's own. The input is VOCAB \x01\x02 MERGES \x01\x02 TEXT (a part missing is empty).
// When VOCAB begins with '{', the 256 byte tokens (ids 0 … 255) are put in front of its members,
// so most inputs get past the byte check and reach the merges and the text.
//
// Refusals: one InputError, one line, naming fuzz[vocab] or fuzz[merges]. On accepted files, for
// the text: every id is a token; decode(encode(text)) == text; the words join to the text; encoding
// again (from the word cache) gives the same ids; and the ids are those of encoder.py's own loop —
// the pair of lowest rank merged everywhere left to right, round after round, O(n²) — run here on
// each word (words of up to 512 bytes), which checks the tokenizer's O(n log n) heap. The
// characters its tokens decode to (tokenCharacters): above ASCII, ascending, each once.
#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fuzz_common.h"
#include "lm/gpt2_tokenizer.h"

namespace {

const std::string kSeparator = "\x01\x02";

// bytes_to_unicode's characters, written out as encoder.py builds them.
std::string byteChar(int b) {
  const auto printable = [](int k) { return (k >= '!' && k <= '~') || (k >= 0xA1 && k <= 0xAC) || (k >= 0xAE); };
  int cp = b;
  if (!printable(b)) {
    cp = 256;
    for (int k = 0; k < b; ++k) cp += !printable(k);
  }
  if (cp < 0x80) return std::string(1, static_cast<char>(cp));
  return {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
}

std::string withByteTokens(const std::string& vocab) {
  if (vocab.empty() || vocab[0] != '{') return vocab;
  std::string out = "{";
  for (int b = 0; b < 256; ++b) out += nlohmann::json(byteChar(b)).dump() + ":" + std::to_string(b) + ",";
  const std::string rest = vocab.substr(1);
  // "{}" and "{ }" stay objects: no trailing comma before the brace.
  if (rest.find_first_not_of(" \t\r\n") != std::string::npos && rest[rest.find_first_not_of(" \t\r\n")] == '}')
    out.pop_back();
  return out + rest;
}

// encoder.py's bpe() on ids: merges[(a, b)] = (rank, result).
std::vector<int> slowBpe(std::vector<int> word,
                         const std::map<std::pair<int, int>, std::pair<std::size_t, int>>& merges) {
  while (word.size() > 1) {
    std::size_t best = SIZE_MAX;
    std::pair<int, int> pair;
    int result = -1;
    for (std::size_t i = 0; i + 1 < word.size(); ++i) {
      const auto it = merges.find({word[i], word[i + 1]});
      if (it != merges.end() && it->second.first < best)
        best = it->second.first, pair = it->first, result = it->second.second;
    }
    if (result < 0) break;
    std::vector<int> merged;
    for (std::size_t i = 0; i < word.size();) {
      if (i + 1 < word.size() && word[i] == pair.first && word[i + 1] == pair.second) {
        merged.push_back(result);
        i += 2;
      } else {
        merged.push_back(word[i++]);
      }
    }
    word.swap(merged);
  }
  return word;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace attnscope;
  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::size_t first = input.find(kSeparator);
  const std::size_t second = first == std::string::npos ? first : input.find(kSeparator, first + 2);
  const std::string vocab = withByteTokens(input.substr(0, first));
  const std::string merges = first == std::string::npos
                                 ? ""
                                 : input.substr(first + 2, second == std::string::npos ? second : second - first - 2);
  const std::string text = second == std::string::npos ? "" : input.substr(second + 2);

  std::shared_ptr<const Gpt2Tokenizer> t;
  try {
    t = Gpt2Tokenizer::fromContents(vocab, merges, "fuzz");
  } catch (const InputError& e) {
    const std::string m = e.what();
    FUZZ_CHECK(m.rfind("fuzz[vocab]: ", 0) == 0 || m.rfind("fuzz[merges]:", 0) == 0, m);
    FUZZ_CHECK(m.find('\n') == std::string::npos, "a refusal is one line: " + m);
    return 0;
  } catch (const std::exception& e) {
    fuzz::unexpected("fromContents", e);
  }

  // The characters its tokens decode to (the app's font atlas takes them): above ASCII, ascending,
  // each once.
  const std::vector<std::uint32_t> characters = tokenCharacters(*t);
  for (std::size_t i = 0; i < characters.size(); ++i)
    FUZZ_CHECK(characters[i] >= 0x80 && characters[i] <= 0x10FFFF && (i == 0 || characters[i - 1] < characters[i]),
               "tokenCharacters: " + std::to_string(characters[i]) + " at " + std::to_string(i));

  std::vector<int> ids;
  try {
    ids = t->encode(text);
  } catch (const std::exception& e) {
    fuzz::unexpected("encode (which never refuses a text)", e);
  }
  for (int id : ids) {
    FUZZ_CHECK(id >= 0 && id < t->vocabularySize(), "id " + std::to_string(id));
    FUZZ_CHECK(!t->tokenBytes(id).empty(), "token " + std::to_string(id) + " stands for no bytes");
  }
  FUZZ_CHECK(t->decode(ids) == text, "decode(encode(text)) is not the text");
  FUZZ_CHECK(t->encode(text) == ids, "encoding again gives other ids");
  const std::vector<std::string> words = t->words(text);
  std::string joined;
  for (const std::string& w : words) joined += w;
  FUZZ_CHECK(joined == text, "the words do not join to the text");

  // encoder.py's loop on each word, from the files as the fuzzer wrote them.
  const nlohmann::json tokens = nlohmann::json::parse(vocab);
  std::map<std::pair<int, int>, std::pair<std::size_t, int>> ranks;
  std::size_t start = 0, line = 0, rank = 0;
  while (start < merges.size()) {
    std::size_t end = merges.find('\n', start);
    if (end == std::string::npos) end = merges.size();
    std::string m = merges.substr(start, end - start);
    start = end + 1;
    ++line;
    if (!m.empty() && m.back() == '\r') m.pop_back();
    if (m.empty() || (line == 1 && m.rfind("#version", 0) == 0)) continue;
    const std::size_t space = m.find(' ');
    const std::string a = m.substr(0, space), b = m.substr(space + 1);
    ranks[{tokens.at(a).get<int>(), tokens.at(b).get<int>()}] = {rank++, tokens.at(a + b).get<int>()};
  }
  int byte_id[256];
  for (int b = 0; b < 256; ++b) byte_id[b] = tokens.at(byteChar(b)).get<int>();
  std::vector<int> want;
  for (const std::string& w : words) {
    if (t->endOfText() >= 0 && w == "<|endoftext|>") {
      want.push_back(t->endOfText());
      continue;
    }
    if (w.size() > 512) return 0;  // O(n²): long words are left to the round trip
    std::vector<int> symbols;
    for (unsigned char c : w) symbols.push_back(byte_id[c]);
    for (int id : slowBpe(symbols, ranks)) want.push_back(id);
  }
  FUZZ_CHECK(want == ids, "encode differs from encoder.py's loop on the same words");
  return 0;
}
