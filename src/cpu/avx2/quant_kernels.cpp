// AVX2 instantiation of the integer kernels: one block per 256-bit vector, maddubs + madd, a 2 x 4 tile.
#include <immintrin.h>

#include "cpu/quant_kernels.h"

namespace qwen3::cpu {

namespace {

struct Avx2Int8 {
  using I = __m256i;
  using V = __m256;
  static constexpr int blocks = 1, MR = 2, NR = 4;
  static constexpr bool vnni = false;
  static I zero_i() { return _mm256_setzero_si256(); }
  static V zero() { return _mm256_setzero_ps(); }
  static I splat8(int8_t v) { return _mm256_set1_epi8(v); }
  static I load_x(const int8_t* p, int) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static I load_q8(const uint8_t* p, int) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2)); }
  static I load_q4(const uint8_t* p, int) {  // the low nibbles, then the high ones
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2));
    const I both = _mm256_inserti128_si256(_mm256_castsi128_si256(a), _mm_srli_epi16(a, 4), 1);
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
  }
  static I udot(I u, I s, I acc) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
  }
  static I abs8(I v) { return _mm256_abs_epi8(v); }
  static I sign8(I x, I w) { return _mm256_sign_epi8(x, w); }
  static I xor80(I v) { return _mm256_xor_si256(v, _mm256_set1_epi8(-128)); }
  static I neg32(I v) { return _mm256_sub_epi32(_mm256_setzero_si256(), v); }
  static V scale_w(const uint8_t* p, int, int) { return _mm256_set1_ps(block_scale(p)); }
  static V scale_x(const float* d, int) { return _mm256_set1_ps(d[0]); }
  static V cvt(I v) { return _mm256_cvtepi32_ps(v); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V fma(V a, V b, V acc) { return _mm256_fmadd_ps(a, b, acc); }
  static float hsum(V v) {  // a fixed tree: (lo + hi) halves, then pairs
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
};

}  // namespace

}  // namespace qwen3::cpu

namespace qwen3::ops {

KernelTable with_avx2_quant(KernelTable t) { return cpu::with_quant<cpu::Avx2Int8>(t); }

}  // namespace qwen3::ops
