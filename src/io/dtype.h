// Element types of tensors in weight files, with their sizes and names.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace qwen3 {

// q8_0 and q4_0 hold blocks of 32 values with one scale each; q4_1, q5_0, q5_1 and iq4_nl GGUF's
// Q4_1, Q5_0, Q5_1 and IQ4_NL blocks of 32 (a scale, Q4_1 and Q5_1 a min too); q4_k, q5_k and q6_k
// GGUF's Q4_K, Q5_K and Q6_K super-blocks of 256 values (blocks of 32 with a scale and a min; of 16
// with a scale). Their layouts are in io/quant_blocks.h.
enum class DType { f32, f16, bf16, q8_0, q4_0, q4_k, q5_k, q6_k, q4_1, q5_0, q5_1, iq4_nl };

inline bool is_block_quantized(DType t) {
  return t != DType::f32 && t != DType::f16 && t != DType::bf16;
}

// Values per block of a block-quantized dtype; a row's length must be a multiple of it (of
// kSuperBlock for q4_k, q5_k and q6_k).
constexpr int kQuantBlock = 32, kSuperBlock = 256;

// Bytes of one row of `cols` values. Block-quantized dtypes need cols % kQuantBlock == 0.
inline size_t row_bytes(DType t, size_t cols) {
  switch (t) {
    case DType::f32: return 4 * cols;
    case DType::f16:
    case DType::bf16: return 2 * cols;
    case DType::q8_0: return cols / kQuantBlock * (2 + kQuantBlock);  // f16 scale + 32 int8
    case DType::q4_0:
    case DType::iq4_nl:
      return cols / kQuantBlock * (2 + kQuantBlock / 2);  // f16 scale + 32 nibbles
    // f16 d and m, 32 nibbles
    case DType::q4_1: return cols / kQuantBlock * (4 + kQuantBlock / 2);
    // f16 d, 32 nibbles and 32 fifth bits
    case DType::q5_0: return cols / kQuantBlock * (2 + kQuantBlock * 5 / 8);
    // f16 d and m, 32 nibbles and 32 fifth bits
    case DType::q5_1: return cols / kQuantBlock * (4 + kQuantBlock * 5 / 8);
    // f16 d and dmin, 8 scales and 8 mins of a byte each, 256 nibbles
    case DType::q4_k: return cols / kSuperBlock * (4 + 16 + kSuperBlock / 2);
    // q4_k's and 256 fifth bits
    case DType::q5_k: return cols / kSuperBlock * (4 + 16 + kSuperBlock * 5 / 8);
    // f16 d, 16 int8 scales, 256 values of 6 bits
    case DType::q6_k: return cols / kSuperBlock * (2 + 16 + kSuperBlock * 6 / 8);
  }
  return 0;
}

inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::q8_0: return "q8_0";
    case DType::q4_0: return "q4_0";
    case DType::q4_k: return "q4_k";
    case DType::q5_k: return "q5_k";
    case DType::q6_k: return "q6_k";
    case DType::q4_1: return "q4_1";
    case DType::q5_0: return "q5_0";
    case DType::q5_1: return "q5_1";
    case DType::iq4_nl: return "iq4_nl";
  }
  return "?";
}

// bf16 is the top half of an f32: widening is a shift, exact.
inline float bf16_to_f32(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Round to nearest even, as torch does when it casts f32 to bf16. Without branches: a loop of
// these becomes vector code.
inline uint16_t f32_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  const uint32_t quiet = (bits >> 16) | 0x40;  // NaN stays NaN
  return static_cast<uint16_t>((bits & 0x7fffffffu) > 0x7f800000u ? quiet : rounded);
}

inline float f16_to_f32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while (!(mant & 0x400u));
      bits = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (mant & 0x3ffu) << 13;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | mant << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | mant << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Round to nearest even, as torch's float32 -> float16 cast does (overflow gives infinity).
inline uint16_t f32_to_f16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x > 0x7f800000u) return sign | 0x7e00;   // NaN stays NaN
  if (x >= 0x477ff000u) return sign | 0x7c00;  // rounds past 65504: infinity
  if (x < 0x38800000u) {                       // below 2^-14: a subnormal step of 2^-24
    float v;
    std::memcpy(&v, &x, 4);
    return sign | uint16_t(std::nearbyint(v * 16777216.0f));  // exact scaling, ties to even
  }
  x += 0xfffu + ((x >> 13) & 1u);  // round the 13 dropped mantissa bits, ties to even
  x -= (127u - 15u) << 23;
  return sign | uint16_t(x >> 13);
}

// A 16-bit element of a weight array. Weight files need not align their tensors to the element
// size, so the bytes are copied, never read through a misaligned typed pointer.
inline uint16_t half_at(const void* data, size_t i) {
  uint16_t h;
  std::memcpy(&h, static_cast<const char*>(data) + 2 * i, 2);
  return h;
}

// Element i of an f32, f16 or bf16 array, widened to float (the same care about alignment).
inline float float_at(DType t, const void* data, size_t i) {
  if (t == DType::bf16) return bf16_to_f32(half_at(data, i));
  if (t == DType::f16) return f16_to_f32(half_at(data, i));
  float f;
  std::memcpy(&f, static_cast<const char*>(data) + 4 * i, 4);
  return f;
}

}  // namespace qwen3
