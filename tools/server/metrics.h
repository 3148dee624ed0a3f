// Server counters and gauges, rendered in Prometheus' text format for GET /metrics.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>

#include "qwen3/reasoning_control.h"
#include "qwen3/speculative.h"
#include "server/prefix_cache.h"

namespace qwen3::server {

class Metrics {
 public:
  void request(int status);                                 // an answered HTTP request
  void finished(int prompt_tokens, int completion_tokens);  // a generation that ran
  // A finished reply's reasoning tokens and what the thinking budget and loop guard did to it.
  void reasoning(int tokens, const std::vector<ReasoningEvent>& events);
  void first_token(double seconds);  // time from arrival to the first new token
  void generated(int tokens);        // new tokens of one engine step
  void queued(size_t requests);      // waiting for a slot
  void active(size_t requests);      // being generated
  void prefix_cache(const PrefixCacheStats& stats, size_t budget_bytes);
  void speculation(const SpeculationStats& stats);  // a finished generation's totals
  std::string render() const;

 private:
  using Clock = std::chrono::steady_clock;
  static constexpr std::array<double, 9> ttft_buckets{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
  static constexpr double rate_window_s = 10;  // tokens/s is averaged over the last 10 s

  mutable std::mutex mutex_;
  std::map<int, uint64_t> requests_;  // by status
  uint64_t prompt_tokens_ = 0, completion_tokens_ = 0, generations_ = 0, reasoning_tokens_ = 0;
  std::map<std::pair<std::string, std::string>, uint64_t> reasoning_events_;  // (cause, action)
  std::array<uint64_t, ttft_buckets.size()> ttft_counts_{};
  uint64_t ttft_count_ = 0;
  double ttft_sum_ = 0;
  mutable std::deque<std::pair<Clock::time_point, int>> recent_;  // (step end, tokens)
  size_t queued_ = 0, active_ = 0;
  PrefixCacheStats cache_;
  SpeculationStats spec_;
  size_t cache_budget_ = 0;
};

}  // namespace qwen3::server
