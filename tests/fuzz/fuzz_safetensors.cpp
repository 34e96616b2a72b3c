// fuzz_safetensors: any bytes as a file of tensors (core/formats/tensor_file.h, docs/DESIGN.md §2.6),
// seeded with safetensors files in HF's layout (F32, F16, BF16, I64, metadata,
// padding) and damaged headers: the whole TensorFile::fromBytes path, then floats()
// of every listed tensor (fuzz_tensor_file.h says what is checked).
#include <cstddef>
#include <cstdint>

#include "fuzz_tensor_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  attnscope::fuzz::checkTensorFile(data, size);
  return 0;
}
