// ggml's tensor types: the layout table and a plain scalar dequantizer per supported type.
//
// Block layouts (little-endian; "f16" is an IEEE half; QK_K = 256). Each dequantizer below
// documents its own; they were written from ggml-common.h's block structs and checked against
// ggml's own output (tests/fixtures/gguf/).
#include "io/gguf_types.h"

#include <cstring>
#include <string>

#include "io/dtype.h"
#include "qwen3/error.h"

namespace qwen3::io {

namespace {

constexpr uint32_t kTypeCount = 43;

// Sizes from ggml-common.h's block structs; tests/fixtures/gguf/types.txt is ggml's own table.
constexpr GgmlTypeInfo kTypes[kTypeCount] = {
    {"f32", 1, 4, true},         {"f16", 1, 2, true},         {"q4_0", 32, 18, true},
    {"q4_1", 32, 20, true},      {nullptr, 0, 0, false},      {nullptr, 0, 0, false},
    {"q5_0", 32, 22, true},      {"q5_1", 32, 24, true},      {"q8_0", 32, 34, true},
    {"q8_1", 32, 36, false},     {"q2_K", 256, 84, true},     {"q3_K", 256, 110, true},
    {"q4_K", 256, 144, true},    {"q5_K", 256, 176, true},    {"q6_K", 256, 210, true},
    {"q8_K", 256, 292, false},   {"iq2_xxs", 256, 66, false}, {"iq2_xs", 256, 74, false},
    {"iq3_xxs", 256, 98, false}, {"iq1_s", 256, 50, false},   {"iq4_nl", 32, 18, true},
    {"iq3_s", 256, 110, false},  {"iq2_s", 256, 82, false},   {"iq4_xs", 256, 136, true},
    {"i8", 1, 1, false},         {"i16", 1, 2, false},        {"i32", 1, 4, false},
    {"i64", 1, 8, false},        {"f64", 1, 8, false},        {"iq1_m", 256, 56, false},
    {"bf16", 1, 2, true},        {nullptr, 0, 0, false},      {nullptr, 0, 0, false},
    {nullptr, 0, 0, false},      {"tq1_0", 256, 54, false},   {"tq2_0", 256, 66, false},
    {nullptr, 0, 0, false},      {nullptr, 0, 0, false},      {nullptr, 0, 0, false},
    {"mxfp4", 32, 17, false},    {"nvfp4", 64, 36, false},    {"q1_0", 128, 18, false},
    {"q2_0", 64, 18, false},
};

float half(const uint8_t* p) { return f16_to_f32(uint16_t(p[0] | p[1] << 8)); }

// Q4_0, 18 bytes: f16 d, 16 bytes qs. Byte j holds value j (low nibble) and value j + 16 (high);
// value = d * (nibble - 8).
void q4_0(const uint8_t* b, float* y) {
  const float d = half(b);
  for (int j = 0; j < 16; ++j) {
    y[j] = float((b[2 + j] & 0xf) - 8) * d;
    y[j + 16] = float((b[2 + j] >> 4) - 8) * d;
  }
}

// Q4_1, 20 bytes: f16 d, f16 m, then Q4_0's nibbles; value = d * nibble + m.
void q4_1(const uint8_t* b, float* y) {
  const float d = half(b), m = half(b + 2);
  for (int j = 0; j < 16; ++j) {
    y[j] = float(b[4 + j] & 0xf) * d + m;
    y[j + 16] = float(b[4 + j] >> 4) * d + m;
  }
}

// The fifth bits of Q5_0 / Q5_1: a little-endian uint32 whose bit i belongs to value i.
uint32_t high_bits(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

// Q5_0, 22 bytes: f16 d, 4 bytes of fifth bits, then Q4_0's nibbles; value = d * (q5 - 16).
void q5_0(const uint8_t* b, float* y) {
  const float d = half(b);
  const uint32_t qh = high_bits(b + 2);
  for (int j = 0; j < 16; ++j) {
    const int lo = (b[6 + j] & 0xf) | int((qh >> j) & 1) << 4;
    const int hi = (b[6 + j] >> 4) | int((qh >> (j + 16)) & 1) << 4;
    y[j] = float(lo - 16) * d;
    y[j + 16] = float(hi - 16) * d;
  }
}

// Q5_1, 24 bytes: f16 d, f16 m, then Q5_0's bits and nibbles; value = d * q5 + m.
void q5_1(const uint8_t* b, float* y) {
  const float d = half(b), m = half(b + 2);
  const uint32_t qh = high_bits(b + 4);
  for (int j = 0; j < 16; ++j) {
    const int lo = (b[8 + j] & 0xf) | int((qh >> j) & 1) << 4;
    const int hi = (b[8 + j] >> 4) | int((qh >> (j + 16)) & 1) << 4;
    y[j] = float(lo) * d + m;
    y[j + 16] = float(hi) * d + m;
  }
}

// Q8_0, 34 bytes: f16 d, 32 int8 q; value = d * q.
void q8_0(const uint8_t* b, float* y) {
  const float d = half(b);
  for (int j = 0; j < 32; ++j) y[j] = float(int8_t(b[2 + j])) * d;
}

// Q2_K, 84 bytes: 16 scale bytes (low nibble scale, high nibble min, one per 16 values),
// 64 bytes of 2-bit q, f16 d, f16 dmin; value = d * scale * q - dmin * min.
// Values 128c + 32s + l (c: half, s: shift step 0..3, l < 32) sit in bits 2s of byte 32c + l.
void q2_k(const uint8_t* b, float* y) {
  const uint8_t* scales = b;
  const uint8_t* qs = b + 16;
  const float d = half(b + 80), dmin = half(b + 82);
  for (int i = 0; i < kQK_K; ++i) {
    const int c = i / 128, s = i % 128 / 32, l = i % 32;
    const float dl = d * float(scales[i / 16] & 0xf), ml = dmin * float(scales[i / 16] >> 4);
    y[i] = dl * float((qs[32 * c + l] >> (2 * s)) & 3) - ml;
  }
}

// The 6-bit scales of Q3_K, 12 bytes for 16 signed scales: scale k's low 4 bits are nibble k / 8
// of byte k % 8, its high 2 bits are bits 2 (k / 4) of byte 8 + k % 4; stored with a bias of 32.
int q3_k_scale(const uint8_t* s, int k) {
  const int lo = (s[k % 8] >> (4 * (k / 8))) & 0xf;
  const int hi = (s[8 + k % 4] >> (2 * (k / 4))) & 3;
  return (lo | hi << 4) - 32;
}

// Q3_K, 110 bytes: 32 bytes hmask, 64 bytes of 2-bit q, 12 bytes of scales, f16 d.
// Value i = 128c + 32s + l: low bits as Q2_K's, the third bit is bit 4c + s of hmask[l];
// value = d * scale[i / 16] * (q2 - (bit ? 0 : 4)).
void q3_k(const uint8_t* b, float* y) {
  const uint8_t* hmask = b;
  const uint8_t* qs = b + 32;
  const uint8_t* scales = b + 96;
  const float d = half(b + 108);
  for (int i = 0; i < kQK_K; ++i) {
    const int c = i / 128, s = i % 128 / 32, l = i % 32;
    const float dl = d * float(q3_k_scale(scales, i / 16));
    const int q = ((qs[32 * c + l] >> (2 * s)) & 3) - ((hmask[l] >> (4 * c + s)) & 1 ? 0 : 4);
    y[i] = dl * float(q);
  }
}

}  // namespace

// Pairs 0..3 are the low 6 bits of bytes k and k + 4; pairs 4..7 take their low 4 bits from byte
// k + 4 (scale: low nibble, min: high nibble) and their high 2 bits from the top bits of bytes
// k - 4 (scale) and k (min).
void k4_scale_min(const uint8_t* s, int k, int& scale, int& min) {
  if (k < 4) {
    scale = s[k] & 63;
    min = s[k + 4] & 63;
  } else {
    scale = (s[k + 4] & 0xf) | (s[k - 4] >> 6) << 4;
    min = (s[k + 4] >> 4) | (s[k] >> 6) << 4;
  }
}

namespace {

// Q4_K, 144 bytes: f16 d, f16 dmin, 12 bytes of scales, 128 bytes of nibbles. Values come in 8
// groups of 32; group g uses byte 32 (g / 2) + l, low nibble for even g, high for odd;
// value = d * scale[g] * q - dmin * min[g].
void q4_k(const uint8_t* b, float* y) {
  const float d = half(b), dmin = half(b + 2);
  const uint8_t* qs = b + 16;
  for (int g = 0; g < 8; ++g) {
    int scale, min;
    k4_scale_min(b + 4, g, scale, min);
    const float dl = d * float(scale), ml = dmin * float(min);
    for (int l = 0; l < 32; ++l)
      y[32 * g + l] = dl * float((qs[32 * (g / 2) + l] >> (4 * (g % 2))) & 0xf) - ml;
  }
}

// Q5_K, 176 bytes: Q4_K's d, dmin and scales, 32 bytes qh, 128 bytes of nibbles. Value 32g + l
// has Q4_K's nibble and its fifth bit in bit g of qh[l].
void q5_k(const uint8_t* b, float* y) {
  const float d = half(b), dmin = half(b + 2);
  const uint8_t* qh = b + 16;
  const uint8_t* qs = b + 48;
  for (int g = 0; g < 8; ++g) {
    int scale, min;
    k4_scale_min(b + 4, g, scale, min);
    const float dl = d * float(scale), ml = dmin * float(min);
    for (int l = 0; l < 32; ++l) {
      const int q = ((qs[32 * (g / 2) + l] >> (4 * (g % 2))) & 0xf) | ((qh[l] >> g) & 1) << 4;
      y[32 * g + l] = dl * float(q) - ml;
    }
  }
}

// Q6_K, 210 bytes: 128 bytes ql (low 4 bits), 64 bytes qh (high 2 bits), 16 int8 scales (one per
// 16 values), f16 d. Value i = 128c + 32s + l (s = 0..3): low bits are nibble s / 2 of
// ql[64c + 32 (s % 2) + l], high bits are bits 2s of qh[32c + l]; value = d * scale * (q6 - 32).
void q6_k(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const auto* scales = reinterpret_cast<const int8_t*>(b + 192);
  const float d = half(b + 208);
  for (int i = 0; i < kQK_K; ++i) {
    const int c = i / 128, s = i % 128 / 32, l = i % 32;
    const int lo = (ql[64 * c + 32 * (s % 2) + l] >> (4 * (s / 2))) & 0xf;
    const int hi = (qh[32 * c + l] >> (2 * s)) & 3;
    y[i] = d * float(scales[i / 16]) * float((lo | hi << 4) - 32);
  }
}

// The 16 non-uniform levels of IQ4_NL and IQ4_XS, indexed by a nibble.
constexpr int8_t kIq4Levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                   1,    13,   25,  38,  53,  69,  89,  113};

// IQ4_NL, 18 bytes: Q4_0's layout, value = d * level[nibble].
void iq4_nl(const uint8_t* b, float* y) {
  const float d = half(b);
  for (int j = 0; j < 16; ++j) {
    y[j] = d * float(kIq4Levels[b[2 + j] & 0xf]);
    y[j + 16] = d * float(kIq4Levels[b[2 + j] >> 4]);
  }
}

// IQ4_XS, 136 bytes: f16 d, uint16 scales_h, 4 bytes scales_l, 128 bytes of nibbles. Group g of 32
// has the 6-bit scale (nibble g % 2 of scales_l[g / 2]) | (bits 2g of scales_h) << 4, biased by
// 32, and IQ4_NL's nibble layout in bytes 16g..16g+15; value = d * scale * level[nibble].
void iq4_xs(const uint8_t* b, float* y) {
  const float d = half(b);
  const unsigned scales_h = b[2] | b[3] << 8;
  const uint8_t* qs = b + 8;
  for (int g = 0; g < 8; ++g) {
    const int scale =
        (((b[4 + g / 2] >> (4 * (g % 2))) & 0xf) | ((scales_h >> (2 * g)) & 3) << 4) - 32;
    const float dl = d * float(scale);
    for (int j = 0; j < 16; ++j) {
      y[32 * g + j] = dl * float(kIq4Levels[qs[16 * g + j] & 0xf]);
      y[32 * g + j + 16] = dl * float(kIq4Levels[qs[16 * g + j] >> 4]);
    }
  }
}

using BlockFn = void (*)(const uint8_t* block, float* out);

BlockFn block_fn(GgmlType type) {
  switch (type) {
    case GgmlType::q4_0: return q4_0;
    case GgmlType::q4_1: return q4_1;
    case GgmlType::q5_0: return q5_0;
    case GgmlType::q5_1: return q5_1;
    case GgmlType::q8_0: return q8_0;
    case GgmlType::q2_k: return q2_k;
    case GgmlType::q3_k: return q3_k;
    case GgmlType::q4_k: return q4_k;
    case GgmlType::q5_k: return q5_k;
    case GgmlType::q6_k: return q6_k;
    case GgmlType::iq4_nl: return iq4_nl;
    case GgmlType::iq4_xs: return iq4_xs;
    default: return nullptr;
  }
}

}  // namespace

const GgmlTypeInfo* ggml_type_info(uint32_t type) {
  return type < kTypeCount && kTypes[type].name ? &kTypes[type] : nullptr;
}

const GgmlTypeInfo& ggml_type_info(GgmlType type) {
  const GgmlTypeInfo* info = ggml_type_info(static_cast<uint32_t>(type));
  if (!info)
    throw Error(ErrorKind::invalid_argument,
                "ggml type " + std::to_string(static_cast<uint32_t>(type)) + " does not exist");
  return *info;
}

void dequantize_row(GgmlType type, const void* blocks, int64_t n, float* out) {
  const GgmlTypeInfo& info = ggml_type_info(type);
  if (!info.dequantizable)
    throw Error(ErrorKind::unsupported,
                std::string("cannot dequantize ggml type ") + info.name + " (not supported yet)");
  if (n < 0 || n % info.block_size)
    throw Error(ErrorKind::invalid_argument,
                std::string("dequantize ") + info.name + ": " + std::to_string(n) +
                    " values are not whole blocks of " + std::to_string(info.block_size));
  const auto* p = static_cast<const uint8_t*>(blocks);
  switch (type) {
    case GgmlType::f32: std::memcpy(out, p, size_t(n) * 4); return;
    case GgmlType::f16:
      for (int64_t i = 0; i < n; ++i) out[i] = f16_to_f32(half_at(p, size_t(i)));
      return;
    case GgmlType::bf16:
      for (int64_t i = 0; i < n; ++i) out[i] = bf16_to_f32(half_at(p, size_t(i)));
      return;
    default: break;
  }
  const BlockFn fn = block_fn(type);
  for (int64_t i = 0; i < n / info.block_size; ++i)
    fn(p + i * info.block_bytes, out + i * info.block_size);
}

}  // namespace qwen3::io
