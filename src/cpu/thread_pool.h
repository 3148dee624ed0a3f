// A persistent pool of worker threads with cheap hand-off: workers spin briefly for the next
// job before sleeping, since a decode step issues hundreds of small parallel ops.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace qwen3::cpu {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);  // threads >= 1; the caller's thread is one of them
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Splits [0, n) into contiguous chunks and runs fn(begin, end) on each, the chunks claimed in
  // order by whichever thread is free, so a thread slowed by the machine does not hold the others
  // up; returns when all are done. Which thread runs a chunk varies, so fn must compute each
  // index the same way wherever it runs (every op here does: no reduction spans two indices).
  // Chunks are about n / (4 x threads); with `shrinking`, each takes half a thread's share of
  // what is left (at least one index), so the last ones are small and threads finish together.
  void run(int n, const std::function<void(int begin, int end)>& fn, bool shrinking = false);

 private:
  void work();
  void run_share();

  std::vector<std::thread> workers_;
  const std::function<void(int, int)>* job_ = nullptr;
  int job_n_ = 0, job_grain_ = 1;
  bool job_shrinking_ = false;
  std::atomic<int> next_{0};  // the first index not yet claimed
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
};

}  // namespace qwen3::cpu
