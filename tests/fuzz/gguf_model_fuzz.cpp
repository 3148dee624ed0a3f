// Fuzz target: a GGUF model file, mutated, must load (config from its metadata, every tensor
// bound, repacked or dequantized) or be refused with qwen3::Error: never crash, never read outside
// the bytes, never size memory from a count the file cannot back.
#include <cstdint>
#include <fstream>
#include <iterator>
#include <vector>

#include "io/gguf.h"
#include "model/gguf_model.h"
#include "qwen3/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A copy of exactly `size` bytes, so reading one byte past the input is caught.
  const std::vector<uint8_t> bytes(data, data + size);
  try {
    qwen3::io::GgufFile file = qwen3::io::GgufFile::parse(bytes.data(), bytes.size(), "fuzz.gguf");
    const qwen3::ModelConfig config = qwen3::gguf_model_config(file);
    qwen3::load_gguf_weights(std::move(file), config);
  } catch (const qwen3::Error&) {}
  return 0;
}

std::vector<std::vector<uint8_t>> fuzz_seeds() {
  // llama-quantize'd Q8_0 and Q4_K_M models (q8_0 matrices to repack, K-quants to dequantize),
  // the MoE in BF16 (stacked experts) and Qwen3.5-MoE (value heads to reorder), when run from
  // tests/fixtures as ctest does.
  std::vector<std::vector<uint8_t>> seeds;
  for (const char* name : {"gguf/qwen3-256-q8_0.gguf", "gguf/qwen3-256-q4_k_m.gguf",
                           "gguf/qwen3moe-tiny-bf16.gguf", "gguf/qwen35-tiny-moe-bf16.gguf"}) {
    std::ifstream in(name, std::ios::binary);
    if (in)
      seeds.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return seeds;
}
