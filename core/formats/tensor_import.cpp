// Embeddings from text and NumPy files (formats/tensor_import.h). Two text readers: one for the
// bracketed forms (torch's print, NumPy's repr and str, JSON and Python lists), which all nest
// numbers in [ ], and one for delimited columns. Both keep the line and column of every token, so
// a refusal points at the character at fault.
#include "formats/tensor_import.h"

#include "formats/file_reading.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "engine/errors.h"
#include "formats/spreadsheet_text.h"
#include "formats/utf8.h"

namespace attnscope {

namespace {

constexpr double kFloatLimit = 3.4028235677973366e38;  // from here on a double rounds to ±∞ as float32

const char* kFullPrintTorch =
    "torch printed this tensor summarized: '...' stands for the values it left out. Print it in full "
    "with torch.set_printoptions(profile=\"full\") (and precision=8: it keeps 4 decimals otherwise) before "
    "printing it, or save it with "
    "np.save(\"x.npy\", x.numpy()) and open the .npy file";
const char* kFullPrintNumpy =
    "NumPy printed this array summarized: '...' stands for the values it left out. Print it in full "
    "with np.set_printoptions(threshold=sys.maxsize) before printing it, or save it with "
    "np.save(\"x.npy\", x) and open the .npy file";
const char* kFullPrintEither =
    "this print is summarized: '...' stands for values left out. Print in full "
    "(torch.set_printoptions(profile=\"full\") for a tensor, np.set_printoptions(threshold=sys.maxsize) "
    "for an array), or save it with np.save(\"x.npy\", x) and open the .npy file";

// A position in the text being read: byte index, line and column (characters) from 1.
struct Pos {
  std::size_t at = 0;
  int line = 1, col = 1;
};

[[noreturn]] void failAt(const std::string& source, const Pos& p, const std::string& why) {
  throw InputError(source + ":" + str(p.line) + ":" + str(p.col) + ": " + why);
}

class Reader {
 public:
  Reader(const std::string& text, const std::string& source) : s_(text), source_(source) {}

  [[noreturn]] void failAt(const Pos& p, const std::string& why) const { attnscope::failAt(source_, p, why); }
  [[noreturn]] void failHere(const std::string& why) const { failAt(pos_, why); }

  bool eof() const { return pos_.at >= s_.size(); }
  char peek(std::size_t k = 0) const { return pos_.at + k < s_.size() ? s_[pos_.at + k] : '\0'; }
  const Pos& pos() const { return pos_; }
  // The character at the reader: its UTF-8 bytes (one byte if they are not valid UTF-8).
  std::string character() const {
    const unsigned char b = static_cast<unsigned char>(peek());
    std::size_t n = b >= 0xF0 && b <= 0xF4 ? 4 : b >= 0xE0 ? 3 : b >= 0xC2 && b <= 0xDF ? 2 : 1;
    for (std::size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(peek(k)) & 0xC0) != 0x80) n = 1;
    return b < 0x80 || n > 1 ? s_.substr(pos_.at, n)
                             : "\\x" + std::string(1, "0123456789abcdef"[b >> 4]) + "0123456789abcdef"[b & 15];
  }
  bool startsWith(const char* word) const { return s_.compare(pos_.at, std::strlen(word), word) == 0; }

  void advance() {
    const char c = s_[pos_.at++];
    if (c == '\n') {
      ++pos_.line;
      pos_.col = 1;
    } else if (eof() || (static_cast<unsigned char>(s_[pos_.at]) & 0xC0) != 0x80) {
      ++pos_.col;  // past the last byte of a character: UTF-8 continuation bytes take no column
    }
  }
  void advance(std::size_t n) {
    for (std::size_t i = 0; i < n && !eof(); ++i) advance();
  }
  // Spaces, tabs and line ends; returns whether there were any.
  bool skipSpace() {
    const std::size_t before = pos_.at;
    while (!eof() &&
           (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r' || peek() == '\f' || peek() == '\v'))
      advance();
    return pos_.at != before;
  }

 private:
  const std::string& s_;
  const std::string& source_;
  Pos pos_;
};

bool isWordChar(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' || c == '+' ||
         c == '-' || c == '_';
}

std::string lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

// A token quoted for a one-line message: control characters as '?', at most 40 bytes (then "…").
std::string quoted(const std::string& token) {
  std::size_t cut = std::min<std::size_t>(token.size(), 40);
  while (cut < token.size() && cut > 0 && (static_cast<unsigned char>(token[cut]) & 0xC0) == 0x80)
    --cut;  // whole characters
  std::string out = cut < token.size() ? token.substr(0, cut) + "…" : token;
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return "'" + out + "'";
}

// One number as text (a printed token or a CSV field): "" and the float32 in *out, or why not.
std::string readNumber(const std::string& token, float* out) {
  const std::string l = lower(token);
  const std::string bare = !l.empty() && (l[0] == '+' || l[0] == '-') ? l.substr(1) : l;
  if (bare == "nan") return "NaN: every value must be a finite number";
  if (bare == "inf" || bare == "infinity") return quoted(token) + " is infinite: every value must be a finite number";
  if (l == "true" || l == "false")
    return quoted(token) + " is not a number (a bool tensor? convert it with x.float() or x.astype(np.float32))";
  const std::string not_a_number = quoted(token) + " is not a number";
  const char* begin = token.data();
  const char* end = token.data() + token.size();
  if (begin != end && *begin == '+') ++begin;  // from_chars takes no plus sign
  auto digitOrDot = [](char c) { return c == '.' || (c >= '0' && c <= '9'); };
  if (begin == end) return not_a_number;
  if (!digitOrDot(*begin) && !(*begin == '-' && begin + 1 != end && digitOrDot(begin[1]))) return not_a_number;
  double v = 0;
  const auto r = std::from_chars(begin, end, v, std::chars_format::general);
  if (r.ptr != end) return not_a_number;
  if (r.ec == std::errc::result_out_of_range) {
    // Underflow (1e-400) reads as zero, as torch and NumPy read it; overflow is refused below.
    const std::size_t e = l.find('e');
    const bool underflow = e != std::string::npos && e + 1 < l.size() && l[e + 1] == '-';
    if (!underflow) return quoted(token) + " is beyond float32's range (±3.4028235e38)";
    v = *begin == '-' ? -0.0 : 0.0;
  } else if (r.ec != std::errc()) {
    return not_a_number;
  }
  if (!(std::fabs(v) < kFloatLimit)) return quoted(token) + " is beyond float32's range (±3.4028235e38)";
  *out = static_cast<float>(v);
  return "";
}

// The digits after the point of a printed number ("-0.4300" 4, "1.2340e-05" 4, "1." 0).
int decimalsOf(const std::string& token) {
  const std::size_t point = token.find('.');
  if (point == std::string::npos) return 0;
  int n = 0;
  for (std::size_t k = point + 1; k < token.size() && token[k] >= '0' && token[k] <= '9'; ++k) ++n;
  return n;
}

// Rows of numbers as they are read, checked against the limits as they grow.
struct Rows {
  std::vector<float> values;
  int rows = 0, cols = -1;  // cols: of the first row
};

// ---- bracketed text: tensor([[…]]), array([[…]], dtype=…), [[…]] ----------------------------

class BracketParser {
 public:
  BracketParser(Reader& reader, const Limits& limits) : r_(reader), limits_(limits) {}

  // The whole text: one value and nothing after it.
  ImportedEmbeddings parse() {
    r_.skipSpace();
    if (r_.startsWith("OrderedDict("))
      r_.failHere(
          "a printed state_dict (OrderedDict): these are a module's parameters, not embeddings — "
          "Edit › Paste parameters takes them");
    ImportedEmbeddings out = value();
    r_.skipSpace();
    if (!r_.eof())
      r_.failHere("unexpected text after the " + std::string(kind_ == "lists"   ? "lists"
                                                             : kind_ == "torch" ? "tensor"
                                                                                : "array"));
    out.rounded_to = roundedTo();
    return out;
  }

  // One value at the reader — tensor(…), array(…) or nested lists — and no further. `vector()`
  // says afterwards whether it was 1-D.
  ImportedEmbeddings value() {
    rows_ = Rows();
    vector_ = false;
    r_.skipSpace();
    if (r_.startsWith("Parameter containing:")) {  // print(module.W_query) of SelfAttention_v1
      r_.advance(std::strlen("Parameter containing:"));
      r_.skipSpace();
    }
    std::string kind = "lists";
    bool wrapped = false;
    if (r_.peek() != '[') {
      const Pos at = r_.pos();
      std::string name;
      while (!r_.eof() && (isWordChar(r_.peek()) && r_.peek() != '-' && r_.peek() != '+')) {
        name += r_.peek();
        r_.advance();
      }
      r_.skipSpace();
      if (r_.peek() != '(') r_.failAt(at, "expected a tensor, an array or nested lists of numbers");
      if (name == "tensor" || name == "torch.tensor")
        kind = "torch";
      else if (name == "array" || name == "np.array" || name == "numpy.array")
        kind = "numpy";
      else
        r_.failAt(at, "'" + name + "(' is not a tensor(…) or an array(…)");
      r_.advance();  // (
      r_.skipSpace();
      wrapped = true;
    }
    kind_ = kind;
    ImportedEmbeddings out;
    out.format = kind;
    if (r_.peek() != '[') {
      if (r_.peek() == '-' || r_.peek() == '+' || r_.peek() == '.' || (r_.peek() >= '0' && r_.peek() <= '9'))
        r_.failHere("a single number (a 0-D " + std::string(kind == "numpy" ? "array" : "tensor") +
                    "): the embeddings are a matrix with one row per token");
      r_.failHere("expected '[' to open the rows");
    }
    const Pos open = r_.pos();
    list(0);
    if (rows_.rows == 0) r_.failAt(open, "empty: no values");
    if (wrapped) suffix();
    out.values = Matrix(rows_.rows, rows_.cols);
    std::copy(rows_.values.begin(), rows_.values.end(), out.values.data());
    return out;
  }

 private:
  const char* summarized() const {
    return kind_ == "torch" ? kFullPrintTorch : kind_ == "numpy" ? kFullPrintNumpy : kFullPrintEither;
  }

  // One list at `depth` (0: the whole matrix or a 1-D vector, 1: a row). The reader is at '['.
  // Items are separated by commas or, as NumPy's str prints them, by spaces.
  void list(int depth) {
    const Pos open = r_.pos();
    r_.advance();
    int items = 0;
    bool has_lists = false, has_numbers = false, separated = true;
    while (true) {
      if (r_.skipSpace()) separated = true;
      if (r_.eof()) r_.failAt(open, "this '[' is never closed");
      const char c = r_.peek();
      if (c == ']') {
        r_.advance();
        break;
      }
      const Pos at = r_.pos();
      if (r_.startsWith("...")) r_.failAt(at, summarized());
      if (!separated) r_.failAt(at, "expected ',' or ']'");
      separated = false;
      if (c != '[' && c != '"' && c != '\'' && !isWordChar(c))
        r_.failAt(at, "unexpected '" + r_.character() + "': expected a number");
      if (c == '[') {
        if (depth >= 1) r_.failAt(at, "nested 3 deep (a 3-D tensor): give one T × d_in matrix, e.g. x[0] of a batch x");
        if (has_numbers) r_.failAt(at, "a row among numbers: a matrix holds rows only, a vector numbers only");
        has_lists = true;
        if (rows_.rows >= limits_.max_tokens)
          r_.failAt(at, "more than " + str(limits_.max_tokens) + " rows: the limit is " + str(limits_.max_tokens) +
                            " tokens");
        const std::size_t before = rows_.values.size();
        list(1);
        const long long n = static_cast<long long>(rows_.values.size() - before);
        if (n == 0) r_.failAt(at, "an empty row: every row needs d_in values");
        if (rows_.cols < 0)
          rows_.cols = static_cast<int>(n);
        else if (n != rows_.cols)
          r_.failAt(at, "this row has " + str(n) + (n == 1 ? " value" : " values") + " but the first row has " +
                            str(rows_.cols) + " (rows must all have d_in values)");
        ++rows_.rows;
      } else if (c == '"' || c == '\'') {
        r_.failAt(at, "a string, not a number");
      } else {
        if (has_lists) r_.failAt(at, "a number among rows: a matrix holds rows only, a vector numbers only");
        has_numbers = true;
        if (items >= limits_.max_dim)
          r_.failAt(at, "more than " + str(limits_.max_dim) + " values in a row: the limit of d_in is " +
                            str(limits_.max_dim));
        std::string token;
        while (!r_.eof() && isWordChar(r_.peek())) {
          token += r_.peek();
          r_.advance();
        }
        float v = 0;
        const std::string why = readNumber(token, &v);
        if (!why.empty()) r_.failAt(at, why);
        rows_.values.push_back(v);
        if (kind_ == "torch") torch_decimals_ = std::max(torch_decimals_, decimalsOf(token));
      }
      ++items;
      if (r_.skipSpace()) separated = true;
      if (r_.peek() == ',') {
        r_.advance();
        separated = true;
      }
    }
    if (depth == 0 && has_numbers) {  // a 1-D vector: one token
      vector_ = true;
      rows_.rows = 1;
      rows_.cols = static_cast<int>(rows_.values.size());
    }
  }

  // ", requires_grad=True)", ", grad_fn=<AddmmBackward0>)", ", dtype=float32)": key=value pairs up
  // to the closing parenthesis. Their values change nothing the numbers say.
  void suffix() {
    while (true) {
      r_.skipSpace();
      if (r_.peek() == ')') {
        r_.advance();
        return;
      }
      if (r_.peek() != ',')
        r_.failHere("expected ')' to close the " + std::string(kind_ == "torch" ? "tensor" : "array"));
      r_.advance();
      r_.skipSpace();
      if (r_.peek() == ')') continue;
      const Pos at = r_.pos();
      std::string key;
      while (!r_.eof() && (std::isalnum(static_cast<unsigned char>(r_.peek())) || r_.peek() == '_')) {
        key += r_.peek();
        r_.advance();
      }
      r_.skipSpace();
      if (key.empty() || r_.peek() != '=') r_.failAt(at, "expected a keyword such as dtype=… after the values");
      r_.advance();
      int depth = 0;
      char quote = '\0';
      while (!r_.eof()) {
        const char c = r_.peek();
        if (quote) {
          if (c == quote) quote = '\0';
        } else if (c == '\'' || c == '"') {
          quote = c;
        } else if (c == '(' || c == '[' || c == '<' || c == '{') {
          ++depth;
        } else if (c == ')' || c == ']' || c == '>' || c == '}') {
          if (depth == 0) break;
          --depth;
        } else if (c == ',' && depth == 0) {
          break;
        }
        r_.advance();
      }
    }
  }

 public:
  bool vector() const { return vector_; }
  // The decimals torch printed the values read so far with, when they round them (1–7: its
  // default precision is 4, and every value is padded to it); 0 when exact or not torch's print.
  int roundedTo() const { return torch_decimals_ >= 1 && torch_decimals_ <= 7 ? torch_decimals_ : 0; }

 private:
  Reader& r_;
  const Limits& limits_;
  Rows rows_;
  std::string kind_;
  bool vector_ = false;     // the last value was 1-D (a bias), not a matrix
  int torch_decimals_ = 0;  // the most digits after the point of a number in tensor(…)
};

// A printed state_dict: OrderedDict([('name', tensor(…)), …]) or {'name': tensor(…), …}.
std::vector<NamedTensor> parseStateDict(Reader& r, const Limits& limits, int* rounded_to) {
  BracketParser values(r, limits);
  r.skipSpace();
  const bool ordered = r.startsWith("OrderedDict(");
  if (ordered) {
    r.advance(std::strlen("OrderedDict("));
    r.skipSpace();
  }
  const char open = ordered ? '[' : '{', close = ordered ? ']' : '}';
  if (r.peek() != open)
    r.failHere(ordered ? "expected '[' after OrderedDict("
                       : "expected a printed state_dict: OrderedDict([('W_query.weight', tensor(…)), …])");
  r.advance();
  std::vector<NamedTensor> out;
  auto name = [&]() {
    r.skipSpace();
    const char q = r.peek();
    if (q != '\'' && q != '"') r.failHere("expected a quoted parameter name such as 'W_query.weight'");
    r.advance();
    std::string n;
    while (!r.eof() && r.peek() != q && r.peek() != '\n') {
      n += r.peek();
      r.advance();
    }
    if (r.peek() != q) r.failHere("this name's quote is never closed");
    r.advance();
    return n;
  };
  while (true) {
    r.skipSpace();
    if (r.peek() == close) {
      r.advance();
      break;
    }
    if (r.eof()) r.failHere(std::string("expected '") + close + "' to close the state_dict");
    const Pos at = r.pos();
    if (ordered) {
      if (r.peek() != '(') r.failHere("expected ('name', tensor(…))");
      r.advance();
    }
    NamedTensor t;
    t.name = name();
    for (const NamedTensor& o : out)
      if (o.name == t.name) r.failAt(at, "'" + t.name + "' is given twice");
    r.skipSpace();
    if (r.peek() != (ordered ? ',' : ':'))
      r.failHere(ordered ? "expected ',' after the name" : "expected ':' after the name");
    r.advance();
    t.value = values.value().values;
    t.is_vector = values.vector();
    r.skipSpace();
    if (ordered) {
      if (r.peek() != ')') r.failHere("expected ')' to close ('" + t.name + "', tensor(…))");
      r.advance();
      r.skipSpace();
    }
    out.push_back(std::move(t));
    if (r.peek() == ',')
      r.advance();
    else if (r.peek() != close)
      r.failHere(std::string("expected ',' or '") + close + "'");
  }
  if (ordered) {
    r.skipSpace();
    if (r.peek() != ')') r.failHere("expected ')' to close OrderedDict(");
    r.advance();
  }
  r.skipSpace();
  if (!r.eof()) r.failHere("unexpected text after the state_dict");
  if (out.empty()) throw InputError("an empty state_dict: no parameters");
  if (rounded_to) *rounded_to = values.roundedTo();
  return out;
}

// ---- delimited columns: CSV, TSV, whitespace ------------------------------------------------

struct Field {
  std::string text;
  Pos pos;
  bool quoted = false;
};

bool isNumberText(const std::string& t) {
  float v;
  return readNumber(t, &v).empty();
}

// Delimited text a record at a time: RFC 4180 quotes, which may hold the delimiter, a doubled quote
// and line breaks (attnscope's own CSV quotes a token name with a line break in it); blank lines and
// '#' lines (np.savetxt's comments) skipped; a \r before a line's end dropped. One record's fields are
// held at a time, and positions advance as the text is read (a 4096-wide row used to count its
// columns from the line's start for every field).
class RecordReader {
 public:
  RecordReader(const std::string& text, const std::string& source, char delim, bool whitespace)
      : r_(text, source), delim_(delim), whitespace_(whitespace) {
    if (text.compare(0, 3, "\xEF\xBB\xBF") == 0) r_.advance(3);  // a byte order mark (spreadsheets write one)
  }

  // The next record's fields; false at the end.
  bool next(std::vector<Field>& fields) {
    fields.clear();
    for (;;) {  // to the next line with content
      if (r_.eof()) return false;
      while (!r_.eof() && (r_.peek() == ' ' || r_.peek() == '\t')) r_.advance();
      if (atLineEnd()) {
        endLine();
      } else if (r_.peek() == '#') {
        while (!r_.eof() && r_.peek() != '\n') r_.advance();
        endLine();
      } else {
        break;
      }
    }
    if (whitespace_) {
      while (!atLineEnd()) {
        Field f;
        f.pos = r_.pos();
        while (!atLineEnd() && r_.peek() != ' ' && r_.peek() != '\t') take(f);
        fields.push_back(std::move(f));
        while (!atLineEnd() && (r_.peek() == ' ' || r_.peek() == '\t')) r_.advance();
      }
      endLine();
      return true;
    }
    for (;;) {
      while (r_.peek() == ' ' && !r_.eof()) r_.advance();
      Field f;
      f.pos = r_.pos();
      if (!r_.eof() && r_.peek() == '"') {
        f.quoted = true;
        r_.advance();
        for (;;) {
          if (r_.eof()) r_.failAt(f.pos, "this quoted field is never closed");
          if (r_.peek() == '"' && r_.peek(1) == '"') {
            f.text += '"';
            r_.advance(2);
          } else if (r_.peek() == '"') {
            r_.advance();
            break;
          } else {
            take(f);
          }
        }
        while (!r_.eof() && r_.peek() == ' ') r_.advance();
        if (!atLineEnd() && r_.peek() != delim_)
          r_.failHere(std::string("expected '") + (delim_ == '\t' ? "\\t" : std::string(1, delim_)) +
                      "' after a quoted field");
      } else {
        while (!atLineEnd() && r_.peek() != delim_) take(f);
        while (!f.text.empty() && (f.text.back() == ' ' || f.text.back() == '\t')) f.text.pop_back();
      }
      fields.push_back(std::move(f));
      if (atLineEnd()) break;
      r_.advance();  // the delimiter
    }
    endLine();
    return true;
  }

 private:
  bool atLineEnd() const {
    return r_.eof() || r_.peek() == '\n' || (r_.peek() == '\r' && (r_.peek(1) == '\n' || r_.peek(1) == '\0'));
  }
  void endLine() {
    if (!r_.eof() && r_.peek() == '\r') r_.advance();
    if (!r_.eof() && r_.peek() == '\n') r_.advance();
  }
  void take(Field& f) {
    f.text += r_.peek();
    r_.advance();
  }
  Reader r_;
  char delim_;
  bool whitespace_;
};

ImportedEmbeddings parseColumns(const std::string& text, const std::string& source, const Limits& limits) {
  auto failAt = [&](const Pos& p, const std::string& why) { attnscope::failAt(source, p, why); };
  // The delimiter is chosen on the first record of content, outside its quotes (a quoted name may
  // hold a line break, a comma or a tab).
  char delim = '\0';
  bool whitespace = false;
  for (std::size_t i = text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0; i < text.size();) {
    std::size_t end = text.find('\n', i);
    if (end == std::string::npos) end = text.size();
    const std::size_t first = text.find_first_not_of(" \t\r", i);
    if (first < end && text[first] != '#') {
      bool tab = false, comma = false, semicolon = false;
      auto scan = [&](bool quotes) {  // a quote never closed: its line alone, quotes or not
        bool quoted = false;
        tab = comma = semicolon = false;
        for (std::size_t k = first; k < text.size() && (quoted || text[k] != '\n'); ++k) {
          if (quotes && text[k] == '"')
            quoted = !quoted;  // a doubled quote toggles twice
          else if (!quoted) {
            tab = tab || text[k] == '\t';
            comma = comma || text[k] == ',';
            semicolon = semicolon || text[k] == ';';
          }
        }
        return !quoted;
      };
      if (!scan(true)) scan(false);
      delim = tab ? '\t' : comma ? ',' : semicolon ? ';' : '\0';
      whitespace = delim == '\0';
      break;
    }
    i = end + 1;
  }
  ImportedEmbeddings out;
  out.format = whitespace ? "columns" : delim == '\t' ? "tsv" : "csv";
  auto numeric = [](const Field& f) { return isNumberText(f.text); };

  // First pass: the header (a first record with a field that is not a number, where the next has
  // one, or with no number at all) and the label column (every data record's first field is not a
  // number). Only the first two records are kept.
  std::vector<Field> fields, header, second;
  std::size_t records = 0;
  bool labels = true;
  {
    RecordReader reader(text, source, delim, whitespace);
    while (reader.next(fields)) {
      if (records == 0)
        header = fields;
      else if (records == 1)
        second = fields;
      if (records > 0) labels = labels && fields.size() >= 2 && !numeric(fields[0]);
      ++records;
    }
  }
  if (records == 0) failAt(Pos{0, 1, 1}, "empty: no numbers");
  std::size_t first_data = 0;
  {
    bool any_text = false, all_text = true;
    for (std::size_t c = 0; c < header.size(); ++c) {
      const bool num = numeric(header[c]);
      if (!num && !(c == 0 && header[c].text.empty())) any_text = true;
      if (num) all_text = false;
    }
    if (all_text) {
      first_data = 1;
    } else if (any_text && records > 1) {
      for (std::size_t c = 1; c < header.size() && c < second.size(); ++c)
        if (!numeric(header[c]) && numeric(second[c])) first_data = 1;
    }
  }
  if (first_data >= records) failAt(Pos{0, header[0].pos.line, 1}, "only a header line: no rows of numbers");
  if (first_data == 0) labels = labels && header.size() >= 2 && !numeric(header[0]);

  // Second pass: the numbers, straight into the rows.
  Rows rows;
  RecordReader reader(text, source, delim, whitespace);
  for (std::size_t record = 0; reader.next(fields); ++record) {
    if (record < first_data) continue;
    const Pos row_pos = fields[0].pos;
    if (rows.rows >= limits.max_tokens)
      failAt(row_pos,
             "more than " + str(limits.max_tokens) + " rows: the limit is " + str(limits.max_tokens) + " tokens");
    const std::size_t skip = labels ? 1 : 0;
    const long long n = static_cast<long long>(fields.size() - skip);
    if (rows.cols >= 0 && n != rows.cols)
      failAt(row_pos, "this row has " + str(n) + (n == 1 ? " value" : " values") + " but the first row has " +
                          str(rows.cols) + " (rows must all have d_in values)");
    if (n > limits.max_dim)
      failAt(fields[skip + static_cast<std::size_t>(limits.max_dim)].pos,
             "more than " + str(limits.max_dim) + " values in a row: the limit of d_in is " + str(limits.max_dim));
    if (labels) {  // names are text: bytes that are not UTF-8 would change on the first save
      if (const std::size_t bad = firstNonUtf8(fields[0].text); bad != std::string::npos) {
        char byte[8];
        std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(fields[0].text[bad]));
        failAt(fields[0].pos, std::string("this token name is not UTF-8 text (byte ") + byte +
                                  "): save the file as UTF-8 (in a spreadsheet: CSV UTF-8)");
      }
      // A CSV's: the export's mark off a formula-like name (spreadsheet_text.h).
      out.tokens.push_back(delim == ',' ? cellText(fields[0].text) : fields[0].text);
    }
    for (std::size_t c = skip; c < fields.size(); ++c) {
      const Field& f = fields[c];
      if (f.text.empty()) failAt(f.pos, "an empty field: expected a number");
      if (f.text == "...") failAt(f.pos, kFullPrintEither);
      float v = 0;
      const std::string why = readNumber(f.text, &v);
      if (!why.empty()) failAt(f.pos, why);
      rows.values.push_back(v);
    }
    rows.cols = static_cast<int>(n);
    ++rows.rows;
  }
  out.values = Matrix(rows.rows, rows.cols);
  std::copy(rows.values.begin(), rows.values.end(), out.values.data());
  return out;
}

// An array of a .npy or .npz as embeddings: 2-D, or 1-D as one token.
ImportedEmbeddings fromArray(const NpyArray& a, const std::string& source, const Limits& limits, const char* format) {
  auto fail = [&](const std::string& why) { attnscope::fail(source, why); };
  std::string shape;
  for (std::size_t k = 0; k < a.shape.size(); ++k) shape += (k ? " × " : "") + str(a.shape[k]);
  if (a.shape.empty()) fail("a single number (a 0-D array): the embeddings are a matrix with one row per token");
  if (a.shape.size() > 2)
    fail("a " + str(static_cast<long long>(a.shape.size())) + "-D array (" + shape +
         "): give one T × d_in matrix, e.g. np.save(path, x[0]) for a batch x");
  if (a.values.empty()) fail("empty (" + shape + "): no values");
  const std::int64_t rows = a.rows(), cols = a.cols();
  if (rows > limits.max_tokens) fail(str(rows) + " rows exceeds the limit of " + str(limits.max_tokens) + " tokens");
  if (cols > limits.max_dim) fail("d_in = " + str(cols) + " exceeds the limit of " + str(limits.max_dim));
  ImportedEmbeddings out;
  out.format = format;
  out.values = Matrix(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
  std::copy(a.values.begin(), a.values.end(), out.values.data());
  return out;
}

NpyLimits npyLimits(const Limits& limits) {
  NpyLimits n;
  n.max_bytes = limits.max_file_bytes;
  n.max_elements = static_cast<std::int64_t>(limits.max_tokens) * limits.max_dim;
  return n;
}

}  // namespace

ImportedEmbeddings parseEmbeddingsText(const std::string& text, const std::string& source, const Limits& limits) {
  if (static_cast<std::int64_t>(text.size()) > limits.max_file_bytes)
    throw InputError(source + ": " + str(static_cast<long long>(text.size())) + " bytes is larger than the limit of " +
                     str(limits.max_file_bytes) + " bytes");
  // The first character that is not space decides: brackets and tensor(…)/array(…), else columns.
  std::size_t first = text.find_first_not_of(" \t\r\n\f\v");
  if (first != std::string::npos && text.compare(first, 3, "\xEF\xBB\xBF") == 0)
    first = text.find_first_not_of(" \t\r\n\f\v", first + 3);
  if (first == std::string::npos) {
    Reader r(text, source);
    r.skipSpace();
    r.failHere("empty: no numbers");
  }
  const char c = text[first];
  bool bracketed = c == '[';
  if (!bracketed && std::isalpha(static_cast<unsigned char>(c))) {  // tensor(, array(, Parameter containing:
    std::size_t k = first;
    while (k < text.size() && (std::isalnum(static_cast<unsigned char>(text[k])) || text[k] == '_' || text[k] == '.'))
      ++k;
    while (k < text.size() && (text[k] == ' ' || text[k] == '\t')) ++k;
    bracketed = (k < text.size() && text[k] == '(') || text.compare(first, 21, "Parameter containing:") == 0;
  }
  if (c == '{') {
    Reader r(text, source);
    r.skipSpace();
    if (looksLikeStateDict(text))
      r.failHere(
          "a printed state_dict: these are a module's parameters, not embeddings — Edit › Paste parameters takes them");
    r.failHere("a JSON object: give the embeddings as nested lists [[…], …], one list per token");
  }
  if (bracketed) {
    Reader r(text, source);
    return BracketParser(r, limits).parse();
  }
  return parseColumns(text, source, limits);
}

ImportedEmbeddings parseEmbeddingsBytes(const std::string& bytes, const std::string& source, const Limits& limits,
                                        const std::string& array) {
  if (static_cast<std::int64_t>(bytes.size()) > limits.max_file_bytes)
    throw InputError(source + ": " + str(static_cast<long long>(bytes.size())) + " bytes is larger than the limit of " +
                     str(limits.max_file_bytes) + " bytes");
  if (looksLikeNpy(bytes)) {
    if (!array.empty())
      throw InputError(source + ": a .npy file holds one array; a name (" + array + ") picks one of a .npz");
    return fromArray(parseNpy(bytes, source, npyLimits(limits)), source, limits, "npy");
  }
  if (looksLikeZip(bytes)) {
    std::vector<NamedArray> arrays = parseNpz(bytes, source, npyLimits(limits));
    std::string names;
    for (const NamedArray& a : arrays) names += (names.empty() ? "" : ", ") + a.name;
    if (!array.empty()) {
      for (const NamedArray& a : arrays)
        if (a.name == array) return fromArray(a.array, source + "[" + a.name + "]", limits, "npz");
      throw InputError(source + ": no array named '" + array + "' (it holds: " + (names.empty() ? "nothing" : names) +
                       ")");
    }
    const NamedArray* only = nullptr;
    int count = 0;
    for (const NamedArray& a : arrays)
      if (a.array.shape.size() == 2) {
        only = &a;
        ++count;
      }
    if (count == 1) return fromArray(only->array, source + "[" + only->name + "]", limits, "npz");
    if (arrays.empty()) throw InputError(source + ": an empty .npz: no arrays");
    if (count == 0)
      throw InputError(source + ": no 2-D array among its arrays (" + names +
                       "): name the one to use with --array NAME");
    std::string twoD;
    for (const NamedArray& a : arrays)
      if (a.array.shape.size() == 2) twoD += (twoD.empty() ? "" : ", ") + a.name;
    throw InputError(source + ": " + str(count) + " 2-D arrays (" + twoD + "): name the one to use with --array NAME");
  }
  if (bytes.find('\0') != std::string::npos)
    throw InputError(source + ": binary data that is neither .npy nor .npz (text, .npy or .npz expected)");
  return parseEmbeddingsText(bytes, source, limits);
}

ImportedEmbeddings readEmbeddingsFile(const std::string& path, const Limits& limits, const std::string& array) {
  const std::string bytes = readFileWithin(path, limits.max_file_bytes, FileKind::AnyReadable);
  return parseEmbeddingsBytes(bytes, path, limits, array);
}

std::vector<std::string> splitNames(const std::string& text) {
  std::vector<std::string> out;
  std::string word;
  for (char c : text) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
      if (!word.empty()) out.push_back(std::move(word));
      word.clear();
    } else {
      word += c;
    }
  }
  if (!word.empty()) out.push_back(std::move(word));
  return out;
}

std::vector<std::string> tokenNames(const std::vector<std::string>& given, int T) {
  if (static_cast<int>(given.size()) == T) return given;
  std::vector<std::string> out;
  for (int i = 0; i < T; ++i) out.push_back("t" + std::to_string(i + 1));
  return out;
}

std::string roundedPrintNote(int decimals) {
  const std::string d = str(decimals);
  return "torch printed these values with " + d + (decimals == 1 ? " decimal" : " decimals") +
         ", so they are rounded (each by up to 5e-" + (decimals + 1 < 10 ? "0" : "") + str(decimals + 1) +
         "). For 8 decimals print them after torch.set_printoptions(precision=8) (profile=\"full\" alone keeps 4), or "
         "save them with np.savez for the exact values";
}

bool looksLikeStateDict(const std::string& text) {
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return false;
  if (text.compare(first, 12, "OrderedDict(") == 0) return true;
  // A plain dict print: {'name': tensor(…
  const std::size_t quote = text.find_first_not_of(" \t\r\n", first + 1);
  return text[first] == '{' && quote != std::string::npos && text[quote] == '\'';
}

std::vector<NamedTensor> parseStateDictText(const std::string& text, const std::string& source, const Limits& limits,
                                            int* rounded_to) {
  if (static_cast<std::int64_t>(text.size()) > limits.max_file_bytes)
    throw InputError(source + ": " + str(static_cast<long long>(text.size())) + " bytes is larger than the limit of " +
                     str(limits.max_file_bytes) + " bytes");
  Reader r(text, source);
  try {
    return parseStateDict(r, limits, rounded_to);
  } catch (const InputError& e) {
    const std::string what = e.what();
    if (what.rfind("an empty", 0) == 0) throw InputError(source + ": " + what);
    throw;
  }
}

}  // namespace attnscope
