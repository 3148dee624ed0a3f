// The q8_0 and q4_0 block layouts and their scalar quantizers, shared by files, loader and kernels.
//
// Both are ggml's Q8_0 / Q4_0 byte for byte. A row of K values (K % 32 == 0) is K / 32 blocks:
//   q8_0: 34 bytes = f16 scale d (little-endian), then 32 int8 q;      value[i] = d * q[i]
//   q4_0: 18 bytes = f16 scale d, then 16 bytes; byte j holds element j in its low nibble and
//         element j + 16 in its high nibble;                           value[i] = d * (nibble[i] -
//         8)
// A matrix [N, K] stores its rows in groups of kQuantRows (layout kQuantLayout): a complete group
// holds, for each block b in turn, the 16 rows' f16 scales, then their quants in chunks of 4 bytes,
// chunk-major: q8_0 chunk j (8 per block) is each row's bytes 4j..4j+3, q4_0 chunk j (4 per block)
// each row's packed bytes 4j..4j+3 (elements 4j.. in the low nibbles, 16 + 4j.. in the high). So
// one 64-byte load feeds 16 outputs, and a group's block is 16 blocks' bytes: sizes match plain
// rows. The last N % 16 rows stay plain blocks, row after row. Activations for the integer kernels
// are quantized like q8_0 but with a float32 scale, kept in two arrays: int8 q [T, K] and float d
// [T, K / 32].
#pragma once

#include <cstdint>

#include "io/dtype.h"

namespace qwen3 {

constexpr int kQ8Bytes = 2 + kQuantBlock, kQ4Bytes = 2 + kQuantBlock / 2;
constexpr int kQuantRows = 16, kQuantChunk = 4;
constexpr const char* kQuantLayout = "rows16";  // __metadata__ "layout" of quantized folders

// Scales are chosen from the block's largest magnitude, rounded to f16 first and then used to
// round each value, so |value - x| <= d / 2 for q8_0; for q4_0 the largest magnitude maps to -8
// exactly and |value - x| <= |d| (d / 2 except where +8 clamps to +7).
void quantize_row_q8_0(const float* x, int K, uint8_t* out);
void quantize_row_q4_0(const float* x, int K, uint8_t* out);
void quantize_row(DType to, const float* x, int K, uint8_t* out);  // to: q8_0 or q4_0

// rows plain rows of blocks rewritten in the matrix layout above (rows % 16 rows stay plain).
void interleave_rows(DType t, int rows, int K, const uint8_t* plain, uint8_t* out);
// Row n of an [N, K] matrix in that layout, as plain blocks.                   out [row_bytes(t,
// K)]
void extract_row(DType t, const uint8_t* w, int N, int K, int n, uint8_t* out);

// Any weight dtype to float32: one row of K values.
void dequantize_row(DType from, const void* row, int K, float* out);

// One activation row to int8 blocks with float32 scales d = max|x| / 127, and each block's sum
// of quants (the integer kernels' correction for their unsigned operand).  q [K], d and sum [K /
// 32]
void quantize_activations(const float* x, int K, int8_t* q, float* d, int32_t* sum);

inline float block_scale(const uint8_t* block) {
  return f16_to_f32(uint16_t(block[0] | block[1] << 8));
}

// The integer value of element i of a plain block: value = block_scale * block_q.
template <DType W>
int block_q(const uint8_t* block, int i) {
  if constexpr (W == DType::q8_0) return int8_t(block[2 + i]);
  const int half = kQuantBlock / 2;
  return (i < half ? block[2 + i] & 0xf : block[2 + i - half] >> 4) - 8;
}

}  // namespace qwen3
