// Scalar float32 kernels: plain loops, never optimized. The oracle every faster kernel is tested
// against, and the fallback on CPUs without AVX2.
#include <cstdint>

#include "ops/kernels.h"

namespace qwen3::ops {

namespace {

template <DType T>
float weight_at(const void* w, size_t i) {
  if constexpr (T == DType::f32) return static_cast<const float*>(w)[i];
  if constexpr (T == DType::bf16) return bf16_to_f32(static_cast<const uint16_t*>(w)[i]);
  return f16_to_f32(static_cast<const uint16_t*>(w)[i]);
}

template <DType T>
void matmul(const float* x, int T_, int K, const void* w, int n0, int n1, float* y, int ldy) {
  for (int t = 0; t < T_; ++t)
    for (int n = n0; n < n1; ++n) {
      float acc = 0;
      for (int k = 0; k < K; ++k) acc += x[size_t(t) * K + k] * weight_at<T>(w, size_t(n) * K + k);
      y[size_t(t) * ldy + n] = acc;
    }
}

float dot(const float* a, const float* b, int n) {
  float acc = 0;
  for (int i = 0; i < n; ++i) acc += a[i] * b[i];
  return acc;
}

void axpy(float a, const float* x, float* y, int n) {
  for (int i = 0; i < n; ++i) y[i] += a * x[i];
}

}  // namespace

const KernelTable& reference_kernels() {
  static const KernelTable table =
      with_reference_quant({"scalar", {matmul<DType::f32>, matmul<DType::f16>, matmul<DType::bf16>}, dot, axpy});
  return table;
}

}  // namespace qwen3::ops
