// Typed views of every Qwen3 weight, named as in the checkpoint, checked before any compute.
#pragma once

#include <filesystem>
#include <vector>

#include "io/huge_page_buffer.h"
#include "io/safetensors.h"
#include "ops/ops.h"
#include "qwen3/model.h"

namespace qwen3 {

struct LayerWeights {
  io::Buffer<float> input_layernorm;            // [D]
  ops::Matrix q_proj;                           // [H * Dh, D]
  ops::Matrix k_proj;                           // [Hkv * Dh, D]
  ops::Matrix v_proj;                           // [Hkv * Dh, D]
  io::Buffer<float> q_norm;                     // [Dh]
  io::Buffer<float> k_norm;                     // [Dh]
  ops::Matrix o_proj;                           // [D, H * Dh]
  io::Buffer<float> post_attention_layernorm;   // [D]
  ops::Matrix gate_proj;                        // [F, D]
  ops::Matrix up_proj;                          // [F, D]
  ops::Matrix down_proj;                        // [D, F]
};

struct Weights {
  io::SafetensorsArchive archive;  // owns the memory maps the matrices point into
  std::vector<io::HugePageBuffer> quantized;  // matrices quantized at load time point in here
  ops::Matrix embed_tokens;        // [V, D]
  std::vector<LayerWeights> layers;
  io::Buffer<float> norm;   // [D]
  ops::Matrix lm_head;      // [V, D]: embed_tokens itself when tied

  // The matrices read for every token: each layer's, then the LM head.
  std::vector<ops::Matrix> per_token_matrices() const;
  // Bytes of matrices read for one decoded token.
  uint64_t bytes_per_token() const;
};

// Maps the per-token matrices' pages from the page cache ahead of first use (MADV_POPULATE_READ),
// so the first token does not pay ~300 000 page faults. Safe to run beside compute; a no-op where
// the kernel lacks it.
void prefault(const Weights& weights);

// Norm vectors are widened to float32 (they are tiny); matrices stay in the file's dtype, mapped
// or, with `in_memory`, read into huge-page memory.
Weights load_weights(const std::filesystem::path& model_dir, const ModelConfig& config, bool in_memory = false);

// "q8" -> q8_0, "q4" -> q4_0; anything else is an invalid_argument error.
DType parse_quant_type(std::string_view type);

// Quantizes every float matrix to `to` (q8_0 or q4_0) into owned memory, as `qwen3 quantize`
// writes them; keep_head leaves embed_tokens and lm_head as they are.
void quantize_weights(Weights& w, DType to, bool keep_head, ops::Runtime& rt);

}  // namespace qwen3
