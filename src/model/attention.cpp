// Qwen3's attention layer: the tensors it reads and its forward step.
#include <string>

#include "model/layers.h"

namespace qwen3 {

void attention_tensors(const ModelConfig& c, const std::string& p, AttentionWeights& w,
                       const BindTensor& bind) {
  const int64_t D = c.hidden_size, Dh = c.head_dim;
  const int64_t q = c.num_attention_heads * Dh, kv = c.num_key_value_heads * Dh;
  bind({p + "self_attn.q_proj.weight", {q, D}, TensorRole::matrix}, &w.q_proj);
  bind({p + "self_attn.k_proj.weight", {kv, D}, TensorRole::matrix}, &w.k_proj);
  bind({p + "self_attn.v_proj.weight", {kv, D}, TensorRole::matrix}, &w.v_proj);
  bind({p + "self_attn.q_norm.weight", {Dh}, TensorRole::norm}, &w.q_norm);
  bind({p + "self_attn.k_norm.weight", {Dh}, TensorRole::norm}, &w.k_norm);
  bind({p + "self_attn.o_proj.weight", {D, q}, TensorRole::matrix}, &w.o_proj);
}

// HF: Qwen3Attention.forward: q/k/v projections, per-head q_norm/k_norm, rope, cached
// grouped-query attention, o_proj.
void attention(Step& step, int l, const AttentionWeights& w, const float* h, float* out) {
  const ModelConfig& c = step.c;
  Scratch& s = step.s;
  const int T = step.rows.T, H = c.num_attention_heads, Hkv = c.num_key_value_heads,
            Dh = c.head_dim;
  const float eps = static_cast<float>(c.rms_norm_eps);
  s.q.resize(size_t(T) * H * Dh);
  s.k.resize(size_t(T) * Hkv * Dh);
  s.v.resize(size_t(T) * Hkv * Dh);
  s.ctx.resize(size_t(T) * H * Dh);
  ops::matmul(step.rt, h, T,
              {{w.q_proj, s.q.data()}, {w.k_proj, s.k.data()}, {w.v_proj, s.v.data()}});
  ops::rms_norm(step.rt, s.q.data(), w.q_norm.data(), eps, T * H, Dh, s.q.data());  // per head
  ops::rms_norm(step.rt, s.k.data(), w.k_norm.data(), eps, T * Hkv, Dh, s.k.data());
  for (int t = 0; t < T; ++t) {
    const float* cos = &step.rows.cos[size_t(t) * Dh / 2];
    const float* sin = &step.rows.sin[size_t(t) * Dh / 2];
    ops::rope(&s.q[size_t(t) * H * Dh], H, Dh, cos, sin);
    ops::rope(&s.k[size_t(t) * Hkv * Dh], Hkv, Dh, cos, sin);
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
  ops::matmul(step.rt, s.ctx.data(), T, w.o_proj, out);
}

}  // namespace qwen3
