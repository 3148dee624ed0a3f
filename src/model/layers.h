// The layer kinds a model composes. Each kind has its weights, the tensors it reads from a
// checkpoint (listed once, in tensors.cpp's walk over the model), and its forward step over ops::.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "io/huge_page_buffer.h"
#include "model/sequence_state.h"
#include "ops/ops.h"
#include "qwen3/model.h"

namespace qwen3 {

// What a tensor is to the model: how it is loaded, quantized and counted in bytes per token.
enum class TensorRole {
  embedding,   // model.embed_tokens [V, D]
  lm_head,     // [V, D], when not tied to the embeddings
  matrix,      // a projection every token reads
  expert,      // an expert's projection, read only by the tokens routed to it
  router,      // an MoE router [E, D] (or shared-expert gate [1, D]): stays in float when the rest
               // is quantized
  norm,        // a vector, widened to float32 at load
  mtp_matrix,  // a projection of the MTP head, read by the draft, not by each token
  centred_norm,  // an RMSNorm weight w stored zero-centred: widened to float32 as 1 + w
  parameter,  // a small float tensor of a layer (a convolution's taps, A_log): widened to float32
};

struct TensorSpec {
  std::string name;  // as in the checkpoint
  std::vector<int64_t> shape;
  TensorRole role;
  int expert = -1;  // TensorRole::expert: which one
};

// A tensor of every expert's matrices, [E, parts * R, C] (Qwen3.5-MoE's packed gate_up_proj and
// down_proj): slice e * parts + p is part p of expert e, an [R, C] matrix. `names` are what the
// same matrices are called in a checkpoint of one tensor per expert (what `quantize` writes).
struct PackedExperts {
  std::vector<ops::Matrix*> slices;
  std::vector<std::string> names;
};

// Where a tensor's view goes: a matrix kept in its file dtype, a float vector, or packed experts.
using TensorSlot = std::variant<ops::Matrix*, io::Buffer<float>*, PackedExperts>;
using BindTensor = std::function<void(const TensorSpec&, TensorSlot)>;

// HF Qwen3Attention's weights.
struct AttentionWeights {
  ops::Matrix q_proj;        // [H * Dh, D]
  ops::Matrix k_proj;        // [Hkv * Dh, D]
  ops::Matrix v_proj;        // [Hkv * Dh, D]
  io::Buffer<float> q_norm;  // [Dh]
  io::Buffer<float> k_norm;  // [Dh]
  ops::Matrix o_proj;        // [D, H * Dh]
};

// HF Qwen3MLP's weights (also one expert of an MoE layer).
struct MlpWeights {
  ops::Matrix gate_proj;  // [F, D]
  ops::Matrix up_proj;    // [F, D]
  ops::Matrix down_proj;  // [D, F]
};

// HF Qwen3MoeSparseMoeBlock's weights, and Qwen3_5MoeSparseMoeBlock's shared expert.
struct MoeWeights {
  ops::Matrix gate;                 // [E, D], the router
  std::vector<MlpWeights> experts;  // [E], each of moe_intermediate_size
  MlpWeights shared_expert;         // of shared_expert_intermediate_size, when there is one
  ops::Matrix shared_expert_gate;   // [1, D]
};

// HF Qwen3_5GatedDeltaNet's weights. C = 2 nk dk + nv dv channels: q, k and v, head-major.
struct GatedDeltaNetWeights {
  ops::Matrix in_proj_qkv;    // [C, D]
  ops::Matrix in_proj_z;      // [nv dv, D] the output gate
  ops::Matrix in_proj_b;      // [nv, D] beta = sigmoid(b)
  ops::Matrix in_proj_a;      // [nv, D] the decay's input
  io::Buffer<float> conv1d;   // [C, K] depthwise taps
  io::Buffer<float> A_log;    // [nv]
  io::Buffer<float> dt_bias;  // [nv]
  io::Buffer<float> norm;     // [dv] gated RMSNorm weight (plain, not zero-centred)
  ops::Matrix out_proj;       // [D, nv dv]
};

struct LayerWeights {
  LayerKind kind;
  io::Buffer<float> input_layernorm;           // [D]
  AttentionWeights self_attn;                  // Mixer::attention
  GatedDeltaNetWeights linear_attn;            // Mixer::gated_delta_net
  io::Buffer<float> post_attention_layernorm;  // [D]
  MlpWeights mlp;                              // FeedForward::mlp
  MoeWeights moe;                              // FeedForward::moe
};

// Qwen3.5's multi-token-prediction head: fc over [pre_fc_norm_embedding(embed(x_{t+1})) |
// pre_fc_norm_hidden(h_t)], one full-attention decoder layer, a final norm, the shared LM head.
struct MtpWeights {
  ops::Matrix fc;                                               // [D, 2D]
  io::Buffer<float> pre_fc_norm_embedding, pre_fc_norm_hidden;  // [D]
  LayerWeights layer;
  io::Buffer<float> norm;  // [D]
};

void attention_tensors(const ModelConfig& c, const std::string& prefix, AttentionWeights& w,
                       const BindTensor& bind);
void mlp_tensors(const std::string& prefix, int hidden, int intermediate, TensorRole role,
                 MlpWeights& w, const BindTensor& bind);
void moe_tensors(const ModelConfig& c, const std::string& prefix, MoeWeights& w,
                 const BindTensor& bind);
void gated_delta_net_tensors(const ModelConfig& c, const std::string& prefix,
                             GatedDeltaNetWeights& w, const BindTensor& bind);
// The role of c's RMSNorm weights: zero-centred (Qwen3.5) or plain.
inline TensorRole norm_role(const ModelConfig& c) {
  return c.zero_centred_norms ? TensorRole::centred_norm : TensorRole::norm;
}

// The tokens of one step, flattened over the batch.
struct StepRows {
  int T = 0;
  std::vector<int32_t> ids;              // [T]
  std::vector<int> item_begin;           // first row of each item
  std::vector<float> cos, sin;           // [T, rotary_dim / 2] angles of each row's position
  std::vector<Sequence::State*> states;  // per item: its sequence's state, before this step
};

// A step's buffers, reused across layers and kept from step to step: allocated anew, a long
// prompt's would fault in 4 KiB at a time every step (in a VM, 4% of a 512-token prefill).
struct Scratch {
  io::Buffer<float> x;    // [T, D]      the residual stream
  io::Buffer<float> h;    // [T, D]      normalised input of a sub-block
  io::Buffer<float> out;  // [T, D]      a sub-block's output, added to the residual
  // attention
  io::Buffer<float> q;     // [T, H * Dh]
  io::Buffer<float> k, v;  // [T, Hkv * Dh]
  io::Buffer<float> ctx;   // [T, H * Dh] attention output before o_proj (DeltaNet: [T, nv dv])
  // gated attention and Gated DeltaNet
  io::Buffer<float> mixed;  // [T, 2 H Dh] q_proj's query and gate; [T, C] DeltaNet's q, k, v
  io::Buffer<float> z;      // [T, H Dh] attention's output gate; [T, nv dv] DeltaNet's
  io::Buffer<float> conv;   // [T, C] DeltaNet's convolved q, k, v
  io::Buffer<float> a, b;   // [T, nv] DeltaNet's decay and beta inputs, then g and beta
  // dense MLP, and the experts' rows of an MoE layer
  io::Buffer<float> gate;  // [rows, F]
  io::Buffer<float> up;    // [rows, F]
  // MoE
  io::Buffer<float> router;  // [T, E] logits, then probabilities
  io::Buffer<float>
      routed;  // [T * k, D] each token's rows for its chosen experts, grouped by expert
  io::Buffer<float> expert_out;  // [T * k, D] the experts' outputs, in the same order

  size_t bytes() const;
};

// Everything a layer's forward step reads and writes besides its weights.
struct Step {
  const ModelConfig& c;
  ops::Runtime& rt;
  std::span<const BatchItem> batch;
  const StepRows& rows;
  Scratch& s;
};

// HF Qwen3Attention.forward over h [T, D] into out [T, D], reading and extending each item's KV
// cache of layer l.
void attention(Step& step, int l, const AttentionWeights& w, const float* h, float* out);
// HF Qwen3MLP.forward: down_proj(silu(gate_proj(h)) * up_proj(h)) for h [T, D] into out [T, D].
void mlp(Step& step, const MlpWeights& w, const float* h, float* out);
// HF Qwen3MoeSparseMoeBlock.forward (Qwen3_5MoeSparseMoeBlock's with its shared expert) for
// h [T, D] into out [T, D].
void moe(Step& step, const MoeWeights& w, const float* h, float* out);
// HF Qwen3_5GatedDeltaNet.forward over h [T, D] into out [T, D], reading and advancing each item's
// convolution and recurrent state of layer l.
void gated_delta_net(Step& step, int l, const GatedDeltaNetWeights& w, const float* h, float* out);

}  // namespace qwen3
