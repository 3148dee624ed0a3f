// The model's operations, each declared once with its shapes and contract.
//
// Glossary of dimension names:
//   T    tokens in one step, over all sequences of the batch
//   D    hidden_size            F   intermediate_size     V  vocab_size
//   H    num_attention_heads    Hkv num_key_value_heads   Dh head_dim
//   K, N a matmul's input and output widths: y[T, N] = x[T, K] . w[N, K]^T
//   P    positions held in a sequence's KV cache
//
// Buffers are row-major float32 unless a Matrix says otherwise. Every op is deterministic: each
// output element is computed by one thread in a fixed order, whatever T and the thread count.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string_view>

#include "io/dtype.h"
#include "ops/key_layout.h"

namespace qwen3::ops {

// A weight matrix in its file dtype, used in place: row-major [rows, cols].
struct Matrix {
  DType dtype = DType::f32;
  const void* data = nullptr;
  int rows = 0;
  int cols = 0;
  size_t bytes() const { return size_t(rows) * row_bytes(dtype, cols); }
};

// The kernels chosen for this CPU and the worker threads; one per model.
class Runtime;
void destroy(Runtime* runtime);
struct RuntimeDeleter {
  void operator()(Runtime* r) const { destroy(r); }
};
using RuntimePtr = std::unique_ptr<Runtime, RuntimeDeleter>;
// isa, activations: as select_kernels (ops/kernels.h), or activations "auto": prompt tokens'
// rows on rounding_kernels(isa) where there are any, generated tokens' rows exact (f32); threads:
// 0 = one per core. Throws on bad values.
RuntimePtr make_runtime(std::string_view isa, int threads, std::string_view activations = "f32");
// Which of the runtime's kernels the next products take: those for prompt tokens' rows or those
// for generated ones (the default). The same with any activations but "auto" (splits_rows).
void use_prompt_kernels(Runtime& rt, bool prompt);
bool splits_rows(const Runtime& rt);
const char* isa_name(const Runtime& rt);         // generated rows' kernels ("avx512", ...)
const char* prompt_isa_name(const Runtime& rt);  // prompt rows' ("avx512-bf16", ...)
int thread_count(const Runtime& rt);
int pass_rows(const Runtime& rt);  // KernelTable::pass_rows of the kernels in use
// Whether rt's kernels can attend over a KV cache of this dtype (bf16: AVX512_BF16's only).
bool attends_over(const Runtime& rt, DType kv_cache);

// out[t, :] = table[ids[t], :] widened to float.                     out [T, D]
void embed(Runtime& rt, const Matrix& table, std::span<const int32_t> ids, float* out);

// out[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * w, in float32 as HF computes it.
// x, out [rows, n]; w [n]. out may alias x.
void rms_norm(Runtime& rt, const float* x, const float* w, float eps, int rows, int n, float* out);

// y[T, N] = x[T, K] . w[N, K]^T. y must not alias x. With block-quantized w, each row of x is
// first quantized to int8 blocks (io/quant_blocks.h) and the dot products are integer.
void matmul(Runtime& rt, const float* x, int T, const Matrix& w, float* y);

// Several products of the same x in one parallel pass (q/k/v, gate/up): fewer hand-offs between
// threads and longer runs of weights streamed by each.     y_i[T, N_i] = x[T, K] . w_i[N_i, K]^T
struct Product {
  const Matrix& w;
  float* y;
};
void matmul(Runtime& rt, const float* x, int T, std::initializer_list<Product> products);

// Products of several x, each with its own matrices, in one parallel pass: an MoE layer's experts,
// each over the rows routed to it. Every matrix has the same K; each group has T >= 1 rows, and
// each row's results are the bits a product of that row alone would give.
//                                       for each group: y_i[T, N_i] = x[T, K] . w_i[N_i, K]^T
struct ProductGroup {
  const float* x;
  int T;
  std::span<const Product> products;
};
void matmul(Runtime& rt, std::span<const ProductGroup> groups);

// w quantized to `to` (q8_0 or q4_0; w.cols % 32 == 0) in the row-group layout of
// io/quant_blocks.h.                                               out [rows, row_bytes(to, cols)]
void quantize(Runtime& rt, const Matrix& w, DType to, uint8_t* out);

// The rotary angles of one position, computed in float32 as HF does, for rotary embeddings over
// the first `dims` dimensions of each head (head_dim, or head_dim * partial_rotary_factor):
// angle[i] = pos * (1 / theta^(2i / dims)).                           cos, sin [dims / 2]
void rope_angles(int pos, int dims, double theta, float* cos, float* sin);

// Rotary embedding, rotate-half convention (HF's rotate_half) on the first `dims` dimensions of
// each head: for i < dims/2, the pair (x[i], x[i + dims/2]) turns by angle[i]; the rest pass.
//                                                                     x [heads, Dh], in place
void rope(float* x, int heads, int head_dim, int dims, const float* cos, const float* sin);

// One sequence's part of a step's attention: n new tokens at positions p0 .. p0+n-1. q, out
// [n, H * Dh]; new_k, new_v [n, Hkv * Dh], the tokens' keys and values, which attention appends to
// the cache: k [Hkv, capacity blocked as key_offset], v [Hkv, capacity, Dh], capacity >= p0 + n
// and a multiple of kKeyBlock. out must not alias q.
struct AttentionItem {
  const float* q;
  const float* new_k;
  const float* new_v;
  int n, p0;
  void*
      k;  // the cache, [Hkv, capacity, Dh] of kv_dtype (f32, f16 or bf16), laid out as key_layout.h
  void* v;
  DType kv_dtype;
  int capacity;
  float* out;
};

// Causal grouped-query attention of every item of a step, as one parallel op: the new keys and
// values go into the cache, then query head h reads KV head h / (H / Hkv). Scores are computed a
// block of queries at a time, never as a whole [n, P] matrix.
void attention(Runtime& rt, std::span<const AttentionItem> items, int heads, int kv_heads,
               int head_dim);

// out = silu(gate) * up, SwiGLU's gating.                           gate, up, out [n]; out may
// alias
void silu_mul(Runtime& rt, const float* gate, const float* up, int n, float* out);

// x *= sigmoid(gate), an output gate.                             x, gate [n]
void sigmoid_mul(Runtime& rt, float* x, const float* gate, int n);

// out[r, :] = x[r, :] * scale / sqrt(sum(x[r, :]^2) + 1e-6), HF's l2norm (fla's, eps 1e-6)
// then a scale.                                                   x, out [rows, n]; may alias
void l2_normalize(Runtime& rt, const float* x, int rows, int n, float scale, float* out);

// Gated DeltaNet's short convolution for one sequence's n new tokens (HF: the depthwise Conv1d of
// Qwen3_5GatedDeltaNet, then SiLU): channel c of token t becomes
// silu(sum over j < K of w[c, j] * input[t - K + 1 + j][c]), where the inputs before the first
// new token come from `state`, the K - 1 inputs before it (oldest first, zeros at the start of a
// sequence). state then holds the last K - 1 inputs.
//                                          x, out [n, C] (rows ld apart); w [C, K]; state [K-1, C]
void causal_conv1d_silu(Runtime& rt, const float* x, int ld, int n, int C, const float* w, int K,
                        float* state, float* out);

// One sequence's part of a gated delta rule step (HF: torch_recurrent_gated_delta_rule; the
// chunked form HF runs on prompts is the same recurrence, regrouped). For each value head j, with
// key head j / (nv / nk), and each token t in order:
//   S_j = S_j * exp(g[t, j]);  S_j += k_t (beta[t, j] (v_t - k_t S_j));  out_t = q_t S_j
// q, k [n, nk, dk] (already L2-normalised, q scaled by dk^-0.5); v, out [n, nv, dv];
// g, beta [n, nv]; state [nv, dk, dv] in float32, updated in place.
struct DeltaRuleItem {
  const float* q;
  const float* k;
  const float* v;
  const float* g;
  const float* beta;
  int n;
  float* state;
  float* out;
  // When set, history[t] receives the state after token t, for t < n - 1 (what speculative
  // decoding rewinds to; the state after the last token is `state` itself).
  float* const* history = nullptr;
};
void gated_delta_rule(Runtime& rt, std::span<const DeltaRuleItem> items, int key_heads,
                      int value_heads, int key_dim, int value_dim);

// An MoE router's choice, as HF's Qwen3MoeSparseMoeBlock makes it: p = softmax(logits) in
// float32, the k most probable experts (of equal ones, the lower index), their p renormalised to
// sum to 1 when `normalize`. Each token's choices come in ascending expert order, the order HF
// adds the experts' outputs in.        logits [T, E]; experts, weights [T, k]
void route(const float* logits, int T, int E, int k, bool normalize, int32_t* experts,
           float* weights);

// out[t] = sum over j < k, in order, of weights[t, j] * y[rows[t, j]].
//                                               y [R, D]; rows, weights [T, k]; out [T, D]
void combine_rows(Runtime& rt, const float* y, const int32_t* rows, const float* weights, int T,
                  int k, int D, float* out);

// x += y.                                                            [n]
void add(Runtime& rt, float* x, const float* y, int n);

// out = x, on the threads: a batch's logits, megabytes a step, each into its own vector.  [n]
void copy(Runtime& rt, const float* x, size_t n, float* out);

// Reads every byte of the matrices once, the threads in contiguous shares as a product streams
// them, and does nothing else: the bandwidth decode answers to, for this very memory. Returns the
// sum (mod 2^64) of each matrix's bytes as little-endian 64-bit words from its start, the last
// one zero-padded: a value of every byte, so no read can be left out.
uint64_t read(Runtime& rt, std::span<const Matrix> matrices);

}  // namespace qwen3::ops
