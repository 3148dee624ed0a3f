// Attention scores over a q8_0 KV cache in int8, over the integer kernels' vector type S
// (quant_kernels.h): the queries quantized as a quantized matmul's activations are, each group of
// 32 dimensions an exact int32 sum of byte products with the keys (key_layout.h keeps 4
// dimensions of a key in each 32-bit lane), then times the key's and the query's scales into the
// score, group by group, as the reference adds them. Half of an f16 cache's bytes, and a quarter
// of its multiply instructions.
#pragma once

#include <cstdint>
#include <vector>

#include "cpu/quant_kernels.h"
#include "ops/key_layout.h"

namespace qwen3::cpu {

// RB quantized queries (xq, rows D apart; their blocks' scales xd and sums xsum) against NV
// vectors of keys from key p0, into s.
template <class S, int RB, int NV>
inline void q8_key_tile(const int8_t* xq, const float* xd, const int32_t* xsum, int D,
                        const uint8_t* k, int p0, float* s, int lds) {
  using F = SignedWeights<S>;
  using I = typename S::I;
  using V = typename S::V;
  const int nb = D / kQuantBlock;
  for (int b = 0; b < nb; ++b) {
    I isum[RB][NV];
    for (int r = 0; r < RB; ++r)
      for (int c = 0; c < NV; ++c)
        isum[r][c] = F::corr ? S::splat32(F::corr * xsum[r * nb + b]) : S::zero_i();
    for (int step = 0; step < F::steps; ++step) {
      const int d = b * kQuantBlock + step * kQuantChunk;
      typename F::Wp key[NV];
      for (int c = 0; c < NV; ++c) {
        const uint8_t* at = k + ops::q8_key_at(p0 + c * S::lanes, d, D);
        // The keys are one sequential stream: 8 KiB of it in flight into L2, once a cache line.
        if (c % (64 / (kQuantChunk * S::lanes)) == 0)
          _mm_prefetch(reinterpret_cast<const char*>(at) + 16 * kPrefetchBytes, _MM_HINT_T1);
        key[c] = F::operands(S::load(at));
      }
      for (int r = 0; r < RB; ++r) {
        const I x = S::bcast4(xq + size_t(r) * D + d);
        for (int c = 0; c < NV; ++c)
          isum[r][c] = S::udot(key[c].u, F::signed_x(key[c], x), isum[r][c]);
      }
    }
    // The scores build up in s, a group at a time, which leaves the registers to the sums.
    for (int c = 0; c < NV; ++c) {
      const V key_scale =
          S::scales(k + ops::q8_key_scale_at(p0 + c * S::lanes, b * kQuantBlock, D));
      for (int r = 0; r < RB; ++r) {
        float* out = s + size_t(r) * lds + p0 + c * S::lanes;
        const V sum = S::cvt(isum[r][c]), scale = S::mul(key_scale, S::set1(xd[r * nb + b]));
        S::storef(out, b ? S::fma(sum, scale, S::loadf(out)) : S::mul(sum, scale));
      }
    }
  }
}

template <class S>
void q8_key_scores(const float* q, int ldq, int R, int D, const void* k, int P, float* s,
                   int lds) {
  const int nb = D / kQuantBlock;
  std::vector<int8_t> xq(size_t(R) * D);
  std::vector<float> xd(size_t(R) * nb);
  std::vector<int32_t> xsum(size_t(R) * nb);
  for (int r = 0; r < R; ++r)
    quantize_x<S>(q + size_t(r) * ldq, D, xq.data() + size_t(r) * D, xd.data() + size_t(r) * nb,
                  xsum.data() + size_t(r) * nb);
  // The registers hold RB x NV sums, NV keys' two operands and a broadcast: 4 x 2 of AVX2's 16,
  // 8 x 2 of AVX-512's 32.
  constexpr int RB = S::lanes == 8 ? 4 : 8, NV = 2;
  for_key_tiles<S::lanes, RB, NV>(R, P, [&]<int rb, int nv>(int r, int p0) {
    q8_key_tile<S, rb, nv>(xq.data() + size_t(r) * D, xd.data() + size_t(r) * nb,
                           xsum.data() + size_t(r) * nb, D, static_cast<const uint8_t*>(k), p0,
                           s + size_t(r) * lds, lds);
  });
}

template <class S>
ops::KernelTable with_q8_key_scores(ops::KernelTable t) {
  t.key_scores[int(DType::q8_0)] = q8_key_scores<S>;
  return t;
}

}  // namespace qwen3::cpu
