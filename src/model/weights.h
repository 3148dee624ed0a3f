// Typed views of every weight of a model, named as in the checkpoint, checked before any compute.
#pragma once

#include <filesystem>
#include <optional>
#include <vector>

#include "io/gguf.h"
#include "io/huge_page_buffer.h"
#include "io/safetensors.h"
#include "model/layers.h"
#include "ops/ops.h"
#include "qwen3/model.h"

namespace qwen3 {

struct Weights {
  io::SafetensorsArchive archive;             // owns the memory maps the matrices point into
  std::vector<io::HugePageBuffer> quantized;  // matrices quantized at load time point in here
  ops::Matrix embed_tokens;                   // [V, D]
  std::vector<LayerWeights> layers;
  io::Buffer<float> norm;  // [D]
  ops::Matrix lm_head;     // [V, D]: embed_tokens itself when tied
  MtpWeights mtp;          // when config.mtp_num_hidden_layers is 1
  // Tensors of the checkpoint the model does not read (Qwen3.5's vision tower and MTP head),
  // by group: "model.visual.* (28 tensors)".
  std::vector<std::string> unread;
  // A GGUF file's map, when the model came from one (gguf_model.h), and what its loading
  // converted: "q3_K: 29 matrices dequantized to bf16 at load (no kernel for the type yet)".
  std::optional<io::GgufFile> gguf;
  std::vector<std::string> notes;

  // The matrices one decoded token reads: each layer's (of an MoE layer, the router and the first
  // num_experts_per_tok experts, as many bytes as any token's choice), then the LM head; with
  // mtp_head, those of one token through the multi-token-prediction head instead.
  std::vector<ops::Matrix> per_token_matrices(const ModelConfig& c, bool mtp_head = false) const;
};

// Sizes w's layers (and their experts) for c.
void size_weights(const ModelConfig& c, Weights& w);
// The one list of a model's tensors: calls bind(spec, slot) for every tensor the checkpoint of c
// holds, in checkpoint order, with the field of w (sized by size_weights) that holds it. Loading,
// the random-model writer, quantization and bandwidth accounting all walk it. An untied lm_head is
// listed; a tied one is not (the loader points lm_head at embed_tokens).
void for_each_tensor(const ModelConfig& c, Weights& w, const BindTensor& bind);
std::vector<TensorSpec> tensor_specs(const ModelConfig& c);

// Maps the per-token matrices' pages from the page cache ahead of first use (MADV_POPULATE_READ),
// so the first token does not pay ~300 000 page faults. Safe to run beside compute; a no-op where
// the kernel lacks it.
void prefault(const std::vector<ops::Matrix>& matrices);

// Norm vectors are widened to float32 (they are tiny); matrices stay in the file's dtype, mapped
// or, with `in_memory`, read into huge-page memory. Sets config.packed_experts from the names.
Weights load_weights(const std::filesystem::path& model_dir, ModelConfig& config,
                     bool in_memory = false);
// What the config cannot say about a checkpoint: whether it packs each MoE layer's experts in two
// tensors (packed_experts, and mtp_packed_experts for the MTP head's layer), whether it holds
// the MTP head (mtp_num_hidden_layers: 0 when it does not, whatever config.json says).
void read_checkpoint_layout(const io::SafetensorsArchive& archive, ModelConfig& config);

// The block-quantized dtype of q8 / q4 (none is an invalid_argument error).
DType quant_dtype(WeightQuant quant);

// Quantizes every float matrix but the routers to `to` (q8_0 or q4_0) into owned memory, as
// `qwen3 quantize` writes them; keep_head leaves embed_tokens and lm_head as they are.
void quantize_weights(const ModelConfig& c, Weights& w, DType to, bool keep_head, ops::Runtime& rt);

// Whether quantization turns a tensor of this role into q8_0 / q4_0 (keep_head: not the
// embeddings or the LM head).
bool quantized_role(TensorRole role, bool keep_head);

}  // namespace qwen3
