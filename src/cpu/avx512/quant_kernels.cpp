// AVX-512 instantiations of the integer kernels: two blocks per 512-bit vector, a 4 x 4 tile;
// VNNI's dpbusd where the CPU has it, AVX512BW's maddubs + madd where it does not.
#include <immintrin.h>

#include "cpu/quant_kernels.h"

namespace qwen3::cpu {

namespace {

template <bool Vnni>
struct Avx512Int8 {
  using I = __m512i;
  using V = __m512;
  static constexpr int blocks = 2, MR = 4, NR = 4;
  static constexpr bool vnni = Vnni;
  static I zero_i() { return _mm512_setzero_si512(); }
  static V zero() { return _mm512_setzero_ps(); }
  static I splat8(int8_t v) { return _mm512_set1_epi8(v); }
  static I load_x(const int8_t* p, int nblk) {
    const I lo = _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return nblk == 2 ? _mm512_loadu_si512(p) : lo;
  }
  static I load_q8(const uint8_t* p, int nblk) {
    const I lo = _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2)));
    if (nblk == 1) return lo;
    return _mm512_inserti64x4(lo, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + kQ8Bytes + 2)), 1);
  }
  // 128-bit lanes: block 0's low nibbles, its high nibbles, then block 1's.
  static I load_q4(const uint8_t* p, int nblk) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2));
    const __m128i b = nblk == 2 ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + kQ4Bytes + 2)) : _mm_setzero_si128();
    const __m256i ab = _mm256_inserti128_si256(_mm256_castsi128_si256(a), b, 1);
    const I both = _mm512_inserti64x4(_mm512_castsi256_si512(ab), _mm256_srli_epi16(ab, 4), 1);  // a b a>>4 b>>4
    return _mm512_and_si512(_mm512_shuffle_i64x2(both, both, _MM_SHUFFLE(3, 1, 2, 0)), _mm512_set1_epi8(0x0f));
  }
  static I udot(I u, I s, I acc) {
    if constexpr (Vnni) return _mm512_dpbusd_epi32(acc, u, s);
    else return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), _mm512_set1_epi16(1)));
  }
  static I abs8(I v) { return _mm512_abs_epi8(v); }
  static I sign8(I x, I w) { return _mm512_mask_sub_epi8(x, _mm512_movepi8_mask(w), _mm512_setzero_si512(), x); }
  static I xor80(I v) { return _mm512_xor_si512(v, _mm512_set1_epi8(-128)); }
  static I neg32(I v) { return _mm512_sub_epi32(_mm512_setzero_si512(), v); }
  static V halves(float lo, float hi) { return _mm512_insertf32x8(_mm512_set1_ps(lo), _mm256_set1_ps(hi), 1); }
  static V scale_w(const uint8_t* p, int stride, int nblk) {
    return halves(block_scale(p), nblk == 2 ? block_scale(p + stride) : 0.0f);
  }
  static V scale_x(const float* d, int nblk) { return halves(d[0], nblk == 2 ? d[1] : 0.0f); }
  static V cvt(I v) { return _mm512_cvtepi32_ps(v); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V fma(V a, V b, V acc) { return _mm512_fmadd_ps(a, b, acc); }
  static float hsum(V v) { return _mm512_reduce_add_ps(v); }
};

}  // namespace

}  // namespace qwen3::cpu

namespace qwen3::ops {

KernelTable with_avx512_quant(KernelTable t) {
  if (__builtin_cpu_supports("avx512vnni")) return cpu::with_quant<cpu::Avx512Int8<true>>(t);
  return cpu::with_quant<cpu::Avx512Int8<false>>(t);
}

}  // namespace qwen3::ops
