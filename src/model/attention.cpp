// Qwen3's attention layer, and Qwen3.5's gated variant (query and an output gate from q_proj,
// RoPE on part of each head): the tensors it reads and its forward step.
#include <algorithm>
#include <string>

#include "model/layers.h"

namespace qwen3 {

namespace {
// q_proj's gated output, per head [query (Dh) | gate (Dh)], as two [heads, Dh] arrays.
void split_query_and_gate(const float* mixed, int heads, int Dh, float* query, float* gate) {
  for (int h = 0; h < heads; ++h) {
    std::copy_n(mixed + size_t(h) * 2 * Dh, Dh, query + size_t(h) * Dh);
    std::copy_n(mixed + size_t(h) * 2 * Dh + Dh, Dh, gate + size_t(h) * Dh);
  }
}
}  // namespace

void attention_tensors(const ModelConfig& c, const std::string& p, AttentionWeights& w,
                       const BindTensor& bind) {
  const int64_t D = c.hidden_size, Dh = c.head_dim;
  const int64_t q = c.num_attention_heads * Dh, kv = c.num_key_value_heads * Dh;
  // Gated: per head, Dh rows of query, then Dh rows of gate.
  bind({p + "self_attn.q_proj.weight", {c.attn_output_gate ? 2 * q : q, D}, TensorRole::matrix},
       &w.q_proj);
  bind({p + "self_attn.k_proj.weight", {kv, D}, TensorRole::matrix}, &w.k_proj);
  bind({p + "self_attn.v_proj.weight", {kv, D}, TensorRole::matrix}, &w.v_proj);
  bind({p + "self_attn.q_norm.weight", {Dh}, norm_role(c)}, &w.q_norm);
  bind({p + "self_attn.k_norm.weight", {Dh}, norm_role(c)}, &w.k_norm);
  bind({p + "self_attn.o_proj.weight", {D, q}, TensorRole::matrix}, &w.o_proj);
}

// HF: Qwen3Attention.forward: q/k/v projections, per-head q_norm/k_norm, rope, cached
// grouped-query attention, o_proj. Qwen3_5Attention.forward also splits q_proj's output into query
// and gate per head and multiplies the attention output by sigmoid(gate) before o_proj.
void attention(Step& step, int l, const AttentionWeights& w, const float* h, float* out) {
  const ModelConfig& c = step.c;
  Scratch& s = step.s;
  const int T = step.rows.T, H = c.num_attention_heads, Hkv = c.num_key_value_heads,
            Dh = c.head_dim, R = c.rotary_dim;
  const float eps = static_cast<float>(c.rms_norm_eps);
  s.q.resize(size_t(T) * H * Dh);
  s.k.resize(size_t(T) * Hkv * Dh);
  s.v.resize(size_t(T) * Hkv * Dh);
  s.ctx.resize(size_t(T) * H * Dh);
  if (c.attn_output_gate) {
    s.mixed.resize(size_t(T) * H * 2 * Dh);
    s.z.resize(size_t(T) * H * Dh);
    ops::matmul(step.rt, h, T,
                {{w.q_proj, s.mixed.data()}, {w.k_proj, s.k.data()}, {w.v_proj, s.v.data()}});
    split_query_and_gate(s.mixed.data(), T * H, Dh, s.q.data(), s.z.data());
  } else {
    ops::matmul(step.rt, h, T,
                {{w.q_proj, s.q.data()}, {w.k_proj, s.k.data()}, {w.v_proj, s.v.data()}});
  }
  ops::rms_norm(step.rt, s.q.data(), w.q_norm.data(), eps, T * H, Dh, s.q.data());  // per head
  ops::rms_norm(step.rt, s.k.data(), w.k_norm.data(), eps, T * Hkv, Dh, s.k.data());
  for (int t = 0; t < T; ++t) {
    const float* cos = &step.rows.cos[size_t(t) * R / 2];
    const float* sin = &step.rows.sin[size_t(t) * R / 2];
    ops::rope(&s.q[size_t(t) * H * Dh], H, Dh, R, cos, sin);
    ops::rope(&s.k[size_t(t) * Hkv * Dh], Hkv, Dh, R, cos, sin);
  }
  std::vector<ops::AttentionItem> items;
  for (size_t i = 0; i < step.batch.size(); ++i) {
    Sequence::State& seq = *step.rows.states[i];
    KvCache& cache = seq.layer[l].kv;
    const size_t first = step.rows.item_begin[i];
    items.push_back({&s.q[first * H * Dh], &s.k[first * Hkv * Dh], &s.v[first * Hkv * Dh],
                     static_cast<int>(step.batch[i].tokens.size()), seq.length, cache.k.data(),
                     cache.v.data(), seq.kv_dtype, seq.capacity, &s.ctx[first * H * Dh]});
  }
  ops::attention(step.rt, items, H, Hkv, Dh);
  if (c.attn_output_gate) ops::sigmoid_mul(step.rt, s.ctx.data(), s.z.data(), T * H * Dh);
  ops::matmul(step.rt, s.ctx.data(), T, w.o_proj, out);
}

}  // namespace qwen3
