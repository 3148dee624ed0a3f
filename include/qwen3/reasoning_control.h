// Reasoning control for one reply: a thinking budget and a loop guard that end a <think> block by
// forcing "\n</think>\n\n" (or first raise the presence penalty), consulted by Generation at
// every token it emits.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "qwen3/tokenizer.h"

namespace qwen3 {

// What the loop guard does once the thinking repeats itself.
enum class LoopAction {
  off,
  close,     // end the think block at once
  penalize,  // raise the presence penalty for the rest of the thinking; close if it loops again
};

struct ReasoningOptions {
  // Thinking tokens before the block is closed: at the first sentence end from then on, or after
  // `grace_tokens` more (a forced line break counted among them). None: no budget.
  std::optional<int> thinking_budget;
  int grace_tokens = 32;
  LoopAction loop_action = LoopAction::close;
  // A loop: the same run of `loop_ngram` tokens seen `loop_repeats` times in one think block.
  // Small Qwen models repeat a sentence or a paragraph word for word; a 20-token run seen 4 times
  // is rare in reasoning that moves on.
  int loop_ngram = 20;
  int loop_repeats = 4;
  float loop_presence_penalty = 1.5f;  // LoopAction::penalize (Qwen's advice against repetition)
  void validate() const;               // throws Error(invalid_argument) naming the field
};

// Something the controller did to a reply's thinking, reported to the client.
struct ReasoningEvent {
  enum class Cause { thinking_budget, loop } cause;
  enum class Action { closed_thinking, raised_presence_penalty } action;
  int reasoning_tokens = 0;  // thinking tokens at that point
};
const char* reasoning_cause_name(ReasoningEvent::Cause cause);     // "thinking_budget", "loop"
const char* reasoning_action_name(ReasoningEvent::Action action);  // "closed_thinking", ...

// The tokens of the think markup in a vocabulary.
struct ThinkTokens {
  TokenId open = -1, close = -1;  // <think>, </think>
  std::vector<TokenId> closing;   // "\n</think>\n\n": what a forced end emits
  // Empty (open -1) when the vocabulary has no think tags: the controller then never acts.
  static ThinkTokens of(const Tokenizer& tokenizer);
};

class ReasoningController {
 public:
  // `opened_by_prompt`: the prompt ends inside a <think> block (Qwen3.5's template); otherwise
  // the reply thinks only when its first token is <think>.
  ReasoningController(ReasoningOptions options, ThinkTokens tokens, bool opened_by_prompt);

  // The token to emit next instead of sampling one, while a forced close is under way. A token
  // the grammar's mask (`allowed`: bit id % 64 of word id / 64; empty allows all) refuses drops
  // the rest of the forced text: a grammar may not take the blank line after </think>.
  std::optional<TokenId> forced(std::span<const uint64_t> allowed);
  // Every emitted token, forced or sampled, with its bytes (Tokenizer::token_bytes).
  void accept(TokenId id, std::string_view bytes);
  // The presence penalty to sample with: `requested`, or more while a loop is being penalized.
  float presence_penalty(float requested) const;

  bool thinking() const { return phase_ == Phase::thinking; }
  int reasoning_tokens() const { return reasoning_tokens_; }  // between the tags
  const std::vector<ReasoningEvent>& events() const { return events_; }

 private:
  enum class Phase { first_token, thinking, answer };
  void start_thinking();
  void check_budget(bool sentence_end);
  bool loops(TokenId id);  // the newest loop_ngram tokens are seen the loop_repeats-th time
  void close(ReasoningEvent::Cause cause);

  ReasoningOptions options_;
  ThinkTokens tokens_;
  Phase phase_;
  int reasoning_tokens_ = 0;
  std::vector<TokenId> queued_;  // the rest of a forced close, next first (reversed)
  bool penalizing_ = false;
  char last_byte_ = 0;                      // of the thinking so far, for "3." vs "end."
  std::vector<TokenId> window_;             // the thinking's tokens since the last loop reset
  std::unordered_map<uint64_t, int> seen_;  // hash of each loop_ngram-token run -> times seen
  std::vector<ReasoningEvent> events_;
};

}  // namespace qwen3
