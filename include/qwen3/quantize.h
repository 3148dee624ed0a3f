// Writing a block-quantized copy of a model folder that Model::load maps directly.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include "qwen3/model.h"

namespace qwen3 {

struct QuantizeOptions {
  WeightQuant type = WeightQuant::q8;  // q8 (q8_0) or q4 (q4_0)
  bool keep_head = false;  // leave embed_tokens and lm_head (tied in Qwen3-0.6B) in their dtype
};

// Called after each tensor with the bytes of source tensors done so far and in all.
using QuantizeProgress = std::function<void(uint64_t done, uint64_t total)>;

// Writes out_dir/model.safetensors (every matrix quantized but MoE routers, norms as they are; a
// tied lm_head.weight copy is left out) and copies config.json, the tokenizer files and every other
// non-weight file. The format is in docs/quantization.md. Throws qwen3::Error.
void quantize_model(const std::filesystem::path& model_dir, const std::filesystem::path& out_dir,
                    const QuantizeOptions& options, const QuantizeProgress& progress = {});

}  // namespace qwen3
