// .npy and .npz reading (formats/npy.h). The .npy header is a Python dict literal, read here with
// a small parser of its own (strings, True/False, tuples of integers); the zip container is
// formats/zip_archive.h's (libzip).
#include "formats/npy.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

#include "engine/errors.h"
#include "formats/zip_archive.h"

namespace attnscope {

namespace {



bool hostLittleEndian() {
  const std::uint16_t one = 1;
  unsigned char first;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

// A name from a file, fit for a one-line message: control characters as '?'.
std::string printable(const std::string& name) {
  std::string out = name.substr(0, 200);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return out;
}

// ---- the .npy header: {'descr': '<f4', 'fortran_order': False, 'shape': (6, 3), } -------------

struct Header {
  std::string descr;
  bool fortran = false;
  std::vector<std::int64_t> shape;
  bool has_descr = false, has_fortran = false, has_shape = false;
};

class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& source) : s_(text), source_(source) {}

  Header parse() {
    Header h;
    skip();
    expect('{');
    while (true) {
      skip();
      if (peek() == '}') break;
      const std::string key = string();
      skip();
      expect(':');
      skip();
      if (key == "descr") {
        if (peek() == '[')
          fail(source_, "a structured array (its dtype is a list of fields): save one plain float32 array");
        h.descr = string();
        h.has_descr = true;
      } else if (key == "fortran_order") {
        h.fortran = boolean();
        h.has_fortran = true;
      } else if (key == "shape") {
        h.shape = tuple();
        h.has_shape = true;
      } else {
        fail(source_, "damaged .npy header: unexpected key '" + printable(key) + "'");
      }
      skip();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      skip();
      if (peek() != '}') damaged("',' or '}'");
    }
    if (!h.has_descr || !h.has_fortran || !h.has_shape)
      fail(source_, "damaged .npy header: it needs 'descr', 'fortran_order' and 'shape'");
    return h;
  }

 private:
  [[noreturn]] void damaged(const std::string& what) {
    fail(source_, "damaged .npy header: expected " + what + " at character " + str(static_cast<long long>(i_) + 1));
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skip() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r')) ++i_;
  }
  void expect(char c) {
    if (peek() != c) damaged(std::string("'") + c + "'");
    ++i_;
  }
  std::string string() {
    const char quote = peek();
    if (quote != '\'' && quote != '"') damaged("a quoted string");
    ++i_;
    const std::size_t start = i_;
    while (i_ < s_.size() && s_[i_] != quote) {
      if (s_[i_] == '\\') damaged("a plain string");
      ++i_;
    }
    if (i_ >= s_.size()) damaged("the end of a string");
    return s_.substr(start, i_++ - start);
  }
  bool boolean() {
    if (s_.compare(i_, 4, "True") == 0) {
      i_ += 4;
      return true;
    }
    if (s_.compare(i_, 5, "False") == 0) {
      i_ += 5;
      return false;
    }
    damaged("True or False");
  }
  std::vector<std::int64_t> tuple() {
    std::vector<std::int64_t> out;
    expect('(');
    while (true) {
      skip();
      if (peek() == ')') {
        ++i_;
        return out;
      }
      if (peek() < '0' || peek() > '9') damaged("a dimension");
      std::int64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        if (v > (std::numeric_limits<std::int64_t>::max() - 9) / 10) fail(source_, "a dimension too large to be real");
        v = v * 10 + (s_[i_++] - '0');
      }
      while (peek() == 'L') ++i_;  // Python 2's long integers
      out.push_back(v);
      if (out.size() > 64) fail(source_, "damaged .npy header: more than 64 dimensions");
      skip();
      if (peek() == ',')
        ++i_;
      else if (peek() != ')')
        damaged("',' or ')'");
    }
  }

  const std::string& s_;
  const std::string& source_;
  std::size_t i_ = 0;
};

std::string describeDtype(const std::string& descr) {
  std::string body = descr;
  if (!body.empty() && (body[0] == '<' || body[0] == '>' || body[0] == '|' || body[0] == '=')) body = body.substr(1);
  if (body.empty()) return "'" + printable(descr) + "'";
  const char kind = body[0];
  const std::string size = body.substr(1);
  auto bits = [&]() -> std::string {  // "" unless the size is a number of bytes (the message quotes descr)
    if (size.empty() || size.size() > 4 || size.find_first_not_of("0123456789") != std::string::npos) return "";
    return std::to_string(std::stoi(size) * 8);
  };
  std::string name;
  auto numeric = [&](const char* family) { return bits().empty() ? std::string("an unknown type") : family + bits(); };
  switch (kind) {
    case 'b': name = "bool"; break;
    case 'i': name = numeric("int"); break;
    case 'u': name = numeric("uint"); break;
    case 'f': name = numeric("float"); break;
    case 'c': name = numeric("complex"); break;
    case 'U': name = "a string type"; break;
    case 'S':
    case 'a': name = "a bytes type"; break;
    case 'O': name = "object (pickled Python objects)"; break;
    case 'M': name = "datetime64"; break;
    case 'm': name = "timedelta64"; break;
    case 'V': name = "void (raw records)"; break;
    default: name = "an unknown type"; break;
  }
  return name + " ('" + printable(descr) + "')";
}

std::uint16_t le16(const std::string& b, std::size_t at) {
  return static_cast<std::uint16_t>(static_cast<unsigned char>(b[at]) | static_cast<unsigned char>(b[at + 1]) << 8);
}
std::uint32_t le32(const std::string& b, std::size_t at) {
  return static_cast<std::uint32_t>(le16(b, at)) | static_cast<std::uint32_t>(le16(b, at + 2)) << 16;
}

// "[3, 1]": a C-order flat index as a position in `shape`.
std::string indexText(std::int64_t flat, const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> idx(shape.size());
  for (std::size_t k = shape.size(); k-- > 0;) {
    idx[k] = shape[k] > 0 ? flat % shape[k] : 0;
    flat = shape[k] > 0 ? flat / shape[k] : 0;
  }
  std::string out = "[";
  for (std::size_t k = 0; k < idx.size(); ++k) out += (k ? ", " : "") + str(idx[k]);
  return out + "]";
}

}  // namespace

bool looksLikeNpy(const std::string& bytes) { return bytes.size() >= 6 && bytes.compare(0, 6, "\x93NUMPY") == 0; }

bool looksLikeZip(const std::string& bytes) {
  return bytes.size() >= 4 && (bytes.compare(0, 4, "PK\x03\x04") == 0 || bytes.compare(0, 4, "PK\x05\x06") == 0);
}

NpyHeader parseNpyHeader(const std::string& bytes, const std::string& source) {
  if (!looksLikeNpy(bytes)) fail(source, "not a .npy file (it does not start with \\x93NUMPY)");
  if (bytes.size() < 10) fail(source, "a damaged .npy file: it ends inside its header");
  const int major = static_cast<unsigned char>(bytes[6]);
  if (major < 1 || major > 3)
    fail(source, ".npy format version " + str(major) + "." + str(static_cast<unsigned char>(bytes[7])) +
                     " is not one this reader knows (1.0, 2.0, 3.0)");
  std::size_t header_len, data_start;
  if (major == 1) {
    header_len = le16(bytes, 8);
    data_start = 10 + header_len;
  } else {
    if (bytes.size() < 12) fail(source, "a damaged .npy file: it ends inside its header");
    header_len = le32(bytes, 8);
    data_start = 12 + header_len;
  }
  if (header_len > bytes.size() || data_start > bytes.size())
    fail(source, "a damaged .npy file: it ends inside its header");
  const Header h = HeaderParser(bytes.substr(data_start - header_len, header_len), source).parse();
  NpyHeader out;
  out.descr = h.descr;
  out.fortran = h.fortran;
  out.shape = h.shape;
  out.data_start = data_start;
  return out;
}

NpyArray parseNpy(const std::string& bytes, const std::string& source, const NpyLimits& limits) {
  const NpyHeader h = parseNpyHeader(bytes, source);
  const std::size_t data_start = h.data_start;

  // The dtype: float32 or float64, either byte order.
  const std::string& d = h.descr;
  const char order = d.empty() ? '\0' : d[0];
  const std::string body = (order == '<' || order == '>' || order == '=' || order == '|') ? d.substr(1) : d;
  if (body != "f4" && body != "f8")
    fail(source, "dtype " + describeDtype(d) +
                     " is not supported: save float32 or float64 values, "
                     "e.g. np.save(path, x.astype(np.float32))");
  const bool f64 = body == "f8";
  const bool little = order == '<' || ((order == '=' || order == '|') && hostLittleEndian());
  const std::size_t item = f64 ? 8 : 4;

  // The shape, within the limits before anything is allocated.
  if (static_cast<int>(h.shape.size()) > limits.max_dims)
    fail(source,
         str(static_cast<long long>(h.shape.size())) + "-D array: at most " + str(limits.max_dims) + " dimensions");
  std::int64_t n = 1;
  for (std::int64_t dim : h.shape) {
    if (dim == 0) n = 0;
    if (n != 0 && dim > limits.max_elements / n)
      fail(source, "array larger than the limit of " + str(limits.max_elements) + " values");
    n *= dim;
  }
  if (n > limits.max_elements) fail(source, "array larger than the limit of " + str(limits.max_elements) + " values");
  const std::uint64_t want = static_cast<std::uint64_t>(n) * item;
  const std::uint64_t have = bytes.size() - data_start;
  if (have < want)
    fail(source, "a damaged .npy file: its shape needs " + str(static_cast<long long>(want)) +
                     " bytes of data, it has " + str(static_cast<long long>(have)));
  if (have > want)
    fail(source, "a damaged .npy file: " + str(static_cast<long long>(have - want)) +
                     " bytes after the data its shape describes");

  NpyArray a;
  a.shape = h.shape;
  a.dtype = f64 ? "float64" : "float32";
  a.values.resize(static_cast<std::size_t>(n));
  // Fortran order: the C-order element at multi-index i lies at Σ i_k · stride_k, stride_0 = 1.
  std::vector<std::int64_t> f_stride(h.shape.size(), 1);
  for (std::size_t k = 1; k < h.shape.size(); ++k) f_stride[k] = f_stride[k - 1] * h.shape[k - 1];
  std::vector<std::int64_t> idx(h.shape.size(), 0);
  const unsigned char* data = reinterpret_cast<const unsigned char*>(bytes.data() + data_start);
  for (std::int64_t c = 0; c < n; ++c) {
    std::int64_t at = c;
    if (h.fortran && h.shape.size() > 1) {
      at = 0;
      for (std::size_t k = 0; k < idx.size(); ++k) at += idx[k] * f_stride[k];
      for (std::size_t k = idx.size(); k-- > 0;) {  // next C-order index
        if (++idx[k] < h.shape[k]) break;
        idx[k] = 0;
      }
    }
    unsigned char raw[8];
    const unsigned char* p = data + static_cast<std::size_t>(at) * item;
    for (std::size_t b = 0; b < item; ++b) raw[b] = little == hostLittleEndian() ? p[b] : p[item - 1 - b];
    double v;
    if (f64) {
      std::memcpy(&v, raw, 8);
    } else {
      float f;
      std::memcpy(&f, raw, 4);
      v = f;
    }
    if (std::isnan(v))
      fail(source, "element " + indexText(c, a.shape) + " is NaN: every value must be a finite number");
    if (std::isinf(v))
      fail(source, "element " + indexText(c, a.shape) + " is infinite: every value must be a finite number");
    if (!(std::fabs(v) < 3.4028235677973366e38))  // rounds to ±∞ as float32
      fail(source, "element " + indexText(c, a.shape) + " is beyond float32's range (±3.4028235e38)");
    a.values[static_cast<std::size_t>(c)] = static_cast<float>(v);
  }
  return a;
}

std::vector<NamedArray> parseNpz(const std::string& bytes, const std::string& source, const NpyLimits& limits) {
  const ZipArchive zip = ZipArchive::fromBytes(std::make_shared<const std::string>(bytes), source, "zip (.npz)");
  // Every declared size before any entry is inflated: a zip bomb allocates nothing.
  std::uint64_t total = 0;
  for (const ZipArchive::Entry& e : zip.entries()) {
    if (e.size > static_cast<std::uint64_t>(limits.max_bytes) ||
        total + e.size > static_cast<std::uint64_t>(limits.max_bytes))
      fail(source, "its entries hold more than the limit of " + str(limits.max_bytes) + " bytes");
    total += e.size;
  }
  std::vector<NamedArray> out;
  for (std::size_t i = 0; i < zip.entries().size(); ++i) {
    std::string name = printable(zip.entries()[i].name);
    const std::string entry = zip.read(i, static_cast<std::uint64_t>(limits.max_bytes));
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0) name.resize(name.size() - 4);
    out.push_back({name, parseNpy(entry, source + "[" + name + "]", limits)});
  }
  return out;
}

}  // namespace attnscope
