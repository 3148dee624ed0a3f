// How a KV cache holds keys: in blocks of kKeyBlock positions, each block [head_dim, kKeyBlock].
// A vector then holds one dimension of consecutive keys, so a query's scores are broadcast
// multiply-adds over the dimensions, with no horizontal sums (values stay [P, head_dim] rows).
// A bf16 cache pairs neighbours instead, since AVX512_BF16's vdpbf16ps multiplies pairs: a key
// block is [head_dim / 2, kKeyBlock, 2] (dimensions 2i and 2i + 1 of a key side by side), values
// [P / 2, head_dim, 2] (positions 2j and 2j + 1 of a dimension side by side); head_dim is even.
#pragma once

#include <cstddef>

#include "io/dtype.h"

namespace qwen3::ops {

constexpr int kKeyBlock = 16;

// Positions rounded up to whole blocks: what a head's keys take, and what key_scores fills.
inline int whole_key_blocks(int positions) {
  return (positions + kKeyBlock - 1) / kKeyBlock * kKeyBlock;
}

// Where dimension d of key p sits in one head's blocked keys (an f32 or f16 cache).
inline size_t key_offset(int p, int d, int head_dim) {
  return (size_t(p / kKeyBlock) * head_dim + d) * kKeyBlock + p % kKeyBlock;
}

// The same for a cache of any dtype, and where dimension d of value p sits.
inline size_t key_offset(DType kv, int p, int d, int head_dim) {
  if (kv != DType::bf16) return key_offset(p, d, head_dim);
  return (size_t(p / kKeyBlock) * head_dim + d / 2 * 2) * kKeyBlock + p % kKeyBlock * 2 + d % 2;
}
inline size_t value_offset(DType kv, int p, int d, int head_dim) {
  if (kv != DType::bf16) return size_t(p) * head_dim + d;
  return (size_t(p / 2) * head_dim + d) * 2 + p % 2;
}

}  // namespace qwen3::ops
