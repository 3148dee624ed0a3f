// The AVX-512 vector type S of simd_kernels.h (16 float lanes, 32 registers), shared by the
// instruction set's kernel files.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

namespace qwen3::cpu {

struct Avx512 {
  using V = __m512;
  static constexpr int lanes = 16, registers = 32, MR = 6, MR_batch = 8, weighted_rows = 6;
  // Accumulators (mr x nr), W values (nr) and one x vector within the 32 registers.
  // One row of x (decode) takes one W row at a time, read straight through: a single stream per
  // core keeps the memory busier than 8 rows side by side (decode 1.10x faster at 1 and 2 threads;
  // 2 rows per tile 0.87x). bf16_dot_kernels.cpp keeps 8. Two or three rows of x (2-3 sequences
  // decoding together) take 2 W rows, fewer streams for as little arithmetic: their products 1.13x
  // and 1.08x faster than with 8 and 6 rows, batched decode of 2 and 3 sequences ~7% faster; from
  // 4 rows of x on, fewer W rows gain nothing.
  static constexpr int nr(int mr) {
    return mr == 1 ? 1 : mr <= 3 ? 2 : mr <= 4 ? 6 : mr <= 6 ? 4 : 3;
  }
  // Packed panels: MR x NR accumulators, NR W vectors and a broadcast within the registers.
  static constexpr int packed_mr = 12, packed_nr = 2, packed_min_tokens = 96;
  static V zero() { return _mm512_setzero_ps(); }
  static V set1(float a) { return _mm512_set1_ps(a); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  // v with lanes [lo, hi) loaded from p; memory outside those lanes is not touched.
  static V load_part(V v, const float* p, int lo, int hi) {
    return _mm512_mask_loadu_ps(v, _cvtu32_mask16(((1u << hi) - 1) & ~((1u << lo) - 1)), p);
  }
  // 2 x lanes bf16 values as 32-bit pairs; of those, the even elements (a shift), the odd (a mask).
  static V load_pairs(const uint16_t* p) { return _mm512_castsi512_ps(_mm512_loadu_si512(p)); }
  static V bf16_even(V pairs) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_castps_si512(pairs), 16));
  }
  static V bf16_odd(V pairs) {  // a masked move, not an AND: no register held for the mask
    return _mm512_castsi512_ps(_mm512_maskz_mov_epi16(0xaaaaaaaau, _mm512_castps_si512(pairs)));
  }
  static V load_f16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static V load_i8(const int8_t* p) {
    return _mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  // v[i] = lane i of v[0 .. 15]: in-lane pairs, then pairs of pairs, then 128-bit blocks twice.
  static void transpose(V v[16]) {
    V a[16], b[16];
    for (int k = 0; k < 16; k += 2) {
      a[k] = _mm512_unpacklo_ps(v[k], v[k + 1]);
      a[k + 1] = _mm512_unpackhi_ps(v[k], v[k + 1]);
    }
    auto pd = [](V x) { return _mm512_castps_pd(x); };
    for (int k = 0; k < 16; k += 4)
      for (int m = 0; m < 2; ++m) {  // b[k + m']: lane 4L + m' of rows k .. k+3, in block L
        b[k + 2 * m] = _mm512_castpd_ps(_mm512_unpacklo_pd(pd(a[k + m]), pd(a[k + m + 2])));
        b[k + 2 * m + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(pd(a[k + m]), pd(a[k + m + 2])));
      }
    for (int m = 0; m < 4; ++m) {
      const V d = _mm512_shuffle_f32x4(b[m], b[4 + m], 0x88),
              e = _mm512_shuffle_f32x4(b[m], b[4 + m], 0xdd);
      const V f = _mm512_shuffle_f32x4(b[8 + m], b[12 + m], 0x88),
              g = _mm512_shuffle_f32x4(b[8 + m], b[12 + m], 0xdd);
      v[m] = _mm512_shuffle_f32x4(d, f, 0x88);
      v[4 + m] = _mm512_shuffle_f32x4(e, g, 0x88);
      v[8 + m] = _mm512_shuffle_f32x4(d, f, 0xdd);
      v[12 + m] = _mm512_shuffle_f32x4(e, g, 0xdd);
    }
  }
  // The even- and the odd-indexed elements of the 2 x lanes floats a, b.
  static void deinterleave(V a, V b, V& even, V& odd) {
    const __m512i i = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    even = _mm512_permutex2var_ps(a, i, b);
    odd = _mm512_permutex2var_ps(a, _mm512_add_epi32(i, _mm512_set1_epi32(1)), b);
  }
  static V fma(V a, V b, V acc) { return _mm512_fmadd_ps(a, b, acc); }
  static float hsum(V v) { return _mm512_reduce_add_ps(v); }
  // Lane j: hsum(v[j]) with hsum's very additions, four levels at once for all 16 (45 instructions,
  // not 16 x 8).
  [[gnu::always_inline]] static V hsum_lanes(const V v[16]) {
    // The fold leaves hsum(u[m]) in lane 4 (m % 4) + m / 4; taking u[m] = v[4 (m % 4) + m / 4]
    // puts hsum(v[j]) in lane j.
    auto u = [&](int m) { return v[m % 4 * 4 + m / 4]; };
    V s1[8], s2[4], s3[2];
    for (int k = 0; k < 8; ++k) {
      const V a = u(2 * k), b = u(2 * k + 1);
      s1[k] = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44),
                            _mm512_shuffle_f32x4(a, b, 0xee));  // (i, i + 8)
    }
    for (int k = 0; k < 4; ++k)  // (i, i + 4)
      s2[k] = _mm512_add_ps(_mm512_shuffle_f32x4(s1[2 * k], s1[2 * k + 1], 0x88),
                            _mm512_shuffle_f32x4(s1[2 * k], s1[2 * k + 1], 0xdd));
    for (int k = 0; k < 2; ++k)  // (i, i + 2)
      s3[k] = _mm512_add_ps(_mm512_shuffle_ps(s2[2 * k], s2[2 * k + 1], 0x44),
                            _mm512_shuffle_ps(s2[2 * k], s2[2 * k + 1], 0xee));
    return _mm512_add_ps(_mm512_shuffle_ps(s3[0], s3[1], 0x88),
                         _mm512_shuffle_ps(s3[0], s3[1], 0xdd));  // (i, i + 1)
  }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  static V max(V a, V b) { return _mm512_max_ps(a, b); }
  static float hmax(V v) { return _mm512_reduce_max_ps(v); }
  static V min(V a, V b) { return _mm512_min_ps(a, b); }
  static V round(V v) {
    return _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  static V ldexp(V p, V n) { return _mm512_scalef_ps(p, n); }
  static V zero_below(V v, V x, float limit) {
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, set1(limit), _CMP_GE_OQ), v);
  }
};

// n <= 32 floats from x as two vectors, lanes past n zero (their memory is not touched).
inline void load_up_to_32(const float* x, int n, __m512& lo, __m512& hi) {
  lo = _mm512_maskz_loadu_ps(_cvtu32_mask16((1u << std::min(n, 16)) - 1), x);
  hi = _mm512_maskz_loadu_ps(_cvtu32_mask16(n > 16 ? (1u << (n - 16)) - 1 : 0), x + 16);
}

// The same rounded to 32 bf16 values (to nearest even), in order (AVX512_BF16).
inline __m512i bf16_of_up_to_32(const float* x, int n) {
  __m512 lo, hi;
  load_up_to_32(x, n, lo, hi);
  return (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
}

}  // namespace qwen3::cpu
