// One generation request: prompt feeding, sampling, eos and stop strings, streamed text.
#include "qwen3/generation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <optional>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "qwen3/error.h"
#include "qwen3/reasoning.h"

namespace qwen3 {

void GenerationOptions::validate() const {
  sampling.validate();
  if (max_tokens < 0)
    throw Error(ErrorKind::invalid_argument,
                "max_tokens must be >= 0, got " + std::to_string(max_tokens));
  if (top_logprobs < 0 || top_logprobs > 20)
    throw Error(ErrorKind::invalid_argument,
                "top_logprobs must be between 0 and 20, got " + std::to_string(top_logprobs));
  for (auto& s : stop)
    if (s.empty()) throw Error(ErrorKind::invalid_argument, "stop strings must not be empty");
  if (grammar && !grammar->grammar)
    throw Error(ErrorKind::invalid_argument, "a grammar constraint needs a grammar");
  if (grammar && eos.empty())
    throw Error(ErrorKind::invalid_argument,
                "a grammar constraint needs an eos token to end the output with");
  if (reasoning) reasoning->validate();
  if (grammar)
    for (TokenId id : grammar->end_tokens)
      if (std::find(eos.begin(), eos.end(), id) == eos.end())
        throw Error(ErrorKind::invalid_argument,
                    "a grammar's end token " + std::to_string(id) + " is not an eos token");
}

std::vector<TokenId> eos_tokens(const std::filesystem::path& model_dir, const ModelConfig& config) {
  std::vector<TokenId> eos(config.eos_token_id.begin(), config.eos_token_id.end());
  std::ifstream in(model_dir / "generation_config.json");
  auto j = in ? nlohmann::json::parse(in, nullptr, false) : nlohmann::json();
  if (j.is_object() && j.contains("eos_token_id")) {
    auto ids = j["eos_token_id"].is_array() ? j["eos_token_id"]
                                            : nlohmann::json::array({j["eos_token_id"]});
    for (auto& id : ids)
      if (id.is_number_integer() &&
          std::find(eos.begin(), eos.end(), id.get<TokenId>()) == eos.end())
        eos.push_back(id.get<TokenId>());
  }
  return eos;
}

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::eos:
    case FinishReason::stop: return "stop";
    case FinishReason::length: return "length";
    case FinishReason::none: return "none";
  }
  return "none";
}

Generation::Generation(Sequence& sequence, const Tokenizer& tokenizer, std::vector<TokenId> prompt,
                       GenerationOptions options)
    : sequence_(sequence),
      tokenizer_(tokenizer),
      options_(std::move(options)),
      sampler_(options_.sampling),
      decoder_(tokenizer),
      prompt_(std::move(prompt)),
      history_(prompt_) {
  options_.validate();
  if (options_.grammar)
    constraint_.emplace(*options_.grammar, options_.grammar->end_tokens.empty()
                                               ? options_.eos
                                               : options_.grammar->end_tokens);
  if (prompt_.empty()) throw Error(ErrorKind::invalid_argument, "the prompt is empty");
  if (options_.reasoning) {
    // A few tokens show whether the prompt ends inside a <think> block.
    const auto tail = std::span<const TokenId>(prompt_).last(std::min<size_t>(prompt_.size(), 8));
    reasoning_.emplace(*options_.reasoning, ThinkTokens::of(tokenizer_),
                       prompt_opens_think(tokenizer_.decode(tail)));
  }
  // The prompt and at least one generated token must fit.
  if (sequence_.length() + prompt_.size() + 1 > size_t(sequence_.max_context()))
    throw Error(ErrorKind::context_overflow,
                "the prompt has " + std::to_string(prompt_.size()) + " tokens; with " +
                    std::to_string(sequence_.length()) +
                    " already in context it exceeds the context of " +
                    std::to_string(sequence_.max_context()) + " tokens");
  if (options_.max_tokens == 0) finish_ = FinishReason::length;
}

struct Generation::Speculation {
  std::unique_ptr<Proposer> proposer;
  DraftLength length;
  SpeculationStats stats;
  std::vector<TokenId> input;  // the next step's tokens: the last one sampled, then the drafts
  std::vector<float>
      hidden;  // the last step's rows after the final norm, when the proposer reads them
  // When the verification step's item was handed out: front ends step the model right after
  // next_item and advance right after the step, so that advance times the step (DraftLength
  // weighs drafts by the measured costs). In a server's batch the requests advanced before this
  // one are in the time too.
  std::optional<std::chrono::steady_clock::time_point> step_start;
};

Generation::~Generation() = default;

void Generation::speculate(std::unique_ptr<Proposer> proposer, int max_tokens, int pass_rows) {
  if (fed_ > 0) throw Error(ErrorKind::invalid_argument, "speculate: the generation has started");
  const double cost = proposer->token_cost();
  spec_.reset(new Speculation{
      std::move(proposer), DraftLength(max_tokens, cost, pass_rows), {}, {}, {}, {}});
}

const SpeculationStats* Generation::speculation() const { return spec_ ? &spec_->stats : nullptr; }

std::span<const TokenId> Generation::next_input(int chunk) const {
  if (done()) return {};
  if (fed_ < prompt_.size()) {
    // A recurrent sequence feeds the prompt's last tokens as a step of their own, so that it keeps
    // a state snapshot before them (Sequence::truncate): a chat's next prompt shares this one up
    // to the reply's header, which it renders again, so within these last tokens.
    constexpr size_t kTail = 8;
    size_t end = prompt_.size();
    if (sequence_.recurrent() && fed_ + kTail < end) end -= kTail;
    return std::span<const TokenId>(prompt_).subspan(
        fed_, std::min(end - fed_, size_t(std::max(chunk, 1))));
  }
  if (spec_) return spec_->input;
  return std::span<const TokenId>(&generated_.back(), 1);
}

BatchItem Generation::next_item(int chunk) {
  BatchItem item{&sequence_, next_input(chunk)};
  item.generated = fed_ == prompt_.size();
  if (spec_) {
    const bool verifying = fed_ == prompt_.size();
    item.all_logits = item.rewindable = verifying;
    if (spec_->proposer->needs_hidden()) item.hidden = &spec_->hidden;
    if (verifying) spec_->step_start = std::chrono::steady_clock::now();
  }
  return item;
}

std::vector<GeneratedToken> Generation::advance(int fed, std::span<const float> logits) {
  if (fed_ < prompt_.size()) {
    // A proposer that reads hidden rows sees the prompt's; tokens a cache held come without.
    if (spec_ && !logits.empty())
      spec_->proposer->consumed(sequence_.length() - fed,
                                std::span<const TokenId>(prompt_).subspan(fed_, fed), fed,
                                spec_->hidden);
    fed_ += fed;
    if (fed_ < prompt_.size()) return {};
    std::vector<GeneratedToken> out{emit(logits, sequence_.length())};
    if (spec_ && !done()) propose();
    return out;
  }
  if (spec_) return verify(logits);
  return {emit(logits, sequence_.length())};
}

// The rows of [last token, drafts...]: row i checks draft i + 1; the first rejected (or the row
// past the last draft) gives the model's own token. The sequence then keeps the tokens that
// produced a kept row, as if only they had been fed.
std::vector<GeneratedToken> Generation::verify(std::span<const float> logits) {
  Speculation& s = *spec_;
  const int rows = static_cast<int>(s.input.size());
  if (s.step_start)
    s.length.observe_step(
        rows,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - *s.step_start).count());
  s.step_start.reset();
  const size_t vocab = logits.size() / rows;
  const int start = sequence_.length() - rows;
  std::vector<GeneratedToken> out;
  int accepted = 0;
  for (int i = 0; i < rows; ++i) {
    const TokenId draft = i + 1 < rows ? s.input[i + 1] : -1;
    out.push_back(emit(logits.subspan(i * vocab, vocab), start + i + 1, draft));
    if (out.back().id != draft) break;
    ++accepted;
    if (done()) break;
  }
  const int kept = static_cast<int>(out.size());
  // A verification step is rewindable to any length within it: failing is a bug, not bad input.
  if (sequence_.truncate(start + kept) != start + kept)
    throw std::logic_error("speculation: the sequence could not rewind to " +
                           std::to_string(start + kept) + " tokens");
  s.proposer->consumed(start, s.input, kept, s.hidden);
  s.length.observe(rows - 1, accepted);
  if (rows > 1) {
    ++s.stats.steps;
    s.stats.proposed += rows - 1;
    s.stats.accepted += accepted;
    s.stats.emitted += kept;
  }
  if (!done()) propose();
  return out;
}

// The next step's input: the newest token and as many drafts as pay off, within max_tokens (a step
// makes at most drafts + 1 tokens) and the context.
void Generation::propose() {
  Speculation& s = *spec_;
  int k = s.length.next();
  k = std::min(k, options_.max_tokens - static_cast<int>(generated_.size()) - 1);
  k = std::min(k, sequence_.max_context() - sequence_.length() - 1);
  // DraftLength weighs the proposal's time as the drafts' cost or a probe's.
  s.input.assign(1, generated_.back());
  if (k <= 0) return;
  const auto t0 = std::chrono::steady_clock::now();
  const auto drafts = s.proposer->propose(history_, k);
  s.length.observe_drafting(
      static_cast<int>(std::min(drafts.size(), size_t(k))),
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  s.input.insert(s.input.end(), drafts.begin(),
                 drafts.begin() + std::min(drafts.size(), size_t(k)));
}

GeneratedToken Generation::emit(std::span<const float> logits, int held, TokenId draft) {
  GeneratedToken out;
  const auto allowed = constraint_ ? constraint_->mask(logits.size()) : std::span<const uint64_t>();
  const auto forced = reasoning_ ? reasoning_->forced(allowed) : std::nullopt;
  out.id = forced       ? *forced
           : draft >= 0 ? sampler_.verify(logits, history_, allowed, draft)
                        : sampler_.sample(logits, history_, allowed);
  if (constraint_) constraint_->accept(out.id);
  if (reasoning_) {
    reasoning_->accept(out.id, tokenizer_.token_bytes(out.id));
    sampler_.set_presence_penalty(reasoning_->presence_penalty(options_.sampling.presence_penalty));
  }
  // Log-probabilities are reported against the model's own distribution (as OpenAI does).
  if (options_.logprobs) out.logprob = static_cast<float>(logits[out.id] - logsumexp(logits));
  if (options_.top_logprobs > 0) out.top = top_probs(logits, options_.top_logprobs);
  generated_.push_back(out.id);
  history_.push_back(out.id);

  const bool eos =
      std::find(options_.eos.begin(), options_.eos.end(), out.id) != options_.eos.end();
  if (eos) {
    finish_ = FinishReason::eos;
  } else {
    held_ += decoder_.push(out.id);
    if (int(generated_.size()) >= options_.max_tokens || held >= sequence_.max_context())
      finish_ = FinishReason::length;
  }
  out.text = take_safe_text(done());
  return out;
}

// Emits held text up to any stop string (ending the generation there), keeping back a tail
// that could still grow into one.
std::string Generation::take_safe_text(bool final) {
  size_t cut = std::string::npos;
  for (auto& s : options_.stop) cut = std::min(cut, held_.find(s));
  if (cut != std::string::npos) {
    held_.resize(cut);
    finish_ = FinishReason::stop;
    final = true;
  }
  if (final && finish_ != FinishReason::stop) held_ += decoder_.flush();
  size_t keep = 0;
  if (!final)
    for (auto& s : options_.stop)
      for (size_t n = std::min(s.size() - 1, held_.size()); n > keep; --n)
        if (held_.compare(held_.size() - n, n, s, 0, n) == 0) {
          keep = n;
          break;
        }
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  text_ += out;
  return out;
}

}  // namespace qwen3
