// Qwen3-MoE's sparse feed-forward: a router picks k of E SwiGLU experts per token, and the
// token's output is their outputs weighted by the router's probabilities.
#include <cmath>
#include <string>

#include "model/layers.h"

namespace qwen3 {

void moe_tensors(const ModelConfig& c, const std::string& p, MoeWeights& w,
                 const BindTensor& bind) {
  const int64_t D = c.hidden_size, E = c.num_experts, I = c.moe_intermediate_size;
  bind({p + "mlp.gate.weight", {E, D}, TensorRole::router}, &w.gate);
  const auto expert_name = [&](int e, const char* proj) {
    return p + "mlp.experts." + std::to_string(e) + "." + proj + ".weight";
  };
  if (c.packed_experts) {
    PackedExperts gate_up, down;
    for (int e = 0; e < E; ++e) {
      gate_up.slices.insert(gate_up.slices.end(), {&w.experts[e].gate_proj, &w.experts[e].up_proj});
      gate_up.names.insert(gate_up.names.end(),
                           {expert_name(e, "gate_proj"), expert_name(e, "up_proj")});
      down.slices.push_back(&w.experts[e].down_proj);
      down.names.push_back(expert_name(e, "down_proj"));
    }
    bind({p + "mlp.experts.gate_up_proj", {E, 2 * I, D}, TensorRole::expert}, gate_up);
    bind({p + "mlp.experts.down_proj", {E, D, I}, TensorRole::expert}, down);
  } else {
    for (int e = 0; e < E; ++e)
      mlp_tensors(p + "mlp.experts." + std::to_string(e) + ".", c.hidden_size,
                  c.moe_intermediate_size, TensorRole::expert, w.experts[e],
                  [&](TensorSpec spec, TensorSlot slot) {
                    spec.expert = e;
                    bind(spec, slot);
                  });
  }
  if (c.shared_expert_intermediate_size) {
    mlp_tensors(p + "mlp.shared_expert.", c.hidden_size, c.shared_expert_intermediate_size,
                TensorRole::matrix, w.shared_expert, bind);
    bind({p + "mlp.shared_expert_gate.weight", {1, D}, TensorRole::router}, &w.shared_expert_gate);
  }
}

// HF: Qwen3MoeSparseMoeBlock.forward. The step's rows are grouped by expert, so each chosen
// expert's weights are read once per step whatever the number of tokens routed to it. Qwen3.5's
// shared expert (Qwen3_5MoeSparseMoeBlock) runs in the same passes as the routed ones.
void moe(Step& step, const MoeWeights& w, const float* h, float* out) {
  const ModelConfig& c = step.c;
  Scratch& s = step.s;
  const int T = step.rows.T, D = c.hidden_size, E = c.num_experts, k = c.num_experts_per_tok;
  const int I = c.moe_intermediate_size, Is = c.shared_expert_intermediate_size;
  // router_logits = self.gate(hidden_states); softmax in float32, top-k, optional renormalisation
  s.router.resize(size_t(T) * (E + 1));
  float* shared_gate = &s.router[size_t(T) * E];  // [T] the shared expert's gate logits
  if (Is)
    ops::matmul(step.rt, h, T, {{w.gate, s.router.data()}, {w.shared_expert_gate, shared_gate}});
  else ops::matmul(step.rt, h, T, w.gate, s.router.data());
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
  // gate and up: the routed rows' [R, I], then the shared expert's [T, Is]
  const size_t hidden_rows = R * I + size_t(T) * Is;
  s.routed.resize(R * D);
  s.gate.resize(hidden_rows);
  s.up.resize(hidden_rows);
  s.expert_out.resize((R + (Is ? T : 0)) * D);
  for (size_t i = 0; i < R; ++i) std::copy_n(h + (i / k) * D, D, &s.routed[size_t(row_of[i]) * D]);

  // expert_layer(current_state) for every expert with rows: gate and up, SiLU, then down.
  std::vector<ops::Product> gate_up, down;
  gate_up.reserve(2 * E + 2);
  down.reserve(E + 1);
  std::vector<ops::ProductGroup> inputs, hiddens;
  const auto add_expert = [&](const MlpWeights& x, const float* in, int n, size_t hidden_row,
                              float* y) {
    gate_up.push_back({x.gate_proj, &s.gate[hidden_row]});
    gate_up.push_back({x.up_proj, &s.up[hidden_row]});
    down.push_back({x.down_proj, y});
    inputs.push_back({in, n, {&gate_up[gate_up.size() - 2], 2}});
    hiddens.push_back({&s.gate[hidden_row], n, {&down.back(), 1}});
  };
  for (int e = 0; e < E; ++e)
    if (const int n = first[e + 1] - first[e])
      add_expert(w.experts[e], &s.routed[size_t(first[e]) * D], n, size_t(first[e]) * I,
                 &s.expert_out[size_t(first[e]) * D]);
  float* shared_out = &s.expert_out[R * D];  // [T, D]
  if (Is) add_expert(w.shared_expert, h, T, R * I, shared_out);
  ops::matmul(step.rt, inputs);
  ops::silu_mul(step.rt, s.gate.data(), s.up.data(), int(hidden_rows), s.gate.data());
  ops::matmul(step.rt, hiddens);
  // final_hidden_states.index_add_(...): each token's experts weighted and summed
  ops::combine_rows(step.rt, s.expert_out.data(), row_of.data(), weights.data(), T, k, D, out);
  if (!Is) return;
  // + sigmoid(shared_expert_gate(x)) * shared_expert(x)
  for (int t = 0; t < T; ++t) {
    const float scale = 1.0f / (1.0f + std::exp(-shared_gate[t]));
    for (int d = 0; d < D; ++d) shared_out[size_t(t) * D + d] *= scale;
  }
  ops::add(step.rt, out, shared_out, T * D);
}

}  // namespace qwen3
