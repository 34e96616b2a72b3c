// Edits of the token × d_in table (the Inputs panel). Every edit checks everything first and then
// swaps the new tokens and rows in, so an edit that throws leaves the workspace as it was.
#include "editing/token_table.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "engine/errors.h"
#include "engine/torch_generator.h"
#include "formats/utf8.h"

namespace attnscope {

namespace {




void checkIndex(int index, int count, const std::string& what) {
  if (index < 0 || index >= count)
    fail("tokens[" + str(index) + "]", "no such " + what + " (there are " + str(count) + " tokens, numbered from 0)");
}

// 'simple' has no projection: its output width is d_in, and its d_out says so.
ModelConfig modelFor(const ModelConfig& model, int d_in) {
  ModelConfig m = model;
  if (m.variant == Variant::Simple) m.d_out = d_in;
  return m;
}

// An edit must not break a model that was valid (e.g. more tokens than the attention-cell limit
// allows). A model that was already invalid is the model panel's business, not this edit's.
void checkModelStaysValid(const Workspace& ws, const ModelConfig& next, int tokens, int d_in, const Limits& limits) {
  try {
    validateModel(ws.model, tokenCount(ws), inputWidth(ws), limits);
  } catch (const InputError&) {
    return;
  }
  validateModel(next, tokens, d_in, limits);
}

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
bool isPunctuation(char c) { return c == '.' || c == ',' || c == '!' || c == '?' || c == ';' || c == ':'; }

// 32-bit FNV-1a: offset basis 2166136261, prime 16777619, one byte at a time.
constexpr std::uint32_t kFnvOffset = 2166136261u, kFnvPrime = 16777619u;
std::uint32_t fnv1aByte(std::uint32_t h, unsigned char byte) { return (h ^ byte) * kFnvPrime; }

// A capital letter's small letter, for the scripts a learner types most: ASCII, Latin-1, Latin
// Extended-A, Greek and Cyrillic. Other characters are their own.
char32_t smallLetter(char32_t c) {
  if (c >= U'A' && c <= U'Z') return c + 32;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;  // À … Þ, not ×
  if ((c >= 0x100 && c <= 0x137 && c != 0x130) || (c >= 0x14A && c <= 0x177))
    return c | 1;  // even capital, odd small (İ stays)
  if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c & 1) ? c + 1 : c;  // odd capital
  if (c == 0x178) return 0xFF;                                                               // Ÿ
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;                                 // Α … Ω
  if (c >= 0x410 && c <= 0x42F) return c + 32;                                               // А … Я
  if (c >= 0x400 && c <= 0x40F) return c + 80;                                               // Ѐ … Џ
  return c;
}

}  // namespace

std::string foldCase(const std::string& word) {
  std::string out;
  out.reserve(word.size());
  for (std::size_t i = 0; i < word.size();) {
    const unsigned char b = static_cast<unsigned char>(word[i]);
    // A two-byte sequence (U+0080 … U+07FF) covers every letter smallLetter changes beyond ASCII.
    if (b >= 0xC2 && b <= 0xDF && i + 1 < word.size() && (static_cast<unsigned char>(word[i + 1]) & 0xC0) == 0x80) {
      const char32_t c = smallLetter(
          static_cast<char32_t>((b & 0x1F) << 6 | (static_cast<unsigned char>(word[i + 1]) & 0x3F)));
      appendUtf8(out, c);
      i += 2;
    } else {
      out += b < 0x80 ? static_cast<char>(smallLetter(b)) : static_cast<char>(b);  // other bytes as they are
      ++i;
    }
  }
  return out;
}

namespace {

// 32-bit FNV-1a over bytes, then the four bytes of the seed, least significant first.
std::uint32_t wordHash(const std::string& bytes, std::uint32_t seed) {
  std::uint32_t h = kFnvOffset;
  for (char c : bytes) h = fnv1aByte(h, static_cast<unsigned char>(c));
  for (int shift = 0; shift < 32; shift += 8) h = fnv1aByte(h, static_cast<unsigned char>(seed >> shift));
  return h;
}

}  // namespace

// The generator seed of a word: FNV-1a (32-bit) over the UTF-8 bytes of the word in small letters
// (foldCase: "The" and "the" are one word) followed by the four bytes of `seed`, least significant
// first. In Python:
//   h = 2166136261
//   for b in word.lower().encode("utf-8") + struct.pack("<I", seed): h = ((h ^ b) * 16777619) & 0xffffffff
// (Python's word.lower() agrees with foldCase on ASCII and Latin-1 letters.) The word's vector is then
// torch.manual_seed(h); torch.rand(d_in). The hash is computed on bytes with fixed-width unsigned
// arithmetic, so it is the same on every platform and run. torch.rand draws one value per element
// in order, so the vector for a smaller d_in is a prefix of the one for a larger d_in.
std::vector<float> wordEmbedding(const std::string& word, int d_in, std::uint32_t seed) {
  if (d_in < 0) fail("d_in", "must not be negative, got " + str(d_in));
  std::vector<float> v(static_cast<std::size_t>(d_in));
  TorchGenerator g(wordHash(foldCase(word), seed));
  g.fillUniform(v.data(), v.size(), 0.0, 1.0);
  return v;
}

std::vector<std::string> splitSentence(const std::string& sentence, int max_tokens) {
  std::vector<std::string> tokens;
  long long count = 0;
  std::string word;
  auto emit = [&](std::string t) {
    ++count;
    if (count <= max_tokens) tokens.push_back(std::move(t));
  };
  for (char c : sentence) {
    if (isSpace(c) || isPunctuation(c)) {
      if (!word.empty()) emit(std::move(word));
      word.clear();
      if (isPunctuation(c)) emit(std::string(1, c));
    } else {
      word += c;
    }
  }
  if (!word.empty()) emit(std::move(word));
  if (count == 0) fail("sentence", "type at least one word");
  if (count > max_tokens) fail("sentence", str(count) + " tokens exceeds the limit of " + str(max_tokens) + " tokens");
  return tokens;
}

std::string joinSentence(const std::vector<std::string>& tokens) {
  std::string text;
  for (const std::string& token : tokens) {
    const bool punctuation = token.size() == 1 && isPunctuation(token[0]);
    if (!text.empty() && !punctuation) text += ' ';
    text += token;
  }
  return text;
}

void setSentence(Workspace& ws, const std::string& sentence, std::uint32_t seed, const Limits& limits) {
  std::vector<std::string> tokens = splitSentence(sentence, limits.max_tokens);
  const int T = static_cast<int>(tokens.size());
  const int d_in = inputWidth(ws) > 0 ? inputWidth(ws) : 3;
  ModelConfig model = modelFor(ws.model, d_in);
  checkModelStaysValid(ws, model, T, d_in, limits);
  Matrix x(T, d_in);
  for (int i = 0; i < T; ++i) {
    const std::vector<float> v = wordEmbedding(tokens[i], d_in, seed);
    std::copy(v.begin(), v.end(), x.row(i).data());
  }
  ws.tokens = std::move(tokens);
  ws.embeddings = std::move(x);
  ws.model = model;
  ws.random.reset();
}

void insertToken(Workspace& ws, int at, const std::string& name, std::uint32_t seed, const Limits& limits) {
  const int T = tokenCount(ws), d_in = inputWidth(ws);
  if (at < 0 || at > T)
    fail("tokens[" + str(at) + "]", "cannot insert there (positions run from 0 to " + str(T) + ", the end)");
  if (T + 1 > limits.max_tokens)
    fail("tokens", "cannot add a token: the limit is " + str(limits.max_tokens) + " tokens");
  checkModelStaysValid(ws, ws.model, T + 1, d_in, limits);

  std::string label = name;
  if (label.empty()) {  // the first of t1, t2, … that no token is called yet
    const std::set<std::string> used(ws.tokens.begin(), ws.tokens.end());
    for (int k = 1; label.empty() || used.count(label); ++k) label = "t" + str(k);
  }
  const std::vector<float> row = wordEmbedding(label, d_in, seed);

  std::vector<std::string> tokens = ws.tokens;
  tokens.insert(tokens.begin() + at, label);
  Matrix x(T + 1, d_in);
  x.topRows(at) = ws.embeddings.topRows(at);
  std::copy(row.begin(), row.end(), x.row(at).data());
  x.bottomRows(T - at) = ws.embeddings.bottomRows(T - at);
  ws.tokens = std::move(tokens);
  ws.embeddings = std::move(x);
  ws.random.reset();
}

void removeToken(Workspace& ws, int index) {
  const int T = tokenCount(ws), d_in = inputWidth(ws);
  checkIndex(index, T, "token to remove");
  if (T == 1) fail("tokens", "cannot remove the last token (attention needs at least one)");
  std::vector<std::string> tokens = ws.tokens;
  tokens.erase(tokens.begin() + index);
  Matrix x(T - 1, d_in);
  x.topRows(index) = ws.embeddings.topRows(index);
  x.bottomRows(T - 1 - index) = ws.embeddings.bottomRows(T - 1 - index);
  ws.tokens = std::move(tokens);
  ws.embeddings = std::move(x);
  ws.random.reset();
}

void moveToken(Workspace& ws, int from, int to) {
  const int T = tokenCount(ws);
  checkIndex(from, T, "token to move");
  checkIndex(to, T, "place to move to");
  // Rotate the range between the two places by one: the token at `from` ends up at `to`.
  if (from < to) {
    std::rotate(ws.tokens.begin() + from, ws.tokens.begin() + from + 1, ws.tokens.begin() + to + 1);
  } else if (to < from) {
    std::rotate(ws.tokens.begin() + to, ws.tokens.begin() + from, ws.tokens.begin() + from + 1);
  }
  if (from != to) {
    const RowVector moving = ws.embeddings.row(from);
    const int step = from < to ? 1 : -1;
    for (int i = from; i != to; i += step) ws.embeddings.row(i) = ws.embeddings.row(i + step);
    ws.embeddings.row(to) = moving;
  }
  ws.random.reset();
}

void renameToken(Workspace& ws, int index, const std::string& name) {
  checkIndex(index, static_cast<int>(ws.tokens.size()), "token to rename");
  if (name.empty()) fail("tokens[" + str(index) + "]", "a token needs a name");
  ws.tokens[index] = name;
  ws.random.reset();
}

void setEmbedding(Workspace& ws, int row, int col, float value) {
  const int T = tokenCount(ws), d_in = inputWidth(ws);
  const std::string cell = "embeddings[" + str(row) + "][" + str(col) + "]";
  if (row < 0 || row >= T || col < 0 || col >= d_in)
    fail(cell, "no such cell (the table is " + str(T) + " × " + str(d_in) + ")");
  if (!std::isfinite(value)) fail(cell, "not a finite number");
  ws.embeddings(row, col) = value;
  ws.random.reset();
}

// Added columns: torch.manual_seed(seed); torch.rand(T, added) — row-major, so row i's new
// values are draws i·added … i·added + added − 1 — placed right of the kept columns.
void setInputWidth(Workspace& ws, int d_in, std::uint32_t seed, const Limits& limits) {
  const int T = tokenCount(ws), old = inputWidth(ws);
  if (d_in < 1 || d_in > limits.max_dim)
    fail("d_in", "must be between 1 and " + str(limits.max_dim) + ", got " + str(d_in));
  ModelConfig model = modelFor(ws.model, d_in);
  checkModelStaysValid(ws, model, T, d_in, limits);
  Matrix x(T, d_in);
  const int kept = std::min(old, d_in);
  x.leftCols(kept) = ws.embeddings.leftCols(kept);
  if (d_in > old) {
    Matrix added(T, d_in - old);
    TorchGenerator g(seed);
    g.fillUniform(added.data(), static_cast<std::size_t>(added.size()), 0.0, 1.0);
    x.rightCols(d_in - old) = added;
  }
  ws.embeddings = std::move(x);
  ws.model = model;
  ws.random.reset();
}

void replaceEmbeddings(Workspace& ws, Matrix values, std::vector<std::string> tokens, const Limits& limits) {
  const int T = static_cast<int>(values.rows()), d_in = static_cast<int>(values.cols());
  if (T < 1 || d_in < 1) fail("embeddings", "no values");
  if (static_cast<int>(tokens.size()) != T)
    fail("tokens", str(static_cast<long long>(tokens.size())) + " names for " + str(T) + " rows");
  ModelConfig model = modelFor(ws.model, d_in);
  checkModelStaysValid(ws, model, T, d_in, limits);
  ws.tokens = std::move(tokens);
  ws.embeddings = std::move(values);
  ws.model = model;
  ws.random.reset();
}

void randomizeEmbeddings(Workspace& ws, std::uint32_t seed) {
  TorchGenerator g(seed);
  g.fillUniform(ws.embeddings.data(), static_cast<std::size_t>(ws.embeddings.size()), 0.0, 1.0);
  ws.random.reset();
}

void resetToBookExample(Workspace& ws) {
  Workspace book = bookExample(Variant::Simple);
  ws.tokens = std::move(book.tokens);
  ws.embeddings = std::move(book.embeddings);
  ws.model = modelFor(ws.model, inputWidth(ws));
  ws.random.reset();
}

namespace {

std::string trimmed(const std::string& s) {
  const std::size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// One end of a "go to": a token's name, else its 1-based position; -1 when neither.
int findToken(const std::vector<std::string>& tokens, const std::string& text) {
  const std::string want = foldCase(text);
  for (std::size_t i = 0; i < tokens.size(); ++i)
    if (foldCase(tokens[i]) == want) return static_cast<int>(i);
  if (!text.empty() && text.size() <= 9 && text.find_first_not_of("0123456789") == std::string::npos) {
    const long n = std::stol(text);
    if (n >= 1 && n <= static_cast<long>(tokens.size())) return static_cast<int>(n - 1);
  }
  return -1;
}

}  // namespace

std::pair<int, int> findTokens(const std::vector<std::string>& tokens, const std::string& text) {
  const std::string t = trimmed(text);
  const int T = static_cast<int>(tokens.size());
  if (t.empty())
    throw InputError("go to: type a token's name, its number (1–" + std::to_string(T) + ") or a range a–b");
  if (const int i = findToken(tokens, t); i >= 0) return {i, i};  // a name may hold a dash itself
  for (const char* dash : {"..", "–", "-", ":"}) {
    const std::size_t at = t.find(dash);
    if (at == std::string::npos || at == 0) continue;
    const std::string a = trimmed(t.substr(0, at)), b = trimmed(t.substr(at + std::string(dash).size()));
    const int i = findToken(tokens, a), j = findToken(tokens, b);
    if (i < 0 || j < 0)
      throw InputError("go to: no token '" + (i < 0 ? a : b) + "' (names, or numbers 1–" + std::to_string(T) + ")");
    return {std::min(i, j), std::max(i, j)};
  }
  throw InputError("go to: no token '" + t + "' (names, or numbers 1–" + std::to_string(T) + ")");
}

}  // namespace attnscope
