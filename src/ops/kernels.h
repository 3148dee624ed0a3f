// The hot kernels, once per instruction set, behind one table chosen at start-up.
#pragma once

#include <algorithm>
#include <string_view>

#include "io/dtype.h"
#include "ops/key_layout.h"

namespace qwen3::ops {

// y[t * ldy + n] = dot(x[t, :K], w[n, :K]) for t < T and n in [n0, n1); w is row-major [N, K] of
// the kernel's dtype, each row read rotated right by `lead` elements (x[t] rotated to match, see
// rotate_rows). The reduction order of each output depends on K and lead only, never on T or the
// n range, so results do not change with batching or threading.
using MatmulKernel = void (*)(const float* x, int T, int K, const void* w, int lead, int n0, int n1,
                              float* y, int ldy);

// The same contract for block-quantized w (q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, q4_k, q5_k, q6_k)
// of N rows in the grouped layout of io/quant_blocks.h, with x already quantized per row
// (quantize_x): xq [T, K] int8, xd [T, K / 32] float scales and xsum [T, K / 32] block sums. Each
// block's integer dot product is exact; each output then takes, block after block,
// acc = fma(float(isum), d_w * d_x, acc) (q4_1, q5_1: then acc = fma(m_w, d_x * xsum, acc); q4_k,
// q5_k: then acc = fma(dmin_w, -(d_x * xsum), acc); q6_k: the block's two halves of 16 in turn,
// each with its own scale): one order for every T, n range and row group.
using QuantMatmulKernel = void (*)(const int8_t* xq, const float* xd, const int32_t* xsum, int T,
                                   int K, const void* w, int N, int n0, int n1, float* y, int ldy);

// Every table's lead for a matrix depends on its address modulo this only (the largest chunk a
// kernel loads: 64 bytes on AVX-512, 32 on AVX2), so a copy of a matrix placed at the same address
// modulo kLeadPeriod gives the same bits (qwen3 quantize --keep-head's float tensors).
constexpr size_t kLeadPeriod = 64;

// The KV cache dtypes, the first DTypes: f32, f16, bf16, q8_0.
constexpr int kCacheTypes = int(DType::q8_0) + 1;

struct KernelTable {
  const char* name;
  // Indexed by DType: f32, f16, bf16. Each reads x as prepare_x of its dtype writes it for the
  // product's T rows: interleaved in chunks for few rows (bf16 pairs reordered), packed in token
  // tiles for many (sizes in prepared_floats). Rows [t0, t1) of T can be prepared in any split,
  // in parallel.
  MatmulKernel matmul[3];
  // The lead for w: the rotation that puts the kernels' loads on whole cache lines wherever the
  // file placed the matrix. A lead returned for any w of the same K and dtype gives the right
  // product (maybe only a slower one).
  int (*lead[3])(const void* w, int K);
  void (*prepare_x[3])(const float* x, int T, int K, int t0, int t1, float* out);
  size_t (*prepared_floats)(int T, int K);
  int tile_rows;  // rows per token tile of prepared x: splits at its multiples keep tiles whole
  // The attention kernels, indexed by the KV cache's DType: f32, f16 (widened as read), bf16
  // (null where the table has no bf16 dot products: q and a are rounded to bf16 and multiplied in
  // pairs, as key_layout.h lays the cache out), q8_0 (values: int8 times its group's scale, as
  // read; scores: the query quantized as quantize_x, each group's integer dot product times the two
  // scales). s[r * lds + p] = dot(q[r * ldq, :D], key p) for r < R and p < P rounded up to
  // kKeyBlock (the last block's spare positions score whatever they hold), keys blocked as
  // key_offset. Each score is one multiply-add per dimension (or pair, or q8_0 group), in order of
  // d: it depends on its query and key only.
  void (*key_scores[kCacheTypes])(const float* q, int ldq, int R, int D, const void* k, int P,
                                  float* s, int lds);
  // out[r, :] = sum over p < P of a[r, p] * v[p, :] for r < R; a [R, lda], v [P, D] (value_offset),
  // out [R, ldo]. Each output is one multiply-add per p (or pair), in order of p, so it depends on
  // nothing but its row.
  void (*weighted_sum[kCacheTypes])(const float* a, int lda, int R, int P, const void* v, int D,
                                    float* out, int ldo);
  // n tokens' keys and values of one head (rows of D floats, ld apart) stored at positions p0 ..
  // p0 + n - 1 of the head's cache (keys, values: its position 0), converted to the cache's dtype
  // and laid out as key_offset and value_offset say; null where key_scores is. For bf16, rounded
  // to nearest even as the bf16 kernels round their other factor (AVX512_BF16 rounds denormals to
  // 0, which its dot products would read them as anyway).
  void (*append_kv[kCacheTypes])(const float* k, const float* v, int ld, int n, int D, int p0,
                                 void* keys, void* values);
  // s[:n] = softmax(scale * s[:n]), in place. The SIMD kernels use their own exp (a few ulp off
  // std::exp), lanes in an order fixed by n.
  void (*softmax)(float* s, int n, float scale);
  // out[:n] = w * x / sqrt(mean(x^2) + eps), one row; out may alias x.
  void (*rms_norm)(const float* x, const float* w, float eps, int n, float* out);
  // out[:n] = silu(gate) * up, SwiGLU's gating; out may alias gate or up.
  void (*silu_mul)(const float* gate, const float* up, int n, float* out);
  // One token of the gated delta rule on one head's state st [dk, dv] (ops::gated_delta_rule):
  // st *= decay; delta = beta (v - k st); st += k delta; out = q st. Each column of st and out
  // is computed on its own, its sums over dk in order of i.
  void (*delta_rule)(float* st, int dk, int dv, const float* q, const float* k, const float* v,
                     float decay, float beta, float* out);
  // Filled by each ISA's quant_kernels.cpp. quantize_x is quantize_activations (io/quant_blocks.h),
  // bit for bit.
  void (*quantize_x)(const float* x, int K, int8_t* q, float* d, int32_t* sum) = nullptr;
  QuantMatmulKernel matmul_q8_0 = nullptr;
  QuantMatmulKernel matmul_q4_0 = nullptr;
  QuantMatmulKernel matmul_q4_1 = nullptr;
  QuantMatmulKernel matmul_q5_0 = nullptr;
  QuantMatmulKernel matmul_q5_1 = nullptr;
  QuantMatmulKernel matmul_iq4_nl = nullptr;
  QuantMatmulKernel matmul_q4_k = nullptr;
  QuantMatmulKernel matmul_q5_k = nullptr;
  QuantMatmulKernel matmul_q6_k = nullptr;
  // Rows of x that share one pass over the float weights (one tile): a decode batch or a
  // speculative verification up to this size reads the weights once.
  int pass_rows = 1;
};

// The table's integer kernel for block-quantized w of dtype `w`.
inline QuantMatmulKernel quant_matmul(const KernelTable& t, DType w) {
  switch (w) {
    case DType::q8_0: return t.matmul_q8_0;
    case DType::q4_0: return t.matmul_q4_0;
    case DType::q4_1: return t.matmul_q4_1;
    case DType::q5_0: return t.matmul_q5_0;
    case DType::q5_1: return t.matmul_q5_1;
    case DType::iq4_nl: return t.matmul_iq4_nl;
    case DType::q4_k: return t.matmul_q4_k;
    case DType::q5_k: return t.matmul_q5_k;
    case DType::q6_k: return t.matmul_q6_k;
    default: return nullptr;
  }
}

// Rows [t0, t1) of x [T, K] rotated right by `lead`: out[t, k] = x[t, (k - lead) mod K], as a
// matmul of that lead reads W's rows.
inline void rotate_rows(const float* x, int K, int lead, int t0, int t1, float* out) {
  for (int t = t0; t < t1; ++t) {
    const float* row = x + size_t(t) * K;
    std::rotate_copy(row, row + K - lead, row + K, out + size_t(t) * K);
  }
}

// The integer kernels of each instruction set (quantized weights, a q8_0 cache's scores), added
// to its table (the same CPU requirements).
KernelTable with_reference_quant(KernelTable t);
KernelTable with_avx2_quant(KernelTable t);
// vnni: VNNI's dpbusd (auto where the CPU has it); else AVX512BW's maddubs + madd.
KernelTable with_avx512_quant(KernelTable t, bool vnni);
// bf16 weights' products with x rounded to bf16, as AVX512_BF16 dot products (--activations bf16).
KernelTable with_avx512_bf16_dot(KernelTable t);
// Attention over a bf16 KV cache as AVX512_BF16 dot products (the table's bf16 cache entries).
KernelTable with_avx512_bf16_attention(KernelTable t);
// bf16 weights' products on AMX tiles: x exact as three bf16 parts, or rounded to one.
KernelTable with_amx(KernelTable t, bool exact);
bool amx_usable();  // AMX-BF16 on the CPU, and the OS grants this process its tiles

const KernelTable& reference_kernels();  // plain loops: the oracle, and the fallback
// Only call these where cpu_supports() says so: their code uses the instruction set.
const KernelTable& avx2_kernels();    // needs AVX2 + FMA + F16C
const KernelTable& avx512_kernels();  // needs AVX-512 F/BW/VL/DQ + FMA + F16C
const KernelTable&
avx512_bf16_kernels();             // avx512_kernels with bf16 activations: needs AVX512_BF16 too
const KernelTable& amx_kernels();  // avx512_kernels with bf16 weights on AMX tiles: needs AMX-BF16
const KernelTable& amx_bf16_kernels();    // the same with bf16 activations
bool cpu_supports(std::string_view isa);  // "scalar", "avx2", "avx512", "avx512-bf16", "amx"

// isa: "auto" picks the widest vector set the CPU has (never "amx": decode is slower on tiles);
// "amx", "avx512", "avx2", "scalar" force one (an error when absent). activations (how bf16
// weights' products take x): "f32" exact, "bf16" rounded for AVX512_BF16 dot products or AMX
// tiles (an error where the CPU or the chosen isa has none).
const KernelTable& select_kernels(std::string_view isa, std::string_view activations = "f32");
// What automatic activations give prompt tokens' rows: select_kernels(isa, "bf16") where those
// kernels are faster than the exact ones (AMX tiles; AVX512_BF16 on AMD's cores), else null, and
// rounding_choice says why not (null when they are chosen).
const KernelTable* rounding_kernels(std::string_view isa);
const char* rounding_choice(std::string_view isa);

}  // namespace qwen3::ops
