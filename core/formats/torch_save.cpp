// torch.save's zip format written (formats/torch_save.h, docs/DESIGN.md §2.6). The pickle is the
// one Python's pickler writes at protocol 2 (torch.save's default) for an OrderedDict of tensors,
// opcode for opcode and memo for memo, so that data.pkl equals torch's own byte for byte:
//
//   GLOBAL collections OrderedDict, EMPTY_TUPLE, REDUCE            the dict
//   MARK (key, value)… SETITEMS, in batches of 1000 (SETITEM for a batch of one)
//   value: GLOBAL torch._utils _rebuild_tensor_v2, MARK
//            MARK 'storage' GLOBAL torch FloatStorage, key, 'cpu', numel TUPLE BINPERSID
//            offset 0, size, stride, NEWFALSE, OrderedDict() (its backward hooks)
//          TUPLE REDUCE
//
// With root metadata the dict's attributes follow, as OrderedDict.__reduce__ gives them (vars(self)):
//
//   EMPTY_DICT '_metadata' OrderedDict() '' EMPTY_DICT (MARK key value … SETITEMS | key value SETITEM)
//   SETITEM SETITEM BUILD
//
// Every global, string and non-empty tuple is memoized as it is written (BINPUT) and an object
// written again is fetched (BINGET): the two globals, 'storage' and 'cpu' after the first tensor.
#include "formats/torch_save.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "engine/errors.h"
#include "formats/zip_archive.h"

namespace attnscope {

namespace {

class Pickler {
 public:
  std::string out = "\x80\x02";  // PROTO 2

  // An object Python would write once and fetch after: written by `write` the first time.
  template <class Write>
  void shared(const std::string& id, Write write) {
    auto it = memo_.find(id);
    if (it != memo_.end()) return get(it->second);
    write();
    memo_[id] = put();
  }
  void global(const std::string& module, const std::string& name) {
    shared("global " + module + "." + name, [&] { out += "c" + module + "\n" + name + "\n"; });
  }
  void string(const std::string& s) {  // BINUNICODE, memoized (each name is a new object)
    unicode(s);
    put();
  }
  void sharedString(const std::string& s) {  // a string object Python writes again and again
    shared("string " + s, [&] { unicode(s); });
  }
  // save_long at protocol 2: BININT1, BININT2, BININT, else LONG1 (non-negative values only here).
  void integer(std::int64_t v) {
    if (v < 0) throw ComputeError("torch.save: a negative integer (sizes and metadata here are not)");
    if (v <= 0xff) {
      out += 'K';
      byte(static_cast<unsigned>(v));
    } else if (v <= 0xffff) {
      out += 'M';
      le(static_cast<std::uint64_t>(v), 2);
    } else if (v <= 0x7fffffff) {
      out += 'J';
      le(static_cast<std::uint64_t>(v), 4);
    } else {
      // encode_long: little-endian two's complement, bit_length / 8 + 1 bytes
      int bits = 0;
      for (std::uint64_t u = static_cast<std::uint64_t>(v); u; u >>= 1) ++bits;
      const int n = bits / 8 + 1;
      out += '\x8a';
      byte(static_cast<unsigned>(n));
      le(static_cast<std::uint64_t>(v), n);
    }
  }
  // A tuple of ints (a size or a stride): EMPTY_TUPLE; TUPLE1–3; MARK … TUPLE; memoized unless empty.
  void intTuple(const std::vector<std::int64_t>& values) {
    if (values.empty()) {
      out += ')';
      return;
    }
    if (values.size() > 3) out += '(';
    for (std::int64_t v : values) integer(v);
    static const char kTupleN[] = {'\x85', '\x86', '\x87'};
    out += values.size() > 3 ? 't' : kTupleN[values.size() - 1];
    put();
  }
  void emptyOrderedDict() {
    global("collections", "OrderedDict");
    out += ")R";  // EMPTY_TUPLE REDUCE
    put();
  }
  std::size_t put() {  // BINPUT / LONG_BINPUT of the next memo index
    const std::size_t index = next_++;
    if (index < 256) {
      out += 'q';
      byte(static_cast<unsigned>(index));
    } else {
      out += 'r';
      le(index, 4);
    }
    return index;
  }

 private:
  std::map<std::string, std::size_t> memo_;
  std::size_t next_ = 0;

  void byte(unsigned v) { out += static_cast<char>(v & 0xff); }
  void le(std::uint64_t v, int n) {
    for (int k = 0; k < n; ++k) byte(static_cast<unsigned>(v >> (8 * k)));
  }
  void unicode(const std::string& s) {
    out += 'X';
    le(s.size(), 4);
    out += s;
  }
  void get(std::size_t index) {  // BINGET / LONG_BINGET
    if (index < 256) {
      out += 'h';
      byte(static_cast<unsigned>(index));
    } else {
      out += 'j';
      le(index, 4);
    }
  }
};

// torch's contiguous strides: each the product of the sizes after it, a size of 0 counted as 1.
std::vector<std::int64_t> contiguousStrides(const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> stride(shape.size(), 1);
  for (std::size_t i = shape.size(); i-- > 1;) stride[i - 1] = stride[i] * std::max<std::int64_t>(shape[i], 1);
  return stride;
}

}  // namespace

std::string torchArchiveName(const std::string& path) {
  // caffe2's basename (inline_container.cc): after the last '/' or '\', up to the last '.'.
  const std::size_t slash = path.find_last_of("/\\");
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  const std::size_t dot = name.rfind('.');
  if (dot != std::string::npos) name.resize(dot);
  return name.empty() ? "archive" : name;
}

std::string torchSaveBytes(const std::vector<NamedFloats>& tensors, const std::string& archive,
                           const std::vector<std::pair<std::string, MetadataValue>>& root_metadata) {
  std::set<std::string> names;
  for (const NamedFloats& t : tensors)
    if (!names.insert(t.name).second) throw ComputeError("torch.save: the name " + t.name + " is there twice");
  Pickler p;
  p.emptyOrderedDict();
  std::vector<std::int64_t> numels;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const NamedFloats& t = tensors[i];
    if (i % 1000 == 0 && tensors.size() - i > 1) p.out += '(';  // MARK: a batch of several items
    p.string(t.name);
    std::int64_t numel = 1;
    for (std::int64_t d : t.shape) numel *= d;
    numels.push_back(numel);
    p.global("torch._utils", "_rebuild_tensor_v2");
    p.out += '(';
    p.out += '(';  // the persistent id: ('storage', torch.FloatStorage, key, 'cpu', numel)
    p.sharedString("storage");
    p.global("torch", "FloatStorage");
    p.string(std::to_string(i));
    p.sharedString("cpu");
    p.integer(numel);
    p.out += 't';
    p.put();
    p.out += 'Q';  // BINPERSID
    p.integer(0);  // storage offset
    p.intTuple(t.shape);
    p.intTuple(contiguousStrides(t.shape));
    p.out += '\x89';  // NEWFALSE: requires_grad
    p.emptyOrderedDict();
    p.out += 't';
    p.put();
    p.out += 'R';
    p.put();
    const bool batch_ends = (i + 1) % 1000 == 0 || i + 1 == tensors.size();
    if (batch_ends) p.out += (i % 1000 == 0) ? 's' : 'u';  // SETITEM for a batch of one, else SETITEMS
  }
  if (!root_metadata.empty()) {  // {'_metadata': OrderedDict([('', {key: value, …})])} BUILD
    p.out += '}';
    p.put();
    p.string("_metadata");
    p.emptyOrderedDict();
    p.string("");
    p.out += '}';
    p.put();
    if (root_metadata.size() > 1) p.out += '(';
    for (const auto& [key, value] : root_metadata) {
      p.string(key);
      if (value.is_text)
        p.string(value.text);
      else
        p.integer(value.number);
    }
    p.out += root_metadata.size() > 1 ? "uss" : "sss";
    p.out += 'b';
  }
  p.out += '.';

  // The records in torch's order: data.pkl, the storages by key sorted as strings, version.
  std::vector<std::size_t> order(tensors.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [](std::size_t a, std::size_t b) { return std::to_string(a) < std::to_string(b); });
  std::vector<std::pair<std::string, std::string>> entries;
  entries.reserve(tensors.size() + 2);
  entries.emplace_back(archive + "/data.pkl", std::move(p.out));
  for (std::size_t i : order) {
    const auto bytes = static_cast<std::size_t>(numels[i]) * sizeof(float);
    // float32 as the host holds it: little-endian, which torch 1.13's files are (no byteorder record)
    entries.emplace_back(archive + "/data/" + std::to_string(i),
                         bytes ? std::string(reinterpret_cast<const char*>(tensors[i].data), bytes) : std::string());
  }
  entries.emplace_back(archive + "/version", "3\n");
  ZipLayout layout;
  layout.align = 64;
  layout.fixed_dates = true;
  return zipBytes(entries, layout);
}

}  // namespace attnscope
