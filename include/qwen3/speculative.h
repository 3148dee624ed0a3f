// Speculative decoding: a proposer guesses the tokens that come next, the model checks them all in
// one step (K + 1 rows cost about one pass over the weights, as one token does), and the
// generation keeps the longest run the model agrees with, plus one token of its own. Exact: greedy
// output is the same tokens as without speculation, and sampled output follows the same
// distribution (Sampler::verify's accept/reject rule).
#pragma once

#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "qwen3/model.h"
#include "qwen3/tokenizer.h"

namespace qwen3 {

// Guesses continuations for one generation. Proposals are deterministic (a draft's most likely
// token, or a copy from earlier text), which is what Sampler::verify's rule assumes.
class Proposer {
 public:
  virtual ~Proposer() = default;
  // Up to `k` tokens to follow `context`: every token so far, prompt and generated; the model has
  // been fed all but the last. Fewer (or none) when it has no good guess.
  virtual std::vector<TokenId> propose(std::span<const TokenId> context, int k) = 0;
  // The model consumed `tokens` at positions from `position` on and kept the first `kept` (the
  // others were rejected drafts); `hidden` holds their rows after the final norm when
  // needs_hidden(), else is empty.
  virtual void consumed(int /*position*/, std::span<const TokenId> /*tokens*/, int /*kept*/,
                        std::span<const float> /*hidden*/) {}
  virtual bool needs_hidden() const { return false; }
  // What drafting one token costs, as a fraction of one decode step of the model: an estimate
  // (from weight bytes) that DraftLength starts from until it has timed both.
  virtual double token_cost() const = 0;
  virtual const char* name() const = 0;
};

// Prompt lookup: the tokens that followed the latest earlier occurrence of the longest suffix of
// the context (min_ngram to max_ngram tokens long) that occurred before. No weights.
std::unique_ptr<Proposer> ngram_proposer(int min_ngram = 2, int max_ngram = 4);
// Qwen3.5's multi-token-prediction head (mtp.*), chained for more than one token, with its own KV
// cache kept in `sequence` beside the model's. Throws Error(unsupported) without one.
std::unique_ptr<Proposer> mtp_proposer(Model& model, Sequence& sequence);
// A smaller model with the same vocabulary, decoding greedily on its own sequence of up to
// `max_context` tokens. Throws Error(invalid_argument) when its vocabulary is not the model's.
std::unique_ptr<Proposer> draft_proposer(Model& draft, const Model& model, int max_context);

// How many tokens to propose: as many as pay for themselves, from the acceptance seen so far.
// With acceptance p per token, K drafts give (1 - p^(K+1)) / (1 - p) tokens a step, for a step
// that costs 1 + K (row cost + draft cost), plus a pass over the weights for every pass_rows rows
// beyond the first pass (Model::pass_rows). K = 0 (plain decode) when no K gains, with a probe of
// K = 1 after 16 plain steps (32, 64, ... 256 after probes that failed, and at least the last
// probe's cost over kProbeShare) so that a proposer that becomes good again is noticed.
//
// The draft cost is measured: the generation times its model steps and its proposer's drafting
// (observe_step, observe_drafting) and the cost is their ratio, per token drafted over a one-token
// step. Until both are measured it is the proposer's own estimate (Proposer::token_cost, from
// weight bytes), which a small draft beats in reality (per-layer fixed costs weigh on it). Tests
// inject seconds; nothing here reads a clock.
class DraftLength {
 public:
  DraftLength(int max_tokens, double token_cost, int pass_rows);
  int next();                                // K for the next step, 0 .. max_tokens
  void observe(int proposed, int accepted);  // a step's outcome
  double acceptance() const;

  // A model step of `rows` rows (the newest token and its drafts) took `seconds`.
  void observe_step(int rows, double seconds);
  // The proposal after next() took `seconds` for `tokens` drafts: the cost of drafts when the step
  // before speculated, of a probe when next() probed.
  void observe_drafting(int tokens, double seconds);
  // Drafting one token as a fraction of a one-token step: measured, else the estimate given.
  double token_cost() const;

  // A verification row's cost within a pass, and a further pass's, as fractions of a decode step
  // (`qwen3 bench --spec` measures them: 0.02-0.05 a row, 0.6 a pass with AVX2 on 2 cores).
  static constexpr double kRowCost = 0.05, kPassCost = 0.6;
  // The most of the time probes may take: the wait after a failed one is at least its measured
  // cost over this (a draft model's probe catches it up on what it missed: a step or two here).
  static constexpr double kProbeShare = 0.02;

 private:
  double step_cost(int rows) const;  // a step of `rows` rows, in one-token steps, drafts aside

  int max_tokens_, pass_rows_;
  double token_cost_;
  // Moving averages of seconds: a one-token step (a verification's time over step_cost), and a
  // drafted token, each with its number of samples.
  double step_seconds_ = 0, draft_seconds_ = 0;
  int step_samples_ = 0, draft_samples_ = 0;
  // A prior of p = 0.7 (trained draft heads and small drafts of the same family do better, prompt
  // lookup often worse), outweighed within a few steps.
  double accepted_ = 1.4, trials_ = 2;
  int plain_steps_ = 0, probe_interval_ = 16;
  double probe_cost_ = 0;                       // the last probe's, in one-token steps
  bool probing_ = false, speculating_ = false;  // the last observed step had drafts
};

// Totals over a generation, for `run` and the server's /metrics.
struct SpeculationStats {
  int steps = 0;     // verification steps
  int proposed = 0;  // draft tokens checked
  int accepted = 0;  // of them, kept
  int emitted = 0;   // tokens produced by verification steps (accepted + one of the model's each)
};

// `--spec` on the command line and in the server: "ngram", "mtp", or a draft model's folder; with
// up to `tokens` drafts a step (1 .. 16).
struct SpeculativeOptions {
  std::string kind;  // "" = off
  int tokens = 4;
  void validate() const;  // throws Error(invalid_argument) naming the value
  bool enabled() const { return !kind.empty(); }
};

// Loads a draft model for `model` from a folder, with the options' threads and kernels. Throws
// Error(invalid_argument) when its tokenizer is not `tokenizer` (another vocabulary, or the same
// size with other pieces).
std::unique_ptr<Model> load_draft_model(const std::filesystem::path& dir, const Model& model,
                                        const Tokenizer& tokenizer, const LoadOptions& options);

// A proposer for options.kind ("ngram", "mtp" or a draft model loaded as `draft`, which the
// caller keeps alive): the one construction every front end shares.
std::unique_ptr<Proposer> make_proposer(const SpeculativeOptions& options, Model& model,
                                        Sequence& sequence, Model* draft);

}  // namespace qwen3
