// A persistent pool of worker threads with spin-then-sleep hand-off.
#include "cpu/thread_pool.h"

#include <algorithm>
#include <chrono>

#include <immintrin.h>

namespace qwen3::cpu {

namespace {
// How long an idle worker spins before it sleeps: long enough to bridge the gap between two
// ops of a decode step, short enough not to burn a core between requests.
constexpr auto kSpin = std::chrono::microseconds(300);
}  // namespace

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
}

ThreadPool::~ThreadPool() {
  stop_ = true;
  generation_.fetch_add(1);
  {
    std::lock_guard<std::mutex> lock(mutex_);
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::run_share() {
  for (;;) {
    int begin = next_.load(std::memory_order_relaxed), end;
    do {
      if (begin >= job_n_) return;
      const int grain = job_shrinking_ ? std::max(1, (job_n_ - begin) / (2 * size())) : job_grain_;
      end = std::min(job_n_, begin + grain);
    } while (!next_.compare_exchange_weak(begin, end, std::memory_order_relaxed));
    (*job_)(begin, end);
  }
}

void ThreadPool::run(int n, const std::function<void(int, int)>& fn, bool shrinking) {
  if (workers_.empty() || n <= 1) {
    if (n > 0) fn(0, n);
    return;
  }
  job_ = &fn;
  job_n_ = n;
  // About four chunks per thread: enough to even out, few enough to keep each weight stream long.
  job_grain_ = std::max(1, n / (4 * size()));
  job_shrinking_ = shrinking;
  next_.store(0, std::memory_order_relaxed);
  pending_.store(static_cast<int>(workers_.size()));
  generation_.fetch_add(1);
  if (sleepers_.load() > 0) {
    { std::lock_guard<std::mutex> lock(mutex_); }
    wake_.notify_all();
  }
  run_share();
  while (pending_.load(std::memory_order_acquire) > 0) _mm_pause();
}

void ThreadPool::work() {
  uint64_t seen = 0;
  for (;;) {
    auto start = std::chrono::steady_clock::now();
    int spins = 0;
    while (generation_.load(std::memory_order_acquire) == seen) {
      _mm_pause();
      if (++spins % 256 == 0 && std::chrono::steady_clock::now() - start > kSpin) {
        std::unique_lock<std::mutex> lock(mutex_);
        sleepers_.fetch_add(1);
        wake_.wait(lock, [&] { return generation_.load() != seen; });
        sleepers_.fetch_sub(1);
      }
    }
    seen = generation_.load();
    if (stop_) return;
    run_share();
    pending_.fetch_sub(1, std::memory_order_release);
  }
}

}  // namespace qwen3::cpu
