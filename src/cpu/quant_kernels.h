// Integer matmul kernels for q8_0 / q4_0 weights in the row-group layout, written once over an
// int8 vector type S, the way simd_kernels.h writes the float ones; src/cpu/<isa>/quant_kernels.cpp
// instantiate them.
//
// S provides: I (S::lanes int32 lanes of 4 bytes), V (S::lanes floats), MR (tokens per tile), vnni
// (udot is one instruction, so sign tricks are not needed), load(p) (S::lanes x 4 bytes), bcast4(p)
// (4 bytes into every lane), splat32, zero_i, zero, udot(u, s, acc) (acc + sums of 4 unsigned x
// signed byte products per lane), abs8, sign8(x, w) (x * sign w), xor80, nib_lo, nib_hi, scales(p)
// (S::lanes f16 to float), set1, add32, cvt, mul, fma, store(p, v, lo, hi) (lanes lo..hi-1 only),
// quantize_block(x, q, d, sum) (quantize_activations of one block, bit for bit).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cpu/simd_kernels.h"
#include "io/quant_blocks.h"
#include "ops/kernels.h"

namespace qwen3::cpu {

// How a row group's block meets the int8 activations: `steps` products of one 4-byte chunk per
// row (one vector load) by 4 broadcast activation bytes at x + xoff(step), exact in int32.
template <class S, DType W>
struct Grouped;

// q8_0: with VNNI, w + 128 is the unsigned operand and `corr` x sum(x) (once per token and block)
// corrects it. Without, |w| x (x * sign w) keeps maddubs' int16 pairs from saturating.
template <class S>
struct Grouped<S, DType::q8_0> {
  using I = typename S::I;
  static constexpr int bytes = kQ8Bytes, steps = kQuantBlock / kQuantChunk,
                       corr = S::vnni ? -128 : 0;
  struct Wp {
    I u, w;
  };
  static Wp prep(const uint8_t* q, int step) {
    const I w = S::load(q + step * kQuantRows * kQuantChunk);
    if constexpr (S::vnni) return {S::xor80(w), w};
    else return {S::abs8(w), w};
  }
  static constexpr int xoff(int step) { return step * kQuantChunk; }
  static I dot(const Wp& w, I x, I acc) {
    if constexpr (S::vnni) return S::udot(w.u, x, acc);
    else return S::udot(w.u, S::sign8(x, w.w), acc);
  }
};

// q4_0: the nibbles (0..15) are the unsigned operand, -8 x sum(x) corrects. Steps 0..3 take chunk
// j's low nibbles (elements 4j..), steps 4..7 its high nibbles (elements 16 + 4j..).
template <class S>
struct Grouped<S, DType::q4_0> {
  using I = typename S::I;
  static constexpr int bytes = kQ4Bytes, steps = kQuantBlock / kQuantChunk, corr = -8;
  struct Wp {
    I u;
  };
  static Wp prep(const uint8_t* q, int step) {
    const I w = S::load(q + step % 4 * kQuantRows * kQuantChunk);
    return {step < 4 ? S::nib_lo(w) : S::nib_hi(w)};
  }
  static constexpr int xoff(int step) {
    return step / 4 * kQuantBlock / 2 + step % 4 * kQuantChunk;
  }
  static I dot(const Wp& w, I x, I acc) { return S::udot(w.u, x, acc); }
};

// MR tokens against one complete row group at g; writes outputs lo..hi-1 of the group (y points at
// its first). Per block, the prepared weights and the 16 scales serve all MR tokens, and each
// token pays one convert, one scale product and one FMA per S::lanes outputs.
template <class S, DType W, int MR>
inline void group_tile(const int8_t* xq, const float* xd, const int32_t* xsum, int K,
                       const uint8_t* g, float* y, int ldy, int lo, int hi) {
  using F = Grouped<S, W>;
  using I = typename S::I;
  using V = typename S::V;
  // Two integer chains per token halve the dependent dpbusd run (8-token tiles 13% faster).
  constexpr int nv = kQuantRows / S::lanes, chains = 2;
  const int nb = K / kQuantBlock;
  V acc[MR][nv];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < nv; ++v) acc[r][v] = S::zero();
  for (int b = 0; b < nb; ++b) {
    const uint8_t* blk = g + size_t(b) * kQuantRows * F::bytes;
    if constexpr (MR ==
                  1)  // into L2, 8 KiB ahead: q4 decode 5% faster than into L1 (T0) at any distance
      for (int l = 0; l < kQuantRows * F::bytes; l += 64)
        _mm_prefetch(reinterpret_cast<const char*>(blk) + 16 * kPrefetchBytes + l, _MM_HINT_T1);
    V ws[nv];
    typename F::Wp wp[F::steps][nv];
    for (int v = 0; v < nv; ++v) {
      ws[v] = S::scales(blk + 2 * S::lanes * v);
      for (int s = 0; s < F::steps; ++s)
        wp[s][v] = F::prep(blk + 2 * kQuantRows + kQuantChunk * S::lanes * v, s);
    }
    // Unrolled, so that acc stays in registers (a rolled loop indexes it in memory: q4 30% slower).
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const int8_t* x = xq + size_t(r) * K + size_t(b) * kQuantBlock;
      I isum[chains][nv];
      for (int v = 0; v < nv; ++v) {
        isum[0][v] = F::corr ? S::splat32(F::corr * xsum[r * nb + b]) : S::zero_i();
        isum[1][v] = S::zero_i();
      }
#pragma GCC unroll 16
      for (int s = 0; s < F::steps; ++s) {
        const I xb = S::bcast4(x + F::xoff(s));
        for (int v = 0; v < nv; ++v)
          isum[s % chains][v] = F::dot(wp[s][v], xb, isum[s % chains][v]);
      }
      const V xs = S::set1(xd[r * nb + b]);
      for (int v = 0; v < nv; ++v) {
        const I sum = S::add32(isum[0][v], isum[1][v]);  // exact
        acc[r][v] = S::fma(S::cvt(sum), S::mul(ws[v], xs), acc[r][v]);
      }
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < nv; ++v)
      S::store(y + size_t(r) * ldy + v * S::lanes, acc[r][v], std::max(lo - v * S::lanes, 0),
               std::min(hi - v * S::lanes, S::lanes));
}

// Tiles of MR tokens, then the remaining 1..MR-1 tokens as one smaller tile.
template <class S, DType W, int MR>
inline void group_tokens(int T, const int8_t* xq, const float* xd, const int32_t* xsum, int K,
                         const uint8_t* g, float* y, int ldy, int lo, int hi) {
  const int nb = K / kQuantBlock;
  int t = 0;
  for (; t + MR <= T; t += MR)
    group_tile<S, W, MR>(xq + size_t(t) * K, xd + size_t(t) * nb, xsum + size_t(t) * nb, K, g,
                         y + size_t(t) * ldy, ldy, lo, hi);
  if constexpr (MR > 1)
    if (t < T)
      group_tokens<S, W, MR - 1>(T - t, xq + size_t(t) * K, xd + size_t(t) * nb,
                                 xsum + size_t(t) * nb, K, g, y + size_t(t) * ldy, ldy, lo, hi);
}

// Tokens in blocks that stay in L2 while row groups stream past once; each group stays in L1/L2
// while the block's tokens take it in tiles.
template <class S, DType W>
void matmul_quant(const int8_t* xq, const float* xd, const int32_t* xsum, int T, int K,
                  const void* wv, int N, int n0, int n1, float* y, int ldy) {
  constexpr int kTokenBlock = 64;
  const auto* w = static_cast<const uint8_t*>(wv);
  const int nb = K / kQuantBlock;
  const size_t rb = row_bytes(W, K);
  auto groups = [&](const uint8_t* g0, int first,
                    int end) {  // groups from row `first` at g0, up to row end
    for (int t0 = 0; t0 < T; t0 += kTokenBlock)
      for (int g = std::max(n0, first) / kQuantRows * kQuantRows; g < end; g += kQuantRows)
        group_tokens<S, W, S::MR>(std::min(T - t0, kTokenBlock), xq + size_t(t0) * K,
                                  xd + size_t(t0) * nb, xsum + size_t(t0) * nb, K,
                                  g0 + (g - first) * rb, y + size_t(t0) * ldy + g, ldy,
                                  std::max(n0 - g, 0), std::min(end - g, kQuantRows));
  };
  const int full = N / kQuantRows * kQuantRows;
  groups(w, 0, std::min(n1, full));
  if (n1 > full) {
    // The last N % 16 rows are plain blocks: padded with zero rows into one group, they go
    // through the same code, so each keeps the reduction order it would have in a full group.
    std::vector<uint8_t> plain(kQuantRows * rb), group(kQuantRows * rb);
    std::memcpy(plain.data(), w + full * rb, (N - full) * rb);
    interleave_rows(W, kQuantRows, K, plain.data(), group.data());
    groups(group.data(), full, n1);
  }
}

template <class S>
void quantize_x(const float* x, int K, int8_t* q, float* d, int32_t* sum) {
  for (int b = 0; b < K / kQuantBlock; ++b)
    S::quantize_block(x + b * kQuantBlock, q + b * kQuantBlock, d + b, sum + b);
}

template <class S>
ops::KernelTable with_quant(ops::KernelTable t) {
  t.quantize_x = quantize_x<S>;
  t.matmul_q8_0 = matmul_quant<S, DType::q8_0>;
  t.matmul_q4_0 = matmul_quant<S, DType::q4_0>;
  return t;
}

}  // namespace qwen3::cpu
