// AVX-512 instantiation of the SIMD kernels (16 float lanes, 32 registers).
#include <immintrin.h>

#include "cpu/simd_kernels.h"

namespace qwen3::cpu {

namespace {

struct Avx512 {
  using V = __m512;
  static constexpr int lanes = 16, registers = 32, MR = 6, MR_small = 4, weighted_rows = 6;
  // Accumulators (mr x nr), W values (nr) and one x vector within the 32 registers.
  static constexpr int nr(int mr) { return mr <= 2 ? 8 : mr <= 4 ? 6 : mr <= 6 ? 4 : 3; }
  static V zero() { return _mm512_setzero_ps(); }
  static V set1(float a) { return _mm512_set1_ps(a); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  // 2 x lanes bf16 values as 32-bit pairs: the even elements (a shift), then the odd (a mask).
  static V bf16_even(const uint16_t* p) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_loadu_si512(p), 16)); }
  static V bf16_odd(const uint16_t* p) {
    return _mm512_castsi512_ps(_mm512_and_si512(_mm512_loadu_si512(p), _mm512_set1_epi32(int(0xffff0000u))));
  }
  static V load_f16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static V fma(V a, V b, V acc) { return _mm512_fmadd_ps(a, b, acc); }
  static float hsum(V v) { return _mm512_reduce_add_ps(v); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  static V max(V a, V b) { return _mm512_max_ps(a, b); }
  static float hmax(V v) { return _mm512_reduce_max_ps(v); }
  static V min(V a, V b) { return _mm512_min_ps(a, b); }
  static V round(V v) { return _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static V ldexp(V p, V n) { return _mm512_scalef_ps(p, n); }
  static V zero_below(V v, V x, float limit) {
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, set1(limit), _CMP_GE_OQ), v);
  }
};

}  // namespace

}  // namespace qwen3::cpu

namespace qwen3::ops {

const KernelTable& avx512_kernels() {
  static const KernelTable table = with_avx512_quant(cpu::make_table<cpu::Avx512>("avx512"));
  return table;
}

}  // namespace qwen3::ops
