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

  // Throws qwen3::Error (invalid_argument) naming the first bad field and its value: NaN or inf,
  // negative temperature, top_p outside (0, 1], top_k < 0, min_p outside [0, 1],
  // repetition_penalty <= 0, presence/frequency penalty outside [-2, 2]. Never clamps.
  void validate() const;

  // Defaults from MODEL_DIR/generation_config.json (Qwen3: temperature 0.6, top_k 20, top_p 0.95);
  // the fields above when the file or a field is absent; do_sample false means greedy. Malformed
  // JSON: qwen3::Error (format) naming the file.
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
  // The same among the `allowed` tokens only (constrained decoding): bit (id % 64) of
  // allowed[id / 64]; the others, and ids past the bitset, count as logits of -inf before every
  // step above. An empty bitset allows every token.
  int32_t sample(std::span<const float> logits, std::span<const int32_t> history,
                 std::span<const uint64_t> allowed);

  // Speculative decoding's accept/reject rule for a proposed token (Leviathan et al. 2023 with a
  // deterministic draft): keeps `draft` with its probability p(draft) after every step above, else
  // draws from p without it, renormalised. The token returned follows p exactly, as sample()'s
  // does; greedy gives the argmax, whatever the draft.
  int32_t verify(std::span<const float> logits, std::span<const int32_t> history,
                 std::span<const uint64_t> allowed, int32_t draft);

  // The tokens a draw would choose from, after every step above, with their renormalised
  // probabilities, best first (ties: lower id first). Greedy gives the argmax with prob 1.
  std::vector<TokenProb> candidates(std::span<const float> logits,
                                    std::span<const int32_t> history);

  const SamplingParams& params() const { return params_; }
  // Changes the presence penalty between draws (the loop guard's remedy); validated as above.
  void set_presence_penalty(float penalty);

 private:
  // Fills kept_ (ids; best first when `best_first` or when top_k/top_p truncate) and work_ (their
  // renormalised probabilities, by id).
  void filter(std::span<const float> logits, std::span<const int32_t> history, bool best_first,
              std::span<const uint64_t> allowed = {});
  void apply_penalties(std::span<const int32_t> history);
  bool penalizes() const;  // any of the three penalties on

  SamplingParams params_;
  std::mt19937_64 rng_;
  // Reused across calls: a 151936-entry vocab would otherwise allocate ~1.2 MB per token.
  std::vector<float> work_;      // [vocab] penalised, tempered logits, then probabilities
  std::vector<int32_t> counts_;  // [vocab] occurrences in history; all zero between calls
  std::vector<int32_t> kept_;    // surviving token ids, best first
};

// The id of the largest logit, the lowest id among equals (greedy decoding); 0 when none is above
// -inf.
int32_t argmax(std::span<const float> logits);

// The same among the allowed tokens (a bitset as in Sampler::sample); 0 when none is allowed.
int32_t allowed_argmax(std::span<const float> logits, std::span<const uint64_t> allowed);

// The k most likely tokens of softmax(logits), best first (for --show-probs and logprobs).
std::vector<TokenProb> top_probs(std::span<const float> logits, int k);

// log(sum(exp(logits))), in double: softmax's normaliser, so log p(i) = logits[i] - logsumexp.
double logsumexp(std::span<const float> logits);

}  // namespace qwen3
