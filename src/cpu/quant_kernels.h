// Integer matmul kernels for q8_0 / q4_0 / q4_1 / q5_0 / q5_1 / iq4_nl / q4_k / q5_k / q6_k weights
// in the row-group layout, written once over an int8 vector type S, the way simd_kernels.h writes
// the float ones; src/cpu/<isa>/quant_kernels.cpp instantiate them.
//
// S provides: I (S::lanes int32 lanes of 4 bytes), V (S::lanes floats), MR (tokens per tile), vnni
// (udot is one instruction, so sign tricks are not needed), load(p) (S::lanes x 4 bytes), bcast4(p)
// (4 bytes into every lane), splat32, zero_i, zero, udot(u, s, acc) (acc + sums of 4 unsigned x
// signed byte products per lane), and without VNNI pairs(u, s) (sums of 2 such products per 16-bit
// lane, saturating), add16 and widen (a lane's two 16-bit sums into its 32 bits), abs8, sign8(x, w)
// (x * sign w), xor80, nib_lo, nib_hi, scales(p) (S::lanes f16 to float), ubytes(p) / sbytes(p)
// (S::lanes unsigned / signed bytes to float), shl16(v, n) / shr16(v, n) (each 16-bit lane
// shifted), and_, or_, sub8, splat8, set1, add32, cvt, mul, fma, loadf(p) / storef(p, v) (S::lanes
// floats), store(p, v, lo, hi) (lanes lo..hi-1 only), quantize_block(x, q, d, sum)
// (quantize_activations of one block, bit for bit),
// table16(p) (16 bytes into each 128-bit lane), lookup16(t, i) (bytes of t at indices i, 0..15,
// within each 128-bit lane).
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

// How a row group's unit (a block; q4_k: a super-block of `blocks` blocks) meets the int8
// activations: per block, `steps` products of one 4-byte chunk per row (one vector load) by 4
// broadcast activation bytes at x + xoff(step), exact in int32, into two chains (chain(step))
// started at corr x sum(x) and 0; then apply() scales the chains' sums into the float accumulator
// with the block's weight scales (Scales, from scales()).
template <class S, DType W>
struct Grouped;

// q8_0 and q4_0: one f16 scale per row and block, ahead of the quants; acc += isum * (d_w * d_x).
template <class S>
struct OneScale {
  using V = typename S::V;
  using I = typename S::I;
  static constexpr int blocks = 1;
  static constexpr int quants(int) { return 2 * kQuantRows; }
  // Alternate steps in two chains halve the dependent dpbusd run (8-token tiles 13% faster); the
  // chains are summed, so any split of the steps gives the same result.
  static constexpr int chain(int step) { return step % 2; }
  static constexpr bool chains_summed = true;
  using Scales = V;
  static V scales(const uint8_t* unit, int, int v) { return S::scales(unit + 2 * S::lanes * v); }
  static V apply(V ws, I isum0, I isum1, float xd, int32_t, V acc) {
    return S::fma(S::cvt(S::add32(isum0, isum1)), S::mul(ws, S::set1(xd)), acc);  // exact sum
  }
};

// Each type's max_pair bounds |u1 s1 + u2 s2|, two products of its unsigned weight operand and an
// activation byte (|x| <= 127).

// Signed weights (q8_0, iq4_nl): with VNNI, w + 128 is the unsigned operand and `corr` x sum(x)
// (once per token and block) corrects it. Without, |w| x (x * sign w) keeps maddubs' int16 pairs
// from saturating.
template <class S>
struct SignedWeights : OneScale<S> {
  using I = typename S::I;
  static constexpr int steps = kQuantBlock / kQuantChunk, corr = S::vnni ? -128 : 0;
  struct Wp {
    I u, w;
  };
  static Wp operands(I w) {
    if constexpr (S::vnni) return {S::xor80(w), w};
    else return {S::abs8(w), w};
  }
  static I signed_x(const Wp& w, I x) {
    if constexpr (S::vnni) return x;
    else return S::sign8(x, w.w);
  }
};

template <class S>
struct Grouped<S, DType::q8_0> : SignedWeights<S> {
  static constexpr int bytes = kQ8Bytes, max_pair = 2 * 128 * 127;  // |w| <= 128
  static typename SignedWeights<S>::Wp prep(const uint8_t* q, int step) {
    return SignedWeights<S>::operands(S::load(q + step * kQuantRows * kQuantChunk));
  }
  static constexpr int xoff(int step) { return step * kQuantChunk; }
};

// q4_0: the nibbles (0..15) are the unsigned operand, -8 x sum(x) corrects. Steps 0..3 take chunk
// j's low nibbles (elements 4j..), steps 4..7 its high nibbles (elements 16 + 4j..).
template <class S>
struct Grouped<S, DType::q4_0> : OneScale<S> {
  using I = typename S::I;
  static constexpr int bytes = kQ4Bytes, steps = kQuantBlock / kQuantChunk, corr = -8,
                       max_pair = 2 * 15 * 127;
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
  static I signed_x(const Wp&, I x) { return x; }
};

// iq4_nl: each nibble of q4_0's layout turned into its level (-127..113) by a byte shuffle.
template <class S>
struct Grouped<S, DType::iq4_nl> : SignedWeights<S> {
  static constexpr int bytes = kQ4Bytes, max_pair = 2 * 127 * 127;  // |w| <= 127
  static typename SignedWeights<S>::Wp prep(const uint8_t* q, int step) {
    const typename S::I n = S::load(q + step % 4 * kQuantRows * kQuantChunk);
    return SignedWeights<S>::operands(
        S::lookup16(S::table16(kIq4NlLevels), step < 4 ? S::nib_lo(n) : S::nib_hi(n)));
  }
  static constexpr int xoff(int step) { return Grouped<S, DType::q4_0>::xoff(step); }
};

// q4_0's nibbles for `step` with their fifth bits, from the chunk of fifth bits that follows the
// block's nibble chunks: bit `step` of each byte (elements 16h + 4c + i: bit 4h + c of byte i),
// moved to bit 4. q5_0, q5_1 and q5_k's unsigned operand (0..31).
template <class S>
inline typename S::I with_fifth_bit(const uint8_t* q, int step) {
  using I = typename S::I;
  const I w = S::load(q + step % 4 * kQuantRows * kQuantChunk);
  const I high = S::load(q + kQuantBlock / 2 * kQuantRows);
  // shifts of 4 or less keep each byte's bit 4 its own
  const I fifth =
      S::and_(step < 4 ? S::shl16(high, 4 - step) : S::shr16(high, step - 4), S::splat8(0x10));
  return S::or_(step < 4 ? S::nib_lo(w) : S::nib_hi(w), fifth);
}

// q4_1: q4_0's nibbles, uncorrected; the min is added in float, as q4_k's: acc += isum * (d x_d),
// then acc += m * (x_d sum(x)).
template <class S>
struct Grouped<S, DType::q4_1> : Grouped<S, DType::q4_0> {
  using I = typename S::I;
  using V = typename S::V;
  static constexpr int bytes = kQ41Bytes, corr = 0;
  static constexpr int quants(int) { return 4 * kQuantRows; }
  struct Scales {
    V d, m;
  };
  static Scales scales(const uint8_t* unit, int, int v) {
    return {S::scales(unit + 2 * S::lanes * v),
            S::scales(unit + 2 * kQuantRows + 2 * S::lanes * v)};
  }
  static V apply(const Scales& w, I isum0, I isum1, float xd, int32_t xsum, V acc) {
    return with_min(w, isum0, isum1, xd, xd * float(xsum), acc);
  }
  // acc + isum (d x_d) + m min_x
  static V with_min(const Scales& w, I isum0, I isum1, float xd, float min_x, V acc) {
    acc = S::fma(S::cvt(S::add32(isum0, isum1)), S::mul(w.d, S::set1(xd)), acc);
    return S::fma(w.m, S::set1(min_x), acc);
  }
};

// A 4-bit type B's weights given their fifth bits (q 0..31): q5_0, q5_1 and q5_k.
template <class S, DType B>
struct WithFifthBit : Grouped<S, B> {
  static constexpr int max_pair = 2 * 31 * 127;
  using Wp = typename Grouped<S, DType::q4_0>::Wp;
  static Wp prep(const uint8_t* q, int step) { return {with_fifth_bit<S>(q, step)}; }
};

// q5_0: q4_0 with a fifth bit, -16 x sum(x) corrects.
template <class S>
struct Grouped<S, DType::q5_0> : WithFifthBit<S, DType::q4_0> {
  static constexpr int bytes = kQ50Bytes, corr = -16;
};

// q5_1: q4_1 with a fifth bit.
template <class S>
struct Grouped<S, DType::q5_1> : WithFifthBit<S, DType::q4_1> {
  static constexpr int bytes = kQ51Bytes;
};

// q4_k: q4_1 in super-blocks of 8 blocks, each block's scale d sc and min dmin m, the min
// subtracted, as llama.cpp does: acc += isum * (d sc x_d), then acc += dmin m * -(x_d sum(x)).
// d sc and dmin m are exact (an f16 times a 6-bit integer).
template <class S>
struct Grouped<S, DType::q4_k> : Grouped<S, DType::q4_1> {
  using I = typename S::I;
  using V = typename S::V;
  using Scales = typename Grouped<S, DType::q4_1>::Scales;
  static constexpr int bytes = kQ4KBytes, blocks = kSuperBlock / kQuantBlock;
  static constexpr int quants(int b) { return (20 + b * kQuantBlock / 2) * kQuantRows; }
  static Scales scales(const uint8_t* unit, int b, int v) {
    const uint8_t* sc = unit + 4 * kQuantRows + S::lanes * v;
    return {S::mul(S::scales(unit + 2 * S::lanes * v), S::ubytes(sc + b * kQuantRows)),
            S::mul(S::scales(unit + 2 * kQuantRows + 2 * S::lanes * v),
                   S::ubytes(sc + (blocks + b) * kQuantRows))};
  }
  static V apply(const Scales& w, I isum0, I isum1, float xd, int32_t xsum, V acc) {
    return Grouped<S, DType::q4_1>::with_min(w, isum0, isum1, xd, -(xd * float(xsum)), acc);
  }
};

// q5_k: q4_k with a fifth bit for each nibble (q 0..31), from the block's chunk of fifth bits.
template <class S>
struct Grouped<S, DType::q5_k> : WithFifthBit<S, DType::q4_k> {
  static constexpr int bytes = kQ5KBytes;
  static constexpr int quants(int b) {
    return (20 + b * (kQuantBlock / 2 + kQuantChunk)) * kQuantRows;
  }
};

// q6_k: each step's 6-bit q from its nibble and two high bits, less 32, as q8_0's signed weights
// without VNNI (|w| x (x * sign w): the halves of a block have scales of their own, and sum(x)
// covers both). The chains are the halves (steps 0..3: elements 0..15, 4..7: 16..31).
template <class S>
struct Grouped<S, DType::q6_k> {
  using I = typename S::I;
  using V = typename S::V;
  static constexpr int bytes = kQ6KBytes, blocks = kSuperBlock / kQuantBlock,
                       steps = kQuantBlock / kQuantChunk, corr = 0, max_pair = 2 * 32 * 127;
  static constexpr int quants(int b) { return (18 + 24 * b) * kQuantRows; }
  static constexpr int chain(int step) { return step / 4; }
  static constexpr bool chains_summed = false;
  struct Wp {
    I u, w;
  };
  static Wp prep(const uint8_t* q, int step) {
    const int c = step % 4, h = step / 4;
    const I nibbles = S::load(q + c * kQuantRows * kQuantChunk);
    const I high = S::load(q + (kQuantBlock / 2 + h * kQuantChunk) * kQuantRows);
    // chunk c's two bits are bits 2c of each byte: to bits 4, 5 (shifts of 4 or less keep each
    // byte's bits 4, 5 its own)
    const I top =
        S::and_(c < 2 ? S::shl16(high, 4 - 2 * c) : S::shr16(high, 2 * c - 4), S::splat8(0x30));
    const I w = S::sub8(S::or_(h ? S::nib_hi(nibbles) : S::nib_lo(nibbles), top), S::splat8(32));
    return {S::abs8(w), w};
  }
  static constexpr int xoff(int step) {
    return step / 4 * kQuantBlock / 2 + step % 4 * kQuantChunk;
  }
  static I signed_x(const Wp& w, I x) { return S::sign8(x, w.w); }
  struct Scales {
    V lo, hi;  // d sc of the two halves: exact (an f16 times an 8-bit integer)
  };
  static Scales scales(const uint8_t* unit, int b, int v) {
    const V d = S::scales(unit + 2 * S::lanes * v);
    const uint8_t* sc = unit + 2 * kQuantRows + S::lanes * v;
    return {S::mul(d, S::sbytes(sc + 2 * b * kQuantRows)),
            S::mul(d, S::sbytes(sc + (2 * b + 1) * kQuantRows))};
  }
  static V apply(const Scales& w, I isum0, I isum1, float xd, int32_t, V acc) {
    const V xs = S::set1(xd);
    acc = S::fma(S::cvt(isum0), S::mul(w.lo, xs), acc);
    return S::fma(S::cvt(isum1), S::mul(w.hi, xs), acc);
  }
};

// MR tokens against one complete row group at g; writes outputs lo..hi-1 of the group (y points at
// its first). Per block, the prepared weights and the 16 scales serve all MR tokens, and each
// token pays one convert, one scale product and one FMA (q4_1, q5_1, q4_k, q5_k: two FMAs; q6_k:
// two each) per S::lanes outputs.
template <class S, DType W, int MR>
inline void group_tile(const int8_t* xq, const float* xd, const int32_t* xsum, int K,
                       const uint8_t* g, float* y, int ldy, int lo, int hi) {
  using F = Grouped<S, W>;
  using I = typename S::I;
  using V = typename S::V;
  constexpr int nv = kQuantRows / S::lanes, chains = 2;
  constexpr int span = kQuantRows * F::bytes / F::blocks;  // the group's bytes per block
  // Without VNNI, a chain's 16-bit pair sums are added as they are and widened to 32 bits once a
  // block, where they cannot saturate: a third fewer integer instructions (AVX2: Q4_K_M prompts 22%
  // faster).
  constexpr bool in16 = !S::vnni && F::steps / chains * F::max_pair <= INT16_MAX;
  // ... and where the whole block fits too and the chains are summed anyway, in one chain: half the
  // widening (q4_0, q4_k).
  constexpr bool one16 = in16 && F::chains_summed && F::steps * F::max_pair <= INT16_MAX;
  auto chain16 = [](int step) { return one16 ? 0 : F::chain(step); };
  const int nb = K / kQuantBlock;
  V acc[MR][nv];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < nv; ++v) acc[r][v] = S::zero();
  for (int u = 0; u < nb / F::blocks; ++u) {
    const uint8_t* unit = g + size_t(u) * kQuantRows * F::bytes;
    for (int j = 0; j < F::blocks; ++j) {  // the unit's blocks
      const int b = u * F::blocks + j;
      // into L2, 8 KiB ahead: q4 decode 5% faster than into L1 (T0) at any distance
      if constexpr (MR == 1)
        for (int l = 0; l < span; l += 64)
          _mm_prefetch(reinterpret_cast<const char*>(unit) + j * span + 16 * kPrefetchBytes + l,
                       _MM_HINT_T1);
      typename F::Scales ws[nv];
      typename F::Wp wp[F::steps][nv];
      for (int v = 0; v < nv; ++v) {
        ws[v] = F::scales(unit, j, v);
        if constexpr (MR > 1)
          for (int s = 0; s < F::steps; ++s)
            wp[s][v] = F::prep(unit + F::quants(j) + kQuantChunk * S::lanes * v, s);
      }
      // Prepared once for a tile's tokens; for one token, as each step needs them (prepared ahead,
      // they would not fit in registers: q8_0 decode 4% slower).
      auto weights = [&](int s, int v) {
        if constexpr (MR > 1) return wp[s][v];
        else return F::prep(unit + F::quants(j) + kQuantChunk * S::lanes * v, s);
      };
      // Unrolled, so that acc stays in registers (a rolled loop indexes it in memory: q4 30%
      // slower).
#pragma GCC unroll 16
      for (int r = 0; r < MR; ++r) {
        const int8_t* x = xq + size_t(r) * K + size_t(b) * kQuantBlock;
        I isum[chains][nv];
        for (int v = 0; v < nv; ++v) {
          isum[0][v] = F::corr ? S::splat32(F::corr * xsum[r * nb + b]) : S::zero_i();
          isum[1][v] = S::zero_i();
        }
        I pairs[chains][nv];  // in16's partial sums
        for (int c = 0; c < chains; ++c)
          for (int v = 0; v < nv; ++v) pairs[c][v] = S::zero_i();
#pragma GCC unroll 16
        for (int s = 0; s < F::steps; ++s) {
          const I xb = S::bcast4(x + F::xoff(s));
          for (int v = 0; v < nv; ++v) {
            const auto w = weights(s, v);
            const I sx = F::signed_x(w, xb);
            if constexpr (in16)
              pairs[chain16(s)][v] = S::add16(pairs[chain16(s)][v], S::pairs(w.u, sx));
            else isum[F::chain(s)][v] = S::udot(w.u, sx, isum[F::chain(s)][v]);
          }
        }
        if constexpr (in16)
          for (int c = 0; c < (one16 ? 1 : chains); ++c)
            for (int v = 0; v < nv; ++v) isum[c][v] = S::add32(isum[c][v], S::widen(pairs[c][v]));
        for (int v = 0; v < nv; ++v)
          acc[r][v] =
              F::apply(ws[v], isum[0][v], isum[1][v], xd[r * nb + b], xsum[r * nb + b], acc[r][v]);
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
  t.matmul_q4_1 = matmul_quant<S, DType::q4_1>;
  t.matmul_q5_0 = matmul_quant<S, DType::q5_0>;
  t.matmul_q5_1 = matmul_quant<S, DType::q5_1>;
  t.matmul_iq4_nl = matmul_quant<S, DType::iq4_nl>;
  t.matmul_q4_k = matmul_quant<S, DType::q4_k>;
  t.matmul_q5_k = matmul_quant<S, DType::q5_k>;
  t.matmul_q6_k = matmul_quant<S, DType::q6_k>;
  return t;
}

}  // namespace qwen3::cpu
