// Qwen3.5's Gated DeltaNet layer, a linear attention: each sequence carries a fixed-size state
// (a short convolution's last inputs and, per value head, a [dk, dv] matrix the delta rule
// updates) instead of a KV cache that grows with the context.
#include <algorithm>
#include <cmath>
#include <string>

#include "model/layers.h"

namespace qwen3 {

namespace {

int channels(const ModelConfig& c) {
  return 2 * c.linear_num_key_heads * c.linear_key_head_dim +
         c.linear_num_value_heads * c.linear_value_head_dim;
}

// HF: beta = b.sigmoid(); g = -self.A_log.float().exp() * F.softplus(a.float() + self.dt_bias),
// softplus with PyTorch's threshold (x above 20 passes as is).          a -> g, b -> beta [T, nv]
void decay_and_beta(const GatedDeltaNetWeights& w, int T, int nv, float* a, float* b) {
  for (int t = 0; t < T; ++t)
    for (int j = 0; j < nv; ++j) {
      const size_t i = size_t(t) * nv + j;
      const float x = a[i] + w.dt_bias[j];
      const float softplus = x > 20.0f ? x : std::log1p(std::exp(x));
      a[i] = -std::exp(w.A_log[j]) * softplus;
      b[i] = 1.0f / (1.0f + std::exp(-b[i]));
    }
}

// Which of the model's recurrent layers layer l is: its state's place in a snapshot.
int recurrent_index(const ModelConfig& c, int l) {
  return static_cast<int>(std::count_if(c.layers.begin(), c.layers.begin() + l, [](LayerKind k) {
    return k.mixer == Mixer::gated_delta_net;
  }));
}

}  // namespace

void gated_delta_net_tensors(const ModelConfig& c, const std::string& prefix,
                             GatedDeltaNetWeights& w, const BindTensor& bind) {
  const std::string p = prefix + "linear_attn.";
  const int64_t D = c.hidden_size, C = channels(c), K = c.linear_conv_kernel_dim;
  const int64_t nv = c.linear_num_value_heads, value = nv * c.linear_value_head_dim;
  bind({p + "in_proj_qkv.weight", {C, D}, TensorRole::matrix}, &w.in_proj_qkv);
  bind({p + "in_proj_z.weight", {value, D}, TensorRole::matrix}, &w.in_proj_z);
  bind({p + "in_proj_b.weight", {nv, D}, TensorRole::matrix}, &w.in_proj_b);
  bind({p + "in_proj_a.weight", {nv, D}, TensorRole::matrix}, &w.in_proj_a);
  bind({p + "conv1d.weight", {C, 1, K}, TensorRole::parameter}, &w.conv1d);
  bind({p + "A_log", {nv}, TensorRole::parameter}, &w.A_log);
  bind({p + "dt_bias", {nv}, TensorRole::parameter}, &w.dt_bias);
  bind({p + "norm.weight", {c.linear_value_head_dim}, TensorRole::norm}, &w.norm);
  bind({p + "out_proj.weight", {D, value}, TensorRole::matrix}, &w.out_proj);
}

// HF: Qwen3_5GatedDeltaNet.forward: projections; causal conv + SiLU over q, k, v; L2-normalised
// q and k (q scaled by dk^-0.5); the gated delta rule; gated RMSNorm with silu(z); out_proj.
void gated_delta_net(Step& step, int l, const GatedDeltaNetWeights& w, const float* h, float* out) {
  const ModelConfig& c = step.c;
  Scratch& s = step.s;
  const int T = step.rows.T, C = channels(c), K = c.linear_conv_kernel_dim;
  const int nk = c.linear_num_key_heads, nv = c.linear_num_value_heads;
  const int dk = c.linear_key_head_dim, dv = c.linear_value_head_dim;
  const int key = nk * dk, value = nv * dv;
  s.mixed.resize(size_t(T) * C);
  s.z.resize(size_t(T) * value);
  s.a.resize(size_t(T) * nv);
  s.b.resize(size_t(T) * nv);
  s.conv.resize(size_t(T) * C);
  s.q.resize(size_t(T) * key);
  s.k.resize(size_t(T) * key);
  s.v.resize(size_t(T) * value);
  s.ctx.resize(size_t(T) * value);
  ops::matmul(step.rt, h, T,
              {{w.in_proj_qkv, s.mixed.data()},
               {w.in_proj_z, s.z.data()},
               {w.in_proj_b, s.b.data()},
               {w.in_proj_a, s.a.data()}});
  // mixed_qkv = silu(conv1d(mixed_qkv)), each sequence continuing from its own last inputs
  const int r = recurrent_index(c, l);
  for (size_t i = 0; i < step.batch.size(); ++i) {
    const size_t first = step.rows.item_begin[i];
    const int n = static_cast<int>(step.batch[i].tokens.size());
    Sequence::State& seq = *step.rows.states[i];
    RecurrentState& state = seq.layer[l].rec;
    // A rewindable step's conv state after token t: inputs t + 1 ... t + K - 1 of the old state's
    // K - 1 rows followed by the step's (taken before the conv moves the state on).
    for (int t = 0; t < seq.step_states_valid; ++t)
      for (int row = 0; row < K - 1; ++row) {
        const int in = t + 1 + row;
        const float* from =
            in < K - 1 ? &state.conv[size_t(in) * C] : &s.mixed[(first + in - (K - 1)) * C];
        std::copy_n(from, C, &seq.step_states[t].layers[r].conv[size_t(row) * C]);
      }
    ops::causal_conv1d_silu(step.rt, &s.mixed[first * C], C, n, C, w.conv1d.data(), K,
                            state.conv.data(), &s.conv[first * C]);
  }
  // query, key, value = split(mixed_qkv, [key_dim, key_dim, value_dim]); l2norm; query *= scale
  const float scale = 1.0f / std::sqrt(static_cast<float>(dk));
  for (int t = 0; t < T; ++t) {
    const float* row = &s.conv[size_t(t) * C];
    ops::l2_normalize(step.rt, row, nk, dk, scale, &s.q[size_t(t) * key]);
    ops::l2_normalize(step.rt, row + key, nk, dk, 1.0f, &s.k[size_t(t) * key]);
    std::copy_n(row + 2 * key, value, &s.v[size_t(t) * value]);
  }
  decay_and_beta(w, T, nv, s.a.data(), s.b.data());
  std::vector<ops::DeltaRuleItem> items;
  std::vector<std::vector<float*>> history(step.batch.size());  // rewindable steps' state copies
  for (size_t i = 0; i < step.batch.size(); ++i) {
    const size_t first = step.rows.item_begin[i];
    Sequence::State& seq = *step.rows.states[i];
    for (int t = 0; t < seq.step_states_valid; ++t)
      history[i].push_back(seq.step_states[t].layers[r].ssm.data());
    items.push_back({&s.q[first * key], &s.k[first * key], &s.v[first * value], &s.a[first * nv],
                     &s.b[first * nv], static_cast<int>(step.batch[i].tokens.size()),
                     seq.layer[l].rec.ssm.data(), &s.ctx[first * value],
                     history[i].empty() ? nullptr : history[i].data()});
  }
  ops::gated_delta_rule(step.rt, items, nk, nv, dk, dv);
  // core_attn_out = self.norm(core_attn_out, z): RMSNorm over each value head, times silu(z)
  ops::rms_norm(step.rt, s.ctx.data(), w.norm.data(), static_cast<float>(c.rms_norm_eps), T * nv,
                dv, s.ctx.data());
  ops::silu_mul(step.rt, s.z.data(), s.ctx.data(), T * value, s.ctx.data());
  ops::matmul(step.rt, s.ctx.data(), T, w.out_proj, out);
}

}  // namespace qwen3
