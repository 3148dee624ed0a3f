// Prefill's matrix product as broadcast multiply-adds over packed panels of W (the BLIS way),
// summing every output in exactly the order of the dot-product tiles in simd_kernels.h.
//
// A dot tile gives each output S::lanes partial sums: lane i takes, one after another, the terms
// at positions j * lanes + i (j = 0, 1, ...) of the prepared x row, and hsum then folds the lanes
// in halves ((i, i + lanes/2), then (i, i + lanes/4), ...). Here the lanes run along W's rows
// instead: a panel of rows is transposed once into "lane i, step j" order, so that lane i's terms
// for MR tokens x NR vectors of rows are plain broadcasts and multiply-adds, with no widening and
// no horizontal sums in the inner loop; the lane partials then take the same fold, vector by
// vector. Same operations in the same order: the same bits as the dot tiles, for any T.
#pragma once

#include <algorithm>

#include "cpu/simd_kernels.h"
#include "io/huge_page_buffer.h"

namespace qwen3::cpu {

// Each lane's run of J steps (of `width` floats) is followed by one unused step, so that the runs
// do not start a multiple of 4 KiB apart: the stores of a transpose would fight over L1 sets.
inline size_t lane_run(int J, int width) { return size_t(J + 1) * width; }

// Floats a packed block of `width` columns takes: every lane's run, then the K tail.
inline size_t packed_size(int K, int lanes, int width) { return size_t(K + lanes) * width; }

// Rows [n, n + rows) of W (rows <= NR x lanes, the rest zero; rotated by lead) as
// [lane][step][NR vectors], then the K tail as [k][NR vectors]. bf16 rows transpose as 32-bit
// pairs, whose halves are lane i's even and odd steps: one transpose per two steps.
template <class S, class W, int NR>
void pack_panel(const void* w, int K, int lead, int n, int rows, float* out) {
  constexpr int L = S::lanes, P = kPaired<W> ? 2 : 1;
  const int kv = K - K % k_step<S, W>(), J = kv / L;
  auto at = [&](int i, int j, int g) {
    return out + i * lane_run(J, NR * L) + (size_t(j) * NR + g) * L;
  };
  for (int g = 0; g < NR; ++g)
    for (int j = 0; j < J; j += P) {
      typename S::V v[L];
      for (int r = 0; r < L; ++r) {
        const char* row = static_cast<const char*>(w) + size_t(n + g * L + r) * K * sizeof_w<W>();
        if (g * L + r >= rows) v[r] = S::zero();
        else if (lead && j == 0) v[r] = load_chunk<S, W, true>(row, -lead, K);
        else v[r] = load_chunk<S, W, false>(row, j * L - lead, K);
      }
      S::transpose(v);  // v[i]: lane i of the L rows
      for (int i = 0; i < L; ++i) {
        if constexpr (kPaired<W>) {
          S::store(at(i, j, g), S::bf16_even(v[i]));
          S::store(at(i, j + 1, g), S::bf16_odd(v[i]));
        } else {
          S::store(at(i, j, g), v[i]);
        }
      }
    }
  float* tail = out + L * lane_run(J, NR * L);
  for (int k = kv; k < K; ++k)
    for (int c = 0; c < NR * L; ++c)
      tail[size_t(k - kv) * NR * L + c] = c < rows ? scalar_w<W>(w, size_t(n + c) * K + k) : 0;
}

// Floats of x packed for T tokens: tiles of MR tokens, each lane's run of steps one vector wide.
template <class S>
size_t packed_x_floats(int T, int K) {
  return size_t((T + S::packed_mr - 1) / S::packed_mr) * packed_size(K, S::lanes, S::lanes);
}

// Row t of x (as it comes, not reordered) packed in the same order as the panels: in the tile of
// MR tokens holding it, for each lane and step, then each tail k, the tokens' terms side by side
// (row t in slot t % MR of one vector's room).
template <class S, class W>
void pack_row(const float* x, int K, int t, float* out) {
  constexpr int L = S::lanes, MR = S::packed_mr;
  static_assert(MR <= L);
  const int kv = K - K % k_step<S, W>(), J = kv / L;
  const float* xr = x + size_t(t) * K;
  float* tile = out + size_t(t / MR) * packed_size(K, L, L) + t % MR;
  for (int i = 0; i < L; ++i)
    for (int j = 0; j < J;
         ++j)  // lane i's step j: of each chunk of 2 x lanes, element 2i or 2i + 1 for bf16
      tile[i * lane_run(J, L) + size_t(j) * L] =
          xr[kPaired<W> ? j / 2 * 2 * L + 2 * i + j % 2 : j * L + i];
  for (int k = kv; k < K; ++k) tile[L * lane_run(J, L) + size_t(k - kv) * L] = xr[k];
}

// pack_row for the MR rows of one whole tile at once: a transpose per step.
template <class S, class W>
void pack_tile(const float* x, int K, float* tile) {
  constexpr int L = S::lanes, MR = S::packed_mr, P = kPaired<W> ? 2 : 1;
  const int kv = K - K % k_step<S, W>(), J = kv / L;
  for (int j = 0; j < J; j += P) {
    typename S::V v[P][L];  // v[p][r]: row r's terms of step j + p, one per lane
    for (int r = 0; r < L; ++r) {
      const float* at = x + size_t(r) * K + size_t(j) * L;
      if (r >= MR)
        for (auto& vp : v) vp[r] = S::zero();
      else if constexpr (kPaired<W>)
        S::deinterleave(S::load(at), S::load(at + L), v[0][r], v[1][r]);
      else v[0][r] = S::load(at);
    }
    for (int p = 0; p < P; ++p) {
      S::transpose(v[p]);  // v[p][i]: lane i of each row
      for (int i = 0; i < L; ++i) S::store(tile + i * lane_run(J, L) + size_t(j + p) * L, v[p][i]);
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int k = kv; k < K; ++k)
      tile[L * lane_run(J, L) + size_t(k - kv) * L + r] = x[size_t(r) * K + k];
}

// Rows [t0, t1) of x packed: whole tiles by transposes, the rows of tiles split with other calls
// one by one.
template <class S, class W>
void pack_rows(const float* x, int K, int t0, int t1, float* out) {
  constexpr int MR = S::packed_mr;
  int t = t0;
  for (; t < t1 && t % MR; ++t) pack_row<S, W>(x, K, t, out);
  for (; t + MR <= t1; t += MR)
    pack_tile<S, W>(x + size_t(t) * K, K,
                    out + size_t(t / MR) * packed_size(K, S::lanes, S::lanes));
  for (; t < t1; ++t) pack_row<S, W>(x, K, t, out);
}

// MR tokens x NR vectors of rows, from packed x and W, into `rows` rows and `cols` columns of y.
// Lanes L/2 .. L-1 fold into the partials of lanes 0 .. L/2-1 straight from the registers; `part`
// holds L/2 x MR x NR vectors.
template <class S, int MR, int NR>
inline void packed_tile(const float* xp, const float* wp, int K, int J, float* part, float* y,
                        int ldy, int rows, int cols) {
  using V = typename S::V;
  constexpr int L = S::lanes, H = L / 2;
  auto at = [&](int i, int r, int c) { return part + ((size_t(i) * MR + r) * NR + c) * L; };
  for (int i = 0; i < L; ++i) {
    V acc[MR][NR];
    for (int r = 0; r < MR; ++r)
      for (int c = 0; c < NR; ++c) acc[r][c] = S::zero();
    const float* xs = xp + i * lane_run(J, L);
    const float* ws = wp + i * lane_run(J, NR * L);
#pragma GCC unroll 2
    for (int j = 0; j < J; ++j) {
      _mm_prefetch(reinterpret_cast<const char*>(xs + size_t(j) * L) + kPrefetchBytes,
                   _MM_HINT_T0);  // x comes from L3
      V wv[NR];
      for (int c = 0; c < NR; ++c) wv[c] = S::load(ws + (size_t(j) * NR + c) * L);
      for (int r = 0; r < MR; ++r) {
        const V xb = S::set1(xs[size_t(j) * L + r]);
        for (int c = 0; c < NR; ++c) acc[r][c] = S::fma(xb, wv[c], acc[r][c]);
      }
    }
    for (int r = 0; r < MR; ++r)
      for (int c = 0; c < NR; ++c)
        S::store(at(i % H, r, c), i < H ? acc[r][c] : S::add(acc[r][c], S::load(at(i % H, r, c))));
  }
  for (int h = H / 2; h >= 1; h /= 2)  // the rest of hsum's fold
    for (int i = 0; i < h; ++i)
      for (int r = 0; r < MR; ++r)
        for (int c = 0; c < NR; ++c)
          S::store(at(i, r, c), S::add(S::load(at(i, r, c)), S::load(at(i + h, r, c))));
  const int kv = J * L;  // the K tail, in order, after the fold (as the dot tiles add it)
  for (int k = kv; k < K; ++k)
    for (int r = 0; r < MR; ++r) {
      const V xb = S::set1(xp[L * lane_run(J, L) + size_t(k - kv) * L + r]);
      const float* wk = wp + L * lane_run(J, NR * L) + size_t(k - kv) * NR * L;
      for (int c = 0; c < NR; ++c)
        S::store(at(0, r, c), S::fma(xb, S::load(wk + c * L), S::load(at(0, r, c))));
    }
  for (int r = 0; r < rows; ++r)  // the tile's valid rows and columns of y
    for (int c = 0; c < NR; ++c) {
      const int n = cols - c * L;
      if (n >= L) S::store(y + size_t(r) * ldy + c * L, S::load(at(0, r, c)));
      else if (n > 0) std::copy_n(at(0, r, c), n, y + size_t(r) * ldy + c * L);
    }
}

// Share `part` of `parts` of W rows [n, n + rows), fetched into L2.
template <class W>
inline void prefetch_share(const void* w, int K, int n, int rows, int part, int parts) {
  const size_t begin = size_t(n) * K * sizeof_w<W>(), bytes = size_t(rows) * K * sizeof_w<W>();
  const char* base = static_cast<const char*>(w) + begin;
  for (size_t b = bytes * part / parts / 64 * 64; b < bytes * (part + 1) / parts; b += 64)
    _mm_prefetch(base + b, _MM_HINT_T1);
}

// The product for many tokens, x packed by pack_rows: W in panels of NR x lanes rows, each
// packed once and taken (from L2) by every MR-token tile.
template <class S, class W>
void packed_matmul(const float* xp, int T, int K, const void* w, int lead, int n0, int n1, float* y,
                   int ldy) {
  constexpr int MR = S::packed_mr, NR = S::packed_nr, PR = NR * S::lanes;
  const int J = (K - K % k_step<S, W>()) / S::lanes, tiles = (T + MR - 1) / MR;
  thread_local io::Buffer<float> wp, part;
  wp.resize(packed_size(K, S::lanes, PR));
  part.resize(size_t(S::lanes / 2) * MR * PR);
  for (int n = n0; n < n1; n += PR) {
    const int rows = std::min(PR, n1 - n), next_rows = std::clamp(n1 - n - PR, 0, PR);
    pack_panel<S, W, NR>(w, K, lead, n, rows, wp.data());
    for (int tile = 0; tile < tiles; ++tile) {
      // Each tile fetches its share of the next panel's rows into L2, so packing it waits on no
      // memory.
      prefetch_share<W>(w, K, n + PR, next_rows, tile, tiles);
      packed_tile<S, MR, NR>(xp + tile * packed_size(K, S::lanes, S::lanes), wp.data(), K, J,
                             part.data(), y + size_t(tile) * MR * ldy + n, ldy,
                             std::min(MR, T - tile * MR), rows);
    }
  }
}

}  // namespace qwen3::cpu
