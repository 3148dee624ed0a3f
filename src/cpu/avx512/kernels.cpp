// AVX-512 instantiation of the SIMD kernels (16 float lanes, 32 registers).
#include <immintrin.h>

#include "cpu/simd_kernels.h"

namespace qwen3::cpu {

namespace {

struct Avx512 {
  using V = __m512;
  static constexpr int lanes = 16, MR = 6, MR_small = 4, weighted_rows = 6;
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
  // e^x as Cephes' expf: x = n ln2 + r, |r| <= ln2 / 2, e^r by a degree-7 polynomial, times 2^n.
  static V exp(V x) {
    const __mmask16 live = _mm512_cmp_ps_mask(x, set1(-87.33654f), _CMP_GE_OQ);
    x = _mm512_min_ps(x, set1(88.37626f));
    const V n = _mm512_roundscale_ps(mul(x, set1(1.44269504f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    V r = _mm512_fnmadd_ps(n, set1(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, set1(-2.12194440e-4f), r);
    V p = set1(1.9875691500e-4f);
    for (float c : {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f})
      p = fma(p, r, set1(c));
    p = fma(p, mul(r, r), add(r, set1(1.0f)));
    return _mm512_maskz_mov_ps(live, _mm512_scalef_ps(p, n));
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
