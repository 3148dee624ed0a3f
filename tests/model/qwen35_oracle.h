// A float64 Qwen3.5 forward (dense and MoE) for tests: plain loops written from HF's
// modeling_qwen3_5(_moe).py (each step names the HF code it follows), sharing no code with the
// engine. Weights are a map from checkpoint names to values; the state (conv inputs, delta-rule
// matrices, KV caches) is its own.
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "qwen3/model.h"

namespace qwen3::qwen35_oracle {

using Vec = std::vector<double>;

// A model's shape: what config.json says, and how its checkpoint stores it.
struct Shape {
  std::string name;
  std::string layers = "LLLF";    // L: linear_attention (Gated DeltaNet), F: full_attention
  bool write_layer_types = true;  // false: only full_attention_interval, from which HF derives them
  int full_attention_interval = 4;
  bool tied = false;
  bool bf16 = true;  // the tensors' dtype; A_log is f32 either way, as in the fixtures
  int hidden = 64, heads = 4, kv_heads = 2, head_dim = 32, intermediate = 96, vocab = 2048;
  double partial_rotary = 0.25, rope_theta = 1e7, eps = 1e-6;
  int nk = 2, nv = 4, dk = 32, dv = 32, conv_kernel = 4;
  bool moe = false, packed = true;  // MoE: gate_up_proj / down_proj packed, or one per expert
  int experts = 8, top_k = 2, moe_intermediate = 32, shared_intermediate = 48;

  int rotary_dim() const { return int(head_dim * partial_rotary); }
};

struct Tensor {
  std::vector<int64_t> shape;
  std::vector<float> v;  // the values the file holds (already rounded to bf16 when it is bf16)
  bool f32 = false;
  const float* row(int64_t r) const { return v.data() + r * shape.back(); }
};
using Tensors = std::map<std::string, Tensor>;

inline const std::string kPrefix = "model.language_model.";

inline std::string layer_name(int l, const std::string& rest) {
  return kPrefix + "layers." + std::to_string(l) + "." + rest;
}

inline Vec matvec(const float* W, int64_t rows, int64_t cols, const double* x) {
  Vec y(rows, 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) y[r] += double(W[r * cols + c]) * x[c];
  return y;
}
inline Vec matvec(const Tensor& W, const Vec& x) {
  return matvec(W.v.data(), W.shape[0], W.shape[1], x.data());
}
inline double silu(double x) { return x / (1 + std::exp(-x)); }
inline double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
inline double dot(const double* a, const double* b, int n) {
  double s = 0;
  for (int i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

// Qwen3_5RMSNorm: x * rsqrt(mean(x^2) + eps) * (1 + w), zero-centred w
inline Vec centred_rms_norm(const double* x, const float* w, int n, double eps) {
  const double inv = 1 / std::sqrt(dot(x, x, n) / n + eps);
  Vec y(n);
  for (int i = 0; i < n; ++i) y[i] = x[i] * inv * (1 + double(w[i]));
  return y;
}

// One value head's gated delta rule over T tokens, HF's torch_recurrent_gated_delta_rule.
// q, k [T][dk] (normalised, q scaled), v [T][dv], S [dk * dv] in and out.
inline std::vector<Vec> recurrent_delta_rule(const std::vector<Vec>& q, const std::vector<Vec>& k,
                                             const std::vector<Vec>& v, const Vec& g,
                                             const Vec& beta, Vec& S) {
  const int T = int(q.size()), dk = int(q[0].size()), dv = int(v[0].size());
  std::vector<Vec> out(T, Vec(dv, 0.0));
  for (int t = 0; t < T; ++t) {
    for (double& x : S) x *= std::exp(g[t]);
    Vec kv_mem(dv, 0.0);
    for (int i = 0; i < dk; ++i)
      for (int d = 0; d < dv; ++d) kv_mem[d] += S[i * dv + d] * k[t][i];
    for (int i = 0; i < dk; ++i)
      for (int d = 0; d < dv; ++d) S[i * dv + d] += k[t][i] * (v[t][d] - kv_mem[d]) * beta[t];
    for (int i = 0; i < dk; ++i)
      for (int d = 0; d < dv; ++d) out[t][d] += S[i * dv + d] * q[t][i];
  }
  return out;
}

// The same, in HF's torch_chunk_gated_delta_rule form (what HF runs on every prompt), translated
// line by line for one head: chunks of 64, zero-padded; within a chunk the WY representation
// (the forward substitution loop), across chunks the state. Independent of the recurrence the
// engine runs, so agreement checks both.
inline std::vector<Vec> chunked_delta_rule(const std::vector<Vec>& q, const std::vector<Vec>& k,
                                           const std::vector<Vec>& v, const Vec& g, const Vec& beta,
                                           Vec& S) {
  constexpr int N = 64;  // chunk_size
  const int T = int(q.size()), dk = int(q[0].size()), dv = int(v[0].size());
  const int chunks = (T + N - 1) / N;
  std::vector<Vec> out(T, Vec(dv, 0.0));
  auto at = [&](const std::vector<Vec>& x, int t, int n) { return t < T ? x[t] : Vec(n, 0.0); };
  for (int c = 0; c < chunks; ++c) {
    std::vector<Vec> qc(N), kc(N), vb(N), kb(N);
    Vec gc(N, 0.0);  // g.cumsum(-1) within the chunk (padding g = 0)
    for (int i = 0; i < N; ++i) {
      const int t = c * N + i;
      const double b = t < T ? beta[t] : 0;
      qc[i] = at(q, t, dk);
      kc[i] = at(k, t, dk);
      vb[i] = at(v, t, dv);
      kb[i] = kc[i];
      for (double& x : vb[i]) x *= b;  // v_beta
      for (double& x : kb[i]) x *= b;  // k_beta
      gc[i] = (t < T ? g[t] : 0) + (i ? gc[i - 1] : 0);
    }
    // decay_mask[i][j] = exp(g_i - g_j) for j <= i
    std::vector<Vec> decay_mask(N, Vec(N, 0.0));
    for (int i = 0; i < N; ++i)
      for (int j = 0; j <= i; ++j) decay_mask[i][j] = std::exp(gc[i] - gc[j]);
    // attn = -((k_beta @ key^T) * decay_mask).masked_fill(triu(diagonal 0), 0)
    std::vector<Vec> A(N, Vec(N, 0.0));
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < i; ++j) A[i][j] = -dot(kb[i].data(), kc[j].data(), dk) * decay_mask[i][j];
    // attn[i, :i] = row + (row.unsqueeze(-1) * sub).sum(-2), rows above already final
    for (int i = 1; i < N; ++i) {
      const Vec row(A[i].begin(), A[i].begin() + i);
      for (int m = 0; m < i; ++m) {
        double s = row[m];
        for (int j = 0; j < i; ++j) s += row[j] * A[j][m];
        A[i][m] = s;
      }
    }
    for (int i = 0; i < N; ++i) A[i][i] += 1;
    // value = attn @ v_beta; k_cumdecay = attn @ (k_beta * g.exp())
    std::vector<Vec> u(N, Vec(dv, 0.0)), w(N, Vec(dk, 0.0));
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < N; ++j) {
        const double decayed = A[i][j] * std::exp(gc[j]);
        for (int d = 0; d < dv; ++d) u[i][d] += A[i][j] * vb[j][d];
        for (int d = 0; d < dk; ++d) w[i][d] += decayed * kb[j][d];
      }
    // v_new = value - k_cumdecay @ S
    std::vector<Vec> v_new(N, Vec(dv));
    for (int i = 0; i < N; ++i)
      for (int d = 0; d < dv; ++d) {
        double s = 0;
        for (int e = 0; e < dk; ++e) s += w[i][e] * S[e * dv + d];
        v_new[i][d] = u[i][d] - s;
      }
    // out = (q * g.exp()) @ S + ((q @ k^T) * decay_mask, causal) @ v_new
    for (int i = 0; i < N && c * N + i < T; ++i) {
      Vec& o = out[c * N + i];
      for (int d = 0; d < dv; ++d) {
        double s = 0;
        for (int e = 0; e < dk; ++e) s += qc[i][e] * S[e * dv + d];
        o[d] = std::exp(gc[i]) * s;
      }
      for (int j = 0; j <= i; ++j) {
        const double a = dot(qc[i].data(), kc[j].data(), dk) * decay_mask[i][j];
        for (int d = 0; d < dv; ++d) o[d] += a * v_new[j][d];
      }
    }
    // S = S * exp(g_last) + (k * exp(g_last - g))^T @ v_new
    const double last = gc[N - 1];
    for (double& x : S) x *= std::exp(last);
    for (int i = 0; i < N; ++i) {
      const double to_end = std::exp(last - gc[i]);
      for (int e = 0; e < dk; ++e)
        for (int d = 0; d < dv; ++d) S[e * dv + d] += kc[i][e] * to_end * v_new[i][d];
    }
  }
  return out;
}

// What a deliberately wrong oracle gets wrong, to show the comparison tells the feature apart.
struct Mutation {
  bool tiled_value_heads = false;  // value head j reads key head j % nk (not j / (nv / nk))
  int rotary_dim = 0;              // nonzero: RoPE over this many dims instead
};

class Oracle {
 public:
  Oracle(const Shape& s, const Tensors& w, Mutation mutation = {})
      : s_(s), w_(w), mutation_(mutation), layers_(s.layers.size()) {
    for (size_t l = 0; l < layers_.size(); ++l)
      if (s.layers[l] == 'L') layers_[l].S.assign(size_t(s.nv) * s.dk * s.dv, 0.0);
  }

  // Feeds tokens, returns each one's logits. chunked: the delta rule in HF's prompt form.
  std::vector<Vec> step(const std::vector<TokenId>& tokens, bool chunked) {
    const int T = int(tokens.size()), H = s_.hidden;
    std::vector<Vec> x(T);
    for (int t = 0; t < T; ++t) {
      const float* e = tensor(kPrefix + "embed_tokens.weight").row(tokens[t]);
      x[t].assign(e, e + H);
    }
    for (int l = 0; l < int(layers_.size()); ++l) {
      // x += mixer(input_layernorm(x)); x += mlp(post_attention_layernorm(x))
      std::vector<Vec> h = norm_rows(x, layer_name(l, "input_layernorm.weight"));
      const std::vector<Vec> mixed =
          s_.layers[l] == 'L' ? delta_net(l, h, chunked) : attention(l, h);
      for (int t = 0; t < T; ++t)
        for (int d = 0; d < H; ++d) x[t][d] += mixed[t][d];
      h = norm_rows(x, layer_name(l, "post_attention_layernorm.weight"));
      for (int t = 0; t < T; ++t) {
        const Vec f = s_.moe ? moe(l, h[t]) : mlp(layer_name(l, "mlp."), h[t]);
        for (int d = 0; d < H; ++d) x[t][d] += f[d];
      }
    }
    const Tensor& head = tensor(s_.tied ? kPrefix + "embed_tokens.weight" : "lm_head.weight");
    std::vector<Vec> logits;
    for (const Vec& h : norm_rows(x, kPrefix + "norm.weight")) logits.push_back(matvec(head, h));
    position_ += T;
    return logits;
  }

  double min_router_gap() const { return min_gap_; }

 private:
  struct LayerState {
    std::vector<Vec> conv_inputs;   // every pre-conv row so far; before the first, zeros
    Vec S;                          // [nv, dk, dv]
    std::vector<Vec> keys, values;  // [positions][kv_heads * head_dim]
  };

  const Tensor& tensor(const std::string& name) const { return w_.at(name); }

  std::vector<Vec> norm_rows(const std::vector<Vec>& x, const std::string& weight) const {
    std::vector<Vec> y;
    for (const Vec& r : x)
      y.push_back(centred_rms_norm(r.data(), tensor(weight).v.data(), s_.hidden, s_.eps));
    return y;
  }

  // Qwen3_5GatedDeltaNet.forward
  std::vector<Vec> delta_net(int l, const std::vector<Vec>& h, bool chunked) {
    LayerState& st = layers_[l];
    const std::string p = layer_name(l, "linear_attn.");
    const int T = int(h.size()), nk = s_.nk, nv = s_.nv, dk = s_.dk, dv = s_.dv, K = s_.conv_kernel;
    const int key = nk * dk, C = 2 * key + nv * dv;
    const Tensor& conv = tensor(p + "conv1d.weight");
    const Tensor& A_log = tensor(p + "A_log");
    const Tensor& dt_bias = tensor(p + "dt_bias");
    std::vector<Vec> q(T), k(T), v(T), z(T);
    Vec g(size_t(T) * nv), beta(size_t(T) * nv);
    for (int t = 0; t < T; ++t) {
      st.conv_inputs.push_back(matvec(tensor(p + "in_proj_qkv.weight"), h[t]));
      z[t] = matvec(tensor(p + "in_proj_z.weight"), h[t]);
      const Vec b = matvec(tensor(p + "in_proj_b.weight"), h[t]);
      const Vec a = matvec(tensor(p + "in_proj_a.weight"), h[t]);
      // depthwise causal conv over the last K inputs (zero padded), then SiLU
      const int n = int(st.conv_inputs.size());
      Vec mixed(C);
      for (int c = 0; c < C; ++c) {
        double acc = 0;
        for (int j = 0; j < K; ++j) {
          const int src = n - K + j;
          if (src >= 0) acc += double(conv.v[size_t(c) * K + j]) * st.conv_inputs[src][c];
        }
        mixed[c] = silu(acc);
      }
      // split [key, key, value]; l2norm (eps 1e-6 inside the sqrt) per head; query *= dk^-0.5
      q[t].assign(mixed.begin(), mixed.begin() + key);
      k[t].assign(mixed.begin() + key, mixed.begin() + 2 * key);
      v[t].assign(mixed.begin() + 2 * key, mixed.end());
      for (int hk = 0; hk < nk; ++hk) {
        double* qh = &q[t][size_t(hk) * dk];
        double* kh = &k[t][size_t(hk) * dk];
        const double qn = 1 / std::sqrt(dot(qh, qh, dk) + 1e-6);
        const double kn = 1 / std::sqrt(dot(kh, kh, dk) + 1e-6);
        for (int i = 0; i < dk; ++i) qh[i] *= qn / std::sqrt(double(dk)), kh[i] *= kn;
      }
      // beta = sigmoid(b); g = -exp(A_log) * softplus(a + dt_bias), softplus threshold 20
      for (int j = 0; j < nv; ++j) {
        const double x = a[j] + double(dt_bias.v[j]);
        const double softplus = x > 20 ? x : std::log1p(std::exp(x));
        g[size_t(t) * nv + j] = -std::exp(double(A_log.v[j])) * softplus;
        beta[size_t(t) * nv + j] = sigmoid(b[j]);
      }
    }
    // per value head j: key head j / (nv / nk) (repeat_interleave)
    std::vector<Vec> core(T, Vec(size_t(nv) * dv));
    for (int j = 0; j < nv; ++j) {
      const int hk = mutation_.tiled_value_heads ? j % nk : j / (nv / nk);
      std::vector<Vec> qj(T), kj(T), vj(T);
      Vec gj(T), bj(T);
      for (int t = 0; t < T; ++t) {
        qj[t].assign(&q[t][size_t(hk) * dk], &q[t][size_t(hk + 1) * dk]);
        kj[t].assign(&k[t][size_t(hk) * dk], &k[t][size_t(hk + 1) * dk]);
        vj[t].assign(&v[t][size_t(j) * dv], &v[t][size_t(j + 1) * dv]);
        gj[t] = g[size_t(t) * nv + j];
        bj[t] = beta[size_t(t) * nv + j];
      }
      Vec S(st.S.begin() + size_t(j) * dk * dv, st.S.begin() + size_t(j + 1) * dk * dv);
      const std::vector<Vec> o = chunked ? chunked_delta_rule(qj, kj, vj, gj, bj, S)
                                         : recurrent_delta_rule(qj, kj, vj, gj, bj, S);
      std::copy(S.begin(), S.end(), st.S.begin() + size_t(j) * dk * dv);
      for (int t = 0; t < T; ++t) std::copy(o[t].begin(), o[t].end(), &core[t][size_t(j) * dv]);
    }
    // Qwen3_5RMSNormGated per value head: w * (x * rsqrt(mean(x^2) + eps)) * silu(z); out_proj
    const Tensor& norm = tensor(p + "norm.weight");
    std::vector<Vec> out(T);
    for (int t = 0; t < T; ++t) {
      for (int j = 0; j < nv; ++j) {
        double* x = &core[t][size_t(j) * dv];
        const double inv = 1 / std::sqrt(dot(x, x, dv) / dv + s_.eps);
        for (int d = 0; d < dv; ++d)
          x[d] = double(norm.v[d]) * x[d] * inv * silu(z[t][size_t(j) * dv + d]);
      }
      out[t] = matvec(tensor(p + "out_proj.weight"), core[t]);
    }
    return out;
  }

  // Qwen3_5Attention.forward: q_proj per head [query | gate], (1 + w) q/k norms, partial RoPE
  // (rotate_half over the first R dims), GQA, causal softmax, * sigmoid(gate), o_proj.
  std::vector<Vec> attention(int l, const std::vector<Vec>& h) {
    LayerState& st = layers_[l];
    const std::string p = layer_name(l, "self_attn.");
    const int T = int(h.size()), nh = s_.heads, nkv = s_.kv_heads, hd = s_.head_dim;
    const int R = mutation_.rotary_dim ? mutation_.rotary_dim : s_.rotary_dim();
    auto rope = [&](double* x, int pos) {
      for (int i = 0; i < R / 2; ++i) {
        const double angle = pos * std::pow(s_.rope_theta, -2.0 * i / R);
        const double x1 = x[i], x2 = x[i + R / 2];
        x[i] = x1 * std::cos(angle) - x2 * std::sin(angle);
        x[i + R / 2] = x2 * std::cos(angle) + x1 * std::sin(angle);
      }
    };
    const Tensor& q_norm = tensor(p + "q_norm.weight");
    const Tensor& k_norm = tensor(p + "k_norm.weight");
    std::vector<Vec> query(T), gate(T);
    for (int t = 0; t < T; ++t) {
      const Vec mixed = matvec(tensor(p + "q_proj.weight"), h[t]);
      Vec k = matvec(tensor(p + "k_proj.weight"), h[t]);
      const Vec v = matvec(tensor(p + "v_proj.weight"), h[t]);
      for (int hq = 0; hq < nh; ++hq) {
        const double* m = &mixed[size_t(hq) * 2 * hd];
        Vec qh = centred_rms_norm(m, q_norm.v.data(), hd, s_.eps);
        rope(qh.data(), position_ + t);
        query[t].insert(query[t].end(), qh.begin(), qh.end());
        gate[t].insert(gate[t].end(), m + hd, m + 2 * hd);
      }
      for (int hk = 0; hk < nkv; ++hk) {
        Vec kh = centred_rms_norm(&k[size_t(hk) * hd], k_norm.v.data(), hd, s_.eps);
        rope(kh.data(), position_ + t);
        std::copy(kh.begin(), kh.end(), &k[size_t(hk) * hd]);
      }
      st.keys.push_back(k);
      st.values.push_back(v);
    }
    std::vector<Vec> out(T);
    for (int t = 0; t < T; ++t) {
      const int n = position_ + t + 1;  // causal: positions 0 .. position_ + t
      Vec ctx(size_t(nh) * hd, 0.0);
      for (int hq = 0; hq < nh; ++hq) {
        const int hk = hq / (nh / nkv);  // repeat_kv
        const double* qh = &query[t][size_t(hq) * hd];
        Vec score(n);
        for (int j = 0; j < n; ++j)
          score[j] = dot(qh, &st.keys[j][size_t(hk) * hd], hd) / std::sqrt(double(hd));
        const double top = *std::max_element(score.begin(), score.end());
        double sum = 0;
        for (double& x : score) sum += x = std::exp(x - top);
        for (int j = 0; j < n; ++j)
          for (int d = 0; d < hd; ++d)
            ctx[size_t(hq) * hd + d] += score[j] / sum * st.values[j][size_t(hk) * hd + d];
      }
      for (size_t i = 0; i < ctx.size(); ++i) ctx[i] *= sigmoid(gate[t][i]);
      out[t] = matvec(tensor(p + "o_proj.weight"), ctx);
    }
    return out;
  }

  // down(silu(gate x) * up x) from [I, H] gate and up rows and a [H, I] down matrix
  Vec swiglu(const float* gate, const float* up, const float* down, int I, const Vec& x) const {
    const int H = s_.hidden;
    const Vec g = matvec(gate, I, H, x.data()), u = matvec(up, I, H, x.data());
    Vec hidden(I);
    for (int i = 0; i < I; ++i) hidden[i] = silu(g[i]) * u[i];
    return matvec(down, H, I, hidden.data());
  }
  Vec mlp(const std::string& p, const Vec& x) const {
    const Tensor& gate = tensor(p + "gate_proj.weight");
    return swiglu(gate.v.data(), tensor(p + "up_proj.weight").v.data(),
                  tensor(p + "down_proj.weight").v.data(), int(gate.shape[0]), x);
  }

  // Qwen3_5MoeSparseMoeBlock: softmax router, top-k renormalised, packed experts
  // (gate_up_proj [E, 2I, H]: gate rows first), + sigmoid(shared_expert_gate x) * shared(x)
  Vec moe(int l, const Vec& x) {
    const std::string p = layer_name(l, "mlp.");
    const int E = s_.experts, k = s_.top_k, I = s_.moe_intermediate, H = s_.hidden;
    Vec prob = matvec(tensor(p + "gate.weight"), x);
    const double top = *std::max_element(prob.begin(), prob.end());
    double sum = 0;
    for (double& v : prob) sum += v = std::exp(v - top);
    for (double& v : prob) v /= sum;
    std::vector<int> order(E);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return prob[a] > prob[b]; });
    min_gap_ = std::min(min_gap_, prob[order[k - 1]] - prob[order[k]]);
    double chosen = 0;
    for (int j = 0; j < k; ++j) chosen += prob[order[j]];
    const Tensor& gate_up = tensor(p + "experts.gate_up_proj");
    const Tensor& down = tensor(p + "experts.down_proj");
    Vec out(H, 0.0);
    for (int j = 0; j < k; ++j) {
      const int e = order[j];
      const float* gu = gate_up.v.data() + size_t(e) * 2 * I * H;
      const Vec y = swiglu(gu, gu + size_t(I) * H, down.v.data() + size_t(e) * H * I, I, x);
      for (int d = 0; d < H; ++d) out[d] += prob[e] / chosen * y[d];
    }
    const Vec shared = mlp(p + "shared_expert.", x);
    const double scale = sigmoid(matvec(tensor(p + "shared_expert_gate.weight"), x)[0]);
    for (int d = 0; d < H; ++d) out[d] += scale * shared[d];
    return out;
  }

  const Shape& s_;
  const Tensors& w_;
  Mutation mutation_;
  std::vector<LayerState> layers_;
  int position_ = 0;
  double min_gap_ = INFINITY;
};

}  // namespace qwen3::qwen35_oracle
