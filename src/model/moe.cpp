// Qwen3-MoE's sparse feed-forward: a router picks k of E SwiGLU experts per token, and the
// token's output is their outputs weighted by the router's probabilities.
#include <string>

#include "model/layers.h"

namespace qwen3 {

void moe_tensors(const ModelConfig& c, const std::string& p, MoeWeights& w,
                 const BindTensor& bind) {
  bind({p + "mlp.gate.weight", {c.num_experts, c.hidden_size}, TensorRole::router}, &w.gate);
  for (int e = 0; e < c.num_experts; ++e)
    mlp_tensors(p + "mlp.experts." + std::to_string(e) + ".", c.hidden_size,
                c.moe_intermediate_size, TensorRole::expert, w.experts[e],
                [&](TensorSpec spec, TensorSlot slot) {
                  spec.expert = e;
                  bind(spec, slot);
                });
}

// HF: Qwen3MoeSparseMoeBlock.forward. The step's rows are grouped by expert, so each chosen
// expert's weights are read once per step whatever the number of tokens routed to it.
void moe(Step& step, const MoeWeights& w, const float* h, float* out) {
  const ModelConfig& c = step.c;
  Scratch& s = step.s;
  const int T = step.rows.T, D = c.hidden_size, E = c.num_experts, k = c.num_experts_per_tok;
  const int I = c.moe_intermediate_size;
  // router_logits = self.gate(hidden_states); softmax in float32, top-k, optional renormalisation
  s.router.resize(size_t(T) * E);
  ops::matmul(step.rt, h, T, w.gate, s.router.data());
  std::vector<int32_t> experts(size_t(T) * k);
  std::vector<float> weights(size_t(T) * k);
  ops::route(s.router.data(), T, E, k, c.norm_topk_prob, experts.data(), weights.data());

  // Each (token, choice) gets a row of `routed`, the rows of one expert together.
  std::vector<int> first(E + 1, 0);  // expert e's rows: [first[e], first[e + 1])
  for (int32_t e : experts) ++first[e + 1];
  for (int e = 0; e < E; ++e) first[e + 1] += first[e];
  std::vector<int32_t> row_of(size_t(T) * k);  // (token, choice) -> its row
  std::vector<int> next(first.begin(), first.end() - 1);
  for (size_t i = 0; i < row_of.size(); ++i) row_of[i] = next[experts[i]]++;
  const size_t R = size_t(T) * k;
  s.routed.resize(R * D);
  s.gate.resize(R * I);
  s.up.resize(R * I);
  s.expert_out.resize(R * D);
  for (size_t i = 0; i < R; ++i) std::copy_n(h + (i / k) * D, D, &s.routed[size_t(row_of[i]) * D]);

  // expert_layer(current_state) for every expert with rows: gate and up, SiLU, then down.
  std::vector<ops::Product> gate_up, down;
  gate_up.reserve(2 * E);
  down.reserve(E);
  std::vector<ops::ProductGroup> inputs, hidden;
  for (int e = 0; e < E; ++e) {
    const int n = first[e + 1] - first[e];
    if (!n) continue;
    const MlpWeights& x = w.experts[e];
    gate_up.push_back({x.gate_proj, &s.gate[size_t(first[e]) * I]});
    gate_up.push_back({x.up_proj, &s.up[size_t(first[e]) * I]});
    down.push_back({x.down_proj, &s.expert_out[size_t(first[e]) * D]});
    inputs.push_back({&s.routed[size_t(first[e]) * D], n, {&gate_up[gate_up.size() - 2], 2}});
    hidden.push_back({&s.gate[size_t(first[e]) * I], n, {&down.back(), 1}});
  }
  ops::matmul(step.rt, inputs);
  ops::silu_mul(step.rt, s.gate.data(), s.up.data(), int(R * I), s.gate.data());
  ops::matmul(step.rt, hidden);
  // final_hidden_states.index_add_(...): each token's experts weighted and summed
  ops::combine_rows(step.rt, s.expert_out.data(), row_of.data(), weights.data(), T, k, D, out);
}

}  // namespace qwen3
