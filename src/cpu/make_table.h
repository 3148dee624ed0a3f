// One instruction set's kernel table, from the kernels of simd_kernels.h and packed_matmul.h.
#pragma once

#include <algorithm>

#include "cpu/packed_matmul.h"
#include "cpu/simd_kernels.h"
#include "ops/kernels.h"

namespace qwen3::cpu {

// Up to S::MR_batch tokens (decode, batched decode): every row of x in one tile, so the weights
// stream from memory once, with as many W rows in flight as the registers hold. Short prompts:
// tiles of S::MR rows over W panels kept in L2. Long prompts: packed panels. All give the same
// bits.
template <class S, class W>
void matmul(const float* x, int T, int K, const void* w, int lead, int n0, int n1, float* y,
            int ldy) {
  if (T <= S::MR_batch)
    return row_group_of<S, W, S::MR_batch>(T, x, size_t(T) * k_step<S, W>(), K, w, lead, n0, n1, y,
                                           ldy);
  if (T >= S::packed_min_tokens) return packed_matmul<S, W>(x, T, K, w, lead, n0, n1, y, ldy);
  blocked<S, W, S::MR>(x, T, K, w, lead, n0, n1, y, ldy);
}

// x as matmul<S, W> reads it for T rows: packed in token tiles for packed panels, interleaved
// in chunks for the dot tiles.
template <class S, class W>
void prepare_x(const float* x, int T, int K, int t0, int t1, float* out) {
  if (T >= S::packed_min_tokens) return pack_rows<S, W>(x, K, t0, t1, out);
  interleave_rows<S, W>(x, T, K, t0, t1, out);
}

template <class S>
size_t prepared_floats(int T,
                       int K) {  // any dtype's: rows padded to whole chunks of at most 2 x lanes
  return T >= S::packed_min_tokens ? packed_x_floats<S>(T, K) : size_t(T) * (K + 2 * S::lanes);
}

template <class S>
ops::KernelTable make_table(const char* name) {
  ops::KernelTable table{
      name,
      {matmul<S, float>, matmul<S, F16>, matmul<S, Bf16>},
      {lead_for<S, float>, lead_for<S, F16>, lead_for<S, Bf16>},
      {prepare_x<S, float>, prepare_x<S, F16>, prepare_x<S, Bf16>},
      prepared_floats<S>,
      S::packed_mr,
      {key_scores<S, float>, key_scores<S, F16>, nullptr, nullptr},  // q8_0: q8_key_scores.h
      {weighted_sum<S, float>, weighted_sum<S, F16>, nullptr, weighted_sum<S, Q8>},
      {append_kv<S, float>, append_kv<S, F16>, nullptr, append_kv<S, Q8>},
      softmax<S>,
      rms_norm<S>,
      silu_mul<S>,
      delta_rule<S>};
  table.pass_rows = S::MR_batch;
  return table;
}

}  // namespace qwen3::cpu
