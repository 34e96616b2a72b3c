// Files of named tensors, read as data only (docs/DESIGN.md §2.6): safetensors (Hugging Face's
// format; mapped, float32 never copied), torch.save's zip (.pth/.pt: its pickle read by a restricted
// unpickler that accepts only the globals a state_dict uses, as torch's weights_only=True does —
// nothing in a file is ever executed) and NumPy's .npz. The kind is recognized by content, not by
// the file's name. One zip reader (libzip) serves .npz and .pth.
//
// Every refusal is one InputError "PATH: why", naming the tensor or the field when there is one.
// Sizes are checked against TensorFileLimits before anything large is read or allocated.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace attnscope {

struct TensorFileLimits {
  std::int64_t max_file_bytes = std::int64_t{16} << 30;   // the file itself (a safetensors is mapped)
  std::int64_t max_tensor_bytes = std::int64_t{4} << 30;  // one tensor as float32 (the memory budget)
  std::int64_t max_tensors = 100000;                      // entries of one file
};

// One tensor as the file lists it.
struct TensorInfo {
  std::string name;   // "transformer.h.0.attn.c_attn.weight", "tok_emb.weight"
  std::string dtype;  // as the file names it: "F32", "F16", "BF16", "F64", "I64", … (safetensors' names)
  std::vector<std::int64_t> shape;  // empty for a scalar
  std::int64_t elements() const;    // the product of shape (1 for a scalar)
};

// A tensor's values as row-major float32. `data` points into the mapped file when the file holds
// them as contiguous little-endian float32 (a safetensors' F32 tensor: zero copies), else into
// memory `owner` holds (F16/BF16/F64 converted, a .pth or .npz entry read). `owner` keeps either
// alive, so a FloatTensor stays valid after the TensorFile that made it is gone.
struct FloatTensor {
  const float* data = nullptr;
  std::vector<std::int64_t> shape;
  std::shared_ptr<const void> owner;
  std::int64_t elements() const;
  // Values converted into memory of their own, which the tensor then holds.
  static FloatTensor owning(std::shared_ptr<float[]> values, std::vector<std::int64_t> shape) {
    FloatTensor t;
    t.data = values.get();
    t.shape = std::move(shape);
    t.owner = std::move(values);
    return t;
  }
  // Memory for n values that the caller then writes, every one: not zeroed first, as a vector's
  // would be (that pass over a 2-GiB tensor took 0.3 s of a 1-GiB float16 model's 2.2 s load).
  static std::shared_ptr<float[]> uninitialized(std::int64_t n) {
    return std::shared_ptr<float[]>(new float[static_cast<std::size_t>(n)]);
  }
};

class TensorFile {
 public:
  // Opens a file of any of the three kinds (by content). Throws InputError naming the path.
  static std::shared_ptr<const TensorFile> open(const std::string& path, const TensorFileLimits& limits = {});
  // The same from bytes in memory (the fuzz targets, tests); `source` stands for the path in
  // messages. A safetensors' F32 tensors then point into `bytes`, which the FloatTensor keeps.
  static std::shared_ptr<const TensorFile> fromBytes(std::string bytes, std::string source,
                                                     const TensorFileLimits& limits = {});
  // Float32 tensors already in memory, in this order (a model trained here, §3.9): each
  // FloatTensor's owner keeps its values; `source` names them in messages. Format "memory".
  static std::shared_ptr<const TensorFile> ofTensors(std::vector<std::pair<std::string, FloatTensor>> tensors,
                                                     std::string source);
  virtual ~TensorFile() = default;

  const std::string& path() const { return path_; }
  const std::string& format() const { return format_; }                // "safetensors", "pth", "npz"
  const std::vector<TensorInfo>& tensors() const { return tensors_; }  // in the file's order
  const TensorInfo* find(const std::string& name) const;               // null when absent
  // The file's metadata: a safetensors' "__metadata__" strings; a .pth's root module's entries of
  // its state_dict's _metadata (sd._metadata[''], ints in decimal); else empty.
  const std::vector<std::pair<std::string, std::string>>& metadata() const { return metadata_; }

  // The values of `name` as float32 (see FloatTensor). Throws InputError "PATH: tensor NAME: why"
  // when it is absent, of a dtype that is not a number, or over limits.max_tensor_bytes.
  virtual FloatTensor floats(const std::string& name) const = 0;
  // The caller has copied `name` and will not read the file's bytes of it again soon: a mapped
  // file gives its pages back to the kernel (they are read from the file again if touched), so
  // that a model packed from a mapped file does not hold its weights twice. Otherwise nothing.
  virtual void release(const std::string& name) const { (void)name; }

 protected:
  // Each kind's constructor ends with this, once tensors_ is whole: the names indexed for find (a
  // name looked up per tensor had made 100 000 tensors take minutes), a name given twice refused
  // as "two WHAT named 'NAME'".
  void indexTensors(const char* what);
  std::string path_, format_;
  std::vector<TensorInfo> tensors_;
  std::vector<std::pair<std::string, std::string>> metadata_;

 private:
  std::unordered_map<std::string, std::size_t> index_;
};

}  // namespace attnscope
