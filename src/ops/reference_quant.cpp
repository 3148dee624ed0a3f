// Scalar integer kernels for block-quantized weights: the oracle the SIMD ones are tested against.
#include <cstdint>
#include <vector>

#include "io/quant_blocks.h"
#include "ops/kernels.h"

namespace qwen3::ops {

namespace {

template <DType W>
void matmul_quant(const int8_t* xq, const float* xd, const int32_t*, int T, int K, const void* w,
                  int N, int n0, int n1, float* y, int ldy) {
  const int nb = K / kQuantBlock;
  const size_t rb = row_bytes(W, K), bytes = rb / (nb ? nb : 1);
  std::vector<uint8_t> row(rb);
  for (int n = n0; n < n1; ++n) {
    extract_row(W, static_cast<const uint8_t*>(w), N, K, n, row.data());
    for (int t = 0; t < T; ++t) {
      float acc = 0;
      for (int b = 0; b < nb; ++b) {
        const uint8_t* block = row.data() + b * bytes;
        const int8_t* x = xq + size_t(t) * K + b * kQuantBlock;
        int32_t sum = 0;  // exact
        for (int i = 0; i < kQuantBlock; ++i) sum += x[i] * block_q<W>(block, i);
        acc += float(sum) * (block_scale(block) * xd[size_t(t) * nb + b]);
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
  return t;
}

}  // namespace qwen3::ops
