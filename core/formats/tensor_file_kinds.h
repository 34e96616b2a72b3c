// What the three kinds of files of tensors share inside formats/ (formats/tensor_file.h is the
// interface; docs/DESIGN.md §2.6): the dtypes by safetensors' names, their exact conversions to
// float32, and one opener per kind, which TensorFile::open and TensorFile::fromBytes pick by content.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "engine/simd_isa.h"
#include "formats/tensor_file.h"
#include "formats/zip_archive.h"

namespace attnscope {

// Bytes of one element of a dtype named as safetensors names them ("F32", "BF16", "I64", "BOOL" …);
// 0 when the name is unknown.
int dtypeBytes(const std::string& dtype);
// F32, F16, BF16 and F64: the dtypes floats() converts. The others (integers, BOOL, complex) are
// listed but refused by floats(), naming the tensor.
bool isFloatDtype(const std::string& dtype);

// Exact conversions (IEEE 754 binary16 incl. subnormals, ±∞, NaN; bfloat16 is a float32's high
// half; float64 rounds to nearest as torch's .float() does).
float halfToFloat(std::uint16_t h);
float bfloat16ToFloat(std::uint16_t h);
bool hostLittleEndian();  // a float32 in the file's little-endian order is the host's own

// A float dtype's name read once per tensor: a conversion loop that compared the name for every
// element spent half its time in string compares (a 1-GiB F16 embedding took 7 s).
enum class FloatDtype { F64, F32, F16, BF16 };
FloatDtype floatDtypeOf(const std::string& dtype);  // dtype: one isFloatDtype accepts
// One element of a float dtype at p (little-endian unless `big`): the readable reference.
float elementToFloat(FloatDtype dtype, const unsigned char* p, bool big = false);

// n contiguous elements of a float dtype from p (any alignment; little-endian unless `big`) into
// out[0, n): bit for bit what elementToFloat gives one by one, which is the path for big-endian
// data or host and for `isa` Scalar. Otherwise F32 is copied, F64 cast, BF16 shifted 16 bits up (a
// plain loop the compiler vectorizes) and F16 converted by the hardware, 8 at a time with F16C's
// vcvtph2ps (Isa::Avx2, which includes F16C) or 16 at a time with AVX-512's (Isa::Avx512); Auto
// is the widest this CPU runs (engine/simd_isa.h; other CPUs than x86 take the scalar path). The
// hardware conversion is exact for every finite value, subnormals and ±∞, and keeps a NaN's sign
// and payload, but sets the quiet bit of a signalling NaN, which halfToFloat and NumPy
// (np.float16(…).astype(np.float32), Debian's NumPy 1.24) keep as they are (0x7c01 is 0x7f802000;
// torch 1.13's .float() gives 0x7fc02000): a block of 8 or 16 that holds a NaN goes through
// halfToFloat, so every path gives NumPy's bits for all 65536 values. Throws
// std::invalid_argument when this CPU cannot run `isa` (runnableIsa).
void elementsToFloat(FloatDtype dtype, const unsigned char* p, std::size_t n, float* out, bool big = false,
                     Isa isa = Isa::Auto);

// "PATH: tensor NAME: why", checked before anything is allocated: absent, not a float dtype, or
// more float32 bytes than limits.max_tensor_bytes.
const TensorInfo& checkFloatRequest(const TensorFile& file, const std::string& name, const TensorFileLimits& limits);

// The mapped file, or bytes in memory, of a safetensors.
std::shared_ptr<const TensorFile> openSafetensorsFile(const std::string& path, const TensorFileLimits& limits);
std::shared_ptr<const TensorFile> safetensorsFromBytes(std::shared_ptr<const std::string> bytes,
                                                       const std::string& source, const TensorFileLimits& limits);
// A torch.save zip (its data.pkl found by the caller at `pickle_entry`) and a NumPy .npz.
std::shared_ptr<const TensorFile> openPth(ZipArchive zip, std::size_t pickle_entry, const std::string& source,
                                          const TensorFileLimits& limits);
std::shared_ptr<const TensorFile> openNpz(ZipArchive zip, const std::string& source, const TensorFileLimits& limits);

}  // namespace attnscope
