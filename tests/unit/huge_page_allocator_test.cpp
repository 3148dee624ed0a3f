// HugePageAllocator: large blocks mapped aligned to 2 MiB, small ones from operator new, both usable.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "io/huge_page_buffer.h"

namespace qwen3::io {
namespace {

TEST(HugePageAllocator, LargeBlocksAreAlignedAndEveryBlockHoldsItsValues) {
  for (size_t n : {size_t(1), size_t(1000), kHugePage / 8 - 1, kHugePage / 8, 3 * kHugePage / 8 + 5}) {
    std::vector<uint64_t, HugePageAllocator<uint64_t>> v(n, 7);
    if (n * sizeof(uint64_t) >= kHugePage) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data()) % kHugePage, 0u) << n;
    }
    for (size_t i = 0; i < n; ++i) v[i] += i;
    v.push_back(1);  // grows into a new block and frees the old one
    EXPECT_EQ(v[n - 1], 7 + n - 1);
    EXPECT_EQ(v.back(), 1u);
  }
}

}  // namespace
}  // namespace qwen3::io
