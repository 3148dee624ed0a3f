// Qwen3.5's multi-token-prediction head as a proposer (as vLLM's qwen3_next_mtp and its EAGLE-style
// chaining): row t of the head pairs the model's hidden state h_t with the token x_{t+1} and
// predicts x_{t+2}; a chained row pairs the head's own output with its guess.
#include <algorithm>

#include "qwen3/error.h"
#include "qwen3/sampler.h"
#include "qwen3/speculative.h"

namespace qwen3 {

namespace {

class MtpProposer : public Proposer {
 public:
  MtpProposer(Model& model, Sequence& sequence)
      : model_(model),
        sequence_(sequence),
        dim_(model.config().hidden_size),
        cost_(model.mtp_bytes() / double(model.weight_bytes())) {}

  // Rows wait for the token after them, which comes with the next step (or the next proposal).
  void consumed(int position, std::span<const TokenId> tokens, int kept,
                std::span<const float> hidden) override {
    if (kept == 0) return;
    if (rows_ < 0) rows_ = std::min(sequence_.mtp_length(), position);  // what it held before
    if (position < rows_) rows_ = position;  // rewound into the head's rows: they go
    // Rows from `position` on are replaced. Rows before it this proposer never saw (a prefix from
    // a chat's earlier turns or a cache, which the head does not hold) get zeros: they only make
    // its guesses worse.
    const size_t before = size_t(position - rows_);
    pending_.resize(before * dim_, 0.0f);
    next_.resize(before, tokens[0]);  // each row's next token; the last's is tokens[0]
    pending_.insert(pending_.end(), hidden.begin(), hidden.begin() + size_t(kept) * dim_);
    next_.insert(next_.end(), tokens.begin() + 1, tokens.begin() + kept);
  }

  std::vector<TokenId> propose(std::span<const TokenId> context, int k) override {
    const int n = static_cast<int>(pending_.size() / dim_);
    std::vector<TokenId> out;
    if (k <= 0 || n == 0 || context.empty()) return out;
    // The waiting rows, each with the token after it (the last row's is the newest token); the
    // last row's logits give the first guess.
    next_.push_back(context.back());
    std::vector<float> h;
    auto logits = model_.mtp_step(sequence_, {.position = rows_,
                                              .next_tokens = next_,
                                              .hidden = pending_.data(),
                                              .all_logits = false,
                                              .hidden_out = &h});
    rows_ += n;
    pending_.clear();
    next_.clear();
    out.push_back(argmax(logits));
    while (static_cast<int>(out.size()) < k) {  // chained rows, forgotten at the next proposal
      const std::vector<float> last(h.end() - dim_, h.end());
      logits = model_.mtp_step(sequence_, {.position = rows_ + static_cast<int>(out.size()) - 1,
                                           .next_tokens = {&out.back(), 1},
                                           .hidden = last.data(),
                                           .all_logits = false,
                                           .hidden_out = &h});
      out.push_back(argmax(logits));
    }
    return out;
  }
  bool needs_hidden() const override { return true; }
  double token_cost() const override { return cost_; }
  const char* name() const override { return "mtp"; }

 private:
  Model& model_;
  Sequence& sequence_;
  const int dim_;
  int rows_ = -1;               // rows the head holds: positions 0 .. rows_ - 1 (-1: not yet known)
  std::vector<float> pending_;  // hidden rows from position rows_ on, waiting to go in
  std::vector<TokenId> next_;   // the token after each of them, but the last
  double cost_;
};

}  // namespace

std::unique_ptr<Proposer> mtp_proposer(Model& model, Sequence& sequence) {
  if (!model.config().mtp_num_hidden_layers)
    throw Error(ErrorKind::unsupported,
                model.name() + " has no multi-token-prediction head (no mtp.* tensors)");
  return std::make_unique<MtpProposer>(model, sequence);
}

}  // namespace qwen3
