// fuzz_pth: any bytes as a file of tensors (core/formats/tensor_file.h, docs/DESIGN.md §2.6),
// seeded with torch.save's zip files (state_dicts, a checkpoint, views, float16 and
// bfloat16) and hand-made pickles that name other globals: the whole TensorFile::fromBytes path, then floats()
// of every listed tensor (fuzz_tensor_file.h says what is checked).
#include <cstddef>
#include <cstdint>

#include "fuzz_tensor_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  attnscope::fuzz::checkTensorFile(data, size);
  return 0;
}
