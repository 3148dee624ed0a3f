// Loading a Qwen3 model folder and stepping a batch of sequences through it.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace qwen3 {

using TokenId = int32_t;

// config.json, with Hugging Face's key names.
struct ModelConfig {
  std::string model_type;  // "qwen3"
  int hidden_size = 0;
  int intermediate_size = 0;
  int num_hidden_layers = 0;
  int num_attention_heads = 0;
  int num_key_value_heads = 0;
  int head_dim = 0;  // explicit: 16 x 128 != 1024 in Qwen3-0.6B
  int vocab_size = 0;
  int max_position_embeddings = 0;
  double rope_theta = 0;
  double rms_norm_eps = 0;
  bool tie_word_embeddings = false;
  std::string torch_dtype;
  int bos_token_id = -1;
  std::vector<int> eos_token_id;

  // "Qwen3-0.6B (28 layers, 1024 dim, 16 Q heads, 8 KV heads)" style summary.
  std::string summary(const std::string& name) const;
  static ModelConfig load(const std::filesystem::path& model_dir);  // validates every field
};

struct LoadOptions {
  int threads = 0;          // 0 = one per core
  std::string isa = "auto";  // "auto", "avx512", "avx2" or "scalar" (the plain reference kernels)
  // "q8" or "q4": quantize float weights at load time (into owned memory) as `qwen3 quantize`
  // would write them; "" uses the folder's weights as they are (a quantized folder is mapped).
  std::string quant = "";
  bool keep_head = false;  // with quant: leave embed_tokens and lm_head in their file dtype
  // true: memory-map the weights (fast start, shared page cache; 2 MiB pages where the cache holds
  // the file in 2 MiB folios, see drop_from_page_cache). false: read them into huge-page memory
  // (slower start; 4-15% faster decode than a map of a file cached in 4 KiB pages).
  bool mmap = true;
  // How each sequence's KV cache holds keys and values: "f32", or "f16", which halves the cache's
  // memory and what attention reads per token (decode at long contexts) at a small accuracy cost;
  // or "bf16", the same memory, with attention as AVX512_BF16 dot products (query and weights
  // rounded to bf16; needs activations "bf16"). "auto" takes bf16 with bf16 activations, else f16
  // for quantized (q8/q4) layers, whose own error is far larger, and f32 for float ones.
  std::string kv_cache = "auto";
  // How products with bf16 weights take their activations: "f32" exactly (widened weights, float
  // multiply-adds: within 1e-5 of a float32 reference); "bf16" rounded to bf16, as llama.cpp does,
  // for AVX512_BF16 dot products with twice the multiply-adds per instruction (prompts 1.3-1.6x
  // faster; logits move by up to about 0.2: docs/precision.md). bf16 needs a CPU with AVX512_BF16.
  std::string activations = "f32";
};

class Model;

namespace detail {
// Allocates zeroed pages from the kernel, aligned to a page, and leaves elements uninitialized, so
// a KV cache only touches (and holds) the pages its tokens fill; blocks of 2 MiB or more in 2 MiB
// pages.
template <class T>
struct ZeroPagesAllocator {
  using value_type = T;
  ZeroPagesAllocator() = default;
  template <class U>
  ZeroPagesAllocator(const ZeroPagesAllocator<U>&) {}
  T* allocate(size_t n);
  void deallocate(T* p, size_t n);
  template <class U>
  void construct(U* p) {
    ::new (static_cast<void*>(p)) U;
  }
  bool operator==(const ZeroPagesAllocator&) const { return true; }
};
using CacheBlock = std::vector<uint8_t, ZeroPagesAllocator<uint8_t>>;  // f32 or f16 elements
}  // namespace detail

// One sequence's KV cache. It grows as tokens arrive (capacity is not reserved up front) up to
// max_context tokens; stepping past that throws Error(context_overflow).
class Sequence {
 public:
  explicit Sequence(const Model& model, int max_context = 0);  // 0 = the model's maximum
  int length() const { return length_; }
  int max_context() const { return max_context_; }
  // Forgets every cached token from `length` on (to rewind, or to reuse a shared prefix).
  void truncate(int length);
  size_t bytes() const;  // KV-cache memory held

 private:
  friend class Model;
  void reserve(int tokens);
  int layers_ = 0, kv_heads_ = 0, head_dim_ = 0;
  int element_bytes_ = 4;  // 4: f32, 2: f16 or bf16 (Model::kv_element_bytes)
  int length_ = 0, max_context_ = 0, capacity_ = 0;
  // Per layer [kv_heads, capacity, head_dim]: each head's positions together, so attention reads
  // them as one matrix; keys in blocks of 16 positions, dimension-major within a block (see
  // src/ops/key_layout.h). capacity is a multiple of 16.
  std::vector<detail::CacheBlock> k_, v_;
};

// One entry of a batch: the new tokens of one sequence (a whole prompt, or one token).
struct BatchItem {
  Sequence* sequence = nullptr;
  std::span<const TokenId> tokens;
  bool all_logits = false;  // logits for every token, not just the last
};

// Receives named intermediates ("embed", "layers.3", "norm") as [rows, cols] float rows.
using Observer = std::function<void(std::string_view name, const float* data, int rows, int cols)>;

class Model {
 public:
  // Reads config.json and the safetensors weights (memory-mapped, never converted); checks every
  // tensor's presence, dtype and shape before any compute.
  static std::unique_ptr<Model> load(const std::filesystem::path& model_dir, const LoadOptions& options = {});
  ~Model();

  const ModelConfig& config() const { return config_; }
  const std::string& name() const { return name_; }  // folder name
  const char* isa() const;                            // the kernels in use
  int threads() const;
  uint64_t weight_bytes() const;  // bytes of weights read per decoded token
  // GB/s of one plain read of those bytes on the model's threads, nothing computed: the bound a
  // decode step's weight reads answer to, measured on the very memory that holds them (a file's
  // pages in the page cache, or the huge pages it was read into) rather than on fresh memory.
  double read_speed();
  const char* kv_cache() const;   // "f32", "f16" or "bf16"

  // Advances every item's sequence by its tokens, all in one pass over the weights. Returns,
  // per item, logits [rows, vocab_size]: one row (the last token) or one per token.
  // A sequence's results are bit-identical whatever else is in the batch and whatever the
  // thread count. Throws Error (invalid_argument, context_overflow) before computing anything.
  std::vector<std::vector<float>> step(std::span<const BatchItem> batch, const Observer* observer = nullptr);
  // The same, writing into `logits` (one vector per item) and reusing its memory: a decode loop
  // that keeps it allocates nothing per token (a fresh 600 KB vector per token has its pages
  // faulted in again each time: 3-5% of a q4 decode).
  void step(std::span<const BatchItem> batch, std::vector<std::vector<float>>& logits,
            const Observer* observer = nullptr);

  struct Impl;

 private:
  friend class Sequence;
  Model() = default;
  int kv_element_bytes() const;  // bytes per key or value element of this model's sequences
  ModelConfig config_;
  std::string name_;
  std::unique_ptr<Impl> impl_;
};

// For writers of weight files (downloads, quantize, random models): writes the file to disk and
// drops it from the page cache, so that the next load reads it back in 2 MiB pieces, which a map
// then uses as 2 MiB pages (decode 4-15% faster than over the 4 KiB pieces a file is written in).
// Best effort: pages that a running process maps stay where they are.
void drop_from_page_cache(const std::filesystem::path& weights_file);

}  // namespace qwen3
