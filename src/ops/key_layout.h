// How a KV cache holds keys: in blocks of kKeyBlock positions, each block [head_dim, kKeyBlock].
// A vector then holds one dimension of consecutive keys, so a query's scores are broadcast
// multiply-adds over the dimensions, with no horizontal sums (values stay [P, head_dim] rows).
// A bf16 cache pairs neighbours instead, since AVX512_BF16's vdpbf16ps multiplies pairs: a key
// block is [head_dim / 2, kKeyBlock, 2] (dimensions 2i and 2i + 1 of a key side by side), values
// [P / 2, head_dim, 2] (positions 2j and 2j + 1 of a dimension side by side); head_dim is even.
// A q8_0 cache holds int8 values and an f16 scale for each 32 dimensions of a key or value (as
// GGUF's Q8_0, 34 bytes for 32 values, so row_bytes sizes it): a key block is [head_dim / 4,
// kKeyBlock, 4] int8 (4 dimensions of a key side by side, what one lane of an int8 dot product
// sums), then its scales [head_dim / 32, kKeyBlock]; a value row head_dim int8, then its
// head_dim / 32 scales. head_dim is a multiple of 32.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

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

// A q8_0 cache's bytes: where the int8 of dimension d of key or value p sits in one head's part,
// and where the f16 scale of its 32 dimensions does.
inline size_t q8_key_block_bytes(int head_dim) {
  return row_bytes(DType::q8_0, size_t(head_dim) * kKeyBlock);
}
inline size_t q8_key_at(int p, int d, int head_dim) {
  return size_t(p / kKeyBlock) * q8_key_block_bytes(head_dim) +
         (size_t(d / 4) * kKeyBlock + p % kKeyBlock) * 4 + d % 4;
}
inline size_t q8_key_scale_at(int p, int d, int head_dim) {
  return size_t(p / kKeyBlock) * q8_key_block_bytes(head_dim) + size_t(head_dim) * kKeyBlock +
         (size_t(d / kQuantBlock) * kKeyBlock + p % kKeyBlock) * 2;
}
inline size_t q8_value_at(int p, int d, int head_dim) {
  return size_t(p) * row_bytes(DType::q8_0, head_dim) + d;
}
inline size_t q8_value_scale_at(int p, int d, int head_dim) {
  return size_t(p) * row_bytes(DType::q8_0, head_dim) + head_dim + size_t(d / kQuantBlock) * 2;
}

// One group of 32 values as a q8_0 cache stores them: the f16 scale of the largest magnitude
// over 127, each value the nearest multiple of that scale (ties to even). Every kernel set's
// appends call this, so a cache holds the same bytes whichever wrote it.
inline uint16_t quantize_q8_group(const float* x, int8_t* q) {
  float amax = 0;
  for (int i = 0; i < kQuantBlock; ++i) amax = std::max(amax, std::abs(x[i]));
  const uint16_t scale = f32_to_f16(amax / 127);
  const float d = f16_to_f32(scale);
  for (int i = 0; i < kQuantBlock; ++i)
    q[i] = d ? int8_t(std::clamp(std::nearbyint(x[i] / d), -127.0f, 127.0f)) : 0;
  return scale;
}

// Element d of key or value p of one head's cache of any dtype, as the attention kernels read it.
inline float cached_key(DType kv, const void* head, int p, int d, int head_dim) {
  const auto* bytes = static_cast<const uint8_t*>(head);
  if (kv != DType::q8_0) return float_at(kv, head, key_offset(kv, p, d, head_dim));
  return float(int8_t(bytes[q8_key_at(p, d, head_dim)])) *
         f16_to_f32(half_at(bytes + q8_key_scale_at(p, d, head_dim), 0));
}
inline float cached_value(DType kv, const void* head, int p, int d, int head_dim) {
  const auto* bytes = static_cast<const uint8_t*>(head);
  if (kv != DType::q8_0) return float_at(kv, head, value_offset(kv, p, d, head_dim));
  return float(int8_t(bytes[q8_value_at(p, d, head_dim)])) *
         f16_to_f32(half_at(bytes + q8_value_scale_at(p, d, head_dim), 0));
}

// Stores the keys and values of positions p0 .. p0 + n - 1 of one head in a q8_0 cache.
// k, v [n, head_dim], rows ld apart.
inline void append_q8(const float* k, const float* v, int ld, int n, int head_dim, int p0,
                      void* keys, void* values) {
  auto* kb = static_cast<uint8_t*>(keys);
  auto* vb = static_cast<uint8_t*>(values);
  for (int t = 0; t < n; ++t) {
    const int p = p0 + t;
    for (int d = 0; d < head_dim; d += kQuantBlock) {
      int8_t q[kQuantBlock];
      uint16_t scale = quantize_q8_group(k + size_t(t) * ld + d, q);
      for (int i = 0; i < kQuantBlock; ++i) kb[q8_key_at(p, d + i, head_dim)] = uint8_t(q[i]);
      std::memcpy(kb + q8_key_scale_at(p, d, head_dim), &scale, 2);
      scale = quantize_q8_group(v + size_t(t) * ld + d, q);
      std::memcpy(vb + q8_value_at(p, d, head_dim), q, kQuantBlock);
      std::memcpy(vb + q8_value_scale_at(p, d, head_dim), &scale, 2);
    }
  }
}

}  // namespace qwen3::ops
