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

double DraftLength::step_cost(int rows) const {
  const int passes = (rows + pass_rows_ - 1) / pass_rows_;
  return 1 + (rows - 1) * kRowCost + (passes - 1) * kPassCost;
}

// Timed costs rather than weight bytes: a small draft runs below memory speed (each layer's fixed
// costs, the threads' synchronisation), a q4 copy of a 0.6B model costing half a step per token
// where its bytes say a third, and what a CPU, its cores and the other processes allow is only
// known by timing. Both times are moving averages in which a new sample weighs a fifth, and counts
// at most twice the average so far: a few steps settle them, and a step slowed by something else
// (a prompt chunk in the same batch, another process) moves them little. The first sample replaces
// the estimate outright. A step's time covers its whole batch: what the request waits for.
namespace {
constexpr double kTimeWeight = 0.2, kMaxSample = 2.0;
void average(double& mean, int& samples, double sample) {
  mean =
      samples++ == 0 ? sample : mean + kTimeWeight * (std::min(sample, kMaxSample * mean) - mean);
}
}  // namespace

void DraftLength::observe_step(int rows, double seconds) {
  if (rows >= 1 && seconds > 0) average(step_seconds_, step_samples_, seconds / step_cost(rows));
}

// A proposal after a speculating step costs what its drafts cost. A probe's also catches a draft
// model up on the tokens it missed (up to 32, else it restarts on the last 8): several draft steps,
// which the wait after a failed probe pays for (next). The first proposal (a draft model reads the
// whole prompt) counts for neither.
void DraftLength::observe_drafting(int tokens, double seconds) {
  if (probing_) {
    if (step_samples_) probe_cost_ = seconds / step_seconds_ + kRowCost;
  } else if (speculating_ && tokens >= 1 && seconds >= 0) {
    average(draft_seconds_, draft_samples_, seconds / tokens);
  }
}

double DraftLength::token_cost() const {
  return step_samples_ && draft_samples_ ? draft_seconds_ / step_seconds_ : token_cost_;
}

int DraftLength::next() {
  const double p = std::min(acceptance(), 0.999), cost = token_cost();
  int best = 0;
  double best_rate = 1.0;  // plain decode: one token per step of cost 1
  for (int k = 1; k <= max_tokens_; ++k) {
    const double tokens = (1 - std::pow(p, k + 1)) / (1 - p);
    const double rate = tokens / (step_cost(k + 1) + k * cost);
    if (rate > best_rate) best = k, best_rate = rate;
  }
  // Plain steps probe now and then, so that acceptance that recovers is seen; each probe that
  // fails doubles the wait for the next, and the wait is long enough that probes take at most
  // kProbeShare of the time (a draft model's probe, which catches it up, costs steps), so a
  // proposer that is never right costs little.
  const int wait =
      std::max(probe_interval_, static_cast<int>(std::ceil(probe_cost_ / kProbeShare)));
  if (best == 0 && ++plain_steps_ >= wait) {
    plain_steps_ = 0;
    probing_ = true;
    return std::min(1, max_tokens_);
  }
  return best;
}

void DraftLength::observe(int proposed, int accepted) {
  speculating_ = proposed > 0;
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
