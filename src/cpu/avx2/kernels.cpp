// AVX2 + FMA instantiation of the SIMD kernels (8 float lanes, 16 registers).
#include "cpu/target.h"  // first: see there
QWEN3_TARGET_AVX2

#include "cpu/make_table.h"

namespace qwen3::cpu {

namespace {

struct Avx2 {
  using V = __m256;
  static constexpr int lanes = 8, registers = 16, MR = 6, MR_batch = 6, weighted_rows = 2;
  // Accumulators (mr x nr), W values (nr) and one x vector within the 16 registers. One row of x
  // (decode) takes 3 W rows: on Zen 3 the products of a decode step ran at 92-95% of a plain read
  // against 88-92% with 6 (1 and 2 rows: 75-86%, too few multiply-add chains in flight).
  static constexpr int nr(int mr) { return mr == 1 ? 3 : mr == 2 ? 4 : mr == 3 ? 3 : 2; }
  // Packed panels: MR x NR accumulators, NR W vectors and a broadcast within the registers.
  static constexpr int packed_mr = 6, packed_nr = 2, packed_min_tokens = 32;
  static V zero() { return _mm256_setzero_ps(); }
  static V set1(float a) { return _mm256_set1_ps(a); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  // v with lanes [lo, hi) loaded from p; memory outside those lanes is not touched.
  static V load_part(V v, const float* p, int lo, int hi) {
    const __m256i i = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i in = _mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(lo), i),  // i >= lo
                                           _mm256_cmpgt_epi32(_mm256_set1_epi32(hi), i));  // i < hi
    return _mm256_blendv_ps(v, _mm256_maskload_ps(p, in), _mm256_castsi256_ps(in));
  }
  // 2 x lanes bf16 values as 32-bit pairs; of those, the even elements (a shift), the odd (a mask).
  static V load_pairs(const uint16_t* p) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
  }
  static V bf16_even(V pairs) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_castps_si256(pairs), 16));
  }
  static V bf16_odd(V pairs) {
    return _mm256_castsi256_ps(
        _mm256_and_si256(_mm256_castps_si256(pairs), _mm256_set1_epi32(int(0xffff0000u))));
  }
  static V load_f16(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static V load_i8(const int8_t* p) {
    return _mm256_cvtepi32_ps(
        _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  // v[i] = lane i of v[0 .. 7]: in-lane pairs, then pairs of pairs, then the 128-bit halves.
  static void transpose(V v[8]) {
    V a[8], b[8];
    for (int k = 0; k < 8; k += 2) {
      a[k] = _mm256_unpacklo_ps(v[k], v[k + 1]);
      a[k + 1] = _mm256_unpackhi_ps(v[k], v[k + 1]);
    }
    auto pd = [](V x) { return _mm256_castps_pd(x); };
    for (int k = 0; k < 8; k += 4)
      for (int m = 0; m < 2; ++m) {  // b[k + m']: lane 4L + m' of rows k .. k+3, in half L
        b[k + 2 * m] = _mm256_castpd_ps(_mm256_unpacklo_pd(pd(a[k + m]), pd(a[k + m + 2])));
        b[k + 2 * m + 1] = _mm256_castpd_ps(_mm256_unpackhi_pd(pd(a[k + m]), pd(a[k + m + 2])));
      }
    for (int m = 0; m < 4; ++m) {
      v[m] = _mm256_permute2f128_ps(b[m], b[4 + m], 0x20);
      v[4 + m] = _mm256_permute2f128_ps(b[m], b[4 + m], 0x31);
    }
  }
  // The even- and the odd-indexed elements of the 2 x lanes floats a, b.
  static void deinterleave(V a, V b, V& even, V& odd) {
    auto in_order = [](V v) {
      return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(v), 0xd8));
    };
    even = in_order(_mm256_shuffle_ps(
        a, b, 0x88));  // a0 a2 b0 b2 | a4 a6 b4 b6, then the middle halves swapped
    odd = in_order(_mm256_shuffle_ps(a, b, 0xdd));
  }
  static V fma(V a, V b, V acc) { return _mm256_fmadd_ps(a, b, acc); }
  static float hsum(V v) {  // a fixed tree: (lo + hi) halves, then pairs
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  // Lane j: hsum(v[j]) with hsum's very additions, three levels at once for all 8.
  [[gnu::always_inline]] static V hsum_lanes(const V v[8]) {
    // The fold leaves hsum(u[m]) in lane 4 (m % 2) + m / 2; taking u[m] = v[4 (m % 2) + m / 2]
    // puts hsum(v[j]) in lane j.
    auto u = [&](int m) { return v[m % 2 * 4 + m / 2]; };
    V s1[4], s2[2];
    for (int k = 0; k < 4; ++k) {
      const V a = u(2 * k), b = u(2 * k + 1);
      s1[k] = _mm256_add_ps(_mm256_permute2f128_ps(a, b, 0x20),
                            _mm256_permute2f128_ps(a, b, 0x31));  // (i, i + 4)
    }
    for (int k = 0; k < 2; ++k)  // (i, i + 2)
      s2[k] = _mm256_add_ps(_mm256_shuffle_ps(s1[2 * k], s1[2 * k + 1], 0x44),
                            _mm256_shuffle_ps(s1[2 * k], s1[2 * k + 1], 0xee));
    return _mm256_add_ps(_mm256_shuffle_ps(s2[0], s2[1], 0x88),
                         _mm256_shuffle_ps(s2[0], s2[1], 0xdd));  // (i, i + 1)
  }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V div(V a, V b) { return _mm256_div_ps(a, b); }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }
  static float hmax(V v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
  }
  static V min(V a, V b) { return _mm256_min_ps(a, b); }
  static V round(V v) { return _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static V ldexp(V p, V n) {  // n added to the exponent bits
    return mul(p, _mm256_castsi256_ps(_mm256_slli_epi32(
                      _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23)));
  }
  static V zero_below(V v, V x, float limit) {
    return _mm256_and_ps(_mm256_cmp_ps(x, set1(limit), _CMP_GE_OQ), v);
  }
};

}  // namespace

}  // namespace qwen3::cpu

namespace qwen3::ops {

const KernelTable& avx2_kernels() {
  static const KernelTable table = with_avx2_quant(cpu::make_table<cpu::Avx2>("avx2"));
  return table;
}

}  // namespace qwen3::ops
