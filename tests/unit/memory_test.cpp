// engine/memory.h: how much free memory lies in blocks smaller than free page reporting's, which
// decides whether a large buffer asks for huge pages (hugePagesPay).
#include "engine/memory.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace attnscope {
namespace {

// /proc/buddyinfo of the VM it was measured on (free page reporting at order 9, 2 MiB), 15 hours up.
const std::string kDma32 =
    "Node 0, zone    DMA32      2      2      3      1      2      2      1      4      4      2    752 \n";
const std::string kBuddyinfo =
    "Node 0, zone      DMA      0      0      0      0      0      0      0      0      1      1      3 \n" + kDma32 +
    "Node 0, zone   Normal   5427   3214   3254   4913   3126   2786   1359    628    377    238    709 \n";

TEST(FreeBlocks, BelowAnOrderAcrossZones) {
  // DMA32: 2·4 + 2·8 + 3·16 + 1·32 + 2·64 + 2·128 + 1·256 + 4·512 + 4·1024 KiB = 6888 KiB.
  EXPECT_EQ(freeBytesBelowOrder(kBuddyinfo, 9), std::size_t{1921814528});  // 1.79 GiB, DMA none
  EXPECT_EQ(freeBytesBelowOrder(kDma32, 9), std::size_t{6888} * 1024);
  EXPECT_EQ(freeBytesBelowOrder(kBuddyinfo, 1), std::size_t{2 + 5427} * 4096);  // single pages
  EXPECT_EQ(freeBytesBelowOrder(kBuddyinfo, 0), std::size_t{0});
  // Past the columns a line has: what it has.
  EXPECT_EQ(freeBytesBelowOrder("Node 0, zone Normal 1 1\n", 11), std::size_t{4096 + 8192});
  EXPECT_EQ(freeBytesBelowOrder("", 9), std::size_t{0});
  EXPECT_EQ(freeBytesBelowOrder("no zones here\n", 9), std::size_t{0});
  // Damaged: a zone's counts end at a word that is none; huge counts and orders saturate.
  EXPECT_EQ(freeBytesBelowOrder("Node 0, zone Normal 1 x 5\nNode 0, zone DMA32 2\n", 9), std::size_t{3} * 4096);
  EXPECT_EQ(freeBytesBelowOrder("Node 0, zone Normal 18446744073709551615 1\n", 9), SIZE_MAX);
  EXPECT_EQ(freeBytesBelowOrder("Node 0, zone Normal 1\n", 1000), std::size_t{4096});
}

TEST(LargeBuffers, AlignedAndWritableWhateverTheirPages) {
  for (std::size_t bytes : {std::size_t{100}, kLargeBufferBytes, std::size_t{7} << 20}) {
    auto* p = static_cast<unsigned char*>(allocateLarge(bytes));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 64, 0u) << bytes;
    p[0] = 1;
    p[bytes - 1] = 2;
    EXPECT_EQ(p[0] + p[bytes - 1], 3);
    freeLarge(p, bytes);
  }
}

}  // namespace
}  // namespace attnscope
