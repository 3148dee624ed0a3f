// The dense SwiGLU feed-forward: the tensors it reads and its forward step.
#include <string>

#include "model/layers.h"

namespace qwen3 {

void mlp_tensors(const std::string& p, int hidden, int intermediate, TensorRole role, MlpWeights& w,
                 const BindTensor& bind) {
  const int64_t D = hidden, F = intermediate;
  bind({p + "gate_proj.weight", {F, D}, role}, &w.gate_proj);
  bind({p + "up_proj.weight", {F, D}, role}, &w.up_proj);
  bind({p + "down_proj.weight", {D, F}, role}, &w.down_proj);
}

// HF: Qwen3MLP.forward: down_proj(silu(gate_proj(x)) * up_proj(x))
void mlp(Step& step, const MlpWeights& w, const float* h, float* out) {
  Scratch& s = step.s;
  const int T = step.rows.T, F = w.gate_proj.rows;
  s.gate.resize(size_t(T) * F);
  s.up.resize(size_t(T) * F);
  ops::matmul(step.rt, h, T, {{w.gate_proj, s.gate.data()}, {w.up_proj, s.up.data()}});
  ops::silu_mul(step.rt, s.gate.data(), s.up.data(), T * F, s.gate.data());
  ops::matmul(step.rt, s.gate.data(), T, w.down_proj, out);
}

}  // namespace qwen3
