// Attention over a bf16 KV cache as AVX512_BF16 dot products: the query (or a row of attention
// weights) is rounded to bf16 and taken as 32-bit pairs, each vdpbf16ps then multiplying 16 keys'
// (or 16 dimensions') pairs by one broadcast pair: twice the multiply-adds per instruction of the
// float kernels, and half the cache to read. The cache pairs neighbours as ops/key_layout.h says.
// Every output takes the same steps whatever the tile (its pairs in order), so a query's results
// do not depend on the rows it comes with.
#include "cpu/target.h"  // first: see there
QWEN3_TARGET_AVX512

#include "cpu/avx512/avx512.h"
#include "cpu/simd_kernels.h"

namespace qwen3::cpu {

namespace {

constexpr int kLanes = 16;

// n floats rounded to bf16 (to nearest even) as (n + 1) / 2 pairs, element 2i in the low half;
// with n odd the last pair's high half is zero.
void to_pairs(const float* x, int n, uint32_t* out) {
  for (int i = 0; i < n; i += 2 * kLanes) {
    const int m = std::min(2 * kLanes, n - i);
    _mm512_mask_storeu_epi32(out + i / 2, _cvtu32_mask16((1u << ((m + 1) / 2)) - 1),
                             bf16_of_up_to_32(x + i, m));
  }
}

// R rows of n floats, ldx apart, as pairs, (n + 1) / 2 a row, in a buffer of the thread.
const uint32_t* rows_as_pairs(const float* x, int ldx, int R, int n) {
  const size_t pairs = (n + 1) / 2;
  thread_local io::Buffer<uint32_t> out;
  if (out.size() < R * pairs) out.resize(R * pairs);
  for (int r = 0; r < R; ++r)
    to_pairs(x + size_t(r) * ldx, n, out.data() + r * pairs);  // pairs may be 0
  return out.data();
}

// acc[r][c] += vec[c] x pair j of row r (rows `stride` pairs apart) broadcast: the pairs of 16
// keys or 16 dimensions against a query's or a weight row's pair. Inlined, unrolled: acc stays in
// registers (rolled, GCC keeps it in memory).
template <int RB, int N>
[[gnu::always_inline]] inline void pair_products(const __m512i (&vec)[N], const uint32_t* rows,
                                                 int stride, int j, __m512 (&acc)[RB][N]) {
#pragma GCC unroll 8
  for (int r = 0; r < RB; ++r) {
    __m512i pair = _mm512_set1_epi32(int(rows[size_t(r) * stride + j]));
    in_register(pair);  // one broadcast serves N products
#pragma GCC unroll 8
    for (int c = 0; c < N; ++c)
      acc[r][c] = _mm512_dpbf16_ps(acc[r][c], (__m512bh)vec[c], (__m512bh)pair);
  }
}

template <int RB, int N>
[[gnu::always_inline]] inline void zero(__m512 (&acc)[RB][N]) {
#pragma GCC unroll 8
  for (int r = 0; r < RB; ++r)
#pragma GCC unroll 8
    for (int c = 0; c < N; ++c) acc[r][c] = _mm512_setzero_ps();
}

// RB queries (as pairs, `pairs` a row) against NV blocks of keys from key p0.
template <int RB, int NV>
inline void key_tile(const uint32_t* q, int pairs, const uint16_t* k, int p0, float* s, int lds) {
  __m512 acc[RB][NV];
  zero(acc);
  const uint16_t* block = k + size_t(p0) * pairs * 2;  // p0's block: pairs x 16 keys x 2
  for (int i = 0; i < pairs; ++i) {
    __m512i kv[NV];
#pragma GCC unroll 8
    for (int c = 0; c < NV; ++c)
      kv[c] = _mm512_loadu_si512(block + (size_t(c) * pairs + i) * 2 * kLanes);
    pair_products(kv, q, pairs, i, acc);
  }
#pragma GCC unroll 8
  for (int r = 0; r < RB; ++r)
#pragma GCC unroll 8
    for (int c = 0; c < NV; ++c) _mm512_storeu_ps(s + size_t(r) * lds + p0 + c * kLanes, acc[r][c]);
}

template <int RB, int NV>
inline void key_tile_of(int rows, int nv, const uint32_t* q, int pairs, const uint16_t* k, int p0,
                        float* s, int lds) {
  if constexpr (RB > 0 && NV > 0) {
    if (rows < RB) return key_tile_of<RB - 1, NV>(rows, nv, q, pairs, k, p0, s, lds);
    if (nv < NV) return key_tile_of<RB, NV - 1>(rows, nv, q, pairs, k, p0, s, lds);
    key_tile<RB, NV>(q, pairs, k, p0, s, lds);
  }
}

template <int RB, int NV>
void key_scores_in_tiles(const uint32_t* q, int R, int pairs, const uint16_t* k, int P, float* s,
                         int lds) {
  const int blocks = ops::whole_key_blocks(P) / kLanes;
  for (int c = 0; c < blocks; c += NV)
    for (int r = 0; r < R; r += RB)
      key_tile_of<RB, NV>(std::min(RB, R - r), std::min(NV, blocks - c), q + size_t(r) * pairs,
                          pairs, k, c * kLanes, s + size_t(r) * lds, lds);
}

void paired_key_scores(const float* q, int ldq, int R, int D, const void* k, int P, float* s,
                       int lds) {
  const int pairs = D / 2;
  const uint32_t* qp = rows_as_pairs(q, ldq, R, D);
  const auto* keys = static_cast<const uint16_t*>(k);
  // As the float kernels: decode's few queries (a group's heads) take wider tiles.
  if (R <= 2) return key_scores_in_tiles<2, 8>(qp, R, pairs, keys, P, s, lds);
  key_scores_in_tiles<6, 4>(qp, R, pairs, keys, P, s, lds);
}

// RB rows of out, dimensions [d, d + CH * 16) (with Tail, one vector of the last D % 16): each
// pair of positions j takes one broadcast pair of weights per row. With P odd the last pair's
// second position is read as zero, weight (to_pairs) and value (whatever the cache holds there).
template <int RB, int CH, bool Tail>
inline void weighted_block(const uint32_t* a, int pairs, int P, const uint16_t* v, int D, int d,
                           float* out, int ldo) {
  __m512 acc[RB][CH];
  zero(acc);
  const __mmask32 dims =
      Tail ? _cvtu32_mask32((1u << (2 * (D % kLanes))) - 1) : _cvtu32_mask32(~0u);
  const __mmask32 last = P % 2 ? _kand_mask32(dims, _cvtu32_mask32(0x55555555u)) : dims;
  for (int j = 0; j < pairs; ++j) {
    const __mmask32 mask = j + 1 < pairs ? dims : last;
    __m512i vv[CH];
#pragma GCC unroll 8
    for (int c = 0; c < CH; ++c)
      vv[c] = _mm512_maskz_loadu_epi16(mask, v + (size_t(j) * D + d + c * kLanes) * 2);
    pair_products(vv, a, pairs, j, acc);
  }
  const __mmask16 stored =
      Tail ? _cvtu32_mask16((1u << (D % kLanes)) - 1) : _cvtu32_mask16(0xffffu);
#pragma GCC unroll 8
  for (int r = 0; r < RB; ++r)
#pragma GCC unroll 8
    for (int c = 0; c < CH; ++c)
      _mm512_mask_storeu_ps(out + size_t(r) * ldo + d + c * kLanes, stored, acc[r][c]);
}

// RB rows of out, all D dimensions: 8 vectors at a time (a pair of 128-wide value rows, read
// contiguously: decode's one or two rows) where RB x 8 accumulators, the 8 values and the pair
// fit the 32 registers; else 4.
template <int RB>
inline void weighted_rows(const uint32_t* a, int pairs, int P, const uint16_t* v, int D, float* out,
                          int ldo) {
  constexpr int CH = RB * 8 + 8 + 1 <= 32 ? 8 : 4;
  int d = 0;
  for (; d + CH * kLanes <= D; d += CH * kLanes)
    weighted_block<RB, CH, false>(a, pairs, P, v, D, d, out, ldo);
  for (; d + kLanes <= D; d += kLanes) weighted_block<RB, 1, false>(a, pairs, P, v, D, d, out, ldo);
  if (d < D) weighted_block<RB, 1, true>(a, pairs, P, v, D, d, out, ldo);
}

template <int RB>
inline void weighted_rows_of(int rows, const uint32_t* a, int pairs, int P, const uint16_t* v,
                             int D, float* out, int ldo) {
  if constexpr (RB > 0) {
    if (rows == RB) return weighted_rows<RB>(a, pairs, P, v, D, out, ldo);
    weighted_rows_of<RB - 1>(rows, a, pairs, P, v, D, out, ldo);
  }
}

void paired_weighted_sum(const float* a, int lda, int R, int P, const void* v, int D, float* out,
                         int ldo) {
  constexpr int RB = 6;
  const int pairs = (P + 1) / 2;
  const uint32_t* ap = rows_as_pairs(a, lda, R, P);
  const auto* values = static_cast<const uint16_t*>(v);
  int r = 0;
  for (; r + RB <= R; r += RB)
    weighted_rows<RB>(ap + size_t(r) * pairs, pairs, P, values, D, out + size_t(r) * ldo, ldo);
  if (r < R)
    weighted_rows_of<RB - 1>(R - r, ap + size_t(r) * pairs, pairs, P, values, D,
                             out + size_t(r) * ldo, ldo);
}

// The 16-bit lanes of n 32-bit lanes (n <= 16).
__mmask32 halves_of(int n) { return _cvtu32_mask32(n == kLanes ? ~0u : (1u << (2 * n)) - 1); }

// A head's new keys and values into its bf16 cache, rounded as to_pairs rounds: a key as pairs,
// each stored into its block (a pair's 16 keys side by side); a value 32 dimensions at a time,
// widened to 32-bit lanes and stored into the low or the high halves of its position pair
// (masked: the pair's other position stays as it is).
void paired_append(const float* k, const float* v, int ld, int n, int D, int p0, void* keys,
                   void* values) {
  const int pairs = D / 2;  // D is even (ops/key_layout.h)
  const uint32_t* key_pairs = rows_as_pairs(k, ld, n, D);
  for (int t = 0; t < n; ++t) {
    const int p = p0 + t;
    auto* key = static_cast<uint32_t*>(keys) + size_t(p / kLanes) * pairs * kLanes + p % kLanes;
    for (int i = 0; i < pairs; ++i)
      std::memcpy(key + size_t(i) * kLanes, &key_pairs[size_t(t) * pairs + i], sizeof(uint32_t));
    auto* value = static_cast<uint16_t*>(values) + size_t(p / 2) * D * 2;
    const float* row = v + size_t(t) * ld;
    const __mmask32 position = _cvtu32_mask32(p % 2 ? 0xaaaaaaaau : 0x55555555u);
    for (int d = 0; d < D; d += 2 * kLanes) {
      const int m = std::min(2 * kLanes, D - d), m0 = std::min(m, kLanes);
      const __m512i b = bf16_of_up_to_32(row + d, m);
      const __m512i both[2] = {_mm512_cvtepu16_epi32(_mm512_castsi512_si256(b)),
                               _mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(b, 1))};
      for (int h = 0; h < 2 && h * kLanes < m; ++h) {
        const __m512i lanes = p % 2 ? _mm512_slli_epi32(both[h], 16) : both[h];
        _mm512_mask_storeu_epi16(value + size_t(d + h * kLanes) * 2,
                                 _kand_mask32(position, halves_of(h ? m - m0 : m0)), lanes);
      }
    }
  }
}

}  // namespace

}  // namespace qwen3::cpu

namespace qwen3::ops {

KernelTable with_avx512_bf16_attention(KernelTable t) {
  t.key_scores[int(DType::bf16)] = cpu::paired_key_scores;
  t.weighted_sum[int(DType::bf16)] = cpu::paired_weighted_sum;
  t.append_kv[int(DType::bf16)] = cpu::paired_append;
  return t;
}

}  // namespace qwen3::ops
