// The q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, q4_k, q5_k and q6_k block layouts and the scalar
// quantizers, shared by files, loader and kernels.
//
// q8_0 and q4_0 are ggml's Q8_0 / Q4_0 byte for byte. A row of K values (K % 32 == 0) is K / 32
// blocks:
//   q8_0: 34 bytes = f16 scale d (little-endian), then 32 int8 q;      value[i] = d * q[i]
//   q4_0: 18 bytes = f16 scale d, then 16 bytes; byte j holds element j in its low nibble and
//         element j + 16 in its high nibble;                           value[i] = d * (nibble[i] -
//         8)
// q4_1, q5_0 and q5_1 hold ggml's Q4_1, Q5_0 and Q5_1 values losslessly in as many bytes (5, 5.5
// and 6 bits a weight), blocks of 32 values:
//   q4_1: 20 bytes = ggml's Q4_1: f16 d, f16 m, then q4_0's 16 nibble bytes;  value = d * q + m
//   q5_0: 22 bytes = f16 d, q4_0's 16 nibble bytes, then 4 bytes of fifth bits in q5_k's order
//         (below; ggml's Q5_0 keeps them as one uint32 ahead of the nibbles, bit e for element e);
//                                                                              value = d * (q - 16)
//   q5_1: 24 bytes = f16 d, f16 m, then q5_0's nibbles and fifth bits;       value = d * q + m
// iq4_nl holds ggml's IQ4_NL blocks byte for byte (4.5 bits a weight): q4_0's 18 bytes, each
// nibble an index into 16 levels;                                  value = d * kIq4NlLevels[nibble]
// q4_k holds ggml's Q4_K values losslessly, its 6-bit scales unpacked to bytes (4.625 bits a
// weight, Q4_K's 4.5). A row (K % 256 == 0) is K / 256 super-blocks of 148 bytes: f16 d, f16 dmin,
// 8 scales sc (bytes), 8 mins m (bytes), then 8 blocks of 32 values as q4_0's 16 nibble bytes;
// value[32b + i] = d * sc[b] * nibble - dmin * m[b].
// q5_k holds ggml's Q5_K values the same way (5.625 bits a weight, Q5_K's 5.5): q4_k's 20 bytes,
// then 8 blocks of 20 bytes, q4_0's 16 nibble bytes and 4 bytes of fifth bits: element
// 16h + 4c + i's is bit 4h + c of byte i (bit `step` of q4_0's chunk order); value[32b + i] =
// d * sc[b] * q - dmin * m[b].
// q6_k holds ggml's Q6_K values losslessly in as many bytes (6.5625 bits a weight). A row is
// K / 256 super-blocks of 210 bytes: f16 d, 16 int8 scales sc (one per 16 values), then 8 blocks
// of 32 values q (6 bits), each as 16 bytes of low nibbles in q4_0's order and 8 bytes of high
// bits: element 16h + 4c + i's top two bits are bits 2c of byte 4h + i (so the bytes of a half go
// with q4_0's chunks, chunk c's bits at one shift); value[16s + i] = d * sc[s] * (q - 32).
//
// A matrix [N, K] stores its rows in groups of kQuantRows (layout kQuantLayout): a complete group
// holds, for each unit (a block; the K-quants: a super-block) in turn, the 16 rows' f16 scales,
// then their quants in chunks of 4 bytes, chunk-major: q8_0 chunk j (8 per block) is each row's
// bytes 4j..4j+3, q4_0 chunk j (4 per block) each row's packed bytes 4j..4j+3 (elements 4j.. in the
// low nibbles, 16 + 4j.. in the high). So one 64-byte load feeds 16 outputs, and a group's unit is
// 16 units' bytes: sizes match plain rows. A q4_1 block's group has the 16 rows' d, their m, then
// q4_0's chunks; q5_0's the 16 d, q4_0's chunks, then the fifth bits in one chunk of 4 bytes;
// q5_1's the 16 d, the 16 m, then q5_0's chunks; iq4_nl's is q4_0's. A q4_k super-block's group has
// the 16 rows' d, their dmin, block after block the 16 rows' sc, then likewise their m, then block
// after block q4_0's chunks; q5_k's likewise, each block's nibbles followed by its fifth bits in
// one chunk of 4 bytes; a q6_k super-block's the 16 rows' d, 16-value block after block their sc,
// then each block's nibbles in q4_0's chunks followed by its high bits in two chunks of 4 bytes
// (one per half). The last N % 16 rows stay plain units, row after row. Activations for the integer
// kernels are quantized like q8_0 but with a float32 scale, kept in two arrays: int8 q [T, K] and
// float d [T, K / 32].
#pragma once

#include <cstdint>

#include "io/dtype.h"

namespace qwen3 {

constexpr int kQ8Bytes = 2 + kQuantBlock, kQ4Bytes = 2 + kQuantBlock / 2,
              kQ41Bytes = 4 + kQuantBlock / 2, kQ50Bytes = 2 + kQuantBlock * 5 / 8,
              kQ51Bytes = 4 + kQuantBlock * 5 / 8, kQ4KBytes = 4 + 16 + kSuperBlock / 2,
              kQ5KBytes = 4 + 16 + kSuperBlock * 5 / 8, kQ6KBytes = 2 + 16 + kSuperBlock * 6 / 8;
constexpr int kQuantRows = 16, kQuantChunk = 4;
// IQ4_NL's non-uniform levels, indexed by a nibble (ggml's kvalues_iq4nl).
constexpr int8_t kIq4NlLevels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                     1,    13,   25,  38,  53,  69,  89,  113};
constexpr const char* kQuantLayout = "rows16";  // __metadata__ "layout" of quantized folders

// Scales are chosen from the block's largest magnitude, rounded to f16 first and then used to
// round each value, so |value - x| <= d / 2 for q8_0; for q4_0 the largest magnitude maps to -8
// exactly and |value - x| <= |d| (d / 2 except where +8 clamps to +7).
void quantize_row_q8_0(const float* x, int K, uint8_t* out);
void quantize_row_q4_0(const float* x, int K, uint8_t* out);
void quantize_row(DType to, const float* x, int K, uint8_t* out);  // to: q8_0 or q4_0

// Whether plain rows of t are its ggml type's bytes unchanged (q8_0, q4_0, q4_1, iq4_nl), so that a
// file's rows interleave as they are; other types' rows go through from_ggml first.
bool same_bytes_as_ggml(DType t);
// One row of K values of to's ggml type (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q4_K, Q5_K or Q6_K)
// as plain blocks of to, value for value; out holds row_bytes(to, K).
void from_ggml(DType to, const uint8_t* ggml, int K, uint8_t* out);

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

// The integer value of element i of a plain q8_0, q4_0 or iq4_nl block: value = block_scale *
// block_q.
template <DType W>
int block_q(const uint8_t* block, int i) {
  if constexpr (W == DType::q8_0) return int8_t(block[2 + i]);
  const int half = kQuantBlock / 2;
  const int nibble = i < half ? block[2 + i] & 0xf : block[2 + i - half] >> 4;
  if constexpr (W == DType::iq4_nl) return kIq4NlLevels[nibble];
  return nibble - 8;
}

// The low 4 bits of element e of a plain K-quant block (q4_0's nibble order), then its q: q4_k's
// (0..15), q5_k's (0..31) and q6_k's (0..63) of its 16, 20 and 24 bytes. q4_1's nibbles and q5_0's
// and q5_1's quants are the same after their f16 scales (block_nibble, q5_k_q).
inline int block_nibble(const uint8_t* block, int e) {
  return (block[e % 16] >> (4 * (e / 16))) & 0xf;
}
inline int q5_k_q(const uint8_t* block, int e) {
  return block_nibble(block, e) | ((block[16 + e % 4] >> (e / 4 % 4 + 4 * (e / 16))) & 1) << 4;
}
inline int q6_k_q(const uint8_t* block, int e) {
  const int h = e / 16, k = e % 16;
  return block_nibble(block, e) | ((block[16 + 4 * h + k % 4] >> (2 * (k / 4))) & 3) << 4;
}

}  // namespace qwen3
