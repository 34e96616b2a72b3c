// torch.save's zip format (.pth/.pt) read as data (docs/DESIGN.md §2.6). The zip holds
// <archive>/data.pkl (the object, pickled), <archive>/data/<key> (each storage's raw bytes,
// little-endian), <archive>/byteorder and <archive>/version. data.pkl is read by a restricted
// unpickler of our own: it knows the opcodes of protocols 2–4 that torch.save writes and resolves
// only the globals torch's weights_only=True unpickler accepts that a state_dict needs
// (collections.OrderedDict, torch._utils._rebuild_tensor_v2/_v3, _rebuild_parameter(_with_state),
// the storage classes of numbers, torch's dtypes). Any other global is refused when it is named,
// before anything could use it; nothing in a file is ever executed, and no Python is involved.
//
// The objects it builds live in one arena, referenced by index: a hostile pickle can make cycles
// or deep nests without blowing the stack or leaking, and the arena, the stack, the memo and the
// nesting are bounded (PickleLimits).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace attnscope {

struct PickleLimits {
  std::size_t max_objects = std::size_t{1} << 21;     // everything the pickle builds (a GPT-2 state_dict: ~5,000)
  std::size_t max_references = std::size_t{1} << 23;  // items of tuples, lists and dicts together
  int max_depth = 64;                                 // nested dicts (a checkpoint: 2–4)
  std::int64_t max_tensors = 100000;
};

// A storage a tensor views: data/<key> holds numel × bytes(dtype) bytes.
struct PickledStorage {
  std::string dtype;  // safetensors' names: "F32", "F16", "BF16", "F64", "I64", …; "U8" for an untyped storage
  std::int64_t numel = 0;
};

// A tensor of the pickle: a view (offset, shape, strides in elements of `dtype`) of a storage.
struct PickledTensor {
  std::string name;         // flattened with '.': "model_state_dict.tok_emb.weight"
  std::string dtype;        // the tensor's dtype (the storage's, or _rebuild_tensor_v3's argument)
  std::string storage_key;  // data/<key>
  std::int64_t offset = 0;
  std::vector<std::int64_t> shape, stride;
};

struct PickledStateDict {
  std::vector<PickledTensor> tensors;              // in the pickle's order
  std::map<std::string, PickledStorage> storages;  // by key
  // The root module's entries of the root dict's _metadata (the attribute Module.state_dict() sets,
  // pickled by BUILD): sd._metadata[''] — {"version": "1"}, and "n_head" where attnscope saved it —
  // its int values in decimal and its strings, in order; others skipped. Empty without one.
  std::vector<std::pair<std::string, std::string>> metadata;
};

// Reads data.pkl. The root must be a dict (a state_dict, or a checkpoint of nested dicts): nested
// dicts are flattened with '.', keys that are strings or integers name them, and leaves that are
// not tensors (ints, floats, lists of an optimizer's state) are skipped. Every refusal is one
// InputError "SOURCE: why"; a global outside the allowed ones is named, e.g. "the file holds a
// pickled object of class __main__.GPTModel, not a state_dict: save model.state_dict() instead …".
PickledStateDict readTorchPickle(const std::string& pickle, const std::string& source, const PickleLimits& limits = {});

}  // namespace attnscope
