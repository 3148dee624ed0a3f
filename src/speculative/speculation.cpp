// Choosing how many tokens to propose, and making the proposer a front end asked for.
#include <algorithm>
#include <cmath>
#include <string>

#include "qwen3/error.h"
#include "qwen3/speculative.h"

namespace qwen3 {

DraftLength::DraftLength(int max_tokens, double token_cost, int pass_rows)
    : max_tokens_(max_tokens), pass_rows_(std::max(pass_rows, 1)), token_cost_(token_cost) {}

double DraftLength::acceptance() const { return accepted_ / trials_; }

int DraftLength::next() {
  const double p = std::min(acceptance(), 0.999);
  int best = 0;
  double best_rate = 1.0;  // plain decode: one token per step of cost 1
  for (int k = 1; k <= max_tokens_; ++k) {
    const double tokens = (1 - std::pow(p, k + 1)) / (1 - p);
    const int passes = (k + 1 + pass_rows_ - 1) / pass_rows_;
    const double rate = tokens / (1 + k * (kRowCost + token_cost_) + (passes - 1) * kPassCost);
    if (rate > best_rate) best = k, best_rate = rate;
  }
  // Plain steps probe now and then, so that acceptance that recovers is seen; each probe that
  // fails doubles the wait for the next (a draft model's probe also catches it up on the tokens
  // since its last one), so a proposer that is never right costs little.
  if (best == 0 && ++plain_steps_ >= probe_interval_) {
    plain_steps_ = 0;
    probing_ = true;
    return std::min(1, max_tokens_);
  }
  return best;
}

void DraftLength::observe(int proposed, int accepted) {
  if (proposed == 0) return;
  if (probing_) {
    constexpr int kFirstProbe = 16, kLastProbe = 256;
    probe_interval_ = accepted > 0 ? kFirstProbe : std::min(2 * probe_interval_, kLastProbe);
    probing_ = false;
  }
  // Each draft is a trial until the first rejection; older steps weigh less.
  constexpr double kDecay = 0.9;
  accepted_ = kDecay * accepted_ + accepted;
  trials_ = kDecay * trials_ + accepted + (accepted < proposed ? 1 : 0);
}

void SpeculativeOptions::validate() const {
  constexpr int kMaxTokens = 16;
  if (tokens < 1 || tokens > kMaxTokens)
    throw Error(ErrorKind::invalid_argument, "--spec-tokens must be between 1 and " +
                                                 std::to_string(kMaxTokens) + ", got " +
                                                 std::to_string(tokens));
}

std::unique_ptr<Proposer> make_proposer(const SpeculativeOptions& options, Model& model,
                                        Sequence& sequence, Model* draft) {
  options.validate();
  if (options.kind == "ngram") return ngram_proposer();
  if (options.kind == "mtp") return mtp_proposer(model, sequence);
  if (!draft)
    throw Error(ErrorKind::invalid_argument,
                "--spec " + options.kind + ": a draft model folder needs its model loaded");
  return draft_proposer(*draft, model, sequence.max_context());
}

}  // namespace qwen3
