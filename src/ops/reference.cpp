// Scalar float32 kernels: plain loops, never optimized. The oracle every faster kernel is tested
// against, and the fallback on CPUs without AVX2.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "io/quant_blocks.h"
#include "ops/kernels.h"

namespace qwen3::ops {

namespace {

template <DType T>
float weight_at(const void* w, size_t i) {
  return float_at(T, w, i);
}

template <DType T>
void matmul(const float* x, int T_, int K, const void* w, int lead, int n0, int n1, float* y,
            int ldy) {
  for (int t = 0; t < T_; ++t)
    for (int n = n0; n < n1; ++n) {
      float acc = 0;
      for (int k = 0; k < K; ++k)
        acc += x[size_t(t) * K + k] * weight_at<T>(w, size_t(n) * K + (k + K - lead) % K);
      y[size_t(t) * ldy + n] = acc;
    }
}

// The reference kernels read x as it is, and W's rows in order (they take any lead, choose none).
int lead(const void*, int) { return 0; }
void prepare_x(const float* x, int, int K, int t0, int t1, float* out) {
  std::copy(x + size_t(t0) * K, x + size_t(t1) * K, out + size_t(t0) * K);
}
size_t prepared_floats(int T, int K) { return size_t(T) * K; }

// What a product with a cache of type T takes of the other factor: with a bf16 cache, the value
// rounded to bf16, as the AVX512_BF16 dot products take it.
template <DType T>
float factor(float x) {
  return T == DType::bf16 ? bf16_to_f32(f32_to_bf16(x)) : x;
}

// A q8_0 cache's scores: the query quantized as a quantized matmul's activations are, each
// group's int8 products summed exactly, then times the key's and the query's scales (unfused).
void q8_key_scores(const float* q, int ldq, int R, int D, const void* k, int P, float* s,
                   int lds) {
  const auto* bytes = static_cast<const uint8_t*>(k);
  std::vector<int8_t> xq(D);
  std::vector<float> xd(D / kQuantBlock);
  std::vector<int32_t> xsum(D / kQuantBlock);
  for (int r = 0; r < R; ++r) {
    quantize_activations(q + size_t(r) * ldq, D, xq.data(), xd.data(), xsum.data());
    for (int p = 0; p < whole_key_blocks(P); ++p) {
      float acc = 0;
      for (int g = 0; g < D; g += kQuantBlock) {
        int32_t sum = 0;
        for (int d = g; d < g + kQuantBlock; ++d)
          sum += xq[d] * int8_t(bytes[q8_key_at(p, d, D)]);
        const float key_scale = f16_to_f32(half_at(bytes + q8_key_scale_at(p, g, D), 0));
        acc += float(sum) * (key_scale * xd[g / kQuantBlock]);
      }
      s[size_t(r) * lds + p] = acc;
    }
  }
}

template <DType T>
void key_scores(const float* q, int ldq, int R, int D, const void* k, int P, float* s, int lds) {
  const int padded = whole_key_blocks(P);
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < padded; ++p) {
      float acc = 0;
      for (int d = 0; d < D; ++d)
        acc += factor<T>(q[size_t(r) * ldq + d]) * cached_key(T, k, p, d, D);
      s[size_t(r) * lds + p] = acc;
    }
}

template <DType T>
void weighted_sum(const float* a, int lda, int R, int P, const void* v, int D, float* out,
                  int ldo) {
  for (int r = 0; r < R; ++r)
    for (int d = 0; d < D; ++d) {
      float acc = 0;
      for (int p = 0; p < P; ++p)
        acc += factor<T>(a[size_t(r) * lda + p]) * cached_value(T, v, p, d, D);
      out[size_t(r) * ldo + d] = acc;
    }
}

template <DType T>
void append_kv(const float* k, const float* v, int ld, int n, int D, int p0, void* keys,
               void* values) {
  if constexpr (T == DType::q8_0) {
    append_q8(k, v, ld, n, D, p0, keys, values);
  } else {
    using Stored = std::conditional_t<T == DType::f32, float, uint16_t>;
    auto convert = [](float x) -> Stored {
      if constexpr (T == DType::f32) return x;
      else if constexpr (T == DType::f16) return f32_to_f16(x);
      else return f32_to_bf16(x);
    };
    for (int t = 0; t < n; ++t)
      for (int d = 0; d < D; ++d) {
        static_cast<Stored*>(keys)[key_offset(T, p0 + t, d, D)] = convert(k[size_t(t) * ld + d]);
        static_cast<Stored*>(values)[value_offset(T, p0 + t, d, D)] =
            convert(v[size_t(t) * ld + d]);
      }
  }
}

void softmax(float* s, int n, float scale) {
  float max_score = -INFINITY;
  for (int p = 0; p < n; ++p) max_score = std::max(max_score, s[p] *= scale);
  float sum = 0;
  for (int p = 0; p < n; ++p) sum += s[p] = std::exp(s[p] - max_score);
  for (int p = 0; p < n; ++p) s[p] /= sum;
}

void rms_norm(const float* x, const float* w, float eps, int n, float* out) {
  float sum = 0;
  for (int i = 0; i < n; ++i) sum += x[i] * x[i];
  const float scale = 1.0f / std::sqrt(sum / n + eps);
  for (int i = 0; i < n; ++i) out[i] = w[i] * (x[i] * scale);
}

void silu_mul(const float* gate, const float* up, int n, float* out) {
  for (int i = 0; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void delta_rule(float* st, int dk, int dv, const float* q, const float* k, const float* v,
                float decay, float beta, float* out) {
  for (int d = 0; d < dv; ++d) {
    float kv = 0;  // what the decayed state recalls for k
    for (int i = 0; i < dk; ++i) kv += (st[size_t(i) * dv + d] *= decay) * k[i];
    const float delta = (v[d] - kv) * beta;
    float o = 0;
    for (int i = 0; i < dk; ++i) o += (st[size_t(i) * dv + d] += k[i] * delta) * q[i];
    out[d] = o;
  }
}

}  // namespace

const KernelTable& reference_kernels() {
  static const KernelTable table =
      with_reference_quant({"scalar",
                            {matmul<DType::f32>, matmul<DType::f16>, matmul<DType::bf16>},
                            {lead, lead, lead},
                            {prepare_x, prepare_x, prepare_x},
                            prepared_floats,
                            1,
                            {key_scores<DType::f32>, key_scores<DType::f16>,
                             key_scores<DType::bf16>, q8_key_scores},
                            {weighted_sum<DType::f32>, weighted_sum<DType::f16>,
                             weighted_sum<DType::bf16>, weighted_sum<DType::q8_0>},
                            {append_kv<DType::f32>, append_kv<DType::f16>, append_kv<DType::bf16>,
                             append_kv<DType::q8_0>},
                            softmax,
                            rms_norm,
                            silu_mul,
                            delta_rule});
  return table;
}

}  // namespace qwen3::ops
