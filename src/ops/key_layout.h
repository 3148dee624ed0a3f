// How a KV cache holds keys: in blocks of kKeyBlock positions, each block [head_dim, kKeyBlock].
// A vector then holds one dimension of consecutive keys, so a query's scores are broadcast
// multiply-adds over the dimensions, with no horizontal sums (values stay [P, head_dim] rows).
#pragma once

#include <cstddef>

namespace qwen3::ops {

constexpr int kKeyBlock = 16;

// Where dimension d of key p sits in one head's blocked keys.
inline size_t key_offset(int p, int d, int head_dim) {
  return (size_t(p / kKeyBlock) * head_dim + d) * kKeyBlock + p % kKeyBlock;
}

}  // namespace qwen3::ops
