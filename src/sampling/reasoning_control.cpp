// Reasoning control: the thinking budget and the loop guard of one reply, token by token.
#include "qwen3/reasoning_control.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "qwen3/error.h"

namespace qwen3 {

namespace {

// Whether the thinking ends a sentence with this token: it ends a line, or its last visible
// character (past closing quotes and brackets) is . ! ? or their full-width forms. A '.' after a
// digit is a decimal point: Qwen's tokenizer splits "3.14" into "3", ".", "14".
bool ends_sentence(std::string_view bytes, char before) {
  if (bytes.empty()) return false;
  if (bytes.back() == '\n') return true;
  const size_t end = bytes.find_last_not_of(" \t\"')]*");
  if (end == std::string_view::npos) return false;
  const std::string_view text = bytes.substr(0, end + 1);
  for (std::string_view mark : {"\u3002", "\uff01", "\uff1f"})  // 。！？
    if (text.ends_with(mark)) return true;
  const char c = text.back();
  if (c == '!' || c == '?') return true;
  const char previous = text.size() > 1 ? text[text.size() - 2] : before;
  return c == '.' && !std::isdigit(static_cast<unsigned char>(previous));
}

}  // namespace

void ReasoningOptions::validate() const {
  auto fail = [](const std::string& message) { throw Error(ErrorKind::invalid_argument, message); };
  if (thinking_budget && *thinking_budget < 0)
    fail("thinking_budget must be >= 0, got " + std::to_string(*thinking_budget));
  if (grace_tokens < 1) fail("grace_tokens must be >= 1, got " + std::to_string(grace_tokens));
  if (loop_ngram < 2) fail("loop_ngram must be >= 2, got " + std::to_string(loop_ngram));
  if (loop_repeats < 2) fail("loop_repeats must be >= 2, got " + std::to_string(loop_repeats));
  if (!(loop_presence_penalty > 0 && loop_presence_penalty <= 2))
    fail("loop_presence_penalty must be in (0, 2], got " + std::to_string(loop_presence_penalty));
}

const char* reasoning_cause_name(ReasoningEvent::Cause cause) {
  return cause == ReasoningEvent::Cause::thinking_budget ? "thinking_budget" : "loop";
}

const char* reasoning_action_name(ReasoningEvent::Action action) {
  return action == ReasoningEvent::Action::closed_thinking ? "closed_thinking"
                                                           : "raised_presence_penalty";
}

ThinkTokens ThinkTokens::of(const Tokenizer& tokenizer) {
  ThinkTokens t;
  t.open = tokenizer.token_id("<think>");
  t.close = tokenizer.token_id("</think>");
  if (t.open < 0 || t.close < 0) return {};
  t.closing = tokenizer.encode("\n</think>\n\n", true);
  return t;
}

ReasoningController::ReasoningController(ReasoningOptions options, ThinkTokens tokens,
                                         bool opened_by_prompt)
    : options_(options), tokens_(std::move(tokens)), phase_(Phase::first_token) {
  options_.validate();
  if (tokens_.closing.empty()) phase_ = Phase::answer;  // no think tags: nothing to control
  else if (opened_by_prompt) start_thinking();
}

std::optional<TokenId> ReasoningController::forced(std::span<const uint64_t> allowed) {
  if (queued_.empty()) return std::nullopt;
  const TokenId id = queued_.back();
  const size_t word = size_t(id) / 64;
  if (!allowed.empty() && (word >= allowed.size() || !((allowed[word] >> (id % 64)) & 1))) {
    queued_.clear();
    return std::nullopt;
  }
  return id;
}

void ReasoningController::accept(TokenId id, std::string_view bytes) {
  if (!queued_.empty()) {
    if (id == queued_.back()) queued_.pop_back();
    else queued_.clear();  // the grammar refused the rest
  }
  switch (phase_) {
    case Phase::answer: return;
    case Phase::first_token:
      if (id == tokens_.open) start_thinking();
      else phase_ = Phase::answer;
      return;
    case Phase::thinking: break;
  }
  if (id == tokens_.close) {
    phase_ = Phase::answer;
    return;
  }
  ++reasoning_tokens_;
  const bool sentence_end = ends_sentence(bytes, last_byte_);
  if (!bytes.empty()) last_byte_ = bytes.back();
  if (!queued_.empty()) return;  // the forced line break before </think>
  if (options_.loop_action != LoopAction::off && loops(id)) {
    if (options_.loop_action == LoopAction::close || penalizing_)
      return close(ReasoningEvent::Cause::loop);
    // A second chance: the loop must show loop_repeats times again under the penalty.
    penalizing_ = true;
    events_.push_back({ReasoningEvent::Cause::loop, ReasoningEvent::Action::raised_presence_penalty,
                       reasoning_tokens_});
    window_.clear();
    seen_.clear();
  }
  check_budget(sentence_end);
}

float ReasoningController::presence_penalty(float requested) const {
  return penalizing_ && phase_ == Phase::thinking
             ? std::max(requested, options_.loop_presence_penalty)
             : requested;
}

void ReasoningController::start_thinking() {
  phase_ = Phase::thinking;
  check_budget(true);  // nothing thought yet ends no sentence: a budget of 0 closes at once
}

void ReasoningController::check_budget(bool sentence_end) {
  const auto& budget = options_.thinking_budget;
  if (!budget || reasoning_tokens_ < *budget) return;
  // The forced line break is one more thinking token: at most budget + grace in all.
  if (sentence_end || reasoning_tokens_ + 1 >= *budget + options_.grace_tokens)
    close(ReasoningEvent::Cause::thinking_budget);
}

bool ReasoningController::loops(TokenId id) {
  window_.push_back(id);
  const size_t n = size_t(options_.loop_ngram);
  if (window_.size() < n) return false;
  uint64_t hash = 14695981039346656037ull;  // FNV-1a over the run's ids
  for (size_t i = window_.size() - n; i < window_.size(); ++i) {
    hash ^= uint32_t(window_[i]);
    hash *= 1099511628211ull;
  }
  return ++seen_[hash] >= options_.loop_repeats;
}

void ReasoningController::close(ReasoningEvent::Cause cause) {
  events_.push_back({cause, ReasoningEvent::Action::closed_thinking, reasoning_tokens_});
  queued_.assign(tokens_.closing.rbegin(), tokens_.closing.rend());
}

}  // namespace qwen3
