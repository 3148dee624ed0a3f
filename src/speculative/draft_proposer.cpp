// A draft model: a smaller model with the same tokenizer decodes greedily ahead of the target on a
// sequence of its own, which keeps the tokens both agree on from one step to the next.
#include <algorithm>

#include "qwen3/error.h"
#include "qwen3/sampler.h"
#include "qwen3/speculative.h"

namespace qwen3 {

namespace {

class DraftModelProposer : public Proposer {
 public:
  DraftModelProposer(Model& draft, const Model& model, int max_context)
      : draft_(draft),
        sequence_(draft, std::min(max_context, draft.config().max_position_embeddings)),
        cost_(double(draft.weight_bytes()) / double(model.weight_bytes())) {}

  std::vector<TokenId> propose(std::span<const TokenId> context, int k) override {
    // What the draft follows: the context from offset_ on.
    auto followed = context.subspan(std::min(offset_, context.size()));
    // Keep what the draft holds of it (its own guesses past it are dropped), short of the last
    // token, whose logits give the first guess.
    const size_t same =
        std::mismatch(held_.begin(), held_.end(), followed.begin(), followed.end()).first -
        held_.begin();
    held_.resize(sequence_.truncate(static_cast<int>(std::min(same, followed.size() - 1))));
    // After plain steps (proposals that did not pay) the draft is behind: it reads what it missed
    // up to kMaxCatchUp tokens, and past that starts over on the last kRestart, so that probing a
    // draft that is rarely right stays cheap. Its first proposal reads the whole prompt.
    constexpr size_t kMaxCatchUp = 32, kRestart = 8;
    if (!held_.empty() && followed.size() - held_.size() > kMaxCatchUp) {
      offset_ = context.size() - kRestart;
      followed = context.subspan(offset_);
      held_.clear();
      sequence_.truncate(0);
    }
    k = std::min(k, sequence_.max_context() - static_cast<int>(followed.size()));
    std::vector<TokenId> out;
    if (k <= 0) return out;
    // The context's first tokens as a prompt; what follows (sampled by the model) and the
    // draft's own tokens as generated ones, as the model steps them.
    feed(followed.subspan(held_.size()), !held_.empty());
    while (true) {
      out.push_back(argmax(logits_[0]));
      if (static_cast<int>(out.size()) == k) return out;
      feed({&out.back(), 1}, true);
    }
  }
  double token_cost() const override { return cost_; }
  const char* name() const override { return "draft"; }

 private:
  void feed(std::span<const TokenId> tokens, bool generated) {
    constexpr size_t kChunk = 512;  // a long prompt in pieces, as the front ends feed it
    for (size_t i = 0; i < tokens.size(); i += kChunk) {
      const BatchItem item{.sequence = &sequence_,
                           .tokens = tokens.subspan(i, std::min(kChunk, tokens.size() - i)),
                           .generated = generated};
      draft_.step({&item, 1}, logits_);
    }
    held_.insert(held_.end(), tokens.begin(), tokens.end());
  }

  Model& draft_;
  Sequence sequence_;
  size_t offset_ = 0;          // where in the context the draft's sequence starts
  std::vector<TokenId> held_;  // the tokens sequence_ holds
  std::vector<std::vector<float>> logits_;
  double cost_;
};

void check_vocabulary(const Model& draft, const Model& model) {
  if (draft.config().vocab_size != model.config().vocab_size)
    throw Error(ErrorKind::invalid_argument,
                "the draft model's vocabulary has " + std::to_string(draft.config().vocab_size) +
                    " entries, the model's " + std::to_string(model.config().vocab_size));
}

}  // namespace

std::unique_ptr<Proposer> draft_proposer(Model& draft, const Model& model, int max_context) {
  check_vocabulary(draft, model);
  return std::make_unique<DraftModelProposer>(draft, model, max_context);
}

std::unique_ptr<Model> load_draft_model(const std::filesystem::path& dir, const Model& model,
                                        const Tokenizer& tokenizer, const LoadOptions& options) {
  const Tokenizer theirs = Tokenizer::load(dir);
  bool same = theirs.vocab_size() == tokenizer.vocab_size();
  for (TokenId id = 0; same && id < static_cast<TokenId>(tokenizer.vocab_size()); ++id)
    same = theirs.token(id) == tokenizer.token(id);
  if (!same)
    throw Error(ErrorKind::invalid_argument,
                dir.string() + ": the draft model's tokenizer is not the model's");
  auto draft = Model::load(dir, options);
  check_vocabulary(*draft, model);
  return draft;
}

}  // namespace qwen3
