// The restricted unpickler of torch.save's data.pkl and the .pth TensorFile (formats/torch_pickle.h,
// docs/DESIGN.md §2.6). The unpickler is a stack machine over an arena of plain objects (no Python,
// no callbacks): opcodes that build containers and numbers are carried out, REDUCE is carried out
// only for the few allowed globals (each one a known constructor of a state_dict's parts), and any
// other global is refused as soon as GLOBAL or STACK_GLOBAL names it.
#include "formats/torch_pickle.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>

#include "engine/errors.h"
#include "formats/tensor_file_kinds.h"

namespace attnscope {

namespace {

constexpr std::size_t kMaxTensorName = 4096;  // bytes of a flattened name ("trf_blocks.11.att.W_query.weight")
const char kNotExecuted[] = "(a state_dict is read as data; nothing in a file is ever executed)";

enum class K : std::uint8_t { None, Bool, Int, Float, Str, Bytes, Tuple, List, Dict, Global, Storage, Tensor };

const char* kindName(K k) {
  switch (k) {
    case K::None: return "None";
    case K::Bool: return "a bool";
    case K::Int: return "an int";
    case K::Float: return "a float";
    case K::Str: return "a string";
    case K::Bytes: return "bytes";
    case K::Tuple: return "a tuple";
    case K::List: return "a list";
    case K::Dict: return "a dict";
    case K::Global: return "a global";
    case K::Storage: return "a storage";
    case K::Tensor: return "a tensor";
  }
  return "an object";
}

struct Obj {
  K kind = K::None;
  std::int64_t i = 0;                       // Int, Bool; Storage: numel; Tensor: storage offset
  double f = 0;                             // Float
  std::string s;                            // Str, Bytes; Global: "module.name"; Storage, Tensor: storage key
  std::string dtype;                        // Storage, Tensor; Global: the dtype a storage class or torch.<dtype> names
  std::vector<std::uint32_t> items;         // Tuple, List; Dict: key, value, key, value …
  std::vector<std::int64_t> shape, stride;  // Tensor
};

// The globals a state_dict's pickle uses (torch/_weights_only_unpickler.py allows these and more).
enum class G { OrderedDict, RebuildV2, RebuildV3, RebuildParameter, RebuildParameterWithState, StorageClass, DType };

struct Allowed {
  G what;
  const char* dtype;  // StorageClass, DType
};

const std::unordered_map<std::string, Allowed>& allowedGlobals() {
  static const std::unordered_map<std::string, Allowed> kAllowed = {
      {"collections.OrderedDict", {G::OrderedDict, ""}},
      {"torch._utils._rebuild_tensor_v2", {G::RebuildV2, ""}},
      {"torch._utils._rebuild_tensor_v3", {G::RebuildV3, ""}},
      {"torch._utils._rebuild_parameter", {G::RebuildParameter, ""}},
      {"torch._utils._rebuild_parameter_with_state", {G::RebuildParameterWithState, ""}},
      {"torch.FloatStorage", {G::StorageClass, "F32"}},
      {"torch.HalfStorage", {G::StorageClass, "F16"}},
      {"torch.BFloat16Storage", {G::StorageClass, "BF16"}},
      {"torch.DoubleStorage", {G::StorageClass, "F64"}},
      {"torch.LongStorage", {G::StorageClass, "I64"}},
      {"torch.IntStorage", {G::StorageClass, "I32"}},
      {"torch.ShortStorage", {G::StorageClass, "I16"}},
      {"torch.CharStorage", {G::StorageClass, "I8"}},
      {"torch.ByteStorage", {G::StorageClass, "U8"}},
      {"torch.BoolStorage", {G::StorageClass, "BOOL"}},
      {"torch.ComplexFloatStorage", {G::StorageClass, "C64"}},
      {"torch.ComplexDoubleStorage", {G::StorageClass, "C128"}},
      {"torch.UntypedStorage", {G::StorageClass, "U8"}},  // bytes; _rebuild_tensor_v3 gives the dtype
      {"torch.float32", {G::DType, "F32"}},
      {"torch.float16", {G::DType, "F16"}},
      {"torch.bfloat16", {G::DType, "BF16"}},
      {"torch.float64", {G::DType, "F64"}},
      {"torch.int64", {G::DType, "I64"}},
      {"torch.int32", {G::DType, "I32"}},
      {"torch.int16", {G::DType, "I16"}},
      {"torch.int8", {G::DType, "I8"}},
      {"torch.uint8", {G::DType, "U8"}},
      {"torch.bool", {G::DType, "BOOL"}},
      {"torch.complex64", {G::DType, "C64"}},
      {"torch.complex128", {G::DType, "C128"}},
  };
  return kAllowed;
}

class Unpickler {
 public:
  Unpickler(const std::string& p, const std::string& source, const PickleLimits& limits)
      : p_(p), source_(source), limits_(limits) {}

  PickledStateDict run() {
    const std::uint32_t root = execute();
    PickledStateDict out;
    out.storages = storages_;
    const Obj& r = objs_[root];
    if (r.kind == K::Tensor)
      fail(source_,
           "the file holds one tensor, not a state_dict: save a dict of named tensors, e.g. "
           "torch.save({\"name\": tensor}, path)");
    if (r.kind != K::Dict)
      fail(source_, std::string("the file holds ") + kindName(r.kind) +
                        ", not a state_dict (a dict of tensors): save model.state_dict()");
    std::set<std::string> names;
    std::uint64_t visits = 0;
    flatten(root, "", 0, out, names, visits);
    out.metadata = rootMetadata(root);
    return out;
  }

 private:
  [[noreturn]] void bad(const std::string& why) const {
    fail(source_, "data.pkl: " + why + " (at byte " + str(static_cast<long long>(at_)) + ")");
  }

  // ---- reading the bytes ----
  const unsigned char* take(std::size_t n) {
    if (n > p_.size() - pos_) bad("it ends inside an opcode's argument");
    const auto* out = reinterpret_cast<const unsigned char*>(p_.data() + pos_);
    pos_ += n;
    return out;
  }
  std::uint64_t le(std::size_t n) {
    const unsigned char* b = take(n);
    std::uint64_t v = 0;
    for (std::size_t k = n; k-- > 0;) v = v << 8 | b[k];
    return v;
  }
  std::string bytes(std::uint64_t n) {
    if (n > p_.size() - pos_) bad("a string runs past the end of data.pkl");
    const char* b = reinterpret_cast<const char*>(take(static_cast<std::size_t>(n)));
    return std::string(b, static_cast<std::size_t>(n));
  }
  std::string line() {
    const std::size_t end = p_.find('\n', pos_);
    if (end == std::string::npos || end - pos_ > 256) bad("a GLOBAL's name is not a line");
    std::string out = p_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return out;
  }

  // ---- the arena, the stack, the memo ----
  std::uint32_t make(Obj o) {
    if (objs_.size() >= limits_.max_objects)
      bad("more than " + str(static_cast<long long>(limits_.max_objects)) + " objects, more than a state_dict holds");
    references_ += o.items.size();
    if (references_ > limits_.max_references) bad("more references than a state_dict holds");
    objs_.push_back(std::move(o));
    return static_cast<std::uint32_t>(objs_.size() - 1);
  }
  std::uint32_t make(K kind) {
    Obj o;
    o.kind = kind;
    return make(std::move(o));
  }
  void push(std::uint32_t id) { stack_.push_back(id); }
  std::uint32_t pop() {
    if (stack_.size() <= floor()) bad("the stack is empty");
    const std::uint32_t id = stack_.back();
    stack_.pop_back();
    return id;
  }
  std::uint32_t top() {
    if (stack_.size() <= floor()) bad("the stack is empty");
    return stack_.back();
  }
  std::size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  std::vector<std::uint32_t> popMark() {
    if (marks_.empty()) bad("no MARK to pop to");
    const std::size_t m = marks_.back();
    marks_.pop_back();
    std::vector<std::uint32_t> items(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return items;
  }
  void addItems(std::uint32_t target, const std::vector<std::uint32_t>& items) {
    references_ += items.size();
    if (references_ > limits_.max_references) bad("more references than a state_dict holds");
    auto& v = objs_[target].items;
    v.insert(v.end(), items.begin(), items.end());
  }
  void memoPut(std::uint64_t key) {
    if (memo_.size() >= limits_.max_objects && !memo_.count(key)) bad("a memo larger than a state_dict needs");
    memo_[key] = top();
  }
  void memoGet(std::uint64_t key) {
    const auto it = memo_.find(key);
    if (it == memo_.end()) bad("it reads memo entry " + str(static_cast<long long>(key)) + ", never stored");
    push(it->second);
  }
  std::uint32_t tuple(std::vector<std::uint32_t> items) {
    Obj o;
    o.kind = K::Tuple;
    o.items = std::move(items);
    return make(std::move(o));
  }
  std::uint32_t integer(std::int64_t v) {
    Obj o;
    o.kind = K::Int;
    o.i = v;
    return make(std::move(o));
  }

  // GLOBAL and STACK_GLOBAL: only the allowed globals exist; naming any other stops the reading.
  std::uint32_t global(const std::string& module, const std::string& name) {
    const std::string full = module + "." + name;
    const auto& allowed = allowedGlobals();
    const auto it = allowed.find(full);
    if (it == allowed.end()) {
      const std::string shown = printableName(full);
      const bool is_class = !name.empty() && name[0] >= 'A' && name[0] <= 'Z';
      if (is_class)
        fail(source_, "the file holds a pickled object of class " + shown +
                          ", not a state_dict: save model.state_dict() instead " + kNotExecuted);
      fail(source_,
           "its pickle names " + shown + ", which a state_dict never uses: refused, nothing run " + kNotExecuted);
    }
    Obj o;
    o.kind = K::Global;
    o.s = full;
    o.dtype = it->second.dtype;
    o.i = static_cast<std::int64_t>(it->second.what);
    return make(std::move(o));
  }
  G globalOf(std::uint32_t id) const { return static_cast<G>(objs_[id].i); }

  std::int64_t intArg(std::uint32_t id, const char* what) const {
    const Obj& o = objs_[id];
    if (o.kind != K::Int) bad(std::string(what) + " is " + kindName(o.kind) + ", not an int");
    return o.i;
  }
  std::vector<std::int64_t> intsArg(std::uint32_t id, const char* what) const {
    const Obj& o = objs_[id];
    if (o.kind != K::Tuple && o.kind != K::List) bad(std::string(what) + " is " + kindName(o.kind) + ", not a tuple");
    if (o.items.size() > 64) bad(std::string(what) + " has more than 64 dimensions");
    std::vector<std::int64_t> out;
    for (std::uint32_t item : o.items) out.push_back(intArg(item, what));
    return out;
  }

  // _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks[, metadata]) and v3 with
  // the dtype after the hooks.
  std::uint32_t rebuildTensor(const std::vector<std::uint32_t>& args, bool v3) {
    const std::size_t need = v3 ? 7 : 6;
    if (args.size() != need && args.size() != need + 1)
      bad(std::string("_rebuild_tensor_v") + (v3 ? "3" : "2") + " with " + str(static_cast<long long>(args.size())) +
          " arguments");
    const Obj& storage = objs_[args[0]];
    if (storage.kind != K::Storage) bad(std::string("a tensor's storage is ") + kindName(storage.kind));
    Obj t;
    t.kind = K::Tensor;
    t.s = storage.s;
    t.dtype = storage.dtype;
    if (v3) {
      const Obj& d = objs_[args[6]];
      if (d.kind != K::Global || globalOf(args[6]) != G::DType) bad("_rebuild_tensor_v3's dtype is not a torch dtype");
      t.dtype = d.dtype;
    }
    t.i = intArg(args[1], "a tensor's storage offset");
    t.shape = intsArg(args[2], "a tensor's size");
    t.stride = intsArg(args[3], "a tensor's stride");
    if (t.shape.size() != t.stride.size()) bad("a tensor's size and stride differ in length");
    if (t.i < 0) bad("a negative storage offset");
    for (std::size_t k = 0; k < t.shape.size(); ++k)
      if (t.shape[k] < 0 || t.stride[k] < 0) bad("a negative size or stride");
    return make(std::move(t));
  }

  std::uint32_t reduce(std::uint32_t callable, std::uint32_t args_id) {
    const Obj& c = objs_[callable];
    const Obj& a = objs_[args_id];
    if (c.kind != K::Global) bad(std::string("REDUCE calls ") + kindName(c.kind));
    if (a.kind != K::Tuple) bad("REDUCE's arguments are not a tuple");
    const std::vector<std::uint32_t> args = a.items;
    switch (globalOf(callable)) {
      case G::OrderedDict:
        if (!args.empty()) bad("OrderedDict with arguments");
        return make(K::Dict);
      case G::RebuildV2: return rebuildTensor(args, false);
      case G::RebuildV3: return rebuildTensor(args, true);
      case G::RebuildParameter:
      case G::RebuildParameterWithState:
        if (args.empty() || objs_[args[0]].kind != K::Tensor) bad("_rebuild_parameter without a tensor");
        return args[0];
      default: bad("REDUCE calls " + printableName(c.s) + ", which is not a function");
    }
  }

  // persistent_load: ('storage', storage class, key, location, numel).
  std::uint32_t persistent(std::uint32_t pid) {
    const Obj& t = objs_[pid];
    if (t.kind != K::Tuple || t.items.size() != 5 || objs_[t.items[0]].kind != K::Str ||
        objs_[t.items[0]].s != "storage")
      bad("a persistent id that is not ('storage', type, key, location, numel)");
    const std::uint32_t cls = t.items[1];
    if (objs_[cls].kind != K::Global || globalOf(cls) != G::StorageClass)
      bad("a storage whose type is not a storage class");
    const Obj& key = objs_[t.items[2]];
    if (key.kind != K::Str && key.kind != K::Int) bad("a storage key that is not a string");
    Obj s;
    s.kind = K::Storage;
    s.s = key.kind == K::Str ? key.s : str(static_cast<long long>(key.i));
    s.dtype = objs_[cls].dtype;
    s.i = intArg(t.items[4], "a storage's size");
    if (s.i < 0) bad("a negative storage size");
    const auto known = storages_.find(s.s);
    if (known != storages_.end() && (known->second.dtype != s.dtype || known->second.numel != s.i))
      bad("storage " + printableName(s.s) + " is described twice, differently");
    storages_[s.s] = PickledStorage{s.dtype, s.i};
    return make(std::move(s));
  }

  std::uint32_t execute() {
    while (true) {
      at_ = pos_;
      if (pos_ >= p_.size()) bad("it ends before its STOP opcode");
      const unsigned char op = static_cast<unsigned char>(p_[pos_++]);
      switch (op) {
        case 0x80: {  // PROTO
          const std::uint64_t v = le(1);
          if (v > 5) bad("pickle protocol " + str(static_cast<long long>(v)));
          break;
        }
        case 0x95: le(8); break;                           // FRAME: a hint only
        case '.': return pop();                            // STOP
        case '(': marks_.push_back(stack_.size()); break;  // MARK
        case '}': push(make(K::Dict)); break;              // EMPTY_DICT
        case ']': push(make(K::List)); break;              // EMPTY_LIST
        case ')': push(tuple({})); break;                  // EMPTY_TUPLE
        case 't': push(tuple(popMark())); break;           // TUPLE
        case 0x85:                                         // TUPLE1
        case 0x86:                                         // TUPLE2
        case 0x87: {                                       // TUPLE3
          const std::size_t n = op - 0x84u;
          if (stack_.size() < floor() + n) bad("the stack is empty");
          std::vector<std::uint32_t> items(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
          stack_.resize(stack_.size() - n);
          push(tuple(std::move(items)));
          break;
        }
        case 'l': {  // LIST
          Obj o;
          o.kind = K::List;
          o.items = popMark();
          push(make(std::move(o)));
          break;
        }
        case 'd': {  // DICT
          Obj o;
          o.kind = K::Dict;
          o.items = popMark();
          if (o.items.size() % 2) bad("DICT with an odd number of items");
          push(make(std::move(o)));
          break;
        }
        case 'a': {  // APPEND
          const std::uint32_t v = pop();
          const std::uint32_t list = top();
          if (objs_[list].kind != K::List) bad(std::string("APPEND to ") + kindName(objs_[list].kind));
          addItems(list, {v});
          break;
        }
        case 'e': {  // APPENDS
          const std::vector<std::uint32_t> items = popMark();
          const std::uint32_t list = top();
          if (objs_[list].kind != K::List) bad(std::string("APPENDS to ") + kindName(objs_[list].kind));
          addItems(list, items);
          break;
        }
        case 's': {  // SETITEM
          const std::uint32_t v = pop(), k = pop();
          const std::uint32_t dict = top();
          if (objs_[dict].kind != K::Dict) bad(std::string("SETITEM on ") + kindName(objs_[dict].kind));
          addItems(dict, {k, v});
          break;
        }
        case 'u': {  // SETITEMS
          const std::vector<std::uint32_t> items = popMark();
          const std::uint32_t dict = top();
          if (objs_[dict].kind != K::Dict) bad(std::string("SETITEMS on ") + kindName(objs_[dict].kind));
          if (items.size() % 2) bad("SETITEMS with an odd number of items");
          addItems(dict, items);
          break;
        }
        case 'q': memoPut(le(1)); break;                                                               // BINPUT
        case 'r': memoPut(le(4)); break;                                                               // LONG_BINPUT
        case 0x94: memoPut(memo_.size()); break;                                                       // MEMOIZE
        case 'h': memoGet(le(1)); break;                                                               // BINGET
        case 'j': memoGet(le(4)); break;                                                               // LONG_BINGET
        case 'J': push(integer(static_cast<std::int32_t>(static_cast<std::uint32_t>(le(4))))); break;  // BININT
        case 'K': push(integer(static_cast<std::int64_t>(le(1)))); break;                              // BININT1
        case 'M': push(integer(static_cast<std::int64_t>(le(2)))); break;                              // BININT2
        case 0x8a:                                                                                     // LONG1
        case 0x8b: {                                                                                   // LONG4
          const std::uint64_t n = le(op == 0x8a ? 1 : 4);
          if (n > 8) bad("an integer beyond 64 bits");
          std::uint64_t v = n ? le(static_cast<std::size_t>(n)) : 0;
          if (n && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~std::uint64_t{0} << (8 * n);  // sign-extend
          push(integer(static_cast<std::int64_t>(v)));
          break;
        }
        case 'G': {  // BINFLOAT: big-endian
          const unsigned char* b = take(8);
          std::uint64_t v = 0;
          for (int k = 0; k < 8; ++k) v = v << 8 | b[k];
          Obj o;
          o.kind = K::Float;
          std::memcpy(&o.f, &v, 8);
          push(make(std::move(o)));
          break;
        }
        case 'N': push(make(K::None)); break;  // NONE
        case 0x88:                             // NEWTRUE
        case 0x89: {                           // NEWFALSE
          Obj o;
          o.kind = K::Bool;
          o.i = op == 0x88;
          push(make(std::move(o)));
          break;
        }
        case 'X':     // BINUNICODE
        case 0x8c:    // SHORT_BINUNICODE
        case 0x8d:    // BINUNICODE8
        case 'T':     // BINSTRING
        case 'U':     // SHORT_BINSTRING
        case 'B':     // BINBYTES
        case 'C':     // SHORT_BINBYTES
        case 0x8e: {  // BINBYTES8
          const std::size_t width = (op == 0x8c || op == 'U' || op == 'C') ? 1 : (op == 0x8d || op == 0x8e) ? 8 : 4;
          Obj o;
          o.kind = (op == 'B' || op == 'C' || op == 0x8e) ? K::Bytes : K::Str;
          o.s = bytes(le(width));
          push(make(std::move(o)));
          break;
        }
        case 'c': {  // GLOBAL
          const std::string module = line();
          const std::string name = line();
          push(global(module, name));
          break;
        }
        case 0x93: {  // STACK_GLOBAL
          const std::uint32_t name = pop(), module = pop();
          if (objs_[name].kind != K::Str || objs_[module].kind != K::Str) bad("STACK_GLOBAL without two strings");
          push(global(objs_[module].s, objs_[name].s));
          break;
        }
        case 'R': {  // REDUCE
          const std::uint32_t args = pop(), callable = pop();
          push(reduce(callable, args));
          break;
        }
        case 0x81: {  // NEWOBJ: cls.__new__(cls, *args); only an empty OrderedDict is a state_dict's
          const std::uint32_t args = pop(), cls = pop();
          if (objs_[cls].kind != K::Global || globalOf(cls) != G::OrderedDict || objs_[args].kind != K::Tuple ||
              !objs_[args].items.empty())
            bad("NEWOBJ of something other than an OrderedDict");
          push(make(K::Dict));
          break;
        }
        case 'b': {  // BUILD: an OrderedDict's attributes (state_dict's _metadata), kept aside; a tensor's ignored
          const std::uint32_t state = pop();
          const std::uint32_t target = top();
          if (objs_[target].kind != K::Dict && objs_[target].kind != K::Tensor)
            bad(std::string("BUILD on ") + kindName(objs_[target].kind));
          if (objs_[target].kind == K::Dict) build_state_[target] = state;
          break;
        }
        case 'Q': {  // BINPERSID
          const std::uint32_t pid = pop();
          push(persistent(pid));
          break;
        }
        case '0': pop(); break;        // POP
        case '1': popMark(); break;    // POP_MARK
        case '2': push(top()); break;  // DUP
        default: {
          char hex[8];
          std::snprintf(hex, sizeof hex, "0x%02x", op);
          bad(std::string("opcode ") + hex + " is not one torch.save writes for a state_dict");
        }
      }
      if (stack_.size() > limits_.max_objects) bad("a stack deeper than a state_dict needs");
    }
  }

  // The value of `key` (a string) in a dict, if it is of `kind`.
  std::optional<std::uint32_t> item(std::uint32_t dict, const std::string& key, K kind) const {
    const auto& items = objs_[dict].items;
    for (std::size_t k = 0; k + 1 < items.size(); k += 2)
      if (objs_[items[k]].kind == K::Str && objs_[items[k]].s == key && objs_[items[k + 1]].kind == kind)
        return items[k + 1];
    return std::nullopt;
  }

  // sd._metadata[''] of the root dict's BUILD state {'_metadata': OrderedDict(...)}: only the keys
  // read (kMetadataKeys), each once — the last, as Python's dict keeps it — and a string value at
  // most kMetadataBytes. (A hostile pickle can point thousands of entries at one large string: each
  // copied, 20 MB of file took 40 GB.)
  std::vector<std::pair<std::string, std::string>> rootMetadata(std::uint32_t root) const {
    static constexpr const char* kMetadataKeys[] = {"version", "n_head", "vocabulary", "tokens"};
    static constexpr std::size_t kMetadataBytes = std::size_t{32} << 20;  // GPT-2's vocabulary: ~1 MB
    std::vector<std::pair<std::string, std::string>> out;
    const auto state = build_state_.find(root);
    if (state == build_state_.end() || objs_[state->second].kind != K::Dict) return out;
    const auto all = item(state->second, "_metadata", K::Dict);
    const auto own = all ? item(*all, "", K::Dict) : std::nullopt;
    if (!own) return out;
    const auto& items = objs_[*own].items;
    for (const char* wanted : kMetadataKeys) {
      std::uint32_t found = 0;
      bool any = false;
      for (std::size_t k = 0; k + 1 < items.size(); k += 2)
        if (objs_[items[k]].kind == K::Str && objs_[items[k]].s == wanted) found = items[k + 1], any = true;
      if (!any) continue;
      const Obj& value = objs_[found];
      if (value.kind == K::Int) out.emplace_back(wanted, str(static_cast<long long>(value.i)));
      if (value.kind == K::Str) {
        if (value.s.size() > kMetadataBytes)
          fail(source_, std::string("its state_dict's _metadata[''].") + wanted + " holds " +
                            str(static_cast<long long>(value.s.size())) + " bytes, more than a model's " +
                            str(static_cast<long long>(kMetadataBytes)));
        out.emplace_back(wanted, value.s);
      }
    }
    return out;
  }

  // Nested dicts flattened with '.'; only tensors are kept. A dict reached by several paths is
  // walked once per path, so the entries walked in all are bounded too (`visits`): 40 dicts each
  // holding the one before twice would otherwise take 2⁴⁰ steps.
  void flatten(std::uint32_t dict, const std::string& prefix, int depth, PickledStateDict& out,
               std::set<std::string>& names, std::uint64_t& visits) const {
    if (depth > limits_.max_depth)
      fail(source_, "dicts nested deeper than " + str(limits_.max_depth) + " levels (or a dict inside itself)");
    const auto& items = objs_[dict].items;
    visits += items.size();
    if (visits > limits_.max_references)
      fail(source_, "its dicts refer to each other more often than a state_dict's do (more than " +
                        str(static_cast<long long>(limits_.max_references)) + " entries to walk)");
    for (std::size_t k = 0; k + 1 < items.size(); k += 2) {
      const Obj& key = objs_[items[k]];
      if (key.kind != K::Str && key.kind != K::Int) continue;
      // A name is bounded before it is built: one long key fetched again from the memo at every
      // level of a chain of dicts had built gigabytes of names (a state_dict's are short).
      const std::string number = key.kind == K::Int ? str(static_cast<long long>(key.i)) : std::string();
      const std::string& part = key.kind == K::Str ? key.s : number;
      if (prefix.size() + 1 + part.size() > kMaxTensorName)
        fail(source_, "a tensor name longer than " + str(static_cast<long long>(kMaxTensorName)) +
                          " bytes (a state_dict's names are short): '" +
                          printableName((prefix.empty() ? part : prefix).substr(0, 60)) + "…'");
      const std::string name = prefix.empty() ? part : prefix + "." + part;
      const std::uint32_t v = items[k + 1];
      const Obj& value = objs_[v];
      if (value.kind == K::Dict) {
        flatten(v, name, depth + 1, out, names, visits);
      } else if (value.kind == K::Tensor) {
        if (!names.insert(name).second) fail(source_, "two tensors named '" + printableName(name) + "'");
        if (static_cast<std::int64_t>(out.tensors.size()) >= limits_.max_tensors)
          fail(source_, "more than " + str(limits_.max_tensors) + " tensors");
        PickledTensor t;
        t.name = name;
        t.dtype = value.dtype;
        t.storage_key = value.s;
        t.offset = value.i;
        t.shape = value.shape;
        t.stride = value.stride;
        out.tensors.push_back(std::move(t));
      }
    }
  }

  const std::string& p_;
  const std::string& source_;
  const PickleLimits& limits_;
  std::size_t pos_ = 0, at_ = 0;
  std::vector<Obj> objs_;
  std::vector<std::uint32_t> stack_;
  std::vector<std::size_t> marks_;
  std::unordered_map<std::uint64_t, std::uint32_t> memo_;
  std::unordered_map<std::uint32_t, std::uint32_t> build_state_;  // a dict's attributes, by the dict
  std::map<std::string, PickledStorage> storages_;
  std::size_t references_ = 0;
};

// ---- the .pth TensorFile --------------------------------------------------------------------

class PthFile : public TensorFile {
 public:
  PthFile(ZipArchive zip, std::size_t pickle_entry, const std::string& source, const TensorFileLimits& limits)
      : zip_(std::move(zip)), limits_(limits) {
    path_ = source;
    format_ = "pth";
    const std::string& pkl = zip_.entries()[pickle_entry].name;
    prefix_ = pkl.substr(0, pkl.size() - std::strlen("data.pkl"));  // "archive/" (or "")
    if (const auto order = zip_.find(prefix_ + "byteorder")) {
      const std::string text = zip_.read(*order, 64);
      if (text != "little" && text != "big") fail(source, "its byteorder entry says neither 'little' nor 'big'");
      big_ = text == "big";
    }
    PickleLimits pl;
    pl.max_tensors = limits.max_tensors;
    state_ = readTorchPickle(zip_.read(pickle_entry, kMaxPickleBytes), source, pl);
    metadata_ = state_.metadata;
    for (const PickledTensor& t : state_.tensors) {
      const std::string where = source + ": tensor " + printableName(t.name);
      const PickledStorage& s = state_.storages.at(t.storage_key);
      const auto entry = zip_.find(prefix_ + "data/" + t.storage_key);
      if (!entry)
        throw InputError(where + ": its storage data/" + printableName(t.storage_key) + " is not in the file");
      // The storage's bytes as the pickle counts them, and as the zip holds them.
      std::int64_t nbytes = 0;
      if (__builtin_mul_overflow(s.numel, static_cast<std::int64_t>(dtypeBytes(s.dtype)), &nbytes) ||
          static_cast<std::uint64_t>(nbytes) != zip_.entries()[*entry].size)
        throw InputError(where + ": its storage data/" + printableName(t.storage_key) + " holds " +
                         std::to_string(zip_.entries()[*entry].size) + " bytes, the pickle says " + str(s.numel) +
                         " × " + s.dtype);
      const int item = dtypeBytes(t.dtype);
      if (item == 0) throw InputError(where + ": dtype " + t.dtype + " is unknown");
      // The view within its storage: offset + Σ (size − 1) × stride < the storage's elements.
      std::int64_t count = 1, last = t.offset;
      for (std::size_t k = 0; k < t.shape.size(); ++k) {
        std::int64_t span = 0;
        if (__builtin_mul_overflow(count, t.shape[k], &count) ||
            (t.shape[k] > 0 &&
             (__builtin_mul_overflow(t.shape[k] - 1, t.stride[k], &span) || __builtin_add_overflow(last, span, &last))))
          throw InputError(where + ": a size or stride too large to be real");
      }
      if (count > 0 && last >= nbytes / item)
        throw InputError(where + ": its view (offset " + str(t.offset) + ", size and stride) reaches element " +
                         str(last) + " of a storage of " + str(nbytes / item));
      TensorInfo info;
      info.name = t.name;
      info.dtype = t.dtype;
      info.shape = t.shape;
      tensors_.push_back(std::move(info));
      entries_.push_back(*entry);
    }
    indexTensors("tensors");
  }

  FloatTensor floats(const std::string& name) const override {
    const TensorInfo& info = checkFloatRequest(*this, name, limits_);
    const std::size_t index = static_cast<std::size_t>(&info - tensors_.data());
    const PickledTensor& t = state_.tensors[index];
    const std::size_t entry = entries_[index];
    // A storage may be larger than the tensor (a view, shared storages): it is bounded by twice the
    // float32 budget, so an F64 tensor of the largest allowed size still reads.
    const std::uint64_t cap = static_cast<std::uint64_t>(limits_.max_tensor_bytes) * 2;
    if (zip_.entries()[entry].size > cap)
      throw InputError(path_ + ": tensor " + printableName(name) + ": its storage holds " +
                       std::to_string(zip_.entries()[entry].size) + " bytes, more than the limit of " +
                       std::to_string(cap));
    // Tensors that view a storage alike (a tied tok_emb and out_head) share one copy of it: read
    // apart, a 1-GiB tied embedding held three. (The lock covers the read and the conversion: a
    // model is loaded one tensor after another.)
    const std::lock_guard<std::mutex> lock(cache_mutex_);
    const ViewKey key{entry, t.offset, t.dtype, t.shape, t.stride};
    read_.erase(std::remove_if(read_.begin(), read_.end(), [](const Read& r) { return r.owner.expired(); }),
                read_.end());
    for (const Read& r : read_)
      if (r.key == key)
        if (std::shared_ptr<const void> owner = r.owner.lock()) {
          FloatTensor shared;
          shared.data = r.data;
          shared.shape = info.shape;
          shared.owner = std::move(owner);
          return shared;
        }
    auto storage = std::make_shared<std::string>(zip_.read(entry, cap));
    const int item = dtypeBytes(t.dtype);
    const FloatDtype dtype = floatDtypeOf(t.dtype);
    const std::int64_t n = info.elements();
    // A float32 storage in the host's order whose view is all of it in C order is its own values:
    // no second copy (a 1-GiB embedding peaked at 2 GiB).
    bool contiguous = true;  // the view's elements lie one after another in C order
    for (std::int64_t k = static_cast<std::int64_t>(t.shape.size()), stride = 1; contiguous && k-- > 0;) {
      contiguous = t.shape[static_cast<std::size_t>(k)] == 1 || t.stride[static_cast<std::size_t>(k)] == stride;
      stride *= t.shape[static_cast<std::size_t>(k)];
    }
    const bool whole = dtype == FloatDtype::F32 && big_ == !hostLittleEndian() && t.offset == 0 &&
                       static_cast<std::uint64_t>(n) * 4 == storage->size() && contiguous;
    if (whole && reinterpret_cast<std::uintptr_t>(storage->data()) % alignof(float) == 0) {
      FloatTensor own;
      own.data = reinterpret_cast<const float*>(storage->data());
      own.shape = info.shape;
      own.owner = storage;
      remember(key, own);
      return own;
    }
    const auto* base = reinterpret_cast<const unsigned char*>(storage->data());
    std::shared_ptr<float[]> values = FloatTensor::uninitialized(n);
    // C order over the view, a row (the last dimension) at a time: pos walks the storage by the
    // outer strides. A row of stride 1 is a run elementsToFloat converts at once; a contiguous view
    // is one row.
    std::size_t outer = t.shape.empty() ? 0 : t.shape.size() - 1;
    std::int64_t row = t.shape.empty() ? 1 : t.shape.back(), row_stride = t.shape.empty() ? 1 : t.stride.back();
    if (contiguous) {
      outer = 0;
      row = n;
      row_stride = 1;
    }
    std::vector<std::int64_t> idx(outer, 0);
    std::int64_t pos = t.offset;
    float* out = values.get();
    for (std::int64_t c = 0; c < n; c += row) {
      if (row_stride == 1)
        elementsToFloat(dtype, base + pos * item, static_cast<std::size_t>(row), out + c, big_);
      else
        for (std::int64_t j = 0; j < row; ++j)
          out[c + j] = elementToFloat(dtype, base + (pos + j * row_stride) * item, big_);
      for (std::size_t k = idx.size(); k-- > 0;) {
        pos += t.stride[k];
        if (++idx[k] < t.shape[k]) break;
        pos -= t.stride[k] * t.shape[k];
        idx[k] = 0;
      }
    }
    FloatTensor converted = FloatTensor::owning(std::move(values), info.shape);
    remember(key, converted);
    return converted;
  }

 private:
  // A tensor's view of its storage: tensors alike in it have the same values.
  struct ViewKey {
    std::size_t entry;
    std::int64_t offset;
    std::string dtype;
    std::vector<std::int64_t> shape, stride;
    bool operator==(const ViewKey& o) const {
      return entry == o.entry && offset == o.offset && dtype == o.dtype && shape == o.shape && stride == o.stride;
    }
  };
  // The tensors read and still held somewhere (weakly: a model that lets one go frees it).
  struct Read {
    ViewKey key;
    std::weak_ptr<const void> owner;
    const float* data;
  };
  void remember(const ViewKey& key, const FloatTensor& t) const { read_.push_back(Read{key, t.owner, t.data}); }
  mutable std::mutex cache_mutex_;
  mutable std::vector<Read> read_;
  static constexpr std::uint64_t kMaxPickleBytes = std::uint64_t{64} << 20;
  ZipArchive zip_;
  TensorFileLimits limits_;
  std::string prefix_;
  bool big_ = false;
  PickledStateDict state_;
  std::vector<std::size_t> entries_;
};

}  // namespace

PickledStateDict readTorchPickle(const std::string& pickle, const std::string& source, const PickleLimits& limits) {
  return Unpickler(pickle, source, limits).run();
}

std::shared_ptr<const TensorFile> openPth(ZipArchive zip, std::size_t pickle_entry, const std::string& source,
                                          const TensorFileLimits& limits) {
  return std::make_shared<PthFile>(std::move(zip), pickle_entry, source, limits);
}

}  // namespace attnscope
