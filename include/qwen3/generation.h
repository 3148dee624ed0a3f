// One generation request: feeds its prompt (in chunks), samples, detects eos and stop strings,
// and streams text. The CLI runs one at a time; the server steps many together.
#pragma once

#include <climits>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "qwen3/grammar.h"
#include "qwen3/model.h"
#include "qwen3/reasoning_control.h"
#include "qwen3/sampler.h"
#include "qwen3/speculative.h"
#include "qwen3/tokenizer.h"

namespace qwen3 {

struct GenerationOptions {
  SamplingParams sampling;
  int max_tokens = 256;           // new tokens at most
  std::vector<std::string> stop;  // stop strings: generation ends before the first one found
  std::vector<TokenId> eos;       // tokens that end generation (not part of the text)
  bool logprobs =
      false;  // fill GeneratedToken::logprob (an exp per vocabulary entry, ~1 ms a token)
  int top_logprobs = 0;  // how many alternatives to report per token (0..20)
  // Constrained decoding: every sampled token keeps the output inside this grammar (after the
  // reasoning, when it says so), and the eos tokens may come only once it is complete.
  std::optional<GrammarConstraint> grammar;
  // Thinking budget and loop guard (qwen3/reasoning_control.h); also counts reasoning tokens.
  std::optional<ReasoningOptions> reasoning;
  void validate() const;  // throws Error(invalid_argument)
};

// The tokens that end a generation: config.json's eos_token_id and generation_config.json's
// (Qwen3: <|im_end|> 151645 and <|endoftext|> 151643).
std::vector<TokenId> eos_tokens(const std::filesystem::path& model_dir, const ModelConfig& config);

enum class FinishReason { none, eos, stop, length };
const char* finish_reason_name(FinishReason reason);  // "stop" for eos and stop strings, "length"

struct GeneratedToken {
  TokenId id = -1;
  float logprob = 0;  // log-probability under the unmodified model distribution, when asked for
  std::vector<TokenProb> top;  // the top_logprobs most likely tokens, when asked for
  std::string text;            // text now complete and safe to show (may be empty)
};

class Generation {
 public:
  // `sequence` holds any earlier context (e.g. previous chat turns); `prompt` is appended to it.
  // Throws Error(context_overflow) when the prompt does not fit the sequence's context.
  Generation(Sequence& sequence, const Tokenizer& tokenizer, std::vector<TokenId> prompt,
             GenerationOptions options);
  ~Generation();

  // Speculative decoding (qwen3/speculative.h): once the prompt is in, each step feeds the last
  // token with up to `max_tokens` that `proposer` guesses, as many as pay off (DraftLength, for a
  // model whose steps take pass_rows rows in one pass: Model::pass_rows). The drafts' cost is
  // timed: the model step from next_item to advance (call them right before and after it) and the
  // proposer's drafting.
  void speculate(std::unique_ptr<Proposer> proposer, int max_tokens, int pass_rows);
  const SpeculationStats* speculation() const;  // null without speculation

  // The tokens the next model step must consume for this request: the rest of the prompt, at
  // most `chunk` of it, or the last sampled token (and the drafts to check). Empty once done().
  std::span<const TokenId> next_input(int chunk = INT_MAX) const;
  // The same as a batch item, with the logits, rewinding and hidden rows a speculative step needs.
  BatchItem next_item(int chunk = INT_MAX);

  // After the model consumed next_input(chunk) (`fed` tokens), with its logits (of the last row,
  // or of every row for a speculative step). Returns the tokens produced once the prompt is fully
  // in: one, or with speculation the accepted drafts and one of the model's own.
  std::vector<GeneratedToken> advance(int fed, std::span<const float> logits);

  // Ends the request early (client gone, Ctrl-C); flushes nothing.
  void cancel() { finish_ = FinishReason::length; }

  bool done() const { return finish_ != FinishReason::none; }
  FinishReason finish_reason() const { return finish_; }
  int prompt_tokens() const { return static_cast<int>(prompt_.size()); }
  int completion_tokens() const { return static_cast<int>(generated_.size()); }
  const std::vector<TokenId>& generated() const { return generated_; }
  std::string text() const { return text_; }  // all text emitted so far
  Sequence& sequence() { return sequence_; }
  // The reasoning controller (options.reasoning given), with its events and reasoning tokens.
  const ReasoningController* reasoning() const { return reasoning_ ? &*reasoning_ : nullptr; }

 private:
  struct Speculation;
  // Samples row `logits` (or checks `draft` against it) and records the token; `held` tokens are
  // in the sequence before it.
  GeneratedToken emit(std::span<const float> logits, int held, TokenId draft = -1);
  std::vector<GeneratedToken> verify(std::span<const float> logits);
  void propose();
  std::string take_safe_text(bool final);

  Sequence& sequence_;
  const Tokenizer& tokenizer_;
  GenerationOptions options_;
  Sampler sampler_;
  std::optional<TokenConstraint> constraint_;
  std::optional<ReasoningController> reasoning_;
  StreamDecoder decoder_;
  std::vector<TokenId> prompt_, generated_, history_;
  size_t fed_ = 0;
  std::string held_;  // decoded text not yet emitted: it may be the start of a stop string
  std::string text_;  // everything emitted
  FinishReason finish_ = FinishReason::none;
  std::unique_ptr<Speculation> spec_;
};

// Runs a generation alone to the end, calling `on_token` for each sampled token; returns the
// reason it stopped. Convenience for front ends that serve one request at a time.
template <class OnToken>
FinishReason generate(Model& model, Generation& g, OnToken&& on_token, int chunk = 512) {
  std::vector<std::vector<float>> logits;
  while (!g.done()) {
    const BatchItem item = g.next_item(chunk);
    model.step({&item, 1}, logits);
    for (auto& token : g.advance(static_cast<int>(item.tokens.size()), logits[0])) on_token(token);
  }
  return g.finish_reason();
}

}  // namespace qwen3
