// A model from one GGUF file (llama.cpp's format): its config from the metadata, its weights
// bound from llama.cpp's tensor names onto the same walk a safetensors folder takes (tensors.cpp).
#pragma once

#include <optional>
#include <string>

#include "io/gguf.h"
#include "model/weights.h"
#include "qwen3/model.h"

namespace qwen3 {

// ModelConfig from `<arch>.*` keys as llama.cpp's convert_hf_to_gguf.py writes them, for
// general.architecture qwen3, qwen3moe, qwen35 or qwen35moe. Throws qwen3::Error naming the file
// and the key.
ModelConfig gguf_model_config(const io::GgufFile& file);

// Where the tensor a checkpoint calls spec_name lies in a GGUF file: llama.cpp's name and, for a
// per-expert matrix, which slice of the stacked ffn_*_exps tensor. nullopt for a name llama.cpp
// has no tensor for.
struct GgufName {
  std::string name;  // "blk.3.attn_q.weight"
  int expert = -1;   // slice of a stacked [E, rows, cols] tensor
};
std::optional<GgufName> gguf_tensor_name(const std::string& spec_name, const ModelConfig& c);

// Every tensor of c bound from the file: f32 / f16 / bf16 matrices in place; q8_0, q4_0, q4_1,
// q5_0, q5_1, iq4_nl and the K-quants q4_K, q5_K, q6_K repacked into the engine's row groups (owned
// memory); other types the engine has no kernel for dequantized to bf16 at load; with quant (q8 /
// q4) all but q8_0 and q4_0 are requantized to q8_0 / q4_0 instead (keep_head: not the embeddings
// and LM head); Qwen3.5's converted values turned back (Weights::notes says what was converted).
// The file moves into the result.
Weights load_gguf_weights(io::GgufFile file, const ModelConfig& c,
                          WeightQuant quant = WeightQuant::none, bool keep_head = false);

}  // namespace qwen3
