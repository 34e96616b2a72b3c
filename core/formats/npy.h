// Reading NumPy's binary files (docs/DESIGN.md §2.4, "Bring your own numbers"): one array of a
// .npy file (format 1.0, 2.0 or 3.0), and the entries of a .npz, which is a zip of .npy files,
// stored or deflated (np.savez, np.savez_compressed). Writing .npy is formats/export.h's. A .npz
// as a file of named tensors of any dtype (float16, ints …) is formats/tensor_file.h's.
//
// Every refusal is one InputError "SOURCE: why", where SOURCE names the file (and the entry of
// a .npz: "p.npz[W_query.weight]").
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace attnscope {

// An array of float32 or float64, as float32 in C order (a Fortran-order file is transposed
// while reading). Values are rounded to float32 the way torch.tensor(x).float() rounds them.
struct NpyArray {
  std::vector<std::int64_t> shape;  // () for a scalar, (n,) for a vector, (rows, cols) …
  std::vector<float> values;        // C order
  std::string dtype;                // "float32" or "float64", as read
  std::int64_t rows() const { return shape.size() == 2 ? shape[0] : 1; }
  std::int64_t cols() const { return shape.empty() ? 1 : shape.back(); }
};

// What a reader may accept.
struct NpyLimits {
  std::int64_t max_elements = std::int64_t{1} << 26;  // values in one array
  std::int64_t max_bytes = std::int64_t{64} << 20;    // one .npy, or the entries of a .npz together
  int max_dims = 8;                                   // refused beyond, before reading the data
};

bool looksLikeNpy(const std::string& bytes);  // starts with the magic "\x93NUMPY"
bool looksLikeZip(const std::string& bytes);  // starts with a zip signature "PK\3\4" or "PK\5\6"

// Parses a whole .npy file. Refuses (naming `source`): a damaged header, dtypes other than
// float32 and float64 in either byte order (int, bool, float16, complex, strings, objects,
// structured records: each named, with what to do), data shorter or longer than the shape says,
// NaN and ±∞ (and float64 values beyond float32), and arrays beyond the limits.
NpyArray parseNpy(const std::string& bytes, const std::string& source, const NpyLimits& limits = {});

// The header of a .npy file, read without its data (formats/tensor_file.h lists a .npz's
// arrays from their headers): the dtype as NumPy writes it ('<f4', '>f8', '|b1'), the order and
// the shape. Refuses a damaged header or a version other than 1.0–3.0.
struct NpyHeader {
  std::string descr;
  bool fortran = false;
  std::vector<std::int64_t> shape;
  std::size_t data_start = 0;  // bytes before the data
};
NpyHeader parseNpyHeader(const std::string& bytes, const std::string& source);

// The arrays of a .npz: each entry's name without ".npy", parsed with parseNpy. The zip is read by
// formats/zip_archive.h (stored or deflated entries, zip64 sizes included); entries whose declared
// sizes together pass limits.max_bytes are refused before anything is inflated, and an entry that
// inflates to more than it declares is refused while inflating (a zip bomb allocates nothing).
struct NamedArray {
  std::string name;
  NpyArray array;
};
std::vector<NamedArray> parseNpz(const std::string& bytes, const std::string& source, const NpyLimits& limits = {});

}  // namespace attnscope
