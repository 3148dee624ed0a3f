// Scalar block quantization (the one definition of the q8_0 / q4_0 rounding), and the row-group
// layout's byte order.
#include "io/quant_blocks.h"

#include <cmath>
#include <cstring>

#include "io/gguf_types.h"

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

// Q4_K, 144 bytes: f16 d, f16 dmin, 12 bytes of packed scales and mins, 128 bytes of nibbles.
// Q5_K, 176 bytes: the same with 32 bytes of fifth bits (qh) before the nibbles. Both keep block
// b's 32 values in the low (even b) or high (odd b) nibbles of 32 bytes, Q5_K their fifth bits in
// bit b of qh (io/gguf_types.cpp's q4_k and q5_k).
void k4_from_ggml(DType to, const uint8_t* ggml, int K, uint8_t* out) {
  const bool q5 = to == DType::q5_k;
  const size_t in_bytes =
      io::ggml_row_bytes(q5 ? io::GgmlType::q5_k : io::GgmlType::q4_k, kSuperBlock);
  const int block_bytes = q5 ? 20 : 16;
  std::memset(out, 0, row_bytes(to, K));
  for (int s = 0; s < K / kSuperBlock; ++s, ggml += in_bytes, out += row_bytes(to, kSuperBlock)) {
    std::memcpy(out, ggml, 4);  // d, dmin
    const uint8_t* qh = ggml + 16;
    const uint8_t* qs = ggml + (q5 ? 48 : 16);
    for (int b = 0; b < kSuperBlock / kQuantBlock; ++b) {
      int scale, min;
      io::k4_scale_min(ggml + 4, b, scale, min);
      out[4 + b] = uint8_t(scale);
      out[12 + b] = uint8_t(min);
      uint8_t* block = out + 20 + block_bytes * b;  // block_nibble's and q5_k_q's bits, set
      for (int e = 0; e < kQuantBlock; ++e) {
        block[e % 16] |= uint8_t(((qs[32 * (b / 2) + e] >> (4 * (b % 2))) & 0xf) << (4 * (e / 16)));
        if (q5) block[16 + e % 4] |= uint8_t(((qh[e] >> b) & 1) << (e / 4 % 4 + 4 * (e / 16)));
      }
    }
  }
}

// Q6_K, 210 bytes: ql (128 bytes), qh (64), 16 int8 scales, f16 d (io/gguf_types.cpp's q6_k).
void q6_k_from_ggml(const uint8_t* ggml, int K, uint8_t* out) {
  std::memset(out, 0, row_bytes(DType::q6_k, K));
  const size_t in_bytes = io::ggml_row_bytes(io::GgmlType::q6_k, kSuperBlock);
  for (int s = 0; s < K / kSuperBlock; ++s, ggml += in_bytes, out += kQ6KBytes) {
    std::memcpy(out, ggml + 208, 2);
    std::memcpy(out + 2, ggml + 192, 16);
    for (int v = 0; v < kSuperBlock; ++v) {
      const int c = v / 128, s4 = v % 128 / 32, l = v % 32;
      const int lo = (ggml[64 * c + 32 * (s4 % 2) + l] >> (4 * (s4 / 2))) & 0xf;
      const int hi = (ggml[128 + 32 * c + l] >> (2 * s4)) & 3;
      uint8_t* block = out + 18 + 24 * (v / kQuantBlock);  // q6_k_q's bits, set
      const int e = v % kQuantBlock, h = e / 16, k = e % 16;
      block[k] |= uint8_t(lo << (4 * h));
      block[16 + 4 * h + k % 4] |= uint8_t(hi << (2 * (k / 4)));
    }
  }
}

// Q5_0, 22 bytes: f16 d, the fifth bits as a little-endian uint32 (bit e: element e), Q4_0's
// nibbles. Q5_1, 24 bytes: f16 d, f16 m, then the same (io/gguf_types.cpp's q5_0 and q5_1). The
// nibbles stay; the fifth bits move behind them, into q5_k_q's bits.
void q5_from_ggml(DType to, const uint8_t* ggml, int K, uint8_t* out) {
  const int head = to == DType::q5_1 ? 4 : 2, bytes = head + 20;
  std::memset(out, 0, row_bytes(to, K));
  for (int b = 0; b < K / kQuantBlock; ++b, ggml += bytes, out += bytes) {
    std::memcpy(out, ggml, head);
    std::memcpy(out + head, ggml + head + 4, 16);
    const uint8_t* qh = ggml + head;
    for (int e = 0; e < kQuantBlock; ++e)
      out[head + 16 + e % 4] |= uint8_t(((qh[e / 8] >> (e % 8)) & 1) << (e / 4 % 4 + 4 * (e / 16)));
  }
}

}  // namespace

bool same_bytes_as_ggml(DType t) {
  return t == DType::q8_0 || t == DType::q4_0 || t == DType::q4_1 || t == DType::iq4_nl;
}

void from_ggml(DType to, const uint8_t* ggml, int K, uint8_t* out) {
  if (same_bytes_as_ggml(to)) std::memcpy(out, ggml, row_bytes(to, K));
  else if (to == DType::q5_0 || to == DType::q5_1) q5_from_ggml(to, ggml, K, out);
  else if (to == DType::q6_k) q6_k_from_ggml(ggml, K, out);
  else k4_from_ggml(to, ggml, K, out);
}

namespace {

// Values and bytes per row of one unit of the layout: a block, or a K-quant's super-block.
int unit_values(DType t) {
  return t == DType::q4_k || t == DType::q5_k || t == DType::q6_k ? kSuperBlock : kQuantBlock;
}
int unit_bytes(DType t) { return int(row_bytes(t, unit_values(t))); }

// Byte offset, inside a complete group's unit, of byte i of row r's plain unit.
size_t group_offset(DType t, int r, int i) {
  // quant byte i of a block: its chunk of 4, each row's in turn
  auto chunked = [r](int q) {
    return (q / kQuantChunk * kQuantRows + r) * kQuantChunk + q % kQuantChunk;
  };
  // a unit's quants after its `head` bytes a row: each block's nibbles in q4_0's chunks, then its
  // high bits' chunks
  auto blocks = [&](int head, int block_bytes) {
    constexpr int half = kQuantBlock / 2;
    const int block = (i - head) / block_bytes, at = (i - head) % block_bytes;
    return head * kQuantRows + block * block_bytes * kQuantRows +
           (at < half ? chunked(at) : half * kQuantRows + chunked(at - half));
  };
  // f16 scales: the 16 rows' first (d), then their second (m, dmin)
  auto scales = [&] { return i / 2 * 2 * kQuantRows + 2 * r + i % 2; };
  switch (t) {
    case DType::q8_0: return i < 2 ? 2 * r + i : 2 * kQuantRows + chunked(i - 2);
    case DType::q4_0:
    case DType::iq4_nl:
    case DType::q5_0: return i < 2 ? 2 * r + i : blocks(2, t == DType::q5_0 ? 20 : 16);
    case DType::q4_1:
    case DType::q5_1: return i < 4 ? scales() : blocks(4, t == DType::q5_1 ? 20 : 16);
    case DType::q6_k:  // d, the 16 scales, the blocks
      return i < 2 ? 2 * r + i : i < 18 ? i * kQuantRows + r : blocks(18, 24);
    default:  // q4_k, q5_k: d, dmin, the 8 scales, the 8 mins, the blocks
      return i < 4    ? scales()
             : i < 20 ? i * kQuantRows + r
                      : blocks(20, t == DType::q5_k ? 20 : 16);
  }
}

}  // namespace

void interleave_rows(DType t, int rows, int K, const uint8_t* plain, uint8_t* out) {
  const size_t rb = row_bytes(t, K), bytes = unit_bytes(t);
  const int full = rows / kQuantRows * kQuantRows;
  for (int g = 0; g < full; g += kQuantRows)
    for (int r = 0; r < kQuantRows; ++r)
      for (int u = 0; u < K / unit_values(t); ++u)
        for (size_t i = 0; i < bytes; ++i)
          out[g * rb + u * kQuantRows * bytes + group_offset(t, r, int(i))] =
              plain[(g + r) * rb + u * bytes + i];
  std::memcpy(out + full * rb, plain + full * rb, (rows - full) * rb);
}

void extract_row(DType t, const uint8_t* w, int N, int K, int n, uint8_t* out) {
  const size_t rb = row_bytes(t, K), bytes = unit_bytes(t);
  const int g = n / kQuantRows * kQuantRows;
  if (g + kQuantRows > N) return void(std::memcpy(out, w + n * rb, rb));
  for (int u = 0; u < K / unit_values(t); ++u)
    for (size_t i = 0; i < bytes; ++i)
      out[u * bytes + i] = w[g * rb + u * kQuantRows * bytes + group_offset(t, n - g, int(i))];
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
    case DType::q4_1:
    case DType::q5_1: {
      // d q exact, plus m rounded once: io::dequantize_row's, bit for bit
      const int bytes = int(row_bytes(from, kQuantBlock));
      for (int b = 0; b < K / kQuantBlock; ++b, p += bytes, out += kQuantBlock)
        for (int e = 0; e < kQuantBlock; ++e)
          out[e] = float(from == DType::q5_1 ? q5_k_q(p + 4, e) : block_nibble(p + 4, e)) *
                       block_scale(p) +
                   block_scale(p + 2);
      return;
    }
    case DType::iq4_nl:
      for (int b = 0; b < K / kQuantBlock; ++b, p += kQ4Bytes, out += kQuantBlock)
        for (int e = 0; e < kQuantBlock; ++e)
          out[e] = block_scale(p) * float(block_q<DType::iq4_nl>(p, e));  // exact
      return;
    case DType::q5_0:
      for (int b = 0; b < K / kQuantBlock; ++b, p += kQ50Bytes, out += kQuantBlock)
        for (int e = 0; e < kQuantBlock; ++e)
          out[e] = float(q5_k_q(p + 2, e) - 16) * block_scale(p);  // exact
      return;
    case DType::q4_k:
    case DType::q5_k: {
      // the products are exact, the difference rounds once: io::dequantize_row's, bit for bit
      const int block_bytes = from == DType::q5_k ? 20 : 16;
      for (int s = 0; s < K / kSuperBlock;
           ++s, p += row_bytes(from, kSuperBlock), out += kSuperBlock)
        for (int b = 0; b < kSuperBlock / kQuantBlock; ++b) {
          const float dl = block_scale(p) * float(p[4 + b]),
                      ml = block_scale(p + 2) * float(p[12 + b]);
          const uint8_t* block = p + 20 + block_bytes * b;
          for (int e = 0; e < kQuantBlock; ++e)
            out[kQuantBlock * b + e] =
                dl * float(from == DType::q5_k ? q5_k_q(block, e) : block_nibble(block, e)) - ml;
        }
      return;
    }
    case DType::q6_k:
      // (d sc) exact, times (q - 32) rounded once, in io::dequantize_row's order: bit for bit
      for (int s = 0; s < K / kSuperBlock; ++s, p += kQ6KBytes, out += kSuperBlock)
        for (int v = 0; v < kSuperBlock; ++v)
          out[v] = block_scale(p) * float(int8_t(p[2 + v / 16])) *
                   float(q6_k_q(p + 18 + 24 * (v / kQuantBlock), v % kQuantBlock) - 32);
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
