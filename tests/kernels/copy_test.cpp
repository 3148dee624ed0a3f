// ops::copy, which moves a batch's logits into each sequence's vector on the threads: every
// float, once, to its place, nothing written past the end.
#include <gtest/gtest.h>

#include <vector>

#include "ops/ops.h"

namespace qwen3::ops {
namespace {

TEST(Copy, EveryFloatToItsPlaceAndNothingPast) {
  // Empty, one float, a chunk and one more, under and around the size that goes to the threads (16
  // chunks of 1024), the vocabulary and then some.
  for (size_t n : {size_t(0), size_t(1), size_t(1025), size_t(15359), size_t(16383), size_t(16384),
                   size_t(16385), size_t(151936 + 3)}) {
    std::vector<float> x(n);
    for (size_t i = 0; i < n; ++i) x[i] = float(i) * 0.5f + 1.0f;
    for (int threads : {1, 2, 3}) {
      auto rt = make_runtime("auto", threads);
      std::vector<float> out(n + 16, -7.0f);
      copy(*rt, x.data(), n, out.data());
      EXPECT_TRUE(std::equal(x.begin(), x.end(), out.begin()))
          << n << " floats, " << threads << " threads";
      EXPECT_TRUE(std::all_of(out.begin() + n, out.end(), [](float v) { return v == -7.0f; }))
          << n << " floats, " << threads << " threads";
    }
  }
}

}  // namespace
}  // namespace qwen3::ops
