// Integer matmul kernels for q8_0 / q4_0 weights, written once over an int8 vector type S, the
// way simd_kernels.h writes the float ones; src/cpu/<isa>/quant_kernels.cpp instantiate them.
//
// S provides: I (S::blocks blocks of 32 int8), V (float lanes matching udot's int32 lanes),
// MR x NR (the register tile), vnni (udot is one instruction, so sign tricks are not needed),
// load_x/load_q8/load_q4(ptr, nblk) (nblk < blocks zero-fills the rest), udot(u, s, acc)
// (acc + sums of 4 unsigned x signed byte products per int32 lane), abs8, sign8(x, w) (x * sign w),
// xor80, splat8, neg32, scale_w(block, stride, nblk), scale_x(d, nblk), cvt, mul, fma, hsum.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "cpu/simd_kernels.h"
#include "io/quant_blocks.h"
#include "ops/kernels.h"

namespace qwen3::cpu {

// How one block format meets the int8 activations: an exact int32 dot product per lane.
template <class S, DType W>
struct QuantDot;

// q8_0: with VNNI, w + 128 is the unsigned operand and -128 * sum(x) (once per activation block,
// shared by every weight row of a tile) corrects it. Without, |w| x (x * sign w) keeps maddubs'
// int16 pairs from saturating.
template <class S>
struct QuantDot<S, DType::q8_0> {
  using I = typename S::I;
  static constexpr int bytes = kQ8Bytes;
  struct Wp {
    I a, b;
  };
  struct Xp {
    I x, corr;
  };
  static Wp prep_w(const uint8_t* p, int nblk) {
    const I w = S::load_q8(p, nblk);
    if constexpr (S::vnni) return {S::xor80(w), w};
    else return {S::abs8(w), w};
  }
  static Xp prep_x(I x) {
    if constexpr (S::vnni) return {x, S::neg32(S::udot(S::splat8(-128), x, S::zero_i()))};
    else return {x, x};
  }
  static I dot(const Wp& w, const Xp& x) {
    if constexpr (S::vnni) return S::udot(w.a, x.x, x.corr);
    else return S::udot(w.a, S::sign8(x.x, w.b), S::zero_i());
  }
};

// q4_0: the nibbles (0..15) are the unsigned operand; -8 * sum(x), once per token block, corrects.
template <class S>
struct QuantDot<S, DType::q4_0> {
  using I = typename S::I;
  static constexpr int bytes = kQ4Bytes;
  struct Wp {
    I u;
  };
  struct Xp {
    I x, corr;
  };
  static Wp prep_w(const uint8_t* p, int nblk) { return {S::load_q4(p, nblk)}; }
  static Xp prep_x(I x) { return {x, S::neg32(S::udot(S::splat8(8), x, S::zero_i()))}; }
  static I dot(const Wp& w, const Xp& x) { return S::udot(w.u, x.x, x.corr); }
};

// An MR x NR block of outputs. Each output accumulates, per step of S::blocks blocks, its exact
// integer lanes times (weight scale x activation scale), lane-wise in float, then sums the lanes
// (hsum): the same operations for every tile shape, so batching never changes a result.
template <class S, DType W, int MR, int NR>
inline void quant_tile(const int8_t* xq, const float* xd, int K, const uint8_t* w, int n, float* y, int ldy) {
  using D = QuantDot<S, W>;
  using V = typename S::V;
  const int nb = K / kQuantBlock;
  const size_t rb = size_t(nb) * D::bytes;
  V acc[MR][NR];
  for (int r = 0; r < MR; ++r)
    for (int c = 0; c < NR; ++c) acc[r][c] = S::zero();
  for (int b = 0; b < nb; b += S::blocks) {
    const int nblk = nb - b < S::blocks ? nb - b : S::blocks;
    typename D::Wp wp[NR];
    V ws[NR];
    for (int c = 0; c < NR; ++c) {
      const uint8_t* p = w + size_t(n + c) * rb + size_t(b) * D::bytes;
      if constexpr (MR <= 2) _mm_prefetch(reinterpret_cast<const char*>(p) + kPrefetchBytes, _MM_HINT_T0);
      wp[c] = D::prep_w(p, nblk);
      ws[c] = S::scale_w(p, D::bytes, nblk);
    }
    for (int r = 0; r < MR; ++r) {
      const typename D::Xp xp = D::prep_x(S::load_x(xq + size_t(r) * K + size_t(b) * kQuantBlock, nblk));
      const V xs = S::scale_x(xd + size_t(r) * nb + b, nblk);
      for (int c = 0; c < NR; ++c) acc[r][c] = S::fma(S::cvt(D::dot(wp[c], xp)), S::mul(ws[c], xs), acc[r][c]);
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int c = 0; c < NR; ++c) y[size_t(r) * ldy + n + c] = S::hsum(acc[r][c]);
}

// Rows of x in groups of up to S::MR against W rows in groups of up to S::NR.
template <class S, DType W, int MR>
inline void quant_rows(const int8_t* xq, const float* xd, int K, const uint8_t* w, int n0, int n1, float* y, int ldy) {
  int n = n0;
  if constexpr (MR == 1)  // one token: more weight rows in flight keep more memory requests going
    for (; n + 2 * S::NR <= n1; n += 2 * S::NR) quant_tile<S, W, 1, 2 * S::NR>(xq, xd, K, w, n, y, ldy);
  for (; n + S::NR <= n1; n += S::NR) quant_tile<S, W, MR, S::NR>(xq, xd, K, w, n, y, ldy);
  for (; n < n1; ++n) quant_tile<S, W, MR, 1>(xq, xd, K, w, n, y, ldy);
}

template <class S, DType W, int MR>
inline void quant_rows_remainder(int rows, const int8_t* xq, const float* xd, int K, const uint8_t* w, int n0, int n1,
                                 float* y, int ldy) {
  if constexpr (MR > 0) {
    if (rows == MR) return quant_rows<S, W, MR>(xq, xd, K, w, n0, n1, y, ldy);
    quant_rows_remainder<S, W, MR - 1>(rows, xq, xd, K, w, n0, n1, y, ldy);
  }
}

// Tokens in blocks that stay in L2 while the block's W rows stream past once.
template <class S, DType W>
void matmul_quant(const int8_t* xq, const float* xd, int T, int K, const void* wv, int n0, int n1, float* y, int ldy) {
  constexpr int kTokenBlock = 64;
  const auto* w = static_cast<const uint8_t*>(wv);
  const int nb = K / kQuantBlock;
  for (int t0 = 0; t0 < T; t0 += kTokenBlock) {
    const int t1 = t0 + kTokenBlock < T ? t0 + kTokenBlock : T;
    const int n_block = T == 1 ? 64 : S::NR;  // one token: no reuse of W rows, so stream long runs
    for (int nbeg = n0; nbeg < n1; nbeg += n_block) {
      const int nend = nbeg + n_block < n1 ? nbeg + n_block : n1;
      int t = t0;
      for (; t + S::MR <= t1; t += S::MR)
        quant_rows<S, W, S::MR>(xq + size_t(t) * K, xd + size_t(t) * nb, K, w, nbeg, nend, y + size_t(t) * ldy, ldy);
      if (t < t1)
        quant_rows_remainder<S, W, S::MR - 1>(t1 - t, xq + size_t(t) * K, xd + size_t(t) * nb, K, w, nbeg, nend,
                                              y + size_t(t) * ldy, ldy);
    }
  }
}

template <class S>
ops::KernelTable with_quant(ops::KernelTable t) {
  t.matmul_q8_0 = matmul_quant<S, DType::q8_0>;
  t.matmul_q4_0 = matmul_quant<S, DType::q4_0>;
  return t;
}

}  // namespace qwen3::cpu
