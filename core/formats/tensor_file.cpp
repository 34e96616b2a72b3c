// Files of named tensors (formats/tensor_file.h, docs/DESIGN.md §2.6): the kind recognized by
// content, the dtype conversions the three kinds share, and NumPy's .npz as a TensorFile (each
// entry's .npy header read at open, its data when floats() asks). safetensors is
// formats/safetensors.cpp's, torch.save's zip formats/torch_pickle.cpp's.
#include "formats/tensor_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <stdexcept>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define ATTNSCOPE_TF_X86 1
#include <immintrin.h>
#else
#define ATTNSCOPE_TF_X86 0
#endif

#include "engine/errors.h"
#include "formats/file_reading.h"
#include "formats/npy.h"
#include "formats/tensor_file_kinds.h"

namespace attnscope {

namespace {

bool endsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// torch.save before 1.6 wrote a bare pickle that starts with a magic number as a LONG1:
// PROTO 2, LONG1 10 bytes, 0x1950a86a20f9469cfc6c.
const char kLegacyTorchMagic[] = "\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19";

std::string expected() {
  return "expected safetensors (an 8-byte header length, then '{'), torch.save's zip (.pth/.pt: a zip holding "
         "*/data.pkl) or NumPy's .npz (a zip of .npy files)";
}

// Refusals of files that are recognizably something else.
[[noreturn]] void refuseOtherKinds(const std::string& head, const std::string& source) {
  if (head.size() >= sizeof kLegacyTorchMagic - 1 &&
      head.compare(0, sizeof kLegacyTorchMagic - 1, kLegacyTorchMagic) == 0)
    fail(source,
         "a torch file in the legacy format (torch before 1.6, or torch.save with "
         "_use_new_zipfile_serialization=False), which this reader does not read: load it with torch.load and save "
         "it again with torch.save(obj, path) (the zip format, torch's default since 1.6)");
  if (head.size() >= 262 && head.compare(257, 5, "ustar") == 0)
    fail(source,
         "a tar archive (torch's oldest format?): load it with torch.load and save it again with torch.save(obj, "
         "path) from torch 1.6 or later (the zip format)");
  if (!head.empty() && static_cast<unsigned char>(head[0]) == 0x80)
    fail(source, "a bare Python pickle, not a file of tensors: " + expected());
  if (looksLikeNpy(head))
    fail(source, "a .npy file holds one unnamed array: save named arrays with np.savez(path, name=array)");
  fail(source, "not a file of tensors: " + expected());
}

bool looksLikeSafetensors(const std::string& head) { return head.size() >= 9 && head[8] == '{'; }

std::shared_ptr<const TensorFile> openZip(ZipArchive zip, const std::string& source, const TensorFileLimits& limits) {
  const auto& entries = zip.entries();
  // torch.save writes one pickle; torch.load refuses a second, which would be read or not by order.
  std::vector<std::size_t> pickles;
  for (std::size_t i = 0; i < entries.size(); ++i)
    if (entries[i].name == "data.pkl" || endsWith(entries[i].name, "/data.pkl")) pickles.push_back(i);
  if (pickles.size() > 1)
    fail(source, "a torch file with " + str(static_cast<long long>(pickles.size())) + " pickles ('" +
                     printableName(entries[pickles[0]].name) + "', '" + printableName(entries[pickles[1]].name) +
                     "'): torch.save writes one");
  if (!pickles.empty()) return openPth(std::move(zip), pickles[0], source, limits);
  for (const ZipArchive::Entry& e : entries)
    if (!endsWith(e.name, ".npy"))
      fail(source, "a zip that is neither torch.save's (no */data.pkl) nor NumPy's .npz (entry '" +
                       printableName(e.name) + "' is not a .npy): " + expected());
  return openNpz(std::move(zip), source, limits);
}

// ---- .npz ---------------------------------------------------------------------------------

// NumPy's dtype strings by safetensors' names; "" for dtypes that are not numbers.
std::string npyDtype(const std::string& descr, bool* big) {
  if (descr.size() < 2) return "";
  const char order = descr[0];
  const std::string body = descr.substr(1);
  *big = order == '>';
  if (order != '<' && order != '>' && order != '|' && order != '=') return "";
  static const std::pair<const char*, const char*> kNames[] = {{"f4", "F32"}, {"f2", "F16"},  {"f8", "F64"},
                                                               {"i1", "I8"},  {"i2", "I16"},  {"i4", "I32"},
                                                               {"i8", "I64"}, {"u1", "U8"},   {"u2", "U16"},
                                                               {"u4", "U32"}, {"u8", "U64"},  {"b1", "BOOL"},
                                                               {"c8", "C64"}, {"c16", "C128"}};
  for (const auto& [np, st] : kNames)
    if (body == np) return st;
  return "";
}

class NpzFile : public TensorFile {
 public:
  NpzFile(ZipArchive zip, const std::string& source, const TensorFileLimits& limits)
      : zip_(std::move(zip)), limits_(limits) {
    path_ = source;
    format_ = "npz";
    const auto& entries = zip_.entries();
    if (static_cast<std::int64_t>(entries.size()) > limits.max_tensors)
      fail(source,
           str(static_cast<long long>(entries.size())) + " arrays, more than the limit of " + str(limits.max_tensors));
    for (std::size_t i = 0; i < entries.size(); ++i) {
      std::string name = entries[i].name;
      name.resize(name.size() - 4);  // ".npy", which openZip checked
      const std::string where = source + "[" + printableName(name) + "]";
      // The header alone: NumPy pads it to at most a few hundred bytes (format 2.0 allows 4 GiB,
      // which no array needs; 64 KiB is plenty and bounds what is inflated here).
      std::string head = zip_.readPrefix(i, 65536 + 12);
      const NpyHeader h = parseNpyHeader(head, where);
      Item item;
      item.entry = i;
      item.header = h;
      TensorInfo info;
      info.name = name;
      info.dtype = npyDtype(h.descr, &item.big);
      if (info.dtype.empty()) info.dtype = h.descr;  // listed as NumPy names it; floats() refuses it
      info.shape = h.shape;
      std::int64_t n = 1;
      for (std::int64_t d : h.shape)
        if (__builtin_mul_overflow(n, d, &n)) fail(where, "a shape too large to be real");
      const int bytes = dtypeBytes(info.dtype);
      std::int64_t data_bytes = 0;
      if (bytes > 0 && (__builtin_mul_overflow(n, bytes, &data_bytes) ||
                        static_cast<std::uint64_t>(data_bytes) + h.data_start != entries[i].size))
        fail(where,
             "a damaged .npy entry: its shape needs " + str(data_bytes) + " bytes of data, the entry holds " +
                 str(static_cast<long long>(entries[i].size - std::min<std::uint64_t>(entries[i].size, h.data_start))));
      tensors_.push_back(std::move(info));
      items_.push_back(item);
    }
    indexTensors("arrays");
  }

  FloatTensor floats(const std::string& name) const override {
    const TensorInfo& info = checkFloatRequest(*this, name, limits_);
    const Item& item = items_[static_cast<std::size_t>(&info - tensors_.data())];
    const std::string where = path_ + "[" + printableName(name) + "]";
    const std::string bytes = zip_.read(item.entry, zip_.entries()[item.entry].size);
    if (bytes.size() < item.header.data_start) fail(where, "a damaged .npy entry");
    const auto* data = reinterpret_cast<const unsigned char*>(bytes.data() + item.header.data_start);
    const std::int64_t n = info.elements();
    const int size = dtypeBytes(info.dtype);
    const FloatDtype dtype = floatDtypeOf(info.dtype);
    std::shared_ptr<float[]> values = FloatTensor::uninitialized(n);
    // Fortran order: the C-order element at multi-index i lies at Σ i_k · stride_k, stride_0 = 1.
    const auto& shape = info.shape;
    const bool fortran = item.header.fortran && shape.size() > 1;
    if (!fortran) {
      elementsToFloat(dtype, data, static_cast<std::size_t>(n), values.get(), item.big);
      return FloatTensor::owning(std::move(values), info.shape);
    }
    std::vector<std::int64_t> f_stride(shape.size(), 1), idx(shape.size(), 0);
    for (std::size_t k = 1; k < shape.size(); ++k) f_stride[k] = f_stride[k - 1] * shape[k - 1];
    for (std::int64_t c = 0; c < n; ++c) {
      std::int64_t at = 0;
      for (std::size_t k = 0; k < idx.size(); ++k) at += idx[k] * f_stride[k];
      for (std::size_t k = idx.size(); k-- > 0;) {
        if (++idx[k] < shape[k]) break;
        idx[k] = 0;
      }
      values[static_cast<std::size_t>(c)] = elementToFloat(dtype, data + at * size, item.big);
    }
    return FloatTensor::owning(std::move(values), info.shape);
  }

 private:
  struct Item {
    std::size_t entry = 0;
    NpyHeader header;
    bool big = false;
  };
  ZipArchive zip_;
  TensorFileLimits limits_;
  std::vector<Item> items_;
};

}  // namespace

// ---- shared -------------------------------------------------------------------------------

std::int64_t TensorInfo::elements() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

std::int64_t FloatTensor::elements() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

const TensorInfo* TensorFile::find(const std::string& name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

void TensorFile::indexTensors(const char* what) {
  index_.clear();
  index_.reserve(tensors_.size());
  for (std::size_t i = 0; i < tensors_.size(); ++i)
    if (!index_.emplace(tensors_[i].name, i).second)
      fail(path_, std::string("two ") + what + " named '" + printableName(tensors_[i].name) + "'");
}

int dtypeBytes(const std::string& dtype) {
  static const std::pair<const char*, int> kSizes[] = {{"F32", 4},  {"F16", 2},     {"BF16", 2},    {"F64", 8},
                                                       {"I64", 8},  {"I32", 4},     {"I16", 2},     {"I8", 1},
                                                       {"U8", 1},   {"U16", 2},     {"U32", 4},     {"U64", 8},
                                                       {"BOOL", 1}, {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"C64", 8},
                                                       {"C128", 16}};
  for (const auto& [name, size] : kSizes)
    if (dtype == name) return size;
  return 0;
}

bool isFloatDtype(const std::string& dtype) {
  return dtype == "F32" || dtype == "F16" || dtype == "BF16" || dtype == "F64";
}

float halfToFloat(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1fu;
  std::uint32_t mantissa = h & 0x3ffu;
  std::uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);  // ±∞, NaN (payload kept)
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);  // 112 = 127 − 15
  } else if (mantissa == 0) {
    bits = sign;  // ±0
  } else {
    // A subnormal, m × 2^−24: normalize it (exact in float32).
    int e = 113;  // the exponent the value would have with the implicit bit at position 10
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --e;
    }
    bits = sign | (static_cast<std::uint32_t>(e) << 23) | ((mantissa & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float bfloat16ToFloat(std::uint16_t h) {
  const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

bool hostLittleEndian() {
  const std::uint16_t one = 1;
  unsigned char first;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

FloatDtype floatDtypeOf(const std::string& dtype) {
  return dtype == "F64"    ? FloatDtype::F64
         : dtype == "F32"  ? FloatDtype::F32
         : dtype == "BF16" ? FloatDtype::BF16
                           : FloatDtype::F16;
}

float elementToFloat(FloatDtype dtype, const unsigned char* p, bool big) {
  unsigned char raw[8];
  const int n = dtype == FloatDtype::F64 ? 8 : dtype == FloatDtype::F32 ? 4 : 2;
  for (int b = 0; b < n; ++b) raw[b] = big ? p[n - 1 - b] : p[b];
  // The bytes are little-endian now; read them as numbers whatever the host's order.
  std::uint64_t v = 0;
  for (int b = n; b-- > 0;) v = v << 8 | raw[b];
  if (n == 8) {
    double d;
    std::memcpy(&d, &v, 8);
    return static_cast<float>(d);
  }
  if (n == 4) {
    const std::uint32_t u = static_cast<std::uint32_t>(v);
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  return dtype == FloatDtype::BF16 ? bfloat16ToFloat(static_cast<std::uint16_t>(v))
                                   : halfToFloat(static_cast<std::uint16_t>(v));
}

// ---- runs of elements (elementsToFloat) ---------------------------------------------------

namespace {

std::uint16_t littleHalf(const unsigned char* p) { return static_cast<std::uint16_t>(p[0] | p[1] << 8); }

void halfsScalar(const unsigned char* p, std::size_t n, float* out) {
  for (std::size_t i = 0; i < n; ++i) out[i] = halfToFloat(littleHalf(p + 2 * i));
}

#if ATTNSCOPE_TF_X86
// A block holding a NaN (magnitude above ∞'s 0x7c00; the signed compare is the unsigned one below
// 0x8000) goes through halfToFloat, which keeps a signalling NaN signalling, as NumPy does: the
// hardware would set its quiet bit (tensor_file_kinds.h). The tail, under a block, likewise.
__attribute__((target("avx,f16c"))) void halfsF16c(const unsigned char* p, std::size_t n, float* out) {
  const __m128i magnitude = _mm_set1_epi16(0x7fff), infinity = _mm_set1_epi16(0x7c00);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * i));
    if (_mm_movemask_epi8(_mm_cmpgt_epi16(_mm_and_si128(h, magnitude), infinity)) != 0)
      halfsScalar(p + 2 * i, 8, out + i);
    else
      _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  halfsScalar(p + 2 * i, n - i, out + i);
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push  // GCC bug 105593 (_mm512_undefined_ps), as in engine/torch_generator.cpp
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
__attribute__((target("avx512f"))) void halfsAvx512(const unsigned char* p, std::size_t n, float* out) {
  const __m256i magnitude = _mm256_set1_epi16(0x7fff), infinity = _mm256_set1_epi16(0x7c00);
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2 * i));
    if (_mm256_movemask_epi8(_mm256_cmpgt_epi16(_mm256_and_si256(h, magnitude), infinity)) != 0)
      halfsScalar(p + 2 * i, 16, out + i);
    else
      _mm512_storeu_ps(out + i, _mm512_cvtph_ps(h));
  }
  halfsScalar(p + 2 * i, n - i, out + i);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#endif

}  // namespace

void elementsToFloat(FloatDtype dtype, const unsigned char* p, std::size_t n, float* out, bool big, Isa isa) {
  isa = runnableIsa(isa, "elementsToFloat");
  const int size = dtype == FloatDtype::F64 ? 8 : dtype == FloatDtype::F32 ? 4 : 2;
  if (isa == Isa::Scalar || big || !hostLittleEndian()) {
    for (std::size_t i = 0; i < n; ++i) out[i] = elementToFloat(dtype, p + i * size, big);
    return;
  }
  // Little-endian data on a little-endian host: the bytes are the host's numbers.
  switch (dtype) {
    case FloatDtype::F32:
      if (n > 0) std::memcpy(out, p, n * 4);
      return;
    case FloatDtype::F64:
      for (std::size_t i = 0; i < n; ++i) {
        double d;
        std::memcpy(&d, p + i * 8, 8);
        out[i] = static_cast<float>(d);
      }
      return;
    case FloatDtype::BF16:
      for (std::size_t i = 0; i < n; ++i) {
        std::uint16_t h;
        std::memcpy(&h, p + i * 2, 2);
        const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
        std::memcpy(out + i, &bits, 4);
      }
      return;
    case FloatDtype::F16:
#if ATTNSCOPE_TF_X86
      if (isa == Isa::Avx512)
        halfsAvx512(p, n, out);
      else if (isa == Isa::Avx2)  // its F16C
        halfsF16c(p, n, out);
      else
#endif
        halfsScalar(p, n, out);
      return;
  }
}

const TensorInfo& checkFloatRequest(const TensorFile& file, const std::string& name, const TensorFileLimits& limits) {
  const TensorInfo* info = file.find(name);
  if (!info) {
    std::string names;
    int shown = 0;
    for (const TensorInfo& t : file.tensors()) {
      if (shown++ == 8) {
        names += ", …";
        break;
      }
      names += (names.empty() ? "" : ", ") + t.name;
    }
    fail(file.path(),
         "no tensor named '" + printableName(name) + "' (it holds: " + (names.empty() ? "nothing" : names) + ")");
  }
  const std::string where = file.path() + ": tensor " + printableName(name);
  if (!isFloatDtype(info->dtype))
    throw InputError(where + ": dtype " + printableName(info->dtype) +
                     " is not a floating-point type (F32, F16, BF16 or F64): its values are not read as float32");
  const std::int64_t n = info->elements();
  if (n > limits.max_tensor_bytes / 4)
    throw InputError(where + ": " + str(n) + " values are more than the limit of " + str(limits.max_tensor_bytes) +
                     " bytes as float32");
  return *info;
}

std::shared_ptr<const TensorFile> openNpz(ZipArchive zip, const std::string& source, const TensorFileLimits& limits) {
  return std::make_shared<NpzFile>(std::move(zip), source, limits);
}

// ---- opening ------------------------------------------------------------------------------

std::shared_ptr<const TensorFile> TensorFile::open(const std::string& path, const TensorFileLimits& limits) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) fail(path, cannotOpen(errno));
  if (S_ISDIR(st.st_mode)) fail(path, "is a directory, not a file");
  if (!S_ISREG(st.st_mode)) fail(path, "not a regular file");
  if (st.st_size > limits.max_file_bytes)
    fail(path, str(static_cast<long long>(st.st_size)) + " bytes is larger than the limit of " +
                   str(limits.max_file_bytes) + " bytes");
  std::string head(512, '\0');
  {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(path, cannotOpen(errno == 0 ? EACCES : errno));
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<std::size_t>(in.gcount()));
  }
  if (looksLikeZip(head)) return openZip(ZipArchive::openFile(path, path), path, limits);
  if (looksLikeSafetensors(head)) return openSafetensorsFile(path, limits);
  refuseOtherKinds(head, path);
}

namespace {

class MemoryTensors : public TensorFile {
 public:
  MemoryTensors(std::vector<std::pair<std::string, FloatTensor>> tensors, std::string source)
      : values_(std::move(tensors)) {
    path_ = std::move(source);
    format_ = "memory";
    for (const auto& [name, t] : values_) tensors_.push_back({name, "F32", t.shape});
    indexTensors("tensors");
  }
  FloatTensor floats(const std::string& name) const override {
    for (const auto& [n, t] : values_)
      if (n == name) return t;
    fail(path_, "no tensor named '" + printableName(name) + "'");
  }

 private:
  std::vector<std::pair<std::string, FloatTensor>> values_;
};

}  // namespace

std::shared_ptr<const TensorFile> TensorFile::ofTensors(std::vector<std::pair<std::string, FloatTensor>> tensors,
                                                        std::string source) {
  return std::make_shared<const MemoryTensors>(std::move(tensors), std::move(source));
}

std::shared_ptr<const TensorFile> TensorFile::fromBytes(std::string bytes, std::string source,
                                                        const TensorFileLimits& limits) {
  if (static_cast<std::int64_t>(bytes.size()) > limits.max_file_bytes)
    fail(source, str(static_cast<long long>(bytes.size())) + " bytes is larger than the limit of " +
                     str(limits.max_file_bytes) + " bytes");
  auto shared = std::make_shared<const std::string>(std::move(bytes));
  const std::string head = shared->substr(0, 512);
  if (looksLikeZip(head)) return openZip(ZipArchive::fromBytes(shared, source), source, limits);
  if (looksLikeSafetensors(head)) return safetensorsFromBytes(shared, source, limits);
  refuseOtherKinds(head, source);
}

}  // namespace attnscope
