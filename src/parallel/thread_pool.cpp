// A persistent pool of worker threads with spin-then-sleep hand-off and work stealing.
#include "parallel/thread_pool.h"

#include <chrono>

#include <immintrin.h>

namespace qwen3::parallel {

namespace {
// How long an idle worker spins before it sleeps: long enough to bridge the gap between two
// ops of a decode step, short enough not to burn a core between requests.
constexpr auto kSpin = std::chrono::microseconds(300);

uint64_t pack(uint32_t begin, uint32_t end) { return uint64_t(begin) << 32 | end; }
uint32_t begin_of(uint64_t range) { return uint32_t(range >> 32); }
uint32_t end_of(uint64_t range) { return uint32_t(range); }
uint32_t left_in(uint64_t range) {
  return end_of(range) - begin_of(range);
}  // claims never pass end

// Claims the front half of what is left of a share (at least one index), so that the last
// chunks are small and the threads finish together.
bool take_front(std::atomic<uint64_t>& share, uint32_t& begin, uint32_t& end) {
  uint64_t range = share.load(std::memory_order_relaxed);
  do {
    begin = begin_of(range);
    if (begin >= end_of(range)) return false;
    end = begin + (end_of(range) - begin + 1) / 2;
  } while (
      !share.compare_exchange_weak(range, pack(end, end_of(range)), std::memory_order_relaxed));
  return true;
}
}  // namespace

ThreadPool::ThreadPool(int threads) : shares_(new Share[threads]) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { work(i); });
}

ThreadPool::~ThreadPool() {
  stop_ = true;
  generation_.fetch_add(1);
  { std::lock_guard<std::mutex> lock(mutex_); }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::run_shares(int self) {
  for (;;) {
    uint32_t begin, end;
    if (take_front(shares_[self].range, begin, end)) (*job_)(int(begin), int(end));
    else if (!steal(self)) return;
  }
}

// Moves the back half of the largest share left (at least one index) into this thread's own.
bool ThreadPool::steal(int self) {
  for (;;) {
    int victim = -1;
    uint64_t range = 0;  // the victim's share as seen
    for (int t = 0; t < size(); ++t) {
      const uint64_t r = shares_[t].range.load(std::memory_order_relaxed);
      if (t != self && left_in(r) > left_in(range)) range = r, victim = t;
    }
    if (victim < 0) return false;
    const uint32_t begin = begin_of(range), end = end_of(range);
    const uint32_t mid = end - (end - begin + 1) / 2;  // the back half, at least one index
    if (shares_[victim].range.compare_exchange_weak(range, pack(begin, mid),
                                                    std::memory_order_relaxed)) {
      shares_[self].range.store(pack(mid, end), std::memory_order_relaxed);
      return true;
    }
  }
}

void ThreadPool::run(int n, const std::function<void(int, int)>& fn) {
  if (workers_.empty() || n <= 1) {
    if (n > 0) fn(0, n);
    return;
  }
  job_ = &fn;
  for (int t = 0; t < size(); ++t)
    shares_[t].range.store(
        pack(uint32_t(int64_t(n) * t / size()), uint32_t(int64_t(n) * (t + 1) / size())),
        std::memory_order_relaxed);
  pending_.store(static_cast<int>(workers_.size()));
  generation_.fetch_add(1);
  if (sleepers_.load() > 0) {
    { std::lock_guard<std::mutex> lock(mutex_); }
    wake_.notify_all();
  }
  run_shares(0);
  while (pending_.load(std::memory_order_acquire) > 0) _mm_pause();
}

void ThreadPool::work(int self) {
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
    run_shares(self);
    pending_.fetch_sub(1, std::memory_order_release);
  }
}

}  // namespace qwen3::parallel
