// The hot kernels written once over a vector type S (tinyBLAS-style); src/cpu/avx2 and
// src/cpu/avx512 instantiate them, each compiled with its own instruction-set flags.
//
// S provides: V, lanes, MR (rows of x per dot tile for short prompts), MR_batch (the most rows of
// x taken in one tile: decode and batched decode), nr(mr) (W rows per tile of mr rows of x),
// packed_mr, packed_nr and packed_min_tokens (the tiles of packed_matmul.h and the fewest rows
// that take them), weighted_rows (rows per weighted_sum tile), registers (vector registers), add,
// sub, mul, div, max, min, hmax, round (to nearest), ldexp(p, n) (p x 2^n, n integral),
// zero_below(v, x, limit) (v where x >= limit, else 0), zero(), set1, load, store, load_part(v,
// p, lo, hi) (v with lanes [lo, hi) loaded from p; nothing outside them touched), load_f16,
// load_i8 (lanes int8 as floats), load_pairs, bf16_even / bf16_odd (see below), deinterleave(a, b,
// even, odd) (the even- and the odd-indexed elements of the 2 x lanes floats a, b),
// transpose(V[lanes]) (v[i] becomes lane i of every v), fma(a, b, acc), hsum(V) (folding the lanes
// in halves: (i, i + lanes/2) first), hsum_lanes(V[lanes]) (lane j = hsum(v[j]), bit for bit).
//
// bf16 weights are read 2 x lanes at a time as one vector of 32-bit pairs: a shift turns the
// even-indexed elements into floats, a mask the odd ones, with no shuffle instructions (the
// bottleneck of widening). x is permuted once per call to match: in each chunk of 2 x lanes,
// its even elements first, then its odd ones.
//
// With a lead (lead_for), the dot tiles and packed panels read each W row rotated right by `lead`
// elements (ops/kernels.h), in chunks of k_step: chunk c > 0 is the row's elements from
// c * k_step - lead, chunk 0 its last `lead` elements, then its first. Every load then starts on a
// chunk boundary of memory; chunk 0 is two masked loads.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "io/dtype.h"
#include "ops/kernels.h"
#include "ops/key_layout.h"

namespace qwen3::cpu {

struct Bf16 {};
struct F16 {};
struct Q8 {};  // a q8_0 KV cache (ops/key_layout.h)

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
// Weight rows also go to L2 this far ahead: enough requests in flight that the stream keeps the
// bandwidth while the core computes (the LM head ~10% faster for one token, ~1.4x for four).
constexpr size_t kL2PrefetchBytes = size_t(16) << 10;

// The lead that puts every W chunk on whole vectors of memory (cache lines on AVX-512): a
// safetensors file places its tensors wherever its header ends (Qwen3-0.6B's random model: 40
// bytes past a cache line), and loads that span two lines made decode 1.25x slower than the same
// file with its header padded to a line. A lead needs rows of whole chunks, so that
// every row has the same one, and for bf16, whole pairs; else 0. Any lead of 0 .. k_step - 1 (even
// for bf16) gives a right product for any placement of W of that K: this one is only the fastest.
template <class S, class W>
int lead_for(const void* w, int K) {
  constexpr int ks = k_step<S, W>();
  static_assert(ops::kLeadPeriod % (ks * sizeof_w<W>()) == 0, "a chunk longer than kLeadPeriod");
  const auto at = reinterpret_cast<uintptr_t>(w);
  if (std::is_same_v<W, F16> || K % ks || at % 4) return 0;
  return int(at % (ks * sizeof_w<W>()) / sizeof_w<W>());
}

// The W chunk at element k of a row as one vector (bf16: as pairs). Wrap: chunk 0 of a row
// rotated by a lead (k = -lead), its lanes from the row's end, then from its start; float and
// bf16 only (f16 has no lead). Inlined: a call spilled the tiles' accumulators (6-row tiles 1.25x
// slower).
template <class S, class W, bool Wrap>
[[gnu::always_inline]] inline typename S::V load_chunk(const void* row, int k, int K) {
  if constexpr (!Wrap) {
    if constexpr (kPaired<W>) return S::load_pairs(static_cast<const uint16_t*>(row) + k);
    else return load_w<S, W>(row, k);
  } else {
    const int lead = -k, split = lead / (kPaired<W> ? 2 : 1);  // lanes from the row's end
    auto at = [&](int i) {
      return reinterpret_cast<const float*>(static_cast<const char*>(row) +
                                            ptrdiff_t(i) * sizeof_w<W>());
    };
    return S::load_part(S::load_part(S::zero(), at(-lead), split, S::lanes), at(K - lead), 0,
                        split);
  }
}

template <class W>
inline float scalar_w(const void* w, size_t i) {
  return float_at(std::is_same_v<W, float>  ? DType::f32
                  : std::is_same_v<W, Bf16> ? DType::bf16
                                            : DType::f16,
                  w, i);
}

// For a tile of `rows` W rows of row_bytes from `first`: the first lines of the next tile's rows
// into L1. A tile's in-row prefetches run along its own rows, so the next tile's rows began with
// misses (the bf16 products of a decode step ~8% faster with this). A prefetch past the end of W
// (after the last tile) is harmless: prefetches never fault. A one-row tile needs none: rows are
// contiguous, so its in-row prefetch has already run kPrefetchBytes into the next (float decode
// 2-4% faster without the extra prefetches).
inline void prefetch_next_rows(const char* first, int rows, size_t row_bytes) {
  constexpr size_t kRowStartBytes = 256;
  if (rows == 1) return;
  const char* next = first + rows * row_bytes;
  for (int r = 0; r < rows; ++r)
    for (size_t b = 0; b < kRowStartBytes; b += 64)
      _mm_prefetch(next + r * row_bytes + b, _MM_HINT_T0);
}

// Pins v to a register: without it GCC folds a loaded x vector into each of a tile's NR
// multiply-adds, NR loads instead of one, and the 8 x 3 tiles run load-bound (1.6x slower).
template <class V>
inline void in_register(V& v) {
  asm("" : "+v"(v));
}

// sums[i] = hsum(acc[i]) for n accumulators, S::lanes of them at a time (hsum_lanes), a last
// partial group padded with zeros where that takes fewer instructions than an hsum each: every
// tile shape sums its lanes with the very same additions. Inlined, so that the accumulators go
// from their registers to the folds (a call stored them all first).
template <class S>
[[gnu::always_inline]] inline void lane_sums(const typename S::V* acc, int n, float* sums) {
  int i = 0;
  for (; i + S::lanes <= n; i += S::lanes) S::store(sums + i, S::hsum_lanes(acc + i));
  if (n - i > S::lanes / 4) {
    typename S::V group[S::lanes];
    for (int j = 0; j < S::lanes; ++j) group[j] = i + j < n ? acc[i + j] : S::zero();
    float folded[S::lanes];
    S::store(folded, S::hsum_lanes(group));
    std::copy_n(folded, n - i, sums + i);
    return;
  }
  for (; i < n; ++i) sums[i] = S::hsum(acc[i]);
}

// acc[c] += xv * w[c] for a tile's NR W vectors, xv pinned to a register and kept there to the
// end: else the last multiply-add writes over it, the accumulators change registers, and each
// step pays a copy per row to move them back (8-token decode about 4% slower).
template <class S, int NR>
inline void fma_row(typename S::V xv, const typename S::V* w, typename S::V* acc) {
  in_register(xv);
  for (int c = 0; c < NR; ++c) acc[c] = S::fma(xv, w[c], acc[c]);
  asm volatile("" : : "v"(xv));
}

// An MR x NR block of outputs. Each output accumulates lane-wise over K in chunks of k_step
// (rotated by lead), then sums the lanes (hsum, a fixed tree), then adds the K % k_step tail in
// order: the same sequence of operations for every tile shape, so batching never changes a result.
// x is the tile's first row in interleave_rows' layout, each chunk xs floats after the one before.
template <class S, class W, int MR, int NR>
inline void tile(const float* x, size_t xs, int K, const void* w, int lead, int n, float* y,
                 int ldy) {
  constexpr int ks = k_step<S, W>();
  using V = typename S::V;
  V acc[MR][NR];
  for (int r = 0; r < MR; ++r)
    for (int c = 0; c < NR; ++c) acc[r][c] = S::zero();
  const char* rows[NR];
  for (int c = 0; c < NR; ++c)
    rows[c] = static_cast<const char*>(w) + size_t(n + c) * K * sizeof_w<W>();
  const float* xk = x;  // the current chunk's
  // The chunk at element k; wrap: a lead's chunk 0. Inlined, or acc leaves the registers (the
  // GNU spelling: a [[gnu::always_inline]] after the parameters binds to the lambda's type).
  auto step = [&](auto wrap, int k) __attribute__((always_inline)) {
    constexpr bool kWrap = decltype(wrap)::value;
    for (int c = 0; c < NR; ++c) {  // weight rows stream from memory: fetch them well ahead
      const char* at = rows[c] + ptrdiff_t(k) * sizeof_w<W>();
      _mm_prefetch(at + kPrefetchBytes, _MM_HINT_T0);
      _mm_prefetch(at + kL2PrefetchBytes, _MM_HINT_T1);
    }
    V wv[NR];
    if constexpr (kPaired<W>) {
      for (int c = 0; c < NR; ++c) wv[c] = S::bf16_even(load_chunk<S, W, kWrap>(rows[c], k, K));
      for (int r = 0; r < MR; ++r) fma_row<S, NR>(S::load(xk + r * ks), wv, acc[r]);
      for (int c = 0; c < NR; ++c) wv[c] = S::bf16_odd(load_chunk<S, W, kWrap>(rows[c], k, K));
      for (int r = 0; r < MR; ++r) fma_row<S, NR>(S::load(xk + r * ks + S::lanes), wv, acc[r]);
    } else {
      for (int c = 0; c < NR; ++c) wv[c] = load_chunk<S, W, kWrap>(rows[c], k, K);
      for (int r = 0; r < MR; ++r) fma_row<S, NR>(S::load(xk + r * ks), wv, acc[r]);
    }
    xk += xs;
  };
  prefetch_next_rows(rows[0], NR, size_t(K) * sizeof_w<W>());
  int c = 0;
  if (lead) step(std::true_type{}, -lead), c = 1;
  for (; c < K / ks; ++c) step(std::false_type{}, c * ks - lead);
  const int kv = K - K % ks;  // the tail (no lead): in order, after the lanes' sums
  float sums[MR * NR];
  lane_sums<S>(&acc[0][0], MR * NR, sums);
  if (kv < K)
    for (int r = 0; r < MR; ++r)
      for (int c = 0; c < NR; ++c)
        for (int k = kv; k < K; ++k)
          sums[r * NR + c] = std::fma(xk[r * ks + k - kv], scalar_w<W>(w, size_t(n + c) * K + k),
                                      sums[r * NR + c]);
  // A copy per row, not a store per output behind a check of the tail (no tail in any Qwen3
  // product: 52 of the 8 x 3 tile's ~190 cycles outside its loop).
  for (int r = 0; r < MR; ++r) std::copy_n(sums + r * NR, NR, y + size_t(r) * ldy + n);
}

// MR rows of x against W rows [n0, n1) in tiles of NR rows.
template <class S, class W, int MR, int NR>
inline void row_group(const float* x, size_t xs, int K, const void* w, int lead, int n0, int n1,
                      float* y, int ldy) {
  int n = n0;
  for (; n + NR <= n1; n += NR) tile<S, W, MR, NR>(x, xs, K, w, lead, n, y, ldy);
  for (; n < n1; ++n) tile<S, W, MR, 1>(x, xs, K, w, lead, n, y, ldy);
}

// row_group for a number of rows known only at run time (1 .. MR), in tiles of S::nr(rows) W
// rows, or at least MinNR.
template <class S, class W, int MR, int MinNR = 1>
inline void row_group_of(int rows, const float* x, size_t xs, int K, const void* w, int lead,
                         int n0, int n1, float* y, int ldy) {
  if constexpr (MR > 0) {
    if (rows == MR)
      return row_group<S, W, MR, std::max(MinNR, S::nr(MR))>(x, xs, K, w, lead, n0, n1, y, ldy);
    row_group_of<S, W, MR - 1, MinNR>(rows, x, xs, K, w, lead, n0, n1, y, ldy);
  }
}

// Rows of x per interleaved group (see interleave_rows): decode's rows all in one, a short
// prompt's in groups of the tiles' height.
template <class S>
constexpr int x_group(int T) {
  return T <= S::MR_batch ? T : S::MR;
}

// x as the dot tiles read it. Rows go in groups of x_group(T) (the last may be shorter); a group
// holds chunk c of each of its rows together, [chunks][rows][ks] for chunks of ks = k_step
// elements (the K % ks tail a last, partly filled chunk). A tile, one group, then finds its rows
// a constant distance apart and addresses them from one register (rows K apart took a register
// each, and 8-row tiles spilled). bf16 chunks hold their even elements, then their odd ones; the
// tail stays in order.
template <class S, class W>
void interleave_rows(const float* x, int T, int K, int t0, int t1, float* out) {
  constexpr int ks = k_step<S, W>();
  const int G = x_group<S>(T), chunks = (K + ks - 1) / ks, kv = K - K % ks;
  for (int t = t0; t < t1; ++t) {
    const int g0 = t - t % G, rows = std::min(G, T - g0);
    const float* src = x + size_t(t) * K;
    for (int k = 0; k < K; k += ks) {
      float* dst = out + (size_t(g0) * chunks + size_t(k / ks) * rows + t - g0) * ks;
      if (kPaired<W> && k < kv) {
        typename S::V even, odd;
        S::deinterleave(S::load(src + k), S::load(src + k + S::lanes), even, odd);
        S::store(dst, even);
        S::store(dst + S::lanes, odd);
      } else std::copy(src + k, src + std::min(K, k + ks), dst);
    }
  }
}

// Tokens in blocks that stay in L2 while the block's W rows stream past once, in panels of about
// kPanelBytes that stay in L2 while each MR-row tile of the block takes the whole panel, NR rows
// at a time (the tile's x stays in L1: measured 11% faster than tiles sharing NR rows of W).
template <class S, class W, int MR>
void blocked(const float* x, int T, int K, const void* w, int lead, int n0, int n1, float* y,
             int ldy) {
  constexpr int kTokenBlock = MR * (64 / MR), NR = S::nr(MR), ks = k_step<S, W>();
  static_assert(x_group<S>(S::MR_batch + 1) == MR);  // x in groups of MR rows (interleave_rows)
  const size_t row_floats = size_t(K + ks - 1) / ks * ks;  // of x as interleaved
  constexpr size_t kPanelBytes = size_t(512) << 10;
  const int NP = std::max(NR, int(kPanelBytes / (size_t(K) * sizeof_w<W>())) / NR * NR);
  for (int t0 = 0; t0 < T; t0 += kTokenBlock) {
    const int t1 = t0 + kTokenBlock < T ? t0 + kTokenBlock : T;
    for (int nb = n0; nb < n1; nb += NP) {
      const int ne = nb + NP < n1 ? nb + NP : n1;
      int t = t0;
      for (; t + MR <= t1; t += MR)
        row_group<S, W, MR, NR>(x + t * row_floats, MR * ks, K, w, lead, nb, ne,
                                y + size_t(t) * ldy, ldy);
      if (t < t1)  // the last, shorter group of x, in tiles at least as wide as the others' (8
                   // rows on AVX2: 6 + 2, and 2 x 4 tiles took a quarter less time than 2 x 2)
        row_group_of<S, W, MR - 1, NR>(t1 - t, x + t * row_floats, (t1 - t) * ks, K, w, lead, nb,
                                       ne, y + size_t(t) * ldy, ldy);
    }
  }
}

// Bytes of one key or value of type W (float, F16 or Q8: its int8) in the cache.
template <class W>
constexpr size_t kValueBytes = std::is_same_v<W, float> ? 4
                               : std::is_same_v<W, Q8>  ? 1
                                                        : 2;

template <class W>
constexpr DType kCacheDType = std::is_same_v<W, float> ? DType::f32
                              : std::is_same_v<W, F16> ? DType::f16
                                                       : DType::q8_0;

// Where dimension d of value p starts in the cache's bytes.
template <class W>
size_t value_byte_at(int p, int d, int D) {
  if constexpr (std::is_same_v<W, Q8>) return ops::q8_value_at(p, d, D);
  else return (size_t(p) * D + d) * kValueBytes<W>;
}

// RB queries against NV vectors of keys from key p0 (keys blocked as key_offset, of type W:
// float or F16): each accumulator holds `lanes` scores and takes one broadcast multiply-add per
// dimension, in order. (A q8_0 cache's scores are integer dot products: q8_key_scores.h.)
template <class S, class W, int RB, int NV>
inline void key_tile(const float* q, int ldq, int D, const void* k, int p0, float* s, int lds) {
  using V = typename S::V;
  V acc[RB][NV];
  for (int r = 0; r < RB; ++r)
    for (int c = 0; c < NV; ++c) acc[r][c] = S::zero();
  for (int d = 0; d < D; ++d) {
    // The tile reads its keys as one sequential stream; keep 8 KiB of it in flight into L2, as
    // the weights' kernels do (prefetches past the cache's end are dropped, never fault).
    _mm_prefetch(static_cast<const char*>(k) + ops::key_offset(p0, d, D) * kValueBytes<W> +
                     16 * kPrefetchBytes,
                 _MM_HINT_T1);
    V kv[NV];
    for (int c = 0; c < NV; ++c) kv[c] = load_w<S, W>(k, ops::key_offset(p0 + c * S::lanes, d, D));
    for (int r = 0; r < RB; ++r) {
      V qb = S::set1(q[size_t(r) * ldq + d]);
      in_register(qb);  // one broadcast serves NV multiply-adds
      for (int c = 0; c < NV; ++c) acc[r][c] = S::fma(qb, kv[c], acc[r][c]);
    }
  }
  for (int r = 0; r < RB; ++r)
    for (int c = 0; c < NV; ++c) S::store(s + size_t(r) * lds + p0 + c * S::lanes, acc[r][c]);
}

// tile.template operator()<rb, nv>(r, p0) for rows (1 .. RB) and vectors (1 .. NV) known only
// at run time.
template <int RB, int NV, class Tile>
inline void tile_of(int rows, int nv, const Tile& tile, int r, int p0) {
  if constexpr (RB > 0 && NV > 0) {
    if (rows < RB) return tile_of<RB - 1, NV>(rows, nv, tile, r, p0);
    if (nv < NV) return tile_of<RB, NV - 1>(rows, nv, tile, r, p0);
    tile.template operator()<RB, NV>(r, p0);
  }
}

// R queries' scores against P keys (whole blocks) in tiles of RB queries x NV vectors of `lanes`
// keys: tile(r, p0) for the queries from r and the keys from p0. Each group of NV vectors of keys
// stays in L1 while every query takes it.
template <int lanes, int RB, int NV, class Tile>
void for_key_tiles(int R, int P, const Tile& tile) {
  const int vectors = ops::whole_key_blocks(P) / lanes;
  for (int c = 0; c < vectors; c += NV)
    for (int r = 0; r < R; r += RB)
      tile_of<RB, NV>(std::min(RB, R - r), std::min(NV, vectors - c), tile, r, c * lanes);
}

template <class S, class W, int RB, int NV>
void key_scores_in_tiles(const float* q, int ldq, int R, int D, const void* k, int P, float* s,
                         int lds) {
  for_key_tiles<S::lanes, RB, NV>(R, P, [&]<int rb, int nv>(int r, int p0) {
    key_tile<S, W, rb, nv>(q + size_t(r) * ldq, ldq, D, k, p0, s + size_t(r) * lds, lds);
  });
}

template <class S, class W>
void key_scores(const float* q, int ldq, int R, int D, const void* k, int P, float* s, int lds) {
  static_assert(ops::kKeyBlock % S::lanes == 0);
  // Decode's few queries (a group's heads) take wider tiles, more keys in flight: 2 x NV sums,
  // NV vectors of keys and a broadcast within the registers.
  if (R <= 2) return key_scores_in_tiles<S, W, 2, S::registers / 4>(q, ldq, R, D, k, P, s, lds);
  key_scores_in_tiles<S, W, S::MR, S::nr(S::MR)>(q, ldq, R, D, k, P, s, lds);
}

// RB rows of out, CH vectors wide, at columns [d, d + CH * lanes), over positions [p0, p1):
// accumulators stay in registers for the whole sum, starting from out's partial sums past p0.
// Values are of type W (float or F16). The same columns of positions `ahead` further on (below
// P) are prefetched into L2.
template <class S, class W, int RB, int CH>
inline void weighted_block(const float* a, int lda, int p0, int p1, int ahead, int P, const void* v,
                           int D, int d, float* out, int ldo) {
  using V = typename S::V;
  constexpr size_t block_bytes = CH * S::lanes * kValueBytes<W>;
  V acc[RB][CH];
  for (int r = 0; r < RB; ++r)
    for (int c = 0; c < CH; ++c)
      acc[r][c] = p0 ? S::load(out + size_t(r) * ldo + d + c * S::lanes) : S::zero();
  for (int p = p0; p < p1; ++p) {
    if (p + ahead < P) {
      const char* next = static_cast<const char*>(v) + value_byte_at<W>(p + ahead, d, D);
      for (size_t l = 0; l < block_bytes; l += 64) _mm_prefetch(next + l, _MM_HINT_T1);
    }
    V vv[CH];
    if constexpr (std::is_same_v<W, Q8>) {
      // Each group's scale goes into the weights, one product per row and 32 values, not into
      // every value. Blocks of 32 or more columns start on a group (d a multiple of CH * lanes).
      const auto* bytes = static_cast<const uint8_t*>(v);
      constexpr int per_group = kQuantBlock / S::lanes;  // vectors
      for (int c = 0; c < CH; ++c)
        vv[c] = S::load_i8(
            reinterpret_cast<const int8_t*>(bytes + value_byte_at<W>(p, d + c * S::lanes, D)));
      for (int c0 = 0; c0 < CH; c0 += per_group) {
        uint16_t h;
        std::memcpy(&h, bytes + ops::q8_value_scale_at(p, d + c0 * S::lanes, D), 2);
        const float scale = _cvtsh_ss(h);
        for (int r = 0; r < RB; ++r) {
          V av = S::set1(a[size_t(r) * lda + p] * scale);
          in_register(av);
          for (int c = c0; c < std::min(CH, c0 + per_group); ++c)
            acc[r][c] = S::fma(av, vv[c], acc[r][c]);
        }
      }
    } else {
      for (int c = 0; c < CH; ++c) vv[c] = load_w<S, W>(v, size_t(p) * D + d + c * S::lanes);
      for (int r = 0; r < RB; ++r) {
        const V av = S::set1(a[size_t(r) * lda + p]);
        for (int c = 0; c < CH; ++c) acc[r][c] = S::fma(av, vv[c], acc[r][c]);
      }
    }
  }
  for (int r = 0; r < RB; ++r)
    for (int c = 0; c < CH; ++c) S::store(out + size_t(r) * ldo + d + c * S::lanes, acc[r][c]);
}

// RB rows of out, all D columns, over positions [p0, p1): each value vector loaded serves RB rows.
template <class S, class W, int RB>
inline void weighted_rows(const float* a, int lda, int p0, int p1, int ahead, int P, const void* v,
                          int D, float* out, int ldo) {
  // 8 vectors per pass (a whole 128-wide row of values, read contiguously: decode's one or two
  // rows) where RB x 8 accumulators, the 8 values and the weight fit the registers; else 4, or 2.
  constexpr int CH = RB * 8 + 8 + 1 <= S::registers ? 8 : RB * 4 + 4 + 1 <= S::registers ? 4 : 2;
  const int dv = D - D % S::lanes;
  int d = 0;
  for (; d + CH * S::lanes <= dv; d += CH * S::lanes)
    weighted_block<S, W, RB, CH>(a, lda, p0, p1, ahead, P, v, D, d, out, ldo);
  for (; d < dv; d += S::lanes)
    weighted_block<S, W, RB, 1>(a, lda, p0, p1, ahead, P, v, D, d, out, ldo);
  for (int r = 0; r < RB; ++r)  // columns past the last full vector
    for (int dd = dv; dd < D; ++dd) {
      float acc = p0 ? out[size_t(r) * ldo + dd] : 0.0f;
      for (int p = p0; p < p1; ++p)
        acc = std::fma(a[size_t(r) * lda + p], ops::cached_value(kCacheDType<W>, v, p, dd, D), acc);
      out[size_t(r) * ldo + dd] = acc;
    }
}

// weighted_rows for a number of rows known only at run time (1 .. RB).
template <class S, class W, int RB>
inline void weighted_rows_of(int rows, const float* a, int lda, int p0, int p1, int ahead, int P,
                             const void* v, int D, float* out, int ldo) {
  if constexpr (RB > 0) {
    if (rows == RB) return weighted_rows<S, W, RB>(a, lda, p0, p1, ahead, P, v, D, out, ldo);
    weighted_rows_of<S, W, RB - 1>(rows, a, lda, p0, p1, ahead, P, v, D, out, ldo);
  }
}

template <class S, class W>
void weighted_sum(const float* a, int lda, int R, int P, const void* v, int D, float* out,
                  int ldo) {
  // A q8_0 cache's values take more rows per pass: each is widened once for a group of 4 heads
  // (Qwen3.5's), where 2 rows a pass widened it twice.
  constexpr int RB = !std::is_same_v<W, Q8> ? S::weighted_rows : S::registers == 16 ? 4 : 6;
  // Positions in chunks of 32 KiB of values, which stay in L1/L2 while every group of RB rows and
  // every block of columns takes them, the next chunk prefetched meanwhile: a long cache is read
  // from memory once, with requests in flight, however many rows and column blocks there are.
  // Each output still adds its products in order of p.
  constexpr size_t kChunkBytes = 32 << 10;
  const int chunk = std::max<int>(1, kChunkBytes / row_bytes(kCacheDType<W>, D));
  for (int p0 = 0; p0 == 0 || p0 < P; p0 += chunk) {  // P = 0 still writes zeros
    const int p1 = std::min(P, p0 + chunk);
    int r = 0;
    for (; r + RB <= R; r += RB)
      weighted_rows<S, W, RB>(a + size_t(r) * lda, lda, p0, p1, chunk, P, v, D,
                              out + size_t(r) * ldo, ldo);
    if (r < R)
      weighted_rows_of<S, W, RB - 1>(R - r, a + size_t(r) * lda, lda, p0, p1, chunk, P, v, D,
                                     out + size_t(r) * ldo, ldo);
  }
}

// The table's append_kv: for an f32 or f16 cache a key's dimensions stored kKeyBlock apart, a
// value as a row; a q8_0 cache's as key_layout.h quantizes them. (S only keeps each instruction
// set's copy apart.)
template <class S, class W>
void append_kv(const float* k, const float* v, int ld, int n, int D, int p0, void* keys,
               void* values) {
  if constexpr (std::is_same_v<W, Q8>) {
    ops::append_q8(k, v, ld, n, D, p0, keys, values);
  } else {
    using T = std::conditional_t<std::is_same_v<W, float>, float, uint16_t>;
    auto convert = [](float x) -> T {
      if constexpr (std::is_same_v<W, float>) return x;
      else return f32_to_f16(x);
    };
    for (int t = 0; t < n; ++t) {
      T* key = static_cast<T*>(keys) + ops::key_offset(p0 + t, 0, D);
      T* value = static_cast<T*>(values) + size_t(p0 + t) * D;
      for (int d = 0; d < D; ++d) key[d * ops::kKeyBlock] = convert(k[size_t(t) * ld + d]);
      for (int d = 0; d < D; ++d) value[d] = convert(v[size_t(t) * ld + d]);
    }
  }
}

// e^x as Cephes' expf: x = n ln2 + r, |r| <= ln2 / 2, e^r by a degree-7 polynomial, times 2^n.
// 0 below -87.3, so the -inf pads of a partial vector vanish.
template <class S>
inline typename S::V vexp(typename S::V x) {
  using V = typename S::V;
  const V clamped = S::min(x, S::set1(88.37626f));
  const V n = S::round(S::mul(clamped, S::set1(1.44269504f)));
  V r = S::fma(n, S::set1(-0.693359375f), clamped);  // ln2 in two parts: r exact to float
  r = S::fma(n, S::set1(2.12194440e-4f), r);
  V p = S::set1(1.9875691500e-4f);
  for (float c :
       {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f})
    p = S::fma(p, r, S::set1(c));
  p = S::fma(p, S::mul(r, r), S::add(r, S::set1(1.0f)));
  return S::zero_below(S::ldexp(p, n), x, -87.33654f);
}

template <class S>
void softmax(float* s, int n, float scale) {
  using V = typename S::V;
  const int nv = n - n % S::lanes;
  float tail[S::lanes];  // the last partial vector, padded with -inf, which exp turns into 0
  std::fill_n(tail, S::lanes, -INFINITY);
  std::copy(s + nv, s + n, tail);
  auto each = [&](const auto& f) {
    for (int i = 0; i < nv; i += S::lanes) f(s + i);
    if (nv < n) f(tail);
  };
  V vmax = S::set1(-INFINITY);
  each([&](float* p) {
    const V v = S::mul(S::load(p), S::set1(scale));
    S::store(p, v);
    vmax = S::max(vmax, v);
  });
  const V m = S::set1(S::hmax(vmax));
  V vsum = S::zero();
  each([&](float* p) {
    const V e = vexp<S>(S::sub(S::load(p), m));
    S::store(p, e);
    vsum = S::add(vsum, e);
  });
  const V sum = S::set1(S::hsum(vsum));
  each([&](float* p) { S::store(p, S::div(S::load(p), sum)); });
  std::copy_n(tail, n - nv, s + nv);
}

template <class S>
void rms_norm(const float* x, const float* w, float eps, int n, float* out) {
  using V = typename S::V;
  const int nv = n - n % S::lanes;
  V acc = S::zero();
  for (int i = 0; i < nv; i += S::lanes) acc = S::fma(S::load(x + i), S::load(x + i), acc);
  float sum = S::hsum(acc);
  for (int i = nv; i < n; ++i) sum = std::fma(x[i], x[i], sum);
  const float scale = 1.0f / std::sqrt(sum / n + eps);
  for (int i = 0; i < nv; i += S::lanes)
    S::store(out + i, S::mul(S::load(w + i), S::mul(S::load(x + i), S::set1(scale))));
  for (int i = nv; i < n; ++i) out[i] = w[i] * (x[i] * scale);
}

template <class S>
void silu_mul(const float* gate, const float* up, int n, float* out) {
  using V = typename S::V;
  auto silu_times = [](V g, V u) {
    return S::mul(S::div(g, S::add(S::set1(1.0f), vexp<S>(S::sub(S::zero(), g)))), u);
  };
  const int nv = n - n % S::lanes;
  for (int i = 0; i < nv; i += S::lanes)
    S::store(out + i, silu_times(S::load(gate + i), S::load(up + i)));
  if (nv < n) {  // the last partial vector, through zero-padded copies
    float g[S::lanes] = {}, u[S::lanes] = {}, o[S::lanes];
    std::copy(gate + nv, gate + n, g);
    std::copy(up + nv, up + n, u);
    S::store(o, silu_times(S::load(g), S::load(u)));
    std::copy_n(o, n - nv, out + nv);
  }
}

// Columns [c, c + NV * lanes) of a delta rule step: the state's rows are read twice (decay and
// recall, then update and output), the columns' sums held in registers.
template <class S, int NV>
void delta_rule_columns(float* st, int dk, int dv, int c, const float* q, const float* k,
                        const float* v, float decay, float beta, float* out) {
  using V = typename S::V;
  V kv[NV], o[NV];
  for (int j = 0; j < NV; ++j) kv[j] = o[j] = S::zero();
  for (int i = 0; i < dk; ++i) {
    float* row = st + size_t(i) * dv + c;
    const V ki = S::set1(k[i]);
    for (int j = 0; j < NV; ++j) {
      const V r = S::mul(S::load(row + j * S::lanes), S::set1(decay));
      S::store(row + j * S::lanes, r);
      kv[j] = S::fma(r, ki, kv[j]);
    }
  }
  V delta[NV];
  for (int j = 0; j < NV; ++j)
    delta[j] = S::mul(S::sub(S::load(v + c + j * S::lanes), kv[j]), S::set1(beta));
  for (int i = 0; i < dk; ++i) {
    float* row = st + size_t(i) * dv + c;
    const V ki = S::set1(k[i]), qi = S::set1(q[i]);
    for (int j = 0; j < NV; ++j) {
      const V r = S::fma(ki, delta[j], S::load(row + j * S::lanes));
      S::store(row + j * S::lanes, r);
      o[j] = S::fma(r, qi, o[j]);
    }
  }
  for (int j = 0; j < NV; ++j) S::store(out + c + j * S::lanes, o[j]);
}

template <class S>
void delta_rule(float* st, int dk, int dv, const float* q, const float* k, const float* v,
                float decay, float beta, float* out) {
  int c = 0;
  for (; c + 4 * S::lanes <= dv; c += 4 * S::lanes)
    delta_rule_columns<S, 4>(st, dk, dv, c, q, k, v, decay, beta, out);
  for (; c + S::lanes <= dv; c += S::lanes)
    delta_rule_columns<S, 1>(st, dk, dv, c, q, k, v, decay, beta, out);
  for (; c < dv; ++c) {  // columns past the last whole vector
    float kv = 0;
    for (int i = 0; i < dk; ++i) kv = std::fma(st[size_t(i) * dv + c] *= decay, k[i], kv);
    const float delta = (v[c] - kv) * beta;
    float o = 0;
    for (int i = 0; i < dk; ++i)
      o = std::fma(st[size_t(i) * dv + c] = std::fma(k[i], delta, st[size_t(i) * dv + c]), q[i], o);
    out[c] = o;
  }
}

}  // namespace qwen3::cpu
