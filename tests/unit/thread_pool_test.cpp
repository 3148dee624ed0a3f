// The thread pool covers every index exactly once, in contiguous non-empty chunks, for any number
// of threads and items; each thread reads its own share in order, and a held-up thread's share
// is taken over by the others.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "parallel/thread_pool.h"

namespace qwen3::parallel {
namespace {

struct Chunk {
  int begin, end;
  std::thread::id thread;
};

// The chunks one run hands out, in the order they started.
std::vector<Chunk> chunks_of(ThreadPool& pool, int n,
                             const std::function<void(int, int)>& work = {}) {
  std::mutex mutex;
  std::vector<Chunk> chunks;
  pool.run(n, [&](int begin, int end) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      chunks.push_back({begin, end, std::this_thread::get_id()});
    }
    if (work) work(begin, end);
  });
  return chunks;
}

TEST(ThreadPool, EveryIndexOnceInContiguousChunks) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (int n : {0, 1, 2, 7, 64, 1000, 9496}) {
      auto chunks = chunks_of(pool, n);
      std::sort(chunks.begin(), chunks.end(),
                [](const Chunk& a, const Chunk& b) { return a.begin < b.begin; });
      int next = 0;
      for (const Chunk& c : chunks) {
        EXPECT_EQ(c.begin, next) << threads << " threads, n " << n;
        EXPECT_LT(c.begin, c.end);
        next = c.end;
      }
      EXPECT_EQ(next, n);
    }
  }
}

TEST(ThreadPool, AHeldUpThreadsShareIsTakenOverBackToFront) {
  // The thread that starts at index 0 stalls in its first chunk, half of its share [0, 500). The
  // other runs its own share [500, 1000) front to back (one run of weights, not a comb of chunks),
  // then takes half of what the stalled thread has left, from the back, again and again.
  // That needs the thread owning [0, 500) to start before the other has taken all of it (on a
  // loaded machine, or under a sanitizer, the caller may start late): runs where the first chunk
  // of the thread reaching index 0 was not its first are run again.
  ThreadPool pool(2);
  std::vector<Chunk> chunks;
  std::vector<Chunk>::const_iterator stalled;
  for (int attempt = 0;; ++attempt) {
    ASSERT_LT(attempt, 20) << "the owner of index 0 never started first";
    chunks = chunks_of(pool, 1000, [](int begin, int) {
      if (begin == 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    });
    stalled =
        std::find_if(chunks.begin(), chunks.end(), [](const Chunk& c) { return c.begin == 0; });
    ASSERT_NE(stalled, chunks.end());
    const auto first = std::find_if(chunks.begin(), chunks.end(),
                                    [&](const Chunk& c) { return c.thread == stalled->thread; });
    if (first == stalled) break;
  }
  EXPECT_LE(stalled->end, 250);
  std::vector<Chunk> other;
  for (const Chunk& c : chunks)
    if (c.thread != stalled->thread) other.push_back(c);
    else EXPECT_EQ(c.begin, 0) << "the stalled thread ran only its first chunk";
  ASSERT_FALSE(other.empty());
  size_t i = 0;
  for (int next = 500; next < 1000; next = other[i++].end) {
    ASSERT_LT(i, other.size());
    EXPECT_EQ(other[i].begin, next);
  }
  // Then each taken half runs front to back and ends where the one taken before it began.
  for (int taken_before = 500; i < other.size();) {
    const int begin = other[i].begin;
    EXPECT_GE(begin, stalled->end);
    for (++i; i < other.size() && other[i].begin == other[i - 1].end; ++i) {}
    EXPECT_EQ(other[i - 1].end, taken_before);
    taken_before = begin;
  }
}

}  // namespace
}  // namespace qwen3::parallel
