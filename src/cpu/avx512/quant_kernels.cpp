// AVX-512 instantiations of the integer kernels: a row group (16 outputs) per 512-bit vector, 8
// tokens a tile; VNNI's dpbusd where the CPU has it, AVX512BW's maddubs + madd where it does not.
#include "cpu/target.h"  // first: see there
QWEN3_TARGET_AVX512

#include "cpu/q8_key_scores.h"

namespace qwen3::cpu {

namespace {

template <bool Vnni>
struct Avx512Int8 {
  using I = __m512i;
  using V = __m512;
  static constexpr int lanes = 16, MR = 8;
  static constexpr bool vnni = Vnni;
  static I zero_i() { return _mm512_setzero_si512(); }
  static V zero() { return _mm512_setzero_ps(); }
  static I splat32(int32_t v) { return _mm512_set1_epi32(v); }
  static I load(const uint8_t* p) { return _mm512_loadu_si512(p); }
  static I bcast4(const int8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
  }
  static I pairs(I u, I s) { return _mm512_maddubs_epi16(u, s); }
  static I add16(I a, I b) { return _mm512_add_epi16(a, b); }
  static I widen(I p) { return _mm512_madd_epi16(p, _mm512_set1_epi16(1)); }
  static I udot(I u, I s, I acc) {
    if constexpr (Vnni) return _mm512_dpbusd_epi32(acc, u, s);
    else return _mm512_add_epi32(acc, widen(pairs(u, s)));
  }
  static I abs8(I v) { return _mm512_abs_epi8(v); }
  static I sign8(I x, I w) {
    return _mm512_mask_sub_epi8(x, _mm512_movepi8_mask(w), _mm512_setzero_si512(), x);
  }
  static I xor80(I v) { return _mm512_xor_si512(v, _mm512_set1_epi8(-128)); }
  static I nib_lo(I v) { return _mm512_and_si512(v, _mm512_set1_epi8(0x0f)); }
  static I nib_hi(I v) { return _mm512_and_si512(_mm512_srli_epi16(v, 4), _mm512_set1_epi8(0x0f)); }
  static I add32(I a, I b) { return _mm512_add_epi32(a, b); }
  static V scales(const uint8_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static V ubytes(const uint8_t* p) {
    return _mm512_cvtepi32_ps(
        _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  static V sbytes(const uint8_t* p) {
    return _mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  static I shl16(I v, int n) { return _mm512_sll_epi16(v, _mm_cvtsi32_si128(n)); }
  static I shr16(I v, int n) { return _mm512_srl_epi16(v, _mm_cvtsi32_si128(n)); }
  static I and_(I a, I b) { return _mm512_and_si512(a, b); }
  static I or_(I a, I b) { return _mm512_or_si512(a, b); }
  static I sub8(I a, I b) { return _mm512_sub_epi8(a, b); }
  static I splat8(int8_t v) { return _mm512_set1_epi8(v); }
  static I table16(const int8_t* p) {
    return _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static I lookup16(I t, I i) { return _mm512_shuffle_epi8(t, i); }
  static V set1(float a) { return _mm512_set1_ps(a); }
  static V cvt(I v) { return _mm512_cvtepi32_ps(v); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V fma(V a, V b, V acc) { return _mm512_fmadd_ps(a, b, acc); }
  static V loadf(const float* p) { return _mm512_loadu_ps(p); }
  static void storef(float* p, V v) { _mm512_storeu_ps(p, v); }
  static void store(float* p, V v, int lo, int hi) {
    if (lo < hi) _mm512_mask_storeu_ps(p, __mmask16(((1u << hi) - 1) & ~((1u << lo) - 1)), v);
  }
  static void quantize_block(const float* x, int8_t* q, float* d, int32_t* sum) {
    const V a = _mm512_loadu_ps(x), b = _mm512_loadu_ps(x + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(a), _mm512_abs_ps(b)));
    *d = amax / 127;
    const V id = _mm512_set1_ps(amax > 0 ? 127 / amax : 0);
    // cvtps rounds to nearest even, as nearbyint does in the default rounding mode.
    const I qa = _mm512_cvtps_epi32(_mm512_mul_ps(a, id)),
            qb = _mm512_cvtps_epi32(_mm512_mul_ps(b, id));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q), _mm512_cvtepi32_epi8(qa));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 16), _mm512_cvtepi32_epi8(qb));
    *sum = _mm512_reduce_add_epi32(_mm512_add_epi32(qa, qb));
  }
};

}  // namespace

}  // namespace qwen3::cpu

namespace qwen3::ops {

KernelTable with_avx512_quant(KernelTable t, bool vnni) {
  using cpu::Avx512Int8, cpu::with_q8_key_scores, cpu::with_quant;
  return vnni ? with_q8_key_scores<Avx512Int8<true>>(with_quant<Avx512Int8<true>>(t))
              : with_q8_key_scores<Avx512Int8<false>>(with_quant<Avx512Int8<false>>(t));
}

}  // namespace qwen3::ops
