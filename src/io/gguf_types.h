// ggml's tensor types as GGUF files store them: block sizes, names, and scalar dequantizers.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qwen3::io {

// The numbers are ggml.h's enum ggml_type, written into every GGUF tensor info. Gaps are types
// ggml has removed (4, 5, 31-33, 36-38); a file must not use them.
enum class GgmlType : uint32_t {
  f32 = 0,
  f16 = 1,
  q4_0 = 2,
  q4_1 = 3,
  q5_0 = 6,
  q5_1 = 7,
  q8_0 = 8,
  q8_1 = 9,
  q2_k = 10,
  q3_k = 11,
  q4_k = 12,
  q5_k = 13,
  q6_k = 14,
  q8_k = 15,
  iq2_xxs = 16,
  iq2_xs = 17,
  iq3_xxs = 18,
  iq1_s = 19,
  iq4_nl = 20,
  iq3_s = 21,
  iq2_s = 22,
  iq4_xs = 23,
  i8 = 24,
  i16 = 25,
  i32 = 26,
  i64 = 27,
  f64 = 28,
  iq1_m = 29,
  bf16 = 30,
  tq1_0 = 34,
  tq2_0 = 35,
  mxfp4 = 39,
  nvfp4 = 40,
  q1_0 = 41,
  q2_0 = 42,
};

struct GgmlTypeInfo {
  const char* name;    // ggml's name ("q4_K"), for messages
  int block_size;      // values per block; a row's length must be a multiple of it
  int block_bytes;     // bytes per block
  bool dequantizable;  // dequantize_row handles it
};

// The layout of type number `type`, or null for a number ggml does not define (any more).
const GgmlTypeInfo* ggml_type_info(uint32_t type);
const GgmlTypeInfo& ggml_type_info(GgmlType type);
inline const char* ggml_type_name(GgmlType type) { return ggml_type_info(type).name; }

// Values per super-block of the K quants and of iq4_xs.
constexpr int kQK_K = 256;

// The packed scales of Q4_K and Q5_K, 12 bytes for 8 (scale, min) pairs of 6 bits: pair k.
void k4_scale_min(const uint8_t* s, int k, int& scale, int& min);

// Bytes of n values (n a multiple of the block size).
inline size_t ggml_row_bytes(GgmlType type, int64_t n) {
  const GgmlTypeInfo& t = ggml_type_info(type);
  return static_cast<size_t>(n / t.block_size) * static_cast<size_t>(t.block_bytes);
}

// n values of `type` (n blocks' worth, starting at `blocks`, any alignment) to float32, exactly as
// ggml's dequantize_row_* computes them: every product here is exact or rounded once, so the
// result is bit-for-bit ggml's whatever the order or fusing of the arithmetic.
// Throws qwen3::Error: unsupported for a type that is not dequantizable, invalid_argument when
// n is negative or not a multiple of the block size.
void dequantize_row(GgmlType type, const void* blocks, int64_t n, float* out);

}  // namespace qwen3::io
