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

  // Splits [0, n) into size() contiguous ranges, fixed by n and size() alone, and runs
  // fn(begin, end) for each, one per thread; returns when all are done.
  void run(int n, const std::function<void(int begin, int end)>& fn);

 private:
  void work(int index);
  void run_share(int index);

  std::vector<std::thread> workers_;
  const std::function<void(int, int)>* job_ = nullptr;
  int job_n_ = 0;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
};

}  // namespace qwen3::cpu
