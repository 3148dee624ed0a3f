// The prefix cache on the tiny model: longest-prefix lookup, LRU eviction within the budget,
// replies identical with and without a hit, and `serve --cache-mb` refusing bad values.
#include <gtest/gtest.h>

#include <numeric>

#include "cli/cli_runner.h"
#include "qwen3/generation.h"
#include "qwen3/model.h"
#include "qwen3/tokenizer.h"
#include "server/prefix_cache.h"
#include "server/scheduler.h"
#include "test_paths.h"

namespace qwen3::server {
namespace {

Model& tiny() {
  static auto model = Model::load(test::tiny_model(), {.threads = 1});
  return *model;
}

std::vector<TokenId> ids(int first, int count) {
  std::vector<TokenId> v(count);
  std::iota(v.begin(), v.end(), first);
  return v;
}

std::vector<TokenId> concat(std::vector<TokenId> a, const std::vector<TokenId>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A sequence that has been fed `tokens`.
Sequence filled(const std::vector<TokenId>& tokens) {
  Sequence s(tiny(), 256);
  BatchItem item{&s, tokens, false};
  tiny().step({&item, 1});
  return s;
}

size_t sequence_bytes(int tokens) { return filled(ids(1, tokens)).bytes(); }

TEST(PrefixCache, TakesTheLongestPrefixAndCutsItBack) {
  PrefixCache cache(64 << 20);
  const auto a = ids(1, 30), b = concat(ids(1, 10), ids(100, 20));
  cache.put(filled(a), a);
  cache.put(filled(b), b);
  EXPECT_EQ(cache.stats().entries, 2u);

  auto hit = cache.take(concat(ids(1, 20), {7, 8}));  // 20 tokens shared with a, 10 with b
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->kept, 20);
  EXPECT_EQ(hit->sequence.length(), 20) << "cut back to the shared prefix";
  EXPECT_EQ(cache.stats().entries, 1u) << "a request takes the entry: no two share it";

  auto next = cache.take(concat(ids(1, 20), {7, 8}));  // now only b, 10 tokens of a 30-token one
  ASSERT_FALSE(next) << "a match under half of both the entry and the prompt leaves it";
  EXPECT_EQ(cache.stats().entries, 1u);
  EXPECT_EQ(cache.stats().hits, 1u);
  EXPECT_EQ(cache.stats().misses, 1u);
  EXPECT_EQ(cache.stats().cached_tokens, 20u);
}

TEST(PrefixCache, TheLastPromptTokenIsAlwaysFed) {
  PrefixCache cache(64 << 20);
  const auto a = ids(1, 12);
  cache.put(filled(a), a);
  auto same = cache.take(a);  // the identical prompt: its last token's logits are needed
  ASSERT_TRUE(same);
  EXPECT_EQ(same->kept, 11);
  cache.put(std::move(same->sequence), a);  // holds 11 of them now
  auto shorter = cache.take(ids(1, 6));     // a prefix of the entry
  ASSERT_TRUE(shorter);
  EXPECT_EQ(shorter->kept, 5);
  EXPECT_FALSE(cache.take(ids(1, 1))) << "one token: nothing to reuse";
}

TEST(PrefixCache, EvictsTheLeastRecentlyUsedWithinTheBudget) {
  const size_t one = sequence_bytes(20);
  PrefixCache cache(2 * one);
  const auto a = ids(1, 20), b = ids(50, 20), c = ids(100, 20);
  cache.put(filled(a), a);
  cache.put(filled(b), b);
  cache.put(filled(c), c);
  EXPECT_EQ(cache.stats().entries, 2u);
  EXPECT_EQ(cache.stats().evictions, 1u);
  EXPECT_EQ(cache.stats().bytes, 2 * one);
  EXPECT_FALSE(cache.take(a)) << "the oldest went";
  EXPECT_TRUE(cache.take(b));
  EXPECT_TRUE(cache.take(c));
  EXPECT_EQ(cache.stats().bytes, 0u);

  PrefixCache small(one - 1);  // a sequence larger than the whole budget is not kept
  small.put(filled(a), a);
  EXPECT_EQ(small.stats().entries, 0u);
  EXPECT_EQ(small.stats().evictions, 1u);
}

TEST(PrefixCache, ZeroBudgetIsOff) {
  PrefixCache cache(0);
  const auto a = ids(1, 20);
  cache.put(filled(a), a);
  EXPECT_FALSE(cache.take(a));
  EXPECT_EQ(cache.stats().entries, 0u);
  EXPECT_EQ(cache.stats().misses, 0u);
}

// What a scheduler's requests return: ids, logprobs and the cached share of each prompt.
struct Reply {
  std::vector<TokenId> ids;
  std::vector<float> logprobs;
  int cached = 0;
};

Reply run(Scheduler& scheduler, const std::vector<TokenId>& prompt, GenerationOptions options) {
  auto job = scheduler.submit(prompt, std::move(options));
  Reply r;
  for (Job::Update u; !u.finished;) {
    u = job->wait(std::chrono::milliseconds(1000));
    EXPECT_TRUE(u.error.empty()) << u.error;
    for (auto& t : u.tokens) {
      r.ids.push_back(t.id);
      r.logprobs.push_back(t.logprob);
    }
    r.cached = u.cached_tokens;
  }
  return r;
}

// The same requests, one after another, with the cache off and on: the same bits, greedy and
// seeded with penalties (whose history must still count the cached prompt tokens), and a chat
// that grows by each reply, fed in chunks smaller than the prompt. Returns the hits.
int expect_same_bits_with_and_without_hits(const std::filesystem::path& model_dir) {
  auto model = Model::load(model_dir, {.threads = 1});
  const Tokenizer tokenizer = Tokenizer::load(model_dir);
  Metrics metrics;
  Scheduler cold(*model, tokenizer, {1, 256, 8, 5, 0}, metrics);
  Scheduler warm(*model, tokenizer, {1, 256, 8, 5, size_t(64) << 20}, metrics);
  GenerationOptions greedy;
  greedy.sampling.temperature = 0;
  greedy.max_tokens = 8;
  greedy.logprobs = true;
  GenerationOptions seeded = greedy;
  seeded.sampling = {.temperature = 0.9f,
                     .top_k = 40,
                     .repetition_penalty = 1.3f,
                     .presence_penalty = 0.5f,
                     .seed = 7};
  std::vector<TokenId> chat = ids(1000, 37);
  int hits = 0;
  for (int turn = 0; turn < 4; ++turn)
    for (const auto* options : {&greedy, &seeded}) {
      const Reply a = run(cold, chat, *options), b = run(warm, chat, *options);
      EXPECT_EQ(a.ids, b.ids) << "turn " << turn;
      EXPECT_EQ(a.logprobs, b.logprobs) << "turn " << turn;
      EXPECT_EQ(a.cached, 0);
      EXPECT_LT(b.cached, int(chat.size()));
      hits += b.cached > 0;
      if (options == &seeded) chat = concat(concat(chat, a.ids), ids(1500 + turn * 10, 9));
    }
  return hits;
}

TEST(PrefixCache, RepliesAreTheSameBitsWithAndWithoutAHit) {
  EXPECT_EQ(expect_same_bits_with_and_without_hits(test::tiny_model()), 7)
      << "every request after the first reuses the one before";
}

// A hybrid model's sequence rewinds to a state snapshot, before the shared prefix's end: the rest
// is prefilled again, and the reply is still the same bits.
TEST(PrefixCache, HybridRepliesAreTheSameBitsWithAndWithoutAHit) {
  EXPECT_EQ(expect_same_bits_with_and_without_hits(test::fixtures() / "models" / "qwen35-tiny"), 7);
}

TEST(PrefixCache, AHybridSequenceKeepsWhatTruncateReturns) {
  auto model = Model::load(test::fixtures() / "models" / "qwen35-tiny", {.threads = 1});
  const auto a = ids(100, 30);
  Sequence s(*model, 256);
  for (auto part : {std::span(a).first(20), std::span(a).subspan(20)}) {  // snapshots at 20 and 30
    BatchItem item{&s, part, false};
    model->step({&item, 1});
  }
  ASSERT_TRUE(s.recurrent());
  PrefixCache cache(64 << 20);
  cache.put(std::move(s), a);
  auto hit = cache.take(concat(ids(100, 25), {7, 8}));  // 25 shared: back to the snapshot at 20
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->kept, 20);
  EXPECT_EQ(hit->sequence.length(), 20);
  EXPECT_EQ(cache.stats().cached_tokens, 20u);
}

TEST(ServeCli, BadCacheMbIsOneLineAndNonZero) {
  const std::string serve = "serve " + test::tiny_model().string() + " --port 0 --cache-mb ";
  for (auto [value, message] :
       {std::pair{"-1", "error: --cache-mb must be >= 0 (0 turns the cache off), got -1\n"},
        {"abc",
         "error: --cache-mb: \"abc\" is not a whole number of MiB (0 turns the cache off)\n"},
        {"1.5",
         "error: --cache-mb: \"1.5\" is not a whole number of MiB (0 turns the cache off)\n"}}) {
    auto r = test::run_qwen3(serve + value);
    EXPECT_NE(r.exit_code, 0) << value;
    EXPECT_EQ(r.output, message) << value;
  }
}

}  // namespace
}  // namespace qwen3::server
