// A persistent pool of worker threads with cheap hand-off: workers spin briefly for the next
// job before sleeping, since a decode step issues hundreds of small parallel ops.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace qwen3::parallel {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);  // threads >= 1; the caller's thread is one of them
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs fn(begin, end) over contiguous chunks covering [0, n) once, and returns when all are
  // done. Each thread owns an even, contiguous share and runs it front to back (a matrix-vector
  // product then streams one long run of weights per thread); a thread that is done takes half
  // of what another has left, from the back, so a thread slowed by the machine does not hold
  // the others up. Which thread runs an index varies, so fn must compute each index the same
  // way wherever it runs (every op here does: no reduction spans two indices).
  void run(int n, const std::function<void(int begin, int end)>& fn);

 private:
  // The indices a thread has yet to run, [begin, end) packed in one word so that the owner
  // (from the front) and a thief (from the back) claim them with one compare-and-swap.
  struct alignas(64) Share {
    std::atomic<uint64_t> range{0};
  };

  void work(int self);
  void run_shares(int self);
  bool steal(int self);

  std::vector<std::thread> workers_;
  std::unique_ptr<Share[]> shares_;
  const std::function<void(int, int)>* job_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
};

}  // namespace qwen3::parallel
