// Scalar integer kernels for block-quantized weights: the oracle the SIMD ones are tested against.
#include <cstdint>
#include <vector>

#include "io/quant_blocks.h"
#include "ops/kernels.h"

namespace qwen3::ops {

namespace {

// acc plus block b of a plain row times x's block b (x: its quants, xd its scale, xsum its sum),
// with the SIMD kernels' operations, unfused.
template <DType W>
float add_block(float acc, const uint8_t* row, int b, const int8_t* x, float xd, int32_t xsum) {
  int32_t sum = 0;  // exact (q6_k: each half's in turn)
  if constexpr (W == DType::q4_k || W == DType::q5_k) {
    const uint8_t* unit = row + b / 8 * row_bytes(W, kSuperBlock);
    const uint8_t* block = unit + 20 + b % 8 * (W == DType::q5_k ? 20 : 16);
    for (int e = 0; e < kQuantBlock; ++e)
      sum += x[e] * (W == DType::q5_k ? q5_k_q(block, e) : block_nibble(block, e));
    const float d = block_scale(unit) * float(unit[4 + b % 8]);
    const float m = block_scale(unit + 2) * float(unit[12 + b % 8]);
    acc += float(sum) * (d * xd);
    return acc + m * -(xd * float(xsum));
  } else if constexpr (W == DType::q6_k) {
    const uint8_t* unit = row + b / 8 * kQ6KBytes;
    for (int h = 0; h < 2; ++h, sum = 0) {  // the block's halves, each with its scale
      for (int e = 16 * h; e < 16 * h + 16; ++e)
        sum += x[e] * (q6_k_q(unit + 18 + 24 * (b % 8), e) - 32);
      acc += float(sum) * (block_scale(unit) * float(int8_t(unit[2 + 2 * (b % 8) + h])) * xd);
    }
    return acc;
  } else if constexpr (W == DType::q4_1 || W == DType::q5_1) {
    const uint8_t* block = row + b * row_bytes(W, kQuantBlock);
    for (int e = 0; e < kQuantBlock; ++e)
      sum += x[e] * (W == DType::q5_1 ? q5_k_q(block + 4, e) : block_nibble(block + 4, e));
    acc += float(sum) * (block_scale(block) * xd);
    return acc + block_scale(block + 2) * (xd * float(xsum));
  } else if constexpr (W == DType::q5_0) {
    const uint8_t* block = row + b * kQ50Bytes;
    for (int e = 0; e < kQuantBlock; ++e) sum += x[e] * (q5_k_q(block + 2, e) - 16);
    return acc + float(sum) * (block_scale(block) * xd);
  } else {
    const uint8_t* block = row + b * (W == DType::q8_0 ? kQ8Bytes : kQ4Bytes);  // iq4_nl: q4_0's
    for (int i = 0; i < kQuantBlock; ++i) sum += x[i] * block_q<W>(block, i);
    return acc + float(sum) * (block_scale(block) * xd);
  }
}

template <DType W>
void matmul_quant(const int8_t* xq, const float* xd, const int32_t* xsum, int T, int K,
                  const void* w, int N, int n0, int n1, float* y, int ldy) {
  const int nb = K / kQuantBlock;
  std::vector<uint8_t> row(row_bytes(W, K));
  for (int n = n0; n < n1; ++n) {
    extract_row(W, static_cast<const uint8_t*>(w), N, K, n, row.data());
    for (int t = 0; t < T; ++t) {
      float acc = 0;
      for (int b = 0; b < nb; ++b) {
        const size_t at = size_t(t) * nb + b;
        acc = add_block<W>(acc, row.data(), b, xq + at * kQuantBlock, xd[at], xsum[at]);
      }
      y[size_t(t) * ldy + n] = acc;
    }
  }
}

}  // namespace

KernelTable with_reference_quant(KernelTable t) {
  t.quantize_x = quantize_activations;
  t.matmul_q8_0 = matmul_quant<DType::q8_0>;
  t.matmul_q4_0 = matmul_quant<DType::q4_0>;
  t.matmul_q4_1 = matmul_quant<DType::q4_1>;
  t.matmul_q5_0 = matmul_quant<DType::q5_0>;
  t.matmul_q5_1 = matmul_quant<DType::q5_1>;
  t.matmul_iq4_nl = matmul_quant<DType::iq4_nl>;
  t.matmul_q4_k = matmul_quant<DType::q4_k>;
  t.matmul_q5_k = matmul_quant<DType::q5_k>;
  t.matmul_q6_k = matmul_quant<DType::q6_k>;
  return t;
}

}  // namespace qwen3::ops
