// fuzz_buddyinfo: /proc/buddyinfo as engine/memory.h reads it (freeBytesBelowOrder, which decides
// whether a model's panels ask for huge pages) on text of the fuzzer's own. The first byte is the
// order (0 … 255), the rest the text. Nothing is refused: what is no count ends a zone's counts.
// Checked: no undefined behaviour (a shift, an overflow); the sum grows with the order.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/memory.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const int order = data[0];
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::size_t below = attnscope::freeBytesBelowOrder(text, order);
  const std::size_t more = attnscope::freeBytesBelowOrder(text, order + 1);
  FUZZ_CHECK(more >= below, "more free bytes below order " + std::to_string(order) + " than below the next");
  FUZZ_CHECK(attnscope::freeBytesBelowOrder(text, 0) == 0, "free bytes below order 0");
  return 0;
}
