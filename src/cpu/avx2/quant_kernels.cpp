// AVX2 instantiation of the integer kernels: half a row group per 256-bit vector, maddubs + madd, 6
// tokens a tile.
#include "cpu/target.h"  // first: see there
QWEN3_TARGET_AVX2

#include "cpu/q8_key_scores.h"

namespace qwen3::cpu {

namespace {

struct Avx2Int8 {
  using I = __m256i;
  using V = __m256;
  static constexpr int lanes = 8, MR = 6;
  static constexpr bool vnni = false;
  static I zero_i() { return _mm256_setzero_si256(); }
  static V zero() { return _mm256_setzero_ps(); }
  static I splat32(int32_t v) { return _mm256_set1_epi32(v); }
  static I load(const uint8_t* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  }
  static I bcast4(const int8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
  }
  static I pairs(I u, I s) { return _mm256_maddubs_epi16(u, s); }
  static I add16(I a, I b) { return _mm256_add_epi16(a, b); }
  static I widen(I p) { return _mm256_madd_epi16(p, _mm256_set1_epi16(1)); }
  static I udot(I u, I s, I acc) { return _mm256_add_epi32(acc, widen(pairs(u, s))); }
  static I abs8(I v) { return _mm256_abs_epi8(v); }
  static I sign8(I x, I w) { return _mm256_sign_epi8(x, w); }
  static I xor80(I v) { return _mm256_xor_si256(v, _mm256_set1_epi8(-128)); }
  static I nib_lo(I v) { return _mm256_and_si256(v, _mm256_set1_epi8(0x0f)); }
  static I nib_hi(I v) { return _mm256_and_si256(_mm256_srli_epi16(v, 4), _mm256_set1_epi8(0x0f)); }
  static I add32(I a, I b) { return _mm256_add_epi32(a, b); }
  static V scales(const uint8_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static V ubytes(const uint8_t* p) {
    return _mm256_cvtepi32_ps(
        _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  static V sbytes(const uint8_t* p) {
    return _mm256_cvtepi32_ps(
        _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  static I shl16(I v, int n) { return _mm256_sll_epi16(v, _mm_cvtsi32_si128(n)); }
  static I shr16(I v, int n) { return _mm256_srl_epi16(v, _mm_cvtsi32_si128(n)); }
  static I and_(I a, I b) { return _mm256_and_si256(a, b); }
  static I or_(I a, I b) { return _mm256_or_si256(a, b); }
  static I sub8(I a, I b) { return _mm256_sub_epi8(a, b); }
  static I splat8(int8_t v) { return _mm256_set1_epi8(v); }
  static I table16(const int8_t* p) {
    return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static I lookup16(I t, I i) { return _mm256_shuffle_epi8(t, i); }
  static V set1(float a) { return _mm256_set1_ps(a); }
  static V cvt(I v) { return _mm256_cvtepi32_ps(v); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V fma(V a, V b, V acc) { return _mm256_fmadd_ps(a, b, acc); }
  static V loadf(const float* p) { return _mm256_loadu_ps(p); }
  static void storef(float* p, V v) { _mm256_storeu_ps(p, v); }
  static void store(float* p, V v, int lo, int hi) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i in = _mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(lo), lane),
                                           _mm256_cmpgt_epi32(_mm256_set1_epi32(hi), lane));
    _mm256_maskstore_ps(p, in, v);
  }
  static void quantize_block(const float* x, int8_t* q, float* d, int32_t* sum) {
    V v[4];
    const V sign = _mm256_set1_ps(-0.0f);
    V m = _mm256_setzero_ps();
    for (int i = 0; i < 4; ++i)
      m = _mm256_max_ps(m, _mm256_andnot_ps(sign, v[i] = _mm256_loadu_ps(x + 8 * i)));
    const __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    const __m128 m2 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    const float amax = _mm_cvtss_f32(_mm_max_ss(m2, _mm_movehdup_ps(m2)));
    *d = amax / 127;
    const V id = _mm256_set1_ps(amax > 0 ? 127 / amax : 0);
    I qi[4];  // cvtps rounds to nearest even, as nearbyint does in the default rounding mode
    for (int i = 0; i < 4; ++i) qi[i] = _mm256_cvtps_epi32(_mm256_mul_ps(v[i], id));
    // packs work within 128-bit lanes: the permute puts the four groups of 8 back in order.
    const I packed =
        _mm256_packs_epi16(_mm256_packs_epi32(qi[0], qi[1]), _mm256_packs_epi32(qi[2], qi[3]));
    _mm256_storeu_si256(
        reinterpret_cast<__m256i*>(q),
        _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
    const I s = _mm256_add_epi32(_mm256_add_epi32(qi[0], qi[1]), _mm256_add_epi32(qi[2], qi[3]));
    const __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    const __m128i s2 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
    *sum = _mm_cvtsi128_si32(_mm_add_epi32(s2, _mm_shuffle_epi32(s2, 0xb1)));
  }
};

}  // namespace

}  // namespace qwen3::cpu

namespace qwen3::ops {

KernelTable with_avx2_quant(KernelTable t) {
  return cpu::with_q8_key_scores<cpu::Avx2Int8>(cpu::with_quant<cpu::Avx2Int8>(t));
}

}  // namespace qwen3::ops
