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
  embedding,  // model.embed_tokens [V, D]
  lm_head,    // [V, D], when not tied to the embeddings
  matrix,     // a projection every token reads
  expert,     // an expert's projection, read only by the tokens routed to it
  router,     // an MoE router [E, D]: stays in float when the rest is quantized
  norm,       // a vector, widened to float32 at load
};

struct TensorSpec {
  std::string name;  // as in the checkpoint
  std::vector<int64_t> shape;
  TensorRole role;
  int expert = -1;  // TensorRole::expert: which one
};

// Where a tensor's view goes: a matrix kept in its file dtype, or a vector widened to float.
using TensorSlot = std::variant<ops::Matrix*, io::Buffer<float>*>;
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

// HF Qwen3MoeSparseMoeBlock's weights.
struct MoeWeights {
  ops::Matrix gate;                 // [E, D], the router
  std::vector<MlpWeights> experts;  // [E], each of moe_intermediate_size
};

struct LayerWeights {
  LayerKind kind;
  io::Buffer<float> input_layernorm;  // [D]
  AttentionWeights self_attn;
  io::Buffer<float> post_attention_layernorm;  // [D]
  MlpWeights mlp;                              // FeedForward::mlp
  MoeWeights moe;                              // FeedForward::moe
};

void attention_tensors(const ModelConfig& c, const std::string& prefix, AttentionWeights& w,
                       const BindTensor& bind);
void mlp_tensors(const std::string& prefix, int hidden, int intermediate, TensorRole role,
                 MlpWeights& w, const BindTensor& bind);
void moe_tensors(const ModelConfig& c, const std::string& prefix, MoeWeights& w,
                 const BindTensor& bind);

// The tokens of one step, flattened over the batch.
struct StepRows {
  int T = 0;
  std::vector<int32_t> ids;              // [T]
  std::vector<int> item_begin;           // first row of each item
  std::vector<float> cos, sin;           // [T, Dh / 2] rotary angles of each row's position
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
  io::Buffer<float> ctx;   // [T, H * Dh] attention output before o_proj
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
// HF Qwen3MoeSparseMoeBlock.forward for h [T, D] into out [T, D].
void moe(Step& step, const MoeWeights& w, const float* h, float* out);

}  // namespace qwen3
