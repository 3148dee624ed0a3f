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
}

void for_each_tensor(const ModelConfig& c, Weights& w, const BindTensor& bind) {
  const int64_t D = c.hidden_size, V = c.vocab_size;
  const std::string& model = c.weight_prefix;
  bind({model + "embed_tokens.weight", {V, D}, TensorRole::embedding}, &w.embed_tokens);
  for (int i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = model + "layers." + std::to_string(i) + ".";
    LayerWeights& l = w.layers.at(i);
    bind({p + "input_layernorm.weight", {D}, norm_role(c)}, &l.input_layernorm);
    switch (l.kind.mixer) {
      case Mixer::attention: attention_tensors(c, p, l.self_attn, bind); break;
      case Mixer::gated_delta_net: gated_delta_net_tensors(c, p, l.linear_attn, bind); break;
    }
    bind({p + "post_attention_layernorm.weight", {D}, norm_role(c)}, &l.post_attention_layernorm);
    switch (l.kind.ffn) {
      case FeedForward::mlp:
        mlp_tensors(p + "mlp.", c.hidden_size, c.intermediate_size, TensorRole::matrix, l.mlp,
                    bind);
        break;
      case FeedForward::moe: moe_tensors(c, p, l.moe, bind); break;
    }
  }
  bind({model + "norm.weight", {D}, norm_role(c)}, &w.norm);
  if (!c.tie_word_embeddings) bind({"lm_head.weight", {V, D}, TensorRole::lm_head}, &w.lm_head);
}

std::vector<TensorSpec> tensor_specs(const ModelConfig& c) {
  std::vector<TensorSpec> specs;
  Weights scratch{};
  size_weights(c, scratch);
  for_each_tensor(c, scratch, [&](const TensorSpec& spec, TensorSlot) { specs.push_back(spec); });
  return specs;
}

std::vector<ops::Matrix> Weights::per_token_matrices(const ModelConfig& c) const {
  std::vector<ops::Matrix> out;
  // The walk only reads a sized Weights: it hands out slots, and this binding only reads them.
  for_each_tensor(c, const_cast<Weights&>(*this), [&](const TensorSpec& spec, TensorSlot slot) {
    if (auto* packed = std::get_if<PackedExperts>(&slot)) {  // the first k experts' slices
      const size_t parts = packed->slices.size() / c.num_experts;
      for (size_t i = 0; i < parts * c.num_experts_per_tok; ++i) out.push_back(*packed->slices[i]);
      return;
    }
    const bool read = spec.role == TensorRole::matrix || spec.role == TensorRole::router ||
                      (spec.role == TensorRole::expert && spec.expert < c.num_experts_per_tok);
    if (read) out.push_back(*std::get<ops::Matrix*>(slot));
  });
  out.push_back(lm_head);  // the embeddings themselves when tied
  return out;
}

}  // namespace qwen3
