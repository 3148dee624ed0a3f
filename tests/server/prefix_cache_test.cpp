// The prefix cache on the tiny model: longest-prefix lookup, LRU eviction within the budget.
#include <gtest/gtest.h>

#include <numeric>

#include "qwen3/model.h"
#include "server/prefix_cache.h"
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

}  // namespace
}  // namespace qwen3::server
