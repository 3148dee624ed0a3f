// The walk over a model's tensors: embeddings, each layer's norms, mixer and feed-forward, the
// final norm and the LM head. A new layer kind adds its tensors in its own file (layers.h).
#include <string>

#include "model/weights.h"

namespace qwen3 {

void size_weights(const ModelConfig& c, Weights& w) {
  w.layers.resize(c.num_hidden_layers);
  for (int i = 0; i < c.num_hidden_layers; ++i) {
    w.layers[i].kind = c.layers[i];
    if (c.layers[i].ffn == FeedForward::moe) w.layers[i].moe.experts.resize(c.num_experts);
  }
  if (c.mtp_num_hidden_layers) {  // full attention, and the feed-forward of the model's layers
    w.mtp.layer.kind = {Mixer::attention, c.layers.front().ffn};
    if (w.mtp.layer.kind.ffn == FeedForward::moe) w.mtp.layer.moe.experts.resize(c.num_experts);
  }
}

namespace {

// A decoder layer's tensors: its norms, its mixer's and its feed-forward's.
void layer_tensors(const ModelConfig& c, const std::string& p, LayerWeights& l,
                   const BindTensor& bind) {
  const int64_t D = c.hidden_size;
  bind({p + "input_layernorm.weight", {D}, norm_role(c)}, &l.input_layernorm);
  switch (l.kind.mixer) {
    case Mixer::attention: attention_tensors(c, p, l.self_attn, bind); break;
    case Mixer::gated_delta_net: gated_delta_net_tensors(c, p, l.linear_attn, bind); break;
  }
  bind({p + "post_attention_layernorm.weight", {D}, norm_role(c)}, &l.post_attention_layernorm);
  switch (l.kind.ffn) {
    case FeedForward::mlp:
      mlp_tensors(p + "mlp.", c.hidden_size, c.intermediate_size, TensorRole::matrix, l.mlp, bind);
      break;
    case FeedForward::moe: moe_tensors(c, p, l.moe, bind); break;
  }
}

// Qwen3.5's MTP head (top-level mtp.*, its layer's experts packed or not on their own).
void mtp_tensors(const ModelConfig& c, MtpWeights& m, const BindTensor& bind) {
  const int64_t D = c.hidden_size;
  bind({"mtp.fc.weight", {D, 2 * D}, TensorRole::mtp_matrix}, &m.fc);
  bind({"mtp.pre_fc_norm_embedding.weight", {D}, norm_role(c)}, &m.pre_fc_norm_embedding);
  bind({"mtp.pre_fc_norm_hidden.weight", {D}, norm_role(c)}, &m.pre_fc_norm_hidden);
  ModelConfig head = c;
  head.packed_experts = c.mtp_packed_experts;
  layer_tensors(head, "mtp.layers.0.", m.layer, [&](TensorSpec spec, TensorSlot slot) {
    if (spec.role == TensorRole::matrix || spec.role == TensorRole::expert)
      spec.role = TensorRole::mtp_matrix;  // read by the draft only
    bind(spec, slot);
  });
  bind({"mtp.norm.weight", {D}, norm_role(c)}, &m.norm);
}

}  // namespace

void for_each_tensor(const ModelConfig& c, Weights& w, const BindTensor& bind) {
  const int64_t D = c.hidden_size, V = c.vocab_size;
  const std::string& model = c.weight_prefix;
  bind({model + "embed_tokens.weight", {V, D}, TensorRole::embedding}, &w.embed_tokens);
  for (int i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = model + "layers." + std::to_string(i) + ".";
    layer_tensors(c, p, w.layers.at(i), bind);
  }
  bind({model + "norm.weight", {D}, norm_role(c)}, &w.norm);
  if (!c.tie_word_embeddings) bind({"lm_head.weight", {V, D}, TensorRole::lm_head}, &w.lm_head);
  if (c.mtp_num_hidden_layers) mtp_tensors(c, w.mtp, bind);
}

std::vector<TensorSpec> tensor_specs(const ModelConfig& c) {
  std::vector<TensorSpec> specs;
  Weights scratch{};
  size_weights(c, scratch);
  for_each_tensor(c, scratch, [&](const TensorSpec& spec, TensorSlot) { specs.push_back(spec); });
  return specs;
}

std::vector<ops::Matrix> Weights::per_token_matrices(const ModelConfig& c, bool mtp_head) const {
  std::vector<ops::Matrix> out;
  // The walk only reads a sized Weights: it hands out slots, and this binding only reads them.
  for_each_tensor(c, const_cast<Weights&>(*this), [&](const TensorSpec& spec, TensorSlot slot) {
    if (spec.name.starts_with("mtp.") != mtp_head) return;   // the draft's, or the model's
    if (auto* packed = std::get_if<PackedExperts>(&slot)) {  // the first k experts' slices
      const size_t parts = packed->slices.size() / c.num_experts;
      for (size_t i = 0; i < parts * c.num_experts_per_tok; ++i) out.push_back(*packed->slices[i]);
      return;
    }
    const bool read = spec.role == TensorRole::matrix || spec.role == TensorRole::router ||
                      spec.role == TensorRole::mtp_matrix ||
                      (spec.role == TensorRole::expert && spec.expert < c.num_experts_per_tok);
    if (read) out.push_back(*std::get<ops::Matrix*>(slot));
  });
  out.push_back(lm_head);  // the embeddings themselves when tied
  return out;
}

}  // namespace qwen3
