// Hugging Face's safetensors as a TensorFile (docs/DESIGN.md §2.6): a u64 little-endian header
// length N, N bytes of JSON {name: {"dtype", "shape", "data_offsets": [begin, end]},
// "__metadata__": {str: str}}, then the data. The file is mapped read-only (MAP_PRIVATE); its
// header is checked whole by the rules of HF's own reader (safetensors/src/tensor.rs): N at most
// 100,000,000 and within the file, the JSON an object, each tensor's offsets within the data and
// equal to dtype × shape, the tensors filling the data in offset order without gaps or overlaps.
// An F32 tensor whose data is 4-byte aligned is returned as a pointer into the mapping.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_set>

#include "engine/errors.h"
#include "formats/file_reading.h"
#include "formats/tensor_file_kinds.h"

namespace attnscope {

namespace {

// A header read into a JSON tree with nlohmann's own DOM builder, watched on the way: nothing in a
// header nests beyond {name: {"shape": [..]}}, so deeper values stop the parse, as do more names
// than the limit; a name given twice is noted (the tree would keep the last). (nlohmann's parse
// with a callback did this too, but walked the parent object at every entry's end: 100 000 names
// took four minutes.)
class HeaderSax : public nlohmann::detail::json_sax_dom_parser<nlohmann::json> {
  using Dom = nlohmann::detail::json_sax_dom_parser<nlohmann::json>;

 public:
  HeaderSax(nlohmann::json& into, std::int64_t most_names) : Dom(into, true), most_names_(most_names) {}
  bool too_deep = false, too_many = false;
  std::string duplicate;  // the first name given twice

  bool start_object(std::size_t n) { return deeper() && Dom::start_object(n); }
  bool start_array(std::size_t n) { return deeper() && Dom::start_array(n); }
  bool end_object() { return --depth_, Dom::end_object(); }
  bool end_array() { return --depth_, Dom::end_array(); }
  bool key(std::string& name) {
    if (depth_ == 1) {
      if (!names_.insert(name).second && duplicate.empty()) duplicate = name;
      if (static_cast<std::int64_t>(names_.size()) > most_names_) {
        too_many = true;  // the rest is not built
        return false;
      }
    }
    return Dom::key(name);
  }

 private:
  bool deeper() {
    if (++depth_ <= 4) return true;
    too_deep = true;
    return false;
  }
  int depth_ = 0;
  std::int64_t most_names_;
  std::unordered_set<std::string> names_;
};

constexpr std::uint64_t kMaxHeaderBytes = 100000000;  // HF's MAX_HEADER_SIZE

// A read-only private mapping of a whole file, unmapped when the last FloatTensor using it is gone.
struct Mapping {
  void* addr = MAP_FAILED;
  std::size_t size = 0;
  ~Mapping() {
    if (addr != MAP_FAILED) munmap(addr, size);
  }
};

std::string shapeText(const std::vector<std::int64_t>& shape) {
  std::string out = "[";
  for (std::size_t k = 0; k < shape.size(); ++k) out += (k ? ", " : "") + str(static_cast<long long>(shape[k]));
  return out + "]";
}

class SafetensorsFile : public TensorFile {
 public:
  SafetensorsFile(std::shared_ptr<const void> keep, const unsigned char* base, std::size_t size,
                  const std::string& source, const TensorFileLimits& limits, bool mapped = false)
      : keep_(std::move(keep)), limits_(limits), mapped_(mapped) {
    path_ = source;
    format_ = "safetensors";
    if (size < 8) fail(source, "a truncated safetensors file: " + str(static_cast<long long>(size)) + " bytes");
    std::uint64_t n = 0;
    for (int b = 8; b-- > 0;) n = n << 8 | base[b];
    if (n > kMaxHeaderBytes)
      fail(source,
           "its header length " + str(n) + " is more than safetensors' limit of " + str(kMaxHeaderBytes) + " bytes");
    if (n > size - 8)
      fail(source, "a truncated safetensors file: its header length " + str(n) + " runs past the end of the file (" +
                       str(static_cast<std::uint64_t>(size - 8)) + " bytes follow)");
    if (n == 0 || base[8] != '{') fail(source, "its header does not start with '{'");
    data_ = base + 8 + n;
    data_size_ = size - 8 - static_cast<std::size_t>(n);
    parseHeader(std::string(reinterpret_cast<const char*>(base + 8), static_cast<std::size_t>(n)));
  }

  void release(const std::string& name) const override {
    if (!mapped_) return;  // bytes in memory: MADV_DONTNEED would zero them
    const TensorInfo* info = find(name);
    if (info == nullptr) return;
    const Span& span = spans_[static_cast<std::size_t>(info - tensors_.data())];
    // Whole pages inside the tensor only: a page it shares with a neighbour stays.
    const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    const auto begin = (reinterpret_cast<std::uintptr_t>(data_ + span.begin) + page - 1) / page * page;
    const auto end = reinterpret_cast<std::uintptr_t>(data_ + span.end) / page * page;
    if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
  }

  FloatTensor floats(const std::string& name) const override {
    const TensorInfo& info = checkFloatRequest(*this, name, limits_);
    const Span& span = spans_[static_cast<std::size_t>(&info - tensors_.data())];
    const unsigned char* p = data_ + span.begin;
    FloatTensor t;
    t.shape = info.shape;
    const std::int64_t n = info.elements();
    if (info.dtype == "F32" && hostLittleEndian() && reinterpret_cast<std::uintptr_t>(p) % alignof(float) == 0) {
      t.data = reinterpret_cast<const float*>(p);  // zero copy: the mapping stays while `owner` does
      t.owner = keep_;
      return t;
    }
    std::shared_ptr<float[]> values = FloatTensor::uninitialized(n);
    elementsToFloat(floatDtypeOf(info.dtype), p, static_cast<std::size_t>(n), values.get());
    return FloatTensor::owning(std::move(values), info.shape);
  }

 private:
  struct Span {
    std::uint64_t begin = 0, end = 0;
  };

  void parseHeader(const std::string& text) {
    const std::string& source = path_;
    std::string duplicate;
    bool too_deep = false, too_many = false;
    // (nlohmann reads a NUL as the end of the text, and safetensors' own reader refuses one: the
    // bytes after it would have gone unread.)
    if (text.find('\0') != std::string::npos)
      fail(source, "its header holds a NUL byte at byte " + str(static_cast<std::uint64_t>(text.find('\0'))) +
                       " (a safetensors header is JSON, padded with spaces)");
    nlohmann::json header;
    try {
      HeaderSax sax(header, limits_.max_tensors + 1);
      nlohmann::json::sax_parse(text, &sax);
      too_deep = sax.too_deep;
      too_many = sax.too_many;
      duplicate = sax.duplicate;
    } catch (const nlohmann::json::parse_error& e) {
      fail(source,
           "its header is not valid JSON (at byte " + str(static_cast<std::uint64_t>(e.byte)) + " of the header)");
    } catch (const nlohmann::json::exception&) {  // out_of_range: a number beyond 64 bits
      fail(source, "its header is not valid JSON (a number too large for any size or offset)");
    }
    if (too_deep) fail(source, "its header nests deeper than a safetensors header does");
    if (!header.is_object()) fail(source, "its header is not a JSON object");
    if (!duplicate.empty()) fail(source, "its header names '" + printableName(duplicate) + "' twice");
    if (too_many || static_cast<std::int64_t>(header.size()) > limits_.max_tensors + 1)
      fail(source,
           str(static_cast<long long>(header.size())) + " tensors, more than the limit of " + str(limits_.max_tensors));

    struct Entry {
      TensorInfo info;
      Span span;
    };
    std::vector<Entry> entries;
    for (auto it = header.begin(); it != header.end(); ++it) {
      const std::string& name = it.key();
      if (name == "__metadata__") {
        if (!it->is_object()) fail(source, "__metadata__ must be an object of strings");
        for (auto m = it->begin(); m != it->end(); ++m) {
          if (!m->is_string())
            fail(source, "__metadata__." + printableName(m.key()) + ": every value of __metadata__ must be a string");
          metadata_.emplace_back(m.key(), m->get<std::string>());
        }
        continue;
      }
      const std::string where = source + ": tensor " + printableName(name);
      const auto& t = *it;
      if (!t.is_object()) throw InputError(where + ": expected an object with dtype, shape and data_offsets");
      Entry e;
      e.info.name = name;
      auto dtype = t.find("dtype");
      if (dtype == t.end() || !dtype->is_string() || dtypeBytes(dtype->get<std::string>()) == 0)
        throw InputError(where +
                         ": dtype must be one of F32, F16, BF16, F64, I64, I32, I16, I8, U64, U32, U16, U8, BOOL, "
                         "F8_E5M2, F8_E4M3");
      e.info.dtype = dtype->get<std::string>();
      auto shape = t.find("shape");
      if (shape == t.end() || !shape->is_array())
        throw InputError(where + ": shape must be a list of non-negative integers");
      for (const auto& d : *shape) {
        if (!d.is_number_unsigned() || d.get<std::uint64_t>() > (std::uint64_t{1} << 62))
          throw InputError(where + ": shape must be a list of non-negative integers");
        e.info.shape.push_back(static_cast<std::int64_t>(d.get<std::uint64_t>()));
      }
      auto offsets = t.find("data_offsets");
      if (offsets == t.end() || !offsets->is_array() || offsets->size() != 2 || !(*offsets)[0].is_number_unsigned() ||
          !(*offsets)[1].is_number_unsigned())
        throw InputError(where + ": data_offsets must be [begin, end], two non-negative integers");
      e.span.begin = (*offsets)[0].get<std::uint64_t>();
      e.span.end = (*offsets)[1].get<std::uint64_t>();
      if (e.span.end < e.span.begin)
        throw InputError(where + ": data_offsets [" + str(e.span.begin) + ", " + str(e.span.end) +
                         "] end before they begin");
      if (e.span.end > data_size_)
        throw InputError(where + ": data_offsets [" + str(e.span.begin) + ", " + str(e.span.end) +
                         "] run past the end of the data (" + str(static_cast<std::uint64_t>(data_size_)) +
                         " bytes): the file is truncated or its header is wrong");
      std::uint64_t count = 1, bytes = 0;
      for (std::int64_t d : e.info.shape)
        if (__builtin_mul_overflow(count, static_cast<std::uint64_t>(d), &count))
          throw InputError(where + ": shape " + shapeText(e.info.shape) + " is too large to be real");
      if (__builtin_mul_overflow(count, static_cast<std::uint64_t>(dtypeBytes(e.info.dtype)), &bytes) ||
          bytes != e.span.end - e.span.begin)
        throw InputError(where + ": " + e.info.dtype + " " + shapeText(e.info.shape) + " needs " +
                         (bytes == 0 && count != 0 ? std::string("more") : str(bytes)) + " bytes, its data_offsets [" +
                         str(e.span.begin) + ", " + str(e.span.end) + "] hold " + str(e.span.end - e.span.begin));
      entries.push_back(std::move(e));
    }
    // In offset order the tensors must tile the data exactly: each starts where the one before
    // ends (an overlap or a gap is refused, as HF's reader refuses it), the last ends at its end.
    std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
      return a.span.begin != b.span.begin ? a.span.begin < b.span.begin : a.span.end < b.span.end;
    });
    std::uint64_t at = 0;
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const Entry& e = entries[i];
      if (e.span.begin < at)
        fail(source, "tensor " + printableName(e.info.name) + ": its data [" + str(e.span.begin) + ", " +
                         str(e.span.end) + "] overlaps tensor " + printableName(entries[i - 1].info.name) + "'s [" +
                         str(entries[i - 1].span.begin) + ", " + str(entries[i - 1].span.end) + "]");
      if (e.span.begin > at)
        fail(source, "tensor " + printableName(e.info.name) + ": its data starts at " + str(e.span.begin) +
                         " but the data before it ends at " + str(at) +
                         " (safetensors' tensors fill the data without gaps)");
      at = e.span.end;
    }
    if (at != data_size_)
      fail(source, str(static_cast<std::uint64_t>(data_size_ - at)) +
                       " bytes after the last tensor's data: the header does not describe the whole file");
    for (Entry& e : entries) {
      tensors_.push_back(std::move(e.info));
      spans_.push_back(e.span);
    }
    indexTensors("tensors");
  }

  std::shared_ptr<const void> keep_;
  const unsigned char* data_ = nullptr;
  std::size_t data_size_ = 0;
  TensorFileLimits limits_;
  bool mapped_ = false;  // the bytes are a file mapped read-only: release() may drop its pages
  std::vector<Span> spans_;
};

}  // namespace

std::shared_ptr<const TensorFile> openSafetensorsFile(const std::string& path, const TensorFileLimits& limits) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, cannotOpen(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    ::close(fd);
    fail(path, "cannot read the file");
  }
  // The limit before mapping (the size may have changed since TensorFile::open looked).
  if (st.st_size > limits.max_file_bytes) {
    ::close(fd);
    fail(path, str(static_cast<long long>(st.st_size)) + " bytes is larger than the limit of " +
                   str(static_cast<long long>(limits.max_file_bytes)) + " bytes");
  }
  if (st.st_size < 9) {
    ::close(fd);
    fail(path, "a truncated safetensors file: " + str(static_cast<long long>(st.st_size)) + " bytes");
  }
  auto mapping = std::make_shared<Mapping>();
  mapping->size = static_cast<std::size_t>(st.st_size);
  mapping->addr = mmap(nullptr, mapping->size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);  // the mapping keeps the file
  if (mapping->addr == MAP_FAILED) fail(path, std::string("cannot map the file (") + std::strerror(errno) + ")");
  const auto* base = static_cast<const unsigned char*>(mapping->addr);
  return std::make_shared<SafetensorsFile>(mapping, base, mapping->size, path, limits, true);
}

std::shared_ptr<const TensorFile> safetensorsFromBytes(std::shared_ptr<const std::string> bytes,
                                                       const std::string& source, const TensorFileLimits& limits) {
  const auto* base = reinterpret_cast<const unsigned char*>(bytes->data());
  const std::size_t size = bytes->size();
  return std::make_shared<SafetensorsFile>(std::move(bytes), base, size, source, limits);
}

}  // namespace attnscope
