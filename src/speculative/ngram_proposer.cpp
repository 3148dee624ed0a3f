// Prompt lookup (as vLLM's "ngram" speculation and llama.cpp's lookup decoding): text that
// repeats its input (edits, summaries, code) is predicted by what followed the same few tokens
// before.
#include <algorithm>

#include "qwen3/error.h"
#include "qwen3/speculative.h"

namespace qwen3 {

namespace {

class NgramProposer : public Proposer {
 public:
  NgramProposer(int min_ngram, int max_ngram) : min_(min_ngram), max_(max_ngram) {}

  std::vector<TokenId> propose(std::span<const TokenId> context, int k) override {
    const int n = static_cast<int>(context.size());
    for (int g = std::min(max_, n - 1); g >= min_; --g) {
      const auto suffix = context.subspan(n - g);
      // The latest earlier occurrence: it starts before the suffix does.
      for (int start = n - g - 1; start >= 0; --start) {
        if (!std::equal(suffix.begin(), suffix.end(), context.begin() + start)) continue;
        const int from = start + g, count = std::min(k, n - from);
        return {context.begin() + from, context.begin() + from + count};
      }
    }
    return {};
  }
  double token_cost() const override { return 0; }
  const char* name() const override { return "ngram"; }

 private:
  int min_, max_;
};

}  // namespace

std::unique_ptr<Proposer> ngram_proposer(int min_ngram, int max_ngram) {
  if (min_ngram < 1 || max_ngram < min_ngram)
    throw Error(ErrorKind::invalid_argument, "ngram sizes must satisfy 1 <= min <= max");
  return std::make_unique<NgramProposer>(min_ngram, max_ngram);
}

}  // namespace qwen3
