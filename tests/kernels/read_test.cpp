// ops::read, the plain read that bench sets decode's bandwidth against: every byte, exactly once.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "ops/ops.h"

namespace qwen3::ops {
namespace {

// The sum ops::read promises, one word at a time.
uint64_t word_sum(const std::vector<uint8_t>& bytes) {
  uint64_t sum = 0;
  for (size_t j = 0; j < bytes.size(); j += 8) {
    uint64_t w = 0;
    std::memcpy(&w, bytes.data() + j, std::min<size_t>(8, bytes.size() - j));
    sum += w;
  }
  return sum;
}

TEST(Read, SumsEveryByteOfEveryMatrixOnce) {
  std::mt19937 rng(7);
  // Sizes that end mid-word and mid-line, one that fills several 64 KiB units and then some.
  const std::vector<Matrix> shapes = {{DType::f32, nullptr, 3, 5},
                                      {DType::bf16, nullptr, 7, 9},
                                      {DType::bf16, nullptr, 301, 1003},
                                      {DType::f32, nullptr, 1, 1}};
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<Matrix> matrices;
  uint64_t want = 0;
  for (Matrix m : shapes) {
    bytes.emplace_back(m.bytes());
    for (auto& b : bytes.back()) b = uint8_t(rng());
    want += word_sum(bytes.back());
    m.data = bytes.back().data();
    matrices.push_back(m);
  }
  for (int threads : {1, 2, 3}) {
    auto rt = make_runtime("auto", threads);
    EXPECT_EQ(read(*rt, matrices), want) << threads << " threads";
  }
  bytes[2][70000] ^= 1;  // any byte changes the sum: none is skipped
  auto rt = make_runtime("auto", 2);
  EXPECT_NE(read(*rt, matrices), want);
}

}  // namespace
}  // namespace qwen3::ops
