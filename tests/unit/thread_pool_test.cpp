// The thread pool covers every index exactly once, in contiguous non-empty chunks, with even and
// with shrinking chunks, for any number of threads and items.
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <utility>
#include <vector>

#include "cpu/thread_pool.h"

namespace qwen3::cpu {
namespace {

// The chunks one run hands out, sorted by their first index.
std::vector<std::pair<int, int>> chunks_of(ThreadPool& pool, int n, bool shrinking) {
  std::mutex mutex;
  std::vector<std::pair<int, int>> chunks;
  pool.run(n, [&](int begin, int end) {
    std::lock_guard<std::mutex> lock(mutex);
    chunks.emplace_back(begin, end);
  }, shrinking);
  std::sort(chunks.begin(), chunks.end());
  return chunks;
}

TEST(ThreadPool, EveryIndexOnceInContiguousChunks) {
  for (int threads : {1, 2, 3})
    for (bool shrinking : {false, true}) {
      ThreadPool pool(threads);
      for (int n : {0, 1, 2, 7, 64, 1000, 9496}) {
        const auto chunks = chunks_of(pool, n, shrinking);
        int next = 0;
        for (auto [begin, end] : chunks) {
          EXPECT_EQ(begin, next) << threads << " threads, n " << n << ", shrinking " << shrinking;
          EXPECT_LT(begin, end);
          next = end;
        }
        EXPECT_EQ(next, n);
      }
    }
}

TEST(ThreadPool, ShrinkingChunksEndSmall) {
  ThreadPool pool(2);
  const auto even = chunks_of(pool, 1000, false), shrinking = chunks_of(pool, 1000, true);
  EXPECT_EQ(even.back().second - even.back().first, 1000 / 8);  // about four chunks per thread
  // Half a thread's share of what is left: 250 first, then fewer and fewer, down to single indices.
  EXPECT_EQ(shrinking.front(), std::make_pair(0, 250));
  for (size_t i = 1; i < shrinking.size(); ++i)
    EXPECT_LE(shrinking[i].second - shrinking[i].first, shrinking[i - 1].second - shrinking[i - 1].first);
  EXPECT_EQ(shrinking.back().second - shrinking.back().first, 1);
}

}  // namespace
}  // namespace qwen3::cpu
