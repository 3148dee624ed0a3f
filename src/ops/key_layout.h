// How a KV cache holds keys: in blocks of kKeyBlock positions, each block [head_dim, kKeyBlock].
// A vector then holds one dimension of consecutive keys, so a query's scores are broadcast
// multiply-adds over the dimensions, with no horizontal sums (values stay [P, head_dim] rows).
#pragma once

#include <cstddef>

namespace qwen3::ops {

constexpr int kKeyBlock = 16;

// Positions rounded up to whole blocks: what a head's keys take, and what key_scores fills.
inline int whole_key_blocks(int positions) { return (positions + kKeyBlock - 1) / kKeyBlock * kKeyBlock; }

// Where dimension d of key p sits in one head's blocked keys.
inline size_t key_offset(int p, int d, int head_dim) {
  return (size_t(p / kKeyBlock) * head_dim + d) * kKeyBlock + p % kKeyBlock;
}

}  // namespace qwen3::ops
