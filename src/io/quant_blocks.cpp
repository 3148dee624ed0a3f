// Scalar block quantization: the one definition of the q8_0 / q4_0 rounding.
#include "io/quant_blocks.h"

#include <cmath>
#include <cstring>

namespace qwen3 {

namespace {

void put_scale(uint8_t* block, float d) {
  const uint16_t h = f32_to_f16(d);
  block[0] = uint8_t(h & 0xff);
  block[1] = uint8_t(h >> 8);
}

}  // namespace

void quantize_row_q8_0(const float* x, int K, uint8_t* out) {
  for (int b = 0; b < K / kQuantBlock; ++b, x += kQuantBlock, out += kQ8Bytes) {
    float amax = 0;
    for (int i = 0; i < kQuantBlock; ++i) amax = std::fmax(amax, std::fabs(x[i]));
    put_scale(out, amax / 127);
    const float d = block_scale(out);
    const float id = d > 0 ? 1 / d : 0;
    for (int i = 0; i < kQuantBlock; ++i)
      out[2 + i] = uint8_t(int8_t(std::fmax(-127.f, std::fmin(127.f, std::nearbyint(x[i] * id)))));
  }
}

void quantize_row_q4_0(const float* x, int K, uint8_t* out) {
  for (int b = 0; b < K / kQuantBlock; ++b, x += kQuantBlock, out += kQ4Bytes) {
    float max = 0;  // the signed value of largest magnitude: it maps to -8, the one level +7 lacks
    for (int i = 0; i < kQuantBlock; ++i)
      if (std::fabs(x[i]) > std::fabs(max)) max = x[i];
    put_scale(out, max / -8);
    const float d = block_scale(out);
    const float id = d != 0 ? 1 / d : 0;
    auto level = [&](float v) {
      return uint8_t(std::fmax(0.f, std::fmin(15.f, std::nearbyint(v * id) + 8)));
    };
    for (int j = 0; j < kQuantBlock / 2; ++j)
      out[2 + j] = uint8_t(level(x[j]) | level(x[j + kQuantBlock / 2]) << 4);
  }
}

void quantize_row(DType to, const float* x, int K, uint8_t* out) {
  if (to == DType::q8_0) quantize_row_q8_0(x, K, out);
  else quantize_row_q4_0(x, K, out);
}

namespace {

// Byte offset, inside a complete group, of row r's block b quant byte i (scale bytes: i = -2, -1).
size_t group_offset(DType t, int b, int r, int i) {
  const int bytes = t == DType::q8_0 ? kQ8Bytes : kQ4Bytes;
  const size_t block = size_t(b) * kQuantRows * bytes;
  if (i < 0) return block + 2 * r + (i + 2);
  return block + 2 * kQuantRows + (i / kQuantChunk * kQuantRows + r) * kQuantChunk +
         i % kQuantChunk;
}

}  // namespace

void interleave_rows(DType t, int rows, int K, const uint8_t* plain, uint8_t* out) {
  const size_t rb = row_bytes(t, K), bytes = t == DType::q8_0 ? kQ8Bytes : kQ4Bytes;
  const int full = rows / kQuantRows * kQuantRows;
  for (int g = 0; g < full; g += kQuantRows)
    for (int r = 0; r < kQuantRows; ++r)
      for (int b = 0; b < K / kQuantBlock; ++b)
        for (int i = -2; i < int(bytes) - 2; ++i)
          out[g * rb + group_offset(t, b, r, i)] = plain[(g + r) * rb + b * bytes + 2 + i];
  std::memcpy(out + full * rb, plain + full * rb, (rows - full) * rb);
}

void extract_row(DType t, const uint8_t* w, int N, int K, int n, uint8_t* out) {
  const size_t rb = row_bytes(t, K), bytes = t == DType::q8_0 ? kQ8Bytes : kQ4Bytes;
  const int g = n / kQuantRows * kQuantRows;
  if (g + kQuantRows > N) return void(std::memcpy(out, w + n * rb, rb));
  for (int b = 0; b < K / kQuantBlock; ++b)
    for (int i = -2; i < int(bytes) - 2; ++i)
      out[b * bytes + 2 + i] = w[g * rb + group_offset(t, b, n - g, i)];
}

void dequantize_row(DType from, const void* row, int K, float* out) {
  const auto* p = static_cast<const uint8_t*>(row);
  switch (from) {
    case DType::f32:
    case DType::bf16:
    case DType::f16:
      for (int i = 0; i < K; ++i) out[i] = float_at(from, row, i);
      return;
    case DType::q8_0:
      for (int b = 0; b < K / kQuantBlock; ++b, p += kQ8Bytes)
        for (int i = 0; i < kQuantBlock; ++i)
          out[b * kQuantBlock + i] = block_scale(p) * int8_t(p[2 + i]);
      return;
    case DType::q4_0:
      for (int b = 0; b < K / kQuantBlock; ++b, p += kQ4Bytes)
        for (int j = 0; j < kQuantBlock / 2; ++j) {
          out[b * kQuantBlock + j] = block_scale(p) * ((p[2 + j] & 0xf) - 8);
          out[b * kQuantBlock + j + kQuantBlock / 2] = block_scale(p) * ((p[2 + j] >> 4) - 8);
        }
      return;
  }
}

void quantize_activations(const float* x, int K, int8_t* q, float* d, int32_t* sum) {
  for (int b = 0; b < K / kQuantBlock; ++b, x += kQuantBlock, q += kQuantBlock) {
    float amax = 0;
    for (int i = 0; i < kQuantBlock; ++i) amax = std::fmax(amax, std::fabs(x[i]));
    d[b] = amax / 127;
    const float id = amax > 0 ? 127 / amax : 0;
    sum[b] = 0;
    for (int i = 0; i < kQuantBlock; ++i) sum[b] += q[i] = int8_t(std::nearbyint(x[i] * id));
  }
}

}  // namespace qwen3
