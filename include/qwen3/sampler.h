// Turning logits into the next token: penalties, temperature, top-k, top-p, min-p, seeded draw.
#pragma once

#include <cstdint>
#include <filesystem>
#include <random>
#include <span>
#include <vector>

namespace qwen3 {

struct SamplingParams {
  float temperature = 1.0f;         // 0 = greedy
  int top_k = 0;                    // 0 = off
  float top_p = 1.0f;               // (0, 1]; 1 = off
  float min_p = 0.0f;               // [0, 1]; 0 = off
  float repetition_penalty = 1.0f;  // > 0; 1 = off (Hugging Face / CTRL definition)
  float presence_penalty = 0.0f;    // OpenAI definition, [-2, 2]
  float frequency_penalty = 0.0f;   // OpenAI definition, [-2, 2]
  uint64_t seed = 0;

  // Throws qwen3::Error (invalid_argument) naming the first bad field: NaN, negative temperature,
  // top_p outside (0, 1], top_k < 0, min_p outside [0, 1], repetition_penalty <= 0.
  void validate() const;

  // Defaults from MODEL_DIR/generation_config.json (Qwen3: temperature 0.6, top_k 20, top_p 0.95);
  // the fields above when the file or a field is absent.
  static SamplingParams from_generation_config(const std::filesystem::path& model_dir);
};

struct TokenProb {
  int32_t id;
  float prob;
};

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);  // validates

  // Order, as Hugging Face: penalties -> temperature -> top_k -> top_p -> min_p -> draw.
  // `history` is every token the penalties count (prompt and generated so far).
  int32_t sample(std::span<const float> logits, std::span<const int32_t> history);

  const SamplingParams& params() const { return params_; }

 private:
  SamplingParams params_;
  std::mt19937_64 rng_;
  std::vector<float> work_;
};

// The k most likely tokens of softmax(logits), best first (for --show-probs and logprobs).
std::vector<TokenProb> top_probs(std::span<const float> logits, int k);

}  // namespace qwen3
