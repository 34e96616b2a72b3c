// GPT-2's byte-level BPE (docs/DESIGN.md §2.6), as openai/gpt-2's src/encoder.py computes it: the
// text is cut into words by encoder.py's regex (run by PCRE2), each word's UTF-8 bytes are spelled
// with bytes_to_unicode's characters, and the word's symbols are merged pair by pair, the pair of
// lowest rank (line in merges.txt / vocab.bpe) first, every occurrence of it left to right.
//
// Reading the files checks everything encode() relies on, so encode() cannot fail on any text:
// the vocabulary holds the 256 byte tokens, every merge's two parts and its result are tokens.
// Nothing in a file is executed; the JSON is read with a SAX handler that accepts one object of
// string → integer and stops at anything else.
#include "lm/gpt2_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <shared_mutex>
#include <unordered_map>
#include <utility>

#include "engine/errors.h"
#include "formats/file_reading.h"
#include "formats/utf8.h"

namespace attnscope {

namespace {

constexpr std::int64_t kMaxFileBytes = std::int64_t{64} << 20;  // GPT-2's files are 1 MB and 0.5 MB
constexpr std::int64_t kMaxId = (std::int64_t{1} << 24) - 1;    // ids index tables of this size
const std::string kEndOfText = "<|endoftext|>";

// encoder.py's pattern with \s spelled out as Python's `regex` module has it (Unicode White_Space:
// no U+180E, which PCRE2's \s has, and no U+FEFF, which JavaScript's has), so words end where they
// end in Python. \p{L} and \p{N} are PCRE2's (PCRE2_UCP), of its Unicode version.
#define ATTNSCOPE_WS \
  "\\t\\n\\x0B\\f\\r\\x20\\x85\\xA0\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
const char* const kPattern = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" ATTNSCOPE_WS
                             "\\p{L}\\p{N}]+|[" ATTNSCOPE_WS "]+(?![^" ATTNSCOPE_WS "])|[" ATTNSCOPE_WS "]+";
#undef ATTNSCOPE_WS

// bytes_to_unicode(): printable Latin-1 bytes stand for themselves, the other 68 bytes for
// U+0100 … U+0143 in byte order ("Ġ" U+0120 is the space, "Ċ" U+010A the newline).
struct ByteTable {
  std::string spelling[256];  // the UTF-8 of each byte's character
  int byte_of[0x144];         // character → byte, -1 for characters that stand for no byte
  ByteTable() {
    std::fill(std::begin(byte_of), std::end(byte_of), -1);
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const int cp = printable ? b : 256 + n++;
      byte_of[cp] = b;
      appendUtf8(spelling[b], static_cast<std::uint32_t>(cp));
    }
  }
};
const ByteTable& byteTable() {
  static const ByteTable table;
  return table;
}

// The length of the valid UTF-8 sequence at s[0 … n), or 0 when the bytes there are not one
// (overlong forms, surrogates and code points past U+10FFFF are not). *cp gets its code point.
std::size_t utf8Sequence(const unsigned char* s, std::size_t n, std::uint32_t* cp) {
  const unsigned c = s[0];
  if (c < 0x80) return *cp = c, 1;
  std::size_t len;
  std::uint32_t v, min;
  if (c >= 0xC2 && c <= 0xDF)
    len = 2, v = c & 0x1F, min = 0x80;
  else if (c >= 0xE0 && c <= 0xEF)
    len = 3, v = c & 0x0F, min = 0x800;
  else if (c >= 0xF0 && c <= 0xF4)
    len = 4, v = c & 0x07, min = 0x10000;
  else
    return 0;
  if (n < len) return 0;
  for (std::size_t i = 1; i < len; ++i) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    v = (v << 6) | (s[i] & 0x3F);
  }
  if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
  return *cp = v, len;
}

// A token or a line in a message: quoted as JSON, bytes that are not UTF-8 as U+FFFD, cut short.
std::string shown(const std::string& s) {
  const std::string q = nlohmann::json(s.size() > 60 ? s.substr(0, 60) + "…" : s)
                            .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return q;
}

// The vocabulary JSON as a SAX handler: one object whose members are token → integer id; anything
// else stops the parse with one message. Nothing is built but the map.
class VocabReader final : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit VocabReader(std::unordered_map<std::string, int>* ids) : ids_(ids) {}
  std::string error;

  bool null() override { return notAnId("null"); }
  bool boolean(bool) override { return notAnId("true/false"); }
  bool number_integer(number_integer_t v) override { return id(v); }
  bool number_unsigned(number_unsigned_t v) override {
    if (v > static_cast<number_unsigned_t>(kMaxId)) return outOfRange(std::to_string(v));
    return id(static_cast<std::int64_t>(v));
  }
  bool number_float(number_float_t, const string_t& text) override { return notAnId(text); }
  bool string(string_t&) override { return notAnId("a string"); }
  bool binary(binary_t&) override { return notAnId("binary data"); }
  bool start_object(std::size_t) override {
    if (depth_ == 0) return ++depth_, true;
    return notAnId("an object");
  }
  bool key(string_t& k) override {
    if (k.empty()) return fail("the empty string is not a token");
    key_ = k;
    return true;
  }
  bool end_object() override { return --depth_, true; }
  bool start_array(std::size_t) override { return depth_ == 0 ? notAnObject() : notAnId("an array"); }
  bool end_array() override { return true; }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception&) override {
    if (error.empty()) error = "not valid JSON (at byte " + std::to_string(position) + ")";
    return false;
  }

 private:
  bool fail(const std::string& why) {
    if (error.empty()) error = why;
    return false;
  }
  bool notAnObject() { return fail("a vocabulary is a JSON object of token → id, and this is not an object"); }
  bool notAnId(const std::string& what) {
    if (depth_ == 0) return notAnObject();
    return fail("the id of token " + shown(key_) + " is " + what + ", not an integer");
  }
  bool outOfRange(const std::string& v) {
    if (depth_ == 0) return notAnObject();
    return fail("the id of token " + shown(key_) + " is " + v + ", outside 0 … " + std::to_string(kMaxId));
  }
  bool id(std::int64_t v) {
    if (depth_ == 0) return notAnObject();
    if (v < 0 || v > kMaxId) return outOfRange(std::to_string(v));
    if (!ids_->emplace(key_, static_cast<int>(v)).second) return fail("the token " + shown(key_) + " is there twice");
    return true;
  }

  std::unordered_map<std::string, int>* ids_;
  std::string key_;
  int depth_ = 0;
};

struct Merge {
  std::uint32_t rank;
  int result;
};

std::uint64_t pairKey(int a, int b) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) | static_cast<std::uint32_t>(b);
}

// The compiled pattern, shared by every thread (PCRE2 code is read-only while matching; each
// encode() has its own match data).
struct Pattern {
  pcre2_code* code = nullptr;
  Pattern() {
    int error = 0;
    PCRE2_SIZE offset = 0;
    code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kPattern), PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &error,
                         &offset, nullptr);
    if (!code) {
      PCRE2_UCHAR text[256];
      pcre2_get_error_message(error, text, sizeof text);
      throw std::logic_error("GPT-2's pattern does not compile in PCRE2: " +
                             std::string(reinterpret_cast<char*>(text)));
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // when JIT is not available the interpreter runs it
  }
  ~Pattern() { pcre2_code_free(code); }
  Pattern(const Pattern&) = delete;
  Pattern& operator=(const Pattern&) = delete;
};
const Pattern& pattern() {
  static const Pattern p;
  return p;
}

class Bpe final : public Gpt2Tokenizer {
 public:
  Bpe(const std::string& vocab_json, const std::string& merges, const std::string& vocab_source,
      const std::string& merges_source);

  std::vector<int> encode(const std::string& text) const override;
  std::vector<std::string> words(const std::string& text) const override;
  std::string decode(const std::vector<int>& ids) const override;
  std::string tokenString(int id) const override { return spelling_[checked(id)]; }
  std::string tokenBytes(int id) const override { return bytes_[checked(id)]; }
  int vocabularySize() const override { return static_cast<int>(spelling_.size()); }
  int endOfText() const override { return end_of_text_; }
  std::string missingMerges() const override { return missing_merges_; }

 private:
  struct Symbol {
    int id, prev, next;  // a token id (-1 once merged into its left neighbour), list links
  };
  struct Candidate {
    std::uint32_t rank;
    int left, right, left_id, right_id, result;
  };
  struct Scratch {
    std::vector<Symbol> symbols;
    std::vector<Candidate> heap, batch;
  };

  std::size_t checked(int id) const {
    if (id < 0 || id >= vocabularySize() || !present_[static_cast<std::size_t>(id)])
      throw InputError("token id " + std::to_string(id) + " is not in the vocabulary");
    return static_cast<std::size_t>(id);
  }
  template <class Piece>
  void split(const std::string& text, Piece&& piece) const;
  void encodeWord(const unsigned char* word, std::size_t n, Scratch& scratch, std::vector<int>& out) const;

  std::vector<std::string> spelling_, bytes_;  // by id
  std::vector<char> present_;                  // ids may have gaps
  int byte_id_[256];
  std::unordered_map<std::uint64_t, Merge> merges_;
  int end_of_text_ = -1;
  std::string missing_merges_;
  // Words already encoded (encode() is const and may run on several threads at once).
  static constexpr std::size_t kMaxCachedWord = 64, kMaxCachedWords = 1 << 17;
  mutable std::shared_mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int>> cache_;
};

Bpe::Bpe(const std::string& vocab_json, const std::string& merges, const std::string& vocab_source,
         const std::string& merges_source) {
  for (const auto* f : {&vocab_source, &merges_source}) {
    const std::int64_t size = static_cast<std::int64_t>((f == &vocab_source ? vocab_json : merges).size());
    if (size > kMaxFileBytes)
      throw InputError(*f + ": " + std::to_string(size) + " bytes is larger than the limit of " +
                       std::to_string(kMaxFileBytes) + " bytes");
  }
  // The vocabulary.
  std::unordered_map<std::string, int> ids;
  VocabReader reader(&ids);
  nlohmann::json::sax_parse(vocab_json, &reader);
  if (!reader.error.empty()) throw InputError(vocab_source + ": " + reader.error);
  if (ids.empty()) throw InputError(vocab_source + ": the vocabulary is empty");
  int max_id = 0;
  for (const auto& [token, id] : ids) max_id = std::max(max_id, id);
  // The tables are by id: ids far beyond the tokens' count are gaps nobody's vocabulary has (2 KB
  // with one id 16777215 had taken 1 GB of tables), refused before they are allocated.
  if (static_cast<std::size_t>(max_id) >= 2 * ids.size() + 65536)
    throw InputError(vocab_source + ": ids up to " + std::to_string(max_id) + " for " + std::to_string(ids.size()) +
                     " tokens: a vocabulary's ids run from 0 without large gaps");
  spelling_.resize(static_cast<std::size_t>(max_id) + 1);
  bytes_.resize(spelling_.size());
  present_.assign(spelling_.size(), 0);
  const ByteTable& table = byteTable();
  std::vector<char> own_utf8(spelling_.size(), 0);  // tokens that stand for their own UTF-8 (added ones)
  for (const auto& [token, id] : ids) {
    const auto i = static_cast<std::size_t>(id);
    if (present_[i]) {
      // Named in a fixed order, whichever of the two the map holds first.
      const auto [a, b] = std::minmax(spelling_[i], token);
      throw InputError(vocab_source + ": the tokens " + shown(a) + " and " + shown(b) + " have the same id " +
                       std::to_string(id));
    }
    present_[i] = 1;
    spelling_[i] = token;
    // A token's bytes: its characters read back through bytes_to_unicode. A token with a
    // character that stands for no byte (an added token of another vocabulary) stands for its
    // own UTF-8, as Hugging Face decodes added tokens; the JSON reader guarantees valid UTF-8.
    std::string bytes;
    const auto* s = reinterpret_cast<const unsigned char*>(token.data());
    for (std::size_t k = 0; k < token.size();) {
      std::uint32_t cp = 0;
      const std::size_t len = utf8Sequence(s + k, token.size() - k, &cp);
      if (len == 0 || cp >= 0x144 || table.byte_of[cp] < 0) {
        bytes = token;
        own_utf8[i] = 1;
        break;
      }
      bytes += static_cast<char>(table.byte_of[cp]);
      k += len;
    }
    bytes_[i] = std::move(bytes);
  }
  for (int b = 0; b < 256; ++b) {
    const auto it = ids.find(table.spelling[b]);
    if (it == ids.end()) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", b);
      throw InputError(vocab_source + ": there is no token for the byte " + hex + " (" + shown(table.spelling[b]) +
                       "); a byte-level vocabulary has all 256");
    }
    byte_id_[b] = it->second;
  }
  const auto eot = ids.find(kEndOfText);
  if (eot != ids.end()) end_of_text_ = eot->second;

  // The merges, one a line: "first second". A first line "#version…" is a header (both files
  // have "#version: 0.2"); empty lines are skipped (the one after the last newline). encoder.py
  // drops the first and the last line whatever they are; here the last merge counts even when the
  // file does not end in a newline.
  std::unordered_map<std::uint64_t, std::size_t> line_of;
  std::size_t start = 0, line = 0;
  std::uint32_t rank = 0;
  while (start < merges.size()) {
    std::size_t end = merges.find('\n', start);
    if (end == std::string::npos) end = merges.size();
    std::string text = merges.substr(start, end - start);
    start = end + 1;
    ++line;
    if (!text.empty() && text.back() == '\r') text.pop_back();  // written on Windows
    if (text.empty() || (line == 1 && text.rfind("#version", 0) == 0)) continue;
    const std::string at = merges_source + ":" + std::to_string(line) + ": ";
    const std::size_t space = text.find(' ');
    if (space == 0 || space == std::string::npos || space + 1 == text.size() ||
        text.find_first_of(" \t", space + 1) != std::string::npos || text.find('\t') < space)
      throw InputError(at + "expected two tokens separated by a space, got " + shown(text));
    const std::string first = text.substr(0, space), second = text.substr(space + 1);
    int part[2];
    for (int k = 0; k < 2; ++k) {
      const auto it = ids.find(k == 0 ? first : second);
      if (it == ids.end())
        throw InputError(at + shown(k == 0 ? first : second) + " is not in the vocabulary (" + vocab_source + ")");
      part[k] = it->second;
    }
    const auto result = ids.find(first + second);
    if (result == ids.end())
      throw InputError(at + "the merge " + shown(text) + " makes " + shown(first + second) +
                       ", which is not in the vocabulary (" + vocab_source + ")");
    const std::uint64_t key = pairKey(part[0], part[1]);
    const auto [it, added] = line_of.emplace(key, line);
    if (!added) throw InputError(at + "the merge " + shown(text) + " is already on line " + std::to_string(it->second));
    merges_.emplace(key, Merge{rank++, result->second});
  }

  // Tokens of the vocabulary no merge makes: byte-level ones of two or more bytes (an added token,
  // its own UTF-8 or spelled "<…>" or "[…]", is made by no merge in any vocabulary). GPT-2's has
  // none; a few other added tokens ("ĉĉĉĉ" of a fine-tune) are not a merges file cut short: said
  // from 16 on (or a tenth of a small vocabulary's).
  std::vector<char> made(spelling_.size(), 0);
  for (const auto& [key, merge] : merges_) made[static_cast<std::size_t>(merge.result)] = 1;
  std::size_t unmade = 0, byte_level = 0;
  for (std::size_t i = 0; i < spelling_.size(); ++i) {
    const std::string& s = spelling_[i];
    const bool bracketed = s.size() > 2 &&
                           ((s.front() == '<' && s.back() == '>') || (s.front() == '[' && s.back() == ']'));
    if (!present_[i] || bytes_[i].size() < 2 || own_utf8[i] || bracketed) continue;
    ++byte_level;
    unmade += made[i] ? 0 : 1;
  }
  if (unmade > std::min<std::size_t>(16, byte_level / 10))
    missing_merges_ = merges_source + ": no merge makes " + std::to_string(unmade) + " of the vocabulary's " +
                      std::to_string(byte_level) + " tokens of two or more bytes (the file has " +
                      std::to_string(merges_.size()) +
                      " merges): text splits into other tokens than the model learned. Is the file whole?";
}

// Cuts the text into the pieces encode() works on and calls piece(bytes, length, id) for each in
// order: id is the token of a piece that is one token whatever its bytes (<|endoftext|>, an invalid
// byte), else -1 and the piece is a word for BPE.
//
// <|endoftext|> in the text is its token, and the text on each side is split on its own (the
// regex's lookahead does not see past it), as Hugging Face's GPT2Tokenizer splits on it.
//
// Invalid UTF-8 (GPT-2 never saw any: Python's str cannot hold it): each byte that does not begin
// a valid sequence is one piece, the token of that byte, and the valid text between such bytes is
// split into words on its own. So no byte is lost, decode(encode(x)) == x for any bytes, and valid
// text is encoded as GPT-2 encodes it.
template <class Piece>
void Bpe::split(const std::string& text, Piece&& piece) const {
  pcre2_match_data* match = pcre2_match_data_create_from_pattern(pattern().code, nullptr);
  if (!match) throw std::bad_alloc();
  struct Free {
    pcre2_match_data* m;
    ~Free() { pcre2_match_data_free(m); }
  } free_match{match};
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  std::size_t start = 0;
  while (true) {
    const std::size_t eot = end_of_text_ >= 0 ? text.find(kEndOfText, start) : std::string::npos;
    const std::size_t n = eot == std::string::npos ? text.size() : eot;
    for (std::size_t i = start; i < n;) {
      std::size_t j = i;
      std::uint32_t cp;
      for (std::size_t len; j < n && (len = utf8Sequence(s + j, n - j, &cp)) != 0;) j += len;
      // The words of the valid run [i, j), as re.findall finds them.
      const std::size_t run = j - i;
      for (PCRE2_SIZE offset = 0; offset < run;) {
        const int rc = pcre2_match(pattern().code, s + i, run, offset, PCRE2_NO_UTF_CHECK, match, nullptr);
        if (rc == PCRE2_ERROR_NOMATCH) break;  // cannot happen: every character matches a branch
        if (rc < 0) {
          PCRE2_UCHAR message[256];
          pcre2_get_error_message(rc, message, sizeof message);
          throw InputError(
              "the text could not be split into words (PCRE2: " + std::string(reinterpret_cast<char*>(message)) + ")");
        }
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(match);
        if (ov[1] <= ov[0]) break;  // no branch matches nothing; never loop on an empty match
        piece(s + i + ov[0], ov[1] - ov[0], -1);
        offset = ov[1];
      }
      if (j < n) piece(s + j, 1, byte_id_[s[j]]), ++j;
      i = j;
    }
    if (eot == std::string::npos) break;
    piece(s + eot, kEndOfText.size(), end_of_text_);
    start = eot + kEndOfText.size();
  }
}

std::vector<int> Bpe::encode(const std::string& text) const {
  std::vector<int> out;
  out.reserve(text.size() / 3 + 1);
  Scratch scratch;
  std::string key;
  split(text, [&](const unsigned char* piece, std::size_t n, int id) {
    if (id >= 0) return out.push_back(id);
    if (n == 1 || n > kMaxCachedWord) return encodeWord(piece, n, scratch, out);
    // A word's tokens never change: most words of a text were seen before (encoder.py caches them
    // too). Shared lock to read, exclusive to add; the cache stops growing when full.
    key.assign(reinterpret_cast<const char*>(piece), n);
    {
      std::shared_lock<std::shared_mutex> lock(cache_mutex_);
      const auto it = cache_.find(key);
      if (it != cache_.end()) return out.insert(out.end(), it->second.begin(), it->second.end()), void();
    }
    const std::size_t before = out.size();
    encodeWord(piece, n, scratch, out);
    std::unique_lock<std::shared_mutex> lock(cache_mutex_);
    if (cache_.size() < kMaxCachedWords) cache_.emplace(key, std::vector<int>(out.begin() + before, out.end()));
  });
  return out;
}

std::vector<std::string> Bpe::words(const std::string& text) const {
  std::vector<std::string> out;
  split(text, [&](const unsigned char* piece, std::size_t n, int) {
    out.emplace_back(reinterpret_cast<const char*>(piece), n);
  });
  return out;
}

// One word's BPE. encoder.py's loop — take the pair of lowest rank, merge every occurrence left to
// right, repeat — costs O(n²) on a long word (a line of 100 000 letters is one word); this gives the
// same result in O(n log n): every adjacent pair that is a merge waits in a heap by (rank,
// position); all waiting pairs of the lowest rank are taken at once and merged left to right,
// skipping those an earlier merge of the batch broke up ("a a a" → "aa a"). A merge's new pairs
// never have the batch's rank (its result is longer than either part), so a batch is exactly one
// round of encoder.py's loop, even for a merges file whose ranks are not in the order of learning.
void Bpe::encodeWord(const unsigned char* word, std::size_t n, Scratch& scratch, std::vector<int>& out) const {
  if (n == 1) {
    out.push_back(byte_id_[word[0]]);
    return;
  }
  auto& sym = scratch.symbols;
  auto& heap = scratch.heap;
  auto& batch = scratch.batch;
  sym.resize(n);
  heap.clear();
  const int last = static_cast<int>(n) - 1;
  for (int i = 0; i <= last; ++i) sym[i] = Symbol{byte_id_[word[i]], i - 1, i == last ? -1 : i + 1};
  const auto later = [](const Candidate& a, const Candidate& b) {
    return a.rank != b.rank ? a.rank > b.rank : a.left > b.left;
  };
  const auto consider = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const auto it = merges_.find(pairKey(sym[left].id, sym[right].id));
    if (it == merges_.end()) return;
    heap.push_back(Candidate{it->second.rank, left, right, sym[left].id, sym[right].id, it->second.result});
    std::push_heap(heap.begin(), heap.end(), later);
  };
  for (int i = 0; i < last; ++i) consider(i, i + 1);
  while (!heap.empty()) {
    batch.clear();
    const std::uint32_t rank = heap.front().rank;
    while (!heap.empty() && heap.front().rank == rank) {  // popped in position order
      std::pop_heap(heap.begin(), heap.end(), later);
      batch.push_back(heap.back());
      heap.pop_back();
    }
    for (const Candidate& c : batch) {
      Symbol& l = sym[c.left];
      if (l.id != c.left_id || l.next != c.right || sym[c.right].id != c.right_id) continue;  // stale
      l.id = c.result;
      l.next = sym[c.right].next;
      if (l.next >= 0) sym[l.next].prev = c.left;
      sym[c.right].id = -1;
      consider(l.prev, c.left);
      consider(c.left, l.next);
    }
  }
  for (int i = 0; i >= 0; i = sym[i].next) out.push_back(sym[i].id);
}

std::string Bpe::decode(const std::vector<int>& ids) const {
  std::string text;
  for (int id : ids) text += bytes_[checked(id)];
  return text;
}

}  // namespace

std::shared_ptr<const Gpt2Tokenizer> Gpt2Tokenizer::fromContents(const std::string& vocab_json,
                                                                 const std::string& merges,
                                                                 const std::string& vocab_source,
                                                                 const std::string& merges_source) {
  return std::make_shared<const Bpe>(vocab_json, merges, vocab_source, merges_source);
}

std::shared_ptr<const Gpt2Tokenizer> Gpt2Tokenizer::fromContents(const std::string& vocab_json,
                                                                 const std::string& merges, const std::string& source) {
  return fromContents(vocab_json, merges, source + "[vocab]", source + "[merges]");
}

std::shared_ptr<const Gpt2Tokenizer> Gpt2Tokenizer::fromFiles(const std::string& vocab_json,
                                                              const std::string& merges) {
  return fromContents(readFileWithin(vocab_json, kMaxFileBytes), readFileWithin(merges, kMaxFileBytes), vocab_json,
                      merges);
}

std::string tokenReading(const Gpt2Tokenizer& tokenizer, int id) {
  if (id < 0 || id >= tokenizer.vocabularySize()) return "";
  const std::string bytes = tokenizer.tokenBytes(id);
  if (std::all_of(bytes.begin(), bytes.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; })) return "";
  for (std::size_t i = 0; i < bytes.size();)
    if (nextCodePoint(bytes, &i) == kNotUtf8) {
      std::string hex;
      for (const char c : bytes) {
        char two[4];
        std::snprintf(two, sizeof two, "%02X", static_cast<unsigned char>(c));
        hex += (hex.empty() ? "" : " ") + std::string(two);
      }
      return "bytes " + hex + " (part of a character)";
    }
  return "reads “" + bytes + "”";
}

std::vector<std::uint32_t> tokenCharacters(const Gpt2Tokenizer& tokenizer) {
  std::vector<std::uint32_t> out;
  for (int id = 0; id < tokenizer.vocabularySize(); ++id) {
    std::string bytes;
    try {
      bytes = tokenizer.tokenBytes(id);
    } catch (const InputError&) {  // an id the vocabulary skips (vocab.json's ids need not be dense)
      continue;
    }
    for (std::size_t i = 0; i < bytes.size();)
      if (const std::uint32_t c = nextCodePoint(bytes, &i); c >= 0x80 && c != kNotUtf8) out.push_back(c);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

namespace {
// The two layouts of the files, in the order they are looked for: Hugging Face's, then OpenAI's.
const std::pair<const char*, const char*> kLayouts[] = {{"vocab.json", "merges.txt"}, {"encoder.json", "vocab.bpe"}};
}  // namespace

bool Gpt2Tokenizer::inFolder(const std::string& folder) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const auto& [vocab, merges] : kLayouts)
    if (fs::is_regular_file(fs::path(folder) / vocab, ec) && fs::is_regular_file(fs::path(folder) / merges, ec))
      return true;
  return false;
}

std::shared_ptr<const Gpt2Tokenizer> Gpt2Tokenizer::fromFolder(const std::string& folder) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(folder, ec))
    throw InputError(folder + ": is not a folder (one holding vocab.json + merges.txt or encoder.json + vocab.bpe)");
  const fs::path dir(folder);
  const auto& layouts = kLayouts;
  for (const auto& [vocab, merges] : layouts)
    if (fs::exists(dir / vocab, ec) && fs::exists(dir / merges, ec))
      return fromFiles((dir / vocab).string(), (dir / merges).string());
  // One file of a pair without the other: reading them names the one missing.
  for (const auto& [vocab, merges] : layouts)
    if (fs::exists(dir / vocab, ec) || fs::exists(dir / merges, ec))
      return fromFiles((dir / vocab).string(), (dir / merges).string());
  throw InputError(folder +
                   ": holds no GPT-2 tokenizer (looked for vocab.json + merges.txt, then encoder.json + vocab.bpe)");
}

}  // namespace attnscope
