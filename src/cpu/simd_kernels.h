// The hot kernels written once over a vector type S (tinyBLAS-style); src/cpu/avx2 and
// src/cpu/avx512 instantiate them, each compiled with its own instruction-set flags.
//
// S provides: V, lanes, MR x NR (the register tile), zero(), set1, load, store, load_f16,
// bf16_even / bf16_odd (see below), fma(a, b, acc), hsum(V).
//
// bf16 weights are read 2 x lanes at a time as one vector of 32-bit pairs: a shift turns the
// even-indexed elements into floats, a mask the odd ones, with no shuffle instructions (the
// bottleneck of widening). x is permuted once per call to match: in each chunk of 2 x lanes,
// its even elements first, then its odd ones.
#pragma once

#include <immintrin.h>

#include <cmath>
#include <cstdint>

#include "io/dtype.h"
#include "ops/kernels.h"

namespace qwen3::cpu {

struct Bf16 {};
struct F16 {};

template <class S, class W>
inline typename S::V load_w(const void* w, size_t i) {
  if constexpr (std::is_same_v<W, float>) return S::load(static_cast<const float*>(w) + i);
  else return S::load_f16(static_cast<const uint16_t*>(w) + i);
}

template <class W>
constexpr bool kPaired = std::is_same_v<W, Bf16>;

// Elements of K consumed per step of the inner loop.
template <class S, class W>
constexpr int k_step() {
  return kPaired<W> ? 2 * S::lanes : S::lanes;
}

template <class W>
constexpr size_t sizeof_w() {
  return std::is_same_v<W, float> ? 4 : 2;
}

// How far ahead of use the memory-bound kernels prefetch weights (measured on kernels_bench).
constexpr size_t kPrefetchBytes = 512;

template <class W>
inline float scalar_w(const void* w, size_t i) {
  if constexpr (std::is_same_v<W, float>) return static_cast<const float*>(w)[i];
  else if constexpr (std::is_same_v<W, Bf16>) return bf16_to_f32(static_cast<const uint16_t*>(w)[i]);
  else return f16_to_f32(static_cast<const uint16_t*>(w)[i]);
}

// An MR x NR block of outputs. Each output accumulates lane-wise over K in steps of S::lanes,
// then sums the lanes (hsum, a fixed tree), then adds the K % lanes tail in order: the same
// sequence of operations for every tile shape, so batching never changes a result.
template <class S, class W, int MR, int NR>
inline void tile(const float* x, int K, const void* w, int n, float* y, int ldy) {
  using V = typename S::V;
  V acc[MR][NR];
  for (int r = 0; r < MR; ++r)
    for (int c = 0; c < NR; ++c) acc[r][c] = S::zero();
  const int kv = K - K % k_step<S, W>();
  for (int k = 0; k < kv; k += k_step<S, W>()) {
    if constexpr (MR <= 2) {  // few tokens: memory-bound, so fetch the weight rows well ahead
      for (int c = 0; c < NR; ++c)
        _mm_prefetch(static_cast<const char*>(w) + (size_t(n + c) * K + k) * sizeof_w<W>() + kPrefetchBytes, _MM_HINT_T0);
    }
    V wv[NR];
    if constexpr (kPaired<W>) {
      const uint16_t* wb = static_cast<const uint16_t*>(w);
      for (int c = 0; c < NR; ++c) wv[c] = S::bf16_even(wb + size_t(n + c) * K + k);
      for (int r = 0; r < MR; ++r) {
        V xv = S::load(x + size_t(r) * K + k);
        for (int c = 0; c < NR; ++c) acc[r][c] = S::fma(xv, wv[c], acc[r][c]);
      }
      for (int c = 0; c < NR; ++c) wv[c] = S::bf16_odd(wb + size_t(n + c) * K + k);
      for (int r = 0; r < MR; ++r) {
        V xv = S::load(x + size_t(r) * K + k + S::lanes);
        for (int c = 0; c < NR; ++c) acc[r][c] = S::fma(xv, wv[c], acc[r][c]);
      }
    } else {
      for (int c = 0; c < NR; ++c) wv[c] = load_w<S, W>(w, size_t(n + c) * K + k);
      for (int r = 0; r < MR; ++r) {
        V xv = S::load(x + size_t(r) * K + k);
        for (int c = 0; c < NR; ++c) acc[r][c] = S::fma(xv, wv[c], acc[r][c]);
      }
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int c = 0; c < NR; ++c) {
      float s = S::hsum(acc[r][c]);
      for (int k = kv; k < K; ++k) s += x[size_t(r) * K + k] * scalar_w<W>(w, size_t(n + c) * K + k);
      y[size_t(r) * ldy + n + c] = s;
    }
}

// Rows of x in groups of up to S::MR against W rows in groups of up to S::NR.
template <class S, class W, int MR>
inline void row_group(const float* x, int K, const void* w, int n0, int n1, float* y, int ldy) {
  int n = n0;
  if constexpr (MR == 1)  // one token: more weight rows in flight keep more memory requests going
    for (; n + 2 * S::NR <= n1; n += 2 * S::NR) tile<S, W, 1, 2 * S::NR>(x, K, w, n, y, ldy);
  for (; n + S::NR <= n1; n += S::NR) tile<S, W, MR, S::NR>(x, K, w, n, y, ldy);
  for (; n < n1; ++n) tile<S, W, MR, 1>(x, K, w, n, y, ldy);
}

template <class S, class W, int MR>
inline void row_remainder(int rows, const float* x, int K, const void* w, int n0, int n1, float* y, int ldy) {
  if constexpr (MR > 0) {
    if (rows == MR) return row_group<S, W, MR>(x, K, w, n0, n1, y, ldy);
    row_remainder<S, W, MR - 1>(rows, x, K, w, n0, n1, y, ldy);
  }
}

// x with each full chunk of 2 x lanes reordered as its even elements, then its odd ones; the
// tail stays in place: the layout the bf16 kernels read.
template <class S>
void pair_permute(const float* x, int T, int K, float* out) {
  const int chunk = 2 * S::lanes, kv = K - K % chunk;
  for (int t = 0; t < T; ++t) {
    const float* src = x + size_t(t) * K;
    float* dst = out + size_t(t) * K;
    for (int k = 0; k < kv; k += chunk)
      for (int i = 0; i < S::lanes; ++i) {
        dst[k + i] = src[k + 2 * i];
        dst[k + S::lanes + i] = src[k + 2 * i + 1];
      }
    for (int k = kv; k < K; ++k) dst[k] = src[k];
  }
}

// Tokens are taken in blocks that stay in L2 while the block's W rows stream past once; a block
// is a whole number of register tiles.
template <class S, class W>
void matmul(const float* x, int T, int K, const void* w, int n0, int n1, float* y, int ldy) {
  constexpr int kTokenBlock = S::MR * (64 / S::MR);
  for (int t0 = 0; t0 < T; t0 += kTokenBlock) {
    const int t1 = t0 + kTokenBlock < T ? t0 + kTokenBlock : T;
    const int n_block = T == 1 ? 64 : S::NR;  // one token: no reuse of W rows, so stream long runs
    for (int nb = n0; nb < n1; nb += n_block) {
      const int ne = nb + n_block < n1 ? nb + n_block : n1;
      int t = t0;
      for (; t + S::MR <= t1; t += S::MR)
        row_group<S, W, S::MR>(x + size_t(t) * K, K, w, nb, ne, y + size_t(t) * ldy, ldy);
      if (t < t1) row_remainder<S, W, S::MR - 1>(t1 - t, x + size_t(t) * K, K, w, nb, ne, y + size_t(t) * ldy, ldy);
    }
  }
}

// RB rows of out, CH vectors wide, at columns [d, d + CH * lanes): accumulators stay in
// registers for the whole sum over p.
template <class S, int RB, int CH>
inline void weighted_block(const float* a, int lda, int P, const float* v, int D, int d, float* out, int ldo) {
  using V = typename S::V;
  V acc[RB][CH];
  for (int r = 0; r < RB; ++r)
    for (int c = 0; c < CH; ++c) acc[r][c] = S::zero();
  for (int p = 0; p < P; ++p) {
    V vv[CH];
    for (int c = 0; c < CH; ++c) vv[c] = S::load(v + size_t(p) * D + d + c * S::lanes);
    for (int r = 0; r < RB; ++r) {
      const V av = S::set1(a[size_t(r) * lda + p]);
      for (int c = 0; c < CH; ++c) acc[r][c] = S::fma(av, vv[c], acc[r][c]);
    }
  }
  for (int r = 0; r < RB; ++r)
    for (int c = 0; c < CH; ++c) S::store(out + size_t(r) * ldo + d + c * S::lanes, acc[r][c]);
}

template <class S>
void weighted_sum(const float* a, int lda, int R, int P, const float* v, int D, float* out, int ldo) {
  constexpr int CH = S::lanes == 16 ? 8 : 4;  // 2 x CH accumulators + CH values fit the registers
  const int dv = D - D % S::lanes;
  for (int r = 0; r < R; r += 2) {
    const float* ar = a + size_t(r) * lda;
    float* o = out + size_t(r) * ldo;
    int d = 0;
    if (r + 1 < R) {
      for (; d + CH * S::lanes <= dv; d += CH * S::lanes) weighted_block<S, 2, CH>(ar, lda, P, v, D, d, o, ldo);
      for (; d < dv; d += S::lanes) weighted_block<S, 2, 1>(ar, lda, P, v, D, d, o, ldo);
    } else {
      for (; d + CH * S::lanes <= dv; d += CH * S::lanes) weighted_block<S, 1, CH>(ar, lda, P, v, D, d, o, ldo);
      for (; d < dv; d += S::lanes) weighted_block<S, 1, 1>(ar, lda, P, v, D, d, o, ldo);
    }
    for (int rr = r; rr < R && rr < r + 2; ++rr)  // columns past the last full vector
      for (int dd = dv; dd < D; ++dd) {
        float acc = 0;
        for (int p = 0; p < P; ++p) acc = std::fma(a[size_t(rr) * lda + p], v[size_t(p) * D + dd], acc);
        out[size_t(rr) * ldo + dd] = acc;
      }
  }
}

template <class S>
ops::KernelTable make_table(const char* name) {
  return ops::KernelTable{name,
                          {matmul<S, float>, matmul<S, F16>, matmul<S, Bf16>},
                          pair_permute<S>,
                          weighted_sum<S>};
}

}  // namespace qwen3::cpu
