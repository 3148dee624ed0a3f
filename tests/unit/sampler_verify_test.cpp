// Sampler::verify, speculative decoding's accept/reject rule, gives tokens distributed as the
// target's sampling distribution whatever the draft: a chi-square test over many draws.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "qwen3/sampler.h"

namespace qwen3 {
namespace {

// Pearson's chi-square of observed counts against the expected probabilities of `want`.
double chi_square(const std::map<int32_t, int>& counts, const std::vector<TokenProb>& want,
                  int draws) {
  double chi2 = 0;
  for (const TokenProb& t : want) {
    const double expected = t.prob * draws;
    const auto it = counts.find(t.id);
    const double observed = it == counts.end() ? 0 : it->second;
    chi2 += (observed - expected) * (observed - expected) / expected;
  }
  return chi2;
}

struct Setting {
  SamplingParams params;
  int32_t draft;
};

TEST(SamplerVerify, TokensFollowTheTargetDistribution) {
  const std::vector<float> logits = {1.0f, 2.5f, 0.3f, 2.0f, -1.0f, 1.7f, 0.9f, -0.4f};
  const std::vector<int32_t> history = {1, 1, 5};
  std::vector<Setting> settings;
  for (int32_t draft : {1, 3, 4, 7}) {  // the best, a middling one, ones top_k drops
    settings.push_back({{.temperature = 0.9f}, draft});
    settings.push_back({{.temperature = 1.3f, .top_k = 5, .top_p = 0.9f}, draft});
    settings.push_back(
        {{.temperature = 0.7f, .repetition_penalty = 1.3f, .presence_penalty = 0.5f}, draft});
  }
  constexpr int kDraws = 20000;
  // The 0.1% critical values of chi-square for 1..7 degrees of freedom.
  const double critical[] = {0, 10.83, 13.82, 16.27, 18.47, 20.52, 22.46, 24.32};
  for (const Setting& s : settings) {
    Sampler sampler({s.params});
    const std::vector<TokenProb> want = sampler.candidates(logits, history);
    std::map<int32_t, int> counts;
    for (int i = 0; i < kDraws; ++i) ++counts[sampler.verify(logits, history, {}, s.draft)];
    for (const auto& [id, n] : counts)
      EXPECT_TRUE(std::any_of(want.begin(), want.end(), [&](auto& t) { return t.id == id; }))
          << "token " << id << " is outside the target's candidates";
    EXPECT_LT(chi_square(counts, want, kDraws), critical[want.size() - 1])
        << "temperature " << s.params.temperature << ", draft " << s.draft;
  }
}

// The test can fail: keeping every draft (a rule that ignores p) is far from the target.
TEST(SamplerVerify, AlwaysKeepingTheDraftWouldFailTheTest) {
  const std::vector<float> logits = {1.0f, 2.5f, 0.3f, 2.0f};
  Sampler sampler({.temperature = 1.0f});
  const auto want = sampler.candidates(logits, {});
  EXPECT_GT(chi_square({{3, 20000}}, want, 20000), 1000);
}

TEST(SamplerVerify, GreedyIsTheArgmaxWhateverTheDraft) {
  const std::vector<float> logits = {1.0f, 2.5f, 0.3f, 2.0f};
  Sampler sampler({.temperature = 0.0f});
  for (int32_t draft : {0, 1, 3}) EXPECT_EQ(sampler.verify(logits, {}, {}, draft), 1);
}

}  // namespace
}  // namespace qwen3
