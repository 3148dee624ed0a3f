// Sampler tests on tiny hand-computed distributions: kept sets, order, penalties, draws, params.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "qwen3/error.h"
#include "qwen3/sampler.h"
#include "test_paths.h"

namespace qwen3 {
namespace {

std::vector<float> log_of(const std::vector<double>& probs) {
  std::vector<float> out;
  for (double p : probs) out.push_back(static_cast<float>(std::log(p)));
  return out;
}

std::vector<double> softmax(const std::vector<double>& logits) {
  double max = *std::max_element(logits.begin(), logits.end());
  std::vector<double> out;
  double total = 0;
  for (double x : logits) total += std::exp(x - max);
  for (double x : logits) out.push_back(std::exp(x - max) / total);
  return out;
}

SamplingParams params(float temperature, int top_k = 0, float top_p = 1.0f, float min_p = 0.0f) {
  SamplingParams p;
  p.temperature = temperature;
  p.top_k = top_k;
  p.top_p = top_p;
  p.min_p = min_p;
  return p;
}

// Checks the exact kept ids, in order, and their renormalised probabilities.
void expect_kept(const std::vector<TokenProb>& got,
                 const std::vector<std::pair<int32_t, double>>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].id, want[i].first) << "rank " << i;
    EXPECT_NEAR(got[i].prob, want[i].second, 1e-6) << "rank " << i;
  }
}

TEST(Sampler, TopKKeepsTheKBestRenormalised) {
  Sampler s(params(1.0f, 2));
  auto kept = s.candidates(log_of({0.1, 0.4, 0.2, 0.3}), {});
  expect_kept(kept, {{1, 0.4 / 0.7}, {3, 0.3 / 0.7}});
}

TEST(Sampler, TopPKeepsTheSmallestSetReachingP) {
  // 0.4 + 0.3 = 0.7 < 0.75, so the third token is needed.
  Sampler s(params(1.0f, 0, 0.75f));
  expect_kept(s.candidates(log_of({0.1, 0.4, 0.2, 0.3}), {}),
              {{1, 0.4 / 0.9}, {3, 0.3 / 0.9}, {2, 0.2 / 0.9}});
  // The single best token already reaches p: exactly one token survives.
  Sampler one(params(1.0f, 0, 0.3f));
  expect_kept(one.candidates(log_of({0.1, 0.4, 0.2, 0.3}), {}), {{1, 1.0}});
}

TEST(Sampler, TopPAlwaysKeepsOneToken) {
  Sampler s(params(1.0f, 0, 1e-6f));
  expect_kept(s.candidates(log_of({0.25, 0.25, 0.25, 0.25}), {}), {{0, 1.0}});
}

TEST(Sampler, MinPKeepsTokensAboveAFractionOfTheBest) {
  // Threshold 0.2 * 0.5 = 0.1: 0.05 goes, 0.15 stays.
  Sampler s(params(1.0f, 0, 1.0f, 0.2f));
  expect_kept(s.candidates(log_of({0.5, 0.3, 0.15, 0.05}), {}),
              {{0, 0.5 / 0.95}, {1, 0.3 / 0.95}, {2, 0.15 / 0.95}});
}

TEST(Sampler, LargeVocabTopPMatchesFullSort) {
  std::mt19937_64 rng(7);
  std::vector<float> logits(151936);
  for (auto& x : logits) x = static_cast<float>(static_cast<double>(rng() % 100000) / 10000.0);
  Sampler s(params(0.7f, 0, 0.9f));
  auto kept = s.candidates(logits, {});
  // Reference: full sort of the tempered softmax.
  std::vector<double> scaled(logits.begin(), logits.end());
  for (auto& x : scaled) x /= 0.7f;
  auto probs = softmax(scaled);
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  size_t n = 0;
  double cumulative = 0;
  while (cumulative < 0.9f) cumulative += probs[order[n++]];
  ASSERT_EQ(kept.size(), n);
  for (size_t i = 0; i < n; ++i) EXPECT_EQ(kept[i].id, order[i]);
}

TEST(Sampler, OrderTemperatureBeforeTopP) {
  // At T=1 token 0 alone holds 0.88 >= 0.8; at T=4 the flattened distribution needs both tokens.
  // Applying top_p before temperature would keep only token 0.
  Sampler s(params(4.0f, 0, 0.8f));
  auto want = softmax({0.5, 0.0});
  expect_kept(s.candidates(std::vector<float>{2.0f, 0.0f}, {}), {{0, want[0]}, {1, want[1]}});
}

TEST(Sampler, OrderTopKBeforeTopP) {
  // top_k=2 renormalises to 0.5/0.5, so top_p=0.5 stops at one token; top_p on the full uniform
  // distribution first would keep two.
  Sampler s(params(1.0f, 2, 0.5f));
  expect_kept(s.candidates(std::vector<float>{1, 1, 1, 1}, {}), {{0, 1.0}});
}

TEST(Sampler, OrderTopPBeforeMinP) {
  // top_p keeps {0.4, 0.3, 0.2}; min_p then measures against 0.4 of the renormalised set (0.444),
  // threshold 0.6 * 0.444 = 0.267 drops 0.2/0.9 = 0.222 but keeps 0.3/0.9 = 0.333.
  Sampler s(params(1.0f, 0, 0.75f, 0.6f));
  expect_kept(s.candidates(log_of({0.1, 0.4, 0.2, 0.3}), {}), {{1, 0.4 / 0.7}, {3, 0.3 / 0.7}});
}

TEST(Sampler, RepetitionPenaltyHuggingFace) {
  SamplingParams p = params(1.0f);
  p.repetition_penalty = 2.0f;
  Sampler s(p);
  // Token 0 (positive) is divided, token 1 (negative) multiplied, each once despite repeats.
  auto kept = s.candidates(std::vector<float>{2.0f, -2.0f, 1.0f, 0.5f},
                           std::vector<int32_t>{0, 1, 0, 2, 2, 2});
  auto want = softmax({1.0, -4.0, 0.5, 0.5});
  std::map<int32_t, float> got;
  for (auto& t : kept) got[t.id] = t.prob;
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
}

TEST(Sampler, PresenceAndFrequencyPenaltiesOpenAI) {
  SamplingParams p = params(1.0f);
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  Sampler s(p);
  auto kept = s.candidates(std::vector<float>{2.0f, -2.0f, 1.0f, 0.5f},
                           std::vector<int32_t>{0, 1, 0, 2, 2, 2});
  // logit -= 0.5 * (count > 0) + 0.25 * count; counts 2, 1, 3, 0.
  auto want = softmax({2 - 0.5 - 0.5, -2 - 0.5 - 0.25, 1 - 0.5 - 0.75, 0.5});
  std::map<int32_t, float> got;
  for (auto& t : kept) got[t.id] = t.prob;
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
}

TEST(Sampler, PenaltiesApplyBeforeGreedy) {
  SamplingParams p = params(0.0f);
  p.repetition_penalty = 3.0f;
  Sampler s(p);
  // 3.0 / 3 = 1.0 falls below 2.0.
  EXPECT_EQ(s.sample(std::vector<float>{3.0f, 2.0f}, std::vector<int32_t>{0}), 1);
  // The state stays clean: without history token 0 wins again.
  EXPECT_EQ(s.sample(std::vector<float>{3.0f, 2.0f}, {}), 0);
}

TEST(Sampler, HistoryOutsideVocabThrows) {
  SamplingParams p = params(1.0f);
  p.repetition_penalty = 1.5f;
  Sampler s(p);
  EXPECT_THROW(s.sample(std::vector<float>{1, 2}, std::vector<int32_t>{1, 5}), Error);
  // counts_ was reset: a valid call afterwards penalises only its own history.
  auto kept = s.candidates(std::vector<float>{1, 2}, {});
  EXPECT_NEAR(kept[0].prob, softmax({1, 2})[1], 1e-6);
}

TEST(Sampler, GreedyPicksArgmaxLowestIdOnTies) {
  Sampler s(params(0.0f));
  EXPECT_EQ(s.sample(std::vector<float>{0.1f, 3.0f, -1.0f, 2.9f}, {}), 1);
  EXPECT_EQ(s.sample(std::vector<float>{1.0f, 5.0f, 5.0f, 5.0f}, {}), 1);
  expect_kept(s.candidates(std::vector<float>{1.0f, 5.0f}, {}), {{1, 1.0}});
}

// argmax against a plain scan, at sizes around its lanes (16) and blocks (1024) and the real vocab,
// with the maximum repeated (the first one wins) and -inf / NaN entries.
TEST(Argmax, MatchesAPlainScanLowestIdOnTies) {
  auto plain = [](const std::vector<float>& x) {
    int32_t best = 0;
    for (size_t i = 1; i < x.size(); ++i)
      if (x[i] > x[best]) best = static_cast<int32_t>(i);
    return best;
  };
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  for (size_t n : {1, 2, 15, 16, 17, 1023, 1024, 1025, 2049, 151936}) {
    std::vector<float> x(n);
    for (float& v : x) v = normal(rng);
    EXPECT_EQ(argmax(x), plain(x)) << n;
    std::uniform_int_distribution<size_t> at(0, n - 1);
    const size_t a = at(rng), b = at(rng);
    if (a == b) continue;
    x[a] = x[b] = 100.0f;  // a tie: the lower id
    EXPECT_EQ(argmax(x), static_cast<int32_t>(std::min(a, b))) << n;
    x[std::max(a, b)] = NAN;  // NaN is never the maximum
    EXPECT_EQ(argmax(x), static_cast<int32_t>(std::min(a, b))) << n;
  }
  EXPECT_EQ(argmax(std::vector<float>(3000, -INFINITY)), 0);
  std::vector<float> late(3000, -INFINITY);
  late[2999] = -1e30f;
  EXPECT_EQ(argmax(late), 2999);
}

TEST(Sampler, DrawsFollowTheDistributionChiSquare) {
  const std::vector<double> probs = {0.1, 0.2, 0.3, 0.4};
  SamplingParams p = params(1.0f);
  p.seed = 42;
  Sampler s(p);
  const auto logits = log_of(probs);
  const int draws = 100000;
  std::vector<int> counts(probs.size(), 0);
  for (int i = 0; i < draws; ++i) ++counts[s.sample(logits, {})];
  double chi2 = 0;
  for (size_t i = 0; i < probs.size(); ++i) {
    const double expected = draws * probs[i];
    chi2 += (counts[i] - expected) * (counts[i] - expected) / expected;
  }
  // Chi-square table, 3 degrees of freedom, p = 0.001.
  EXPECT_LT(chi2, 16.266);
}

TEST(Sampler, SameSeedSameTokensDifferentSeedsDiffer) {
  const auto logits = log_of({0.2, 0.2, 0.2, 0.2, 0.2});
  auto run = [&](uint64_t seed) {
    SamplingParams p = params(1.0f);
    p.seed = seed;
    Sampler s(p);
    std::vector<int32_t> out;
    for (int i = 0; i < 64; ++i) out.push_back(s.sample(logits, {}));
    return out;
  };
  EXPECT_EQ(run(1), run(1));
  EXPECT_NE(run(1), run(2));
}

void expect_invalid(SamplingParams p, const std::string& field) {
  try {
    p.validate();
    FAIL() << "accepted bad " << field;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
  }
  EXPECT_THROW(Sampler{p}, Error);
}

TEST(SamplingParams, RejectsBadValuesNamingTheField) {
  SamplingParams p;
  p.temperature = -0.5f;
  expect_invalid(p, "temperature");
  p = {};
  p.temperature = std::nanf("");
  expect_invalid(p, "temperature");
  p = {};
  p.top_p = 0.0f;
  expect_invalid(p, "top_p");
  p = {};
  p.top_p = 1.5f;
  expect_invalid(p, "top_p");
  p = {};
  p.top_k = -1;
  expect_invalid(p, "top_k");
  p = {};
  p.min_p = 1.1f;
  expect_invalid(p, "min_p");
  p = {};
  p.repetition_penalty = 0.0f;
  expect_invalid(p, "repetition_penalty");
  p = {};
  p.presence_penalty = 2.5f;
  expect_invalid(p, "presence_penalty");
  p = {};
  p.frequency_penalty = -std::numeric_limits<float>::infinity();
  expect_invalid(p, "frequency_penalty");
}

TEST(SamplingParams, ValueAppearsInMessage) {
  SamplingParams p;
  p.top_p = 1.5f;
  try {
    p.validate();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("1.5"), std::string::npos) << e.what();
  }
}

TEST(SamplingParams, FromGenerationConfigFixture) {
  auto p = SamplingParams::from_generation_config(test::tiny_model());
  EXPECT_FLOAT_EQ(p.temperature, 0.6f);
  EXPECT_EQ(p.top_k, 20);
  EXPECT_FLOAT_EQ(p.top_p, 0.95f);
  EXPECT_FLOAT_EQ(p.min_p, 0.0f);
  EXPECT_FLOAT_EQ(p.repetition_penalty, 1.0f);
}

class TempDir : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("qwen3_sampler_" +
            std::string(testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write(const std::string& text) { std::ofstream(dir_ / "generation_config.json") << text; }
  std::filesystem::path dir_;
};

TEST_F(TempDir, MissingGenerationConfigGivesDefaults) {
  auto p = SamplingParams::from_generation_config(dir_);
  EXPECT_FLOAT_EQ(p.temperature, 1.0f);
  EXPECT_EQ(p.top_k, 0);
  EXPECT_FLOAT_EQ(p.top_p, 1.0f);
}

TEST_F(TempDir, DoSampleFalseMeansGreedy) {
  write(R"({"do_sample": false, "temperature": 0.7, "min_p": 0.05, "repetition_penalty": 1.1})");
  auto p = SamplingParams::from_generation_config(dir_);
  EXPECT_FLOAT_EQ(p.temperature, 0.0f);
  EXPECT_FLOAT_EQ(p.min_p, 0.05f);
  EXPECT_FLOAT_EQ(p.repetition_penalty, 1.1f);
}

TEST_F(TempDir, MalformedGenerationConfigNamesTheFile) {
  write(R"({"temperature": 0.7,)");
  try {
    SamplingParams::from_generation_config(dir_);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::format);
    EXPECT_NE(std::string(e.what()).find("generation_config.json"), std::string::npos) << e.what();
  }
}

TEST(TopProbs, BestFirstSoftmax) {
  auto top = top_probs(log_of({0.1, 0.4, 0.2, 0.3}), 2);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].id, 1);
  EXPECT_NEAR(top[0].prob, 0.4, 1e-6);
  EXPECT_EQ(top[1].id, 3);
  EXPECT_NEAR(top[1].prob, 0.3, 1e-6);
  EXPECT_EQ(top_probs(std::vector<float>{1, 2}, 10).size(), 2u);
}

}  // namespace
}  // namespace qwen3
