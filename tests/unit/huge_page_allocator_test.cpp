// HugePageAllocator: large blocks mapped aligned to 2 MiB, small ones from operator new aligned to
// a cache line, both usable.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "io/huge_page_buffer.h"

namespace qwen3::io {
namespace {

TEST(HugePageAllocator, BlocksAreAlignedAndEveryBlockHoldsItsValues) {
  for (size_t n : {size_t(1), size_t(3), size_t(1000), kHugePage / 8 - 1, kHugePage / 8,
                   3 * kHugePage / 8 + 5}) {
    Buffer<uint64_t> v(n, 7);
    const size_t alignment = n * sizeof(uint64_t) >= kHugePage ? kHugePage : kCacheLine;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data()) % alignment, 0u) << n;
    for (size_t i = 0; i < n; ++i) v[i] += i;
    v.push_back(1);  // grows into a new block and frees the old one
    EXPECT_EQ(v[n - 1], 7 + n - 1);
    EXPECT_EQ(v.back(), 1u);
  }
}

}  // namespace
}  // namespace qwen3::io
