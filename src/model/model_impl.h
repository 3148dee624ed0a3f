// What a loaded Model holds: weights, kernels and threads, and the buffers its steps reuse.
#pragma once

#include <thread>
#include <vector>

#include "model/layers.h"
#include "model/weights.h"
#include "ops/ops.h"
#include "qwen3/model.h"

namespace qwen3 {

struct Model::Impl {
  Impl(const ModelConfig& c, Weights weights, ops::RuntimePtr runtime, DType kv)
      : w(std::move(weights)),
        rt(std::move(runtime)),
        kv_cache(kv),
        per_token(w.per_token_matrices(c)),
        mtp_per_token(w.per_token_matrices(c, true)) {
    prefaulting = std::thread([this] { prefault(per_token); });
  }
  ~Impl() { prefaulting.join(); }

  Weights w;
  ops::RuntimePtr rt;
  DType kv_cache;                      // f32, f16 or bf16
  std::vector<ops::Matrix> per_token;  // what one decoded token reads (Weights::per_token_matrices)
  std::vector<ops::Matrix> mtp_per_token;  // what one token of the MTP head reads (and the LM head)
  std::vector<float> batch_logits;  // a batch's LM-head product, kept for the next decode step
  Scratch scratch;
  std::thread prefaulting;  // maps the weights' pages while the caller loads the tokenizer
};

}  // namespace qwen3
