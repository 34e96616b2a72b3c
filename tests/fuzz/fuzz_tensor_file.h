// Shared by fuzz_safetensors and fuzz_pth (docs/DESIGN.md §2.6): any bytes through
// TensorFile::fromBytes, then floats() of every tensor listed. A refusal is one InputError, one line,
// starting with the source ("fuzz: …", or "fuzz[a]: …" for a .npz's array a); an accepted file lists tensors with
// non-negative shapes, and floats() of each either refuses it (InputError naming it) or gives shape-many values, the
// same bits when read twice.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>

#include "formats/tensor_file.h"
#include "fuzz_common.h"

namespace attnscope::fuzz {

inline void checkTensorFile(const std::uint8_t* data, std::size_t size) {
  TensorFileLimits limits;  // small: every accepted input stays cheap
  limits.max_file_bytes = std::int64_t{1} << 20;
  limits.max_tensor_bytes = std::int64_t{1} << 20;
  limits.max_tensors = 1000;
  auto refused = [](const InputError& e) {
    const std::string m = e.what();
    FUZZ_CHECK(m.rfind("fuzz: ", 0) == 0 || m.rfind("fuzz[", 0) == 0, m);  // fuzz[entry]: a .npz's array
    FUZZ_CHECK(m.find('\n') == std::string::npos, "a refusal is one line: " + m);
  };
  std::shared_ptr<const TensorFile> file;
  try {
    file = TensorFile::fromBytes(std::string(reinterpret_cast<const char*>(data), size), "fuzz", limits);
  } catch (const InputError& e) {
    refused(e);
    return;
  } catch (const std::exception& e) {
    unexpected("TensorFile::fromBytes", e);
  }
  FUZZ_CHECK(file->format() == "safetensors" || file->format() == "pth" || file->format() == "npz", file->format());
  FUZZ_CHECK(static_cast<std::int64_t>(file->tensors().size()) <= limits.max_tensors, "too many tensors");
  for (const TensorInfo& t : file->tensors()) {
    for (std::int64_t d : t.shape) FUZZ_CHECK(d >= 0, t.name + ": a negative dimension");
    FUZZ_CHECK(file->find(t.name) != nullptr, t.name + " is listed but not found");
    try {
      const FloatTensor a = file->floats(t.name);
      FUZZ_CHECK(a.shape == t.shape, t.name + ": floats() has another shape");
      FUZZ_CHECK(a.elements() == 0 || a.data != nullptr, t.name + ": no data");
      FUZZ_CHECK(a.elements() <= limits.max_tensor_bytes / 4, t.name + ": over the limit");
      const FloatTensor b = file->floats(t.name);
      FUZZ_CHECK(a.elements() == 0 || std::memcmp(a.data, b.data, static_cast<std::size_t>(a.elements()) * 4) == 0,
                 t.name + ": two reads differ");
    } catch (const InputError& e) {
      refused(e);
    } catch (const std::exception& e) {
      unexpected("TensorFile::floats", e);
    }
  }
}

}  // namespace attnscope::fuzz
