// Server counters and gauges in Prometheus' text exposition format.
#include "server/metrics.h"

#include <sstream>

namespace qwen3::server {

void Metrics::request(int status) {
  std::lock_guard lock(mutex_);
  ++requests_[status];
}

void Metrics::finished(int prompt_tokens, int completion_tokens) {
  std::lock_guard lock(mutex_);
  ++generations_;
  prompt_tokens_ += prompt_tokens;
  completion_tokens_ += completion_tokens;
}

void Metrics::reasoning(int tokens, const std::vector<ReasoningEvent>& events) {
  std::lock_guard lock(mutex_);
  reasoning_tokens_ += tokens;
  for (const auto& e : events)
    ++reasoning_events_[{reasoning_cause_name(e.cause), reasoning_action_name(e.action)}];
}

void Metrics::first_token(double seconds) {
  std::lock_guard lock(mutex_);
  for (size_t i = 0; i < ttft_buckets.size(); ++i)
    if (seconds <= ttft_buckets[i]) ++ttft_counts_[i];
  ++ttft_count_;
  ttft_sum_ += seconds;
}

void Metrics::generated(int tokens) {
  std::lock_guard lock(mutex_);
  recent_.emplace_back(Clock::now(), tokens);
}

void Metrics::queued(size_t requests) {
  std::lock_guard lock(mutex_);
  queued_ = requests;
}

void Metrics::active(size_t requests) {
  std::lock_guard lock(mutex_);
  active_ = requests;
}

void Metrics::prefix_cache(const PrefixCacheStats& stats, size_t budget_bytes) {
  std::lock_guard lock(mutex_);
  cache_ = stats;
  cache_budget_ = budget_bytes;
}

void Metrics::speculation(const SpeculationStats& stats) {
  std::lock_guard lock(mutex_);
  spec_.steps += stats.steps;
  spec_.proposed += stats.proposed;
  spec_.accepted += stats.accepted;
  spec_.emitted += stats.emitted;
}

std::string Metrics::render() const {
  std::lock_guard lock(mutex_);
  const auto now = Clock::now();
  while (!recent_.empty() &&
         std::chrono::duration<double>(now - recent_.front().first).count() > rate_window_s)
    recent_.pop_front();
  uint64_t recent_tokens = 0;
  for (auto& [time, tokens] : recent_) recent_tokens += tokens;

  std::ostringstream out;
  auto metric = [&](const char* name, const char* type, const char* help) {
    out << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
  };
  // A metric of one unlabelled value.
  auto scalar = [&](const char* name, const char* type, const char* help, auto value) {
    metric(name, type, help);
    out << name << ' ' << value << '\n';
  };
  metric("qwen3_requests_total", "counter", "HTTP requests answered, by status");
  for (auto& [status, count] : requests_)
    out << "qwen3_requests_total{status=\"" << status << "\"} " << count << '\n';
  scalar("qwen3_generations_total", "counter", "Generations run to the end", generations_);
  scalar("qwen3_prompt_tokens_total", "counter", "Prompt tokens processed", prompt_tokens_);
  scalar("qwen3_generation_tokens_total", "counter", "Tokens generated", completion_tokens_);
  scalar("qwen3_reasoning_tokens_total", "counter", "Generated tokens inside <think> blocks",
         reasoning_tokens_);
  metric("qwen3_reasoning_control_total", "counter",
         "Think blocks closed or penalized, by cause (thinking_budget, loop) and action");
  // Each kind listed from the start, so that a rate over it needs no first event.
  using E = ReasoningEvent;
  for (auto [cause, action] : {std::pair{E::Cause::thinking_budget, E::Action::closed_thinking},
                               {E::Cause::loop, E::Action::closed_thinking},
                               {E::Cause::loop, E::Action::raised_presence_penalty}}) {
    const std::pair<std::string, std::string> key{reasoning_cause_name(cause),
                                                  reasoning_action_name(action)};
    const auto it = reasoning_events_.find(key);
    out << "qwen3_reasoning_control_total{cause=\"" << key.first << "\",action=\"" << key.second
        << "\"} " << (it == reasoning_events_.end() ? 0 : it->second) << '\n';
  }
  scalar("qwen3_queue_length", "gauge", "Requests waiting for a sequence slot", queued_);
  scalar("qwen3_active_sequences", "gauge", "Requests being generated", active_);
  scalar("qwen3_generation_tokens_per_second", "gauge",
         "Tokens generated per second over the last 10 s", recent_tokens / rate_window_s);
  metric("qwen3_time_to_first_token_seconds", "histogram",
         "Time from a request's arrival to its first new token");
  for (size_t i = 0; i < ttft_buckets.size(); ++i)
    out << "qwen3_time_to_first_token_seconds_bucket{le=\"" << ttft_buckets[i] << "\"} "
        << ttft_counts_[i] << '\n';
  out << "qwen3_time_to_first_token_seconds_bucket{le=\"+Inf\"} " << ttft_count_ << '\n';
  out << "qwen3_time_to_first_token_seconds_sum " << ttft_sum_ << '\n';
  out << "qwen3_time_to_first_token_seconds_count " << ttft_count_ << '\n';
  scalar("qwen3_prefix_cache_hits_total", "counter",
         "Requests that reused a cached sequence's prefix", cache_.hits);
  scalar("qwen3_prefix_cache_misses_total", "counter",
         "Requests that found no cached prefix worth reusing (cache on)", cache_.misses);
  scalar("qwen3_prefix_cache_cached_tokens_total", "counter",
         "Prompt tokens taken from the prefix cache instead of prefilled", cache_.cached_tokens);
  scalar("qwen3_prefix_cache_evictions_total", "counter",
         "Cached sequences dropped to stay within --cache-mb", cache_.evictions);
  scalar("qwen3_prefix_cache_entries", "gauge", "Sequences held by the prefix cache",
         cache_.entries);
  scalar("qwen3_prefix_cache_bytes", "gauge", "Memory held by the prefix cache's sequences",
         cache_.bytes);
  scalar("qwen3_prefix_cache_budget_bytes", "gauge", "The prefix cache's budget (--cache-mb)",
         cache_budget_);
  scalar("qwen3_spec_steps_total", "counter", "Speculative verification steps (--spec)",
         spec_.steps);
  scalar("qwen3_spec_draft_tokens_total", "counter", "Draft tokens checked", spec_.proposed);
  scalar("qwen3_spec_accepted_tokens_total", "counter", "Draft tokens accepted", spec_.accepted);
  scalar("qwen3_spec_emitted_tokens_total", "counter",
         "Tokens produced by verification steps (accepted drafts and one of the model's each)",
         spec_.emitted);
  return out.str();
}

}  // namespace qwen3::server
