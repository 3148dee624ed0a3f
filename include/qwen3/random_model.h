// Random-weight model folders of any supported shape, in the Hugging Face layout: for speed and
// memory work without real weights (their text is noise, their speed is real).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "qwen3/model.h"

namespace qwen3 {

// A shape to write: config.json's fields. model_type "qwen3", "qwen3_moe", "qwen3_5" or
// "qwen3_5_moe" (written nested, as Qwen3.5's checkpoints are); layers is derived. Presets:
// "qwen3-0.6b", "qwen3-30b-a3b", "qwen3-moe-small", and Qwen3.5's published text shapes
// "qwen3.5-0.8b", "-2b", "-4b", "-9b", "-35b-a3b"; random_model_presets() lists them.
ModelConfig random_model_preset(const std::string& name);
std::vector<std::string> random_model_presets();

struct RandomModelOptions {
  // none: bf16, as published checkpoints are; q8 / q4: the matrices written directly in the
  // quantized folder format (`qwen3 quantize`'s), so a 30B shape needs no 61 GB bf16 file first.
  WeightQuant quant = WeightQuant::none;
  uint64_t seed = 1;
  std::filesystem::path tokenizer_from;  // a folder with tokenizer.json and tokenizer_config.json
};

// Writes config.json, generation_config.json, the tokenizer files and model.safetensors with every
// tensor the model's tensor list names (norms ones, matrices ~N(0, 0.02)). A tied bf16 model also
// stores lm_head.weight as an exact copy of the embeddings, as Qwen3-0.6B does.
void write_random_model(const std::filesystem::path& out, const ModelConfig& config,
                        const RandomModelOptions& options);

}  // namespace qwen3
