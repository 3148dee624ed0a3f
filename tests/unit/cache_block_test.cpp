// The KV cache's blocks: zeroed, mapped on their own, aligned to a page (from 2 MiB up, to 2 MiB).
#include <gtest/gtest.h>

#include <cstdint>

#include "io/huge_page_buffer.h"
#include "model/sequence_state.h"

namespace qwen3 {
namespace {

TEST(CacheBlock, ComesZeroedAndAlignedAtEverySize) {
  using io::kHugePage;
  for (size_t bytes : {size_t(1), size_t(4096), kHugePage - 1, kHugePage, 3 * kHugePage + 100}) {
    for (int round = 0; round < 2; ++round) {  // the second time in memory the first one freed
      detail::CacheBlock block(bytes);
      size_t nonzero = 0;
      for (uint8_t b : block) nonzero += b != 0;
      EXPECT_EQ(nonzero, 0u) << bytes << " bytes";
      EXPECT_EQ(reinterpret_cast<uintptr_t>(block.data()) % (bytes >= kHugePage ? kHugePage : 4096),
                0u)
          << bytes;
      for (auto& b : block) b = 0xa5;  // every byte writable
      detail::CacheBlock moved = std::move(block);
      EXPECT_EQ(moved.size(), bytes);
      EXPECT_EQ(moved.back(), 0xa5);
    }
  }
}

}  // namespace
}  // namespace qwen3
