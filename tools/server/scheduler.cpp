// Continuous batching: requests join at the next step and leave when done, all in one Model::step.
#include "server/scheduler.h"

#include <algorithm>

#include "server/api_error.h"

namespace qwen3::server {

Job::Job(std::vector<TokenId> prompt, GenerationOptions options)
    : prompt_(std::move(prompt)), options_(std::move(options)) {}

Job::Update Job::wait(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  cv_.wait_for(lock, timeout, [&] { return pending_.finished || !pending_.tokens.empty(); });
  Update out = std::move(pending_);
  pending_.tokens.clear();
  pending_.finished = out.finished;  // stays finished for later waits
  pending_.reason = out.reason;
  return out;
}

void Job::push(GeneratedToken token) {
  std::lock_guard lock(mutex_);
  pending_.tokens.push_back(std::move(token));
  cv_.notify_all();
}

void Job::finish(Update last) {
  std::lock_guard lock(mutex_);
  last.tokens = std::move(pending_.tokens);
  last.finished = true;
  pending_ = std::move(last);
  cv_.notify_all();
}

void Job::fail(std::string error) {
  Update last;
  last.error = std::move(error);
  finish(std::move(last));
}

// A request cancelled before it ran still ends, so whoever waits on it (a timed-out request)
// returns.
bool Job::finish_if_cancelled() {
  if (!cancelled_) return false;
  Update last;
  last.reason = FinishReason::length;
  last.prompt_tokens = static_cast<int>(prompt_.size());
  finish(std::move(last));
  return true;
}

// A running request. The Sequence comes first: the Generation holds a reference to it.
struct Scheduler::Active {
  Active(Model& model, const Tokenizer& tokenizer, const SchedulerOptions& options,
         std::shared_ptr<Job> j)
      : job(std::move(j)),
        sequence(model, options.context),
        generation(sequence, tokenizer, job->prompt_, job->options_) {
    if (options.spec.enabled())
      generation.speculate(make_proposer(options.spec, model, sequence, options.draft),
                           options.spec.tokens, model.pass_rows());
  }
  std::shared_ptr<Job> job;
  Sequence sequence;
  Generation generation;
  int cached_tokens = 0;  // of the prompt, already in `sequence` when it was admitted
  bool first_token = true;
  bool failed = false;

  void finish(Metrics& metrics) {
    Job::Update last;
    last.reason = generation.finish_reason();
    last.prompt_tokens = generation.prompt_tokens();
    last.completion_tokens = generation.completion_tokens();
    last.cached_tokens = cached_tokens;
    if (const ReasoningController* reasoning = generation.reasoning()) {
      last.reasoning_tokens = reasoning->reasoning_tokens();
      last.reasoning_events = reasoning->events();
    }
    metrics.finished(last.prompt_tokens, last.completion_tokens);
    metrics.reasoning(last.reasoning_tokens, last.reasoning_events);
    if (const SpeculationStats* spec = generation.speculation()) metrics.speculation(*spec);
    job->finish(std::move(last));
  }
};

Scheduler::Scheduler(Model& model, const Tokenizer& tokenizer, SchedulerOptions options,
                     Metrics& metrics)
    : model_(model),
      tokenizer_(tokenizer),
      options_(options),
      metrics_(metrics),
      cache_(options.cache_bytes),
      thread_([this] { loop(); }) {}

Scheduler::~Scheduler() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  for (auto& job : queue_) job->fail("the server is shutting down");
}

std::shared_ptr<Job> Scheduler::submit(std::vector<TokenId> prompt, GenerationOptions options) {
  auto job = std::make_shared<Job>(std::move(prompt), std::move(options));
  {
    std::lock_guard lock(mutex_);
    // Requests whose clients left (or timed out) while waiting don't count against the limit.
    std::erase_if(queue_, [](auto& j) { return j->finish_if_cancelled(); });
    if (queue_.size() >= options_.max_queue)
      throw ApiError(
          429, "too many requests queued (" + std::to_string(queue_.size()) + "); try again later",
          "", "rate_limit_exceeded");
    queue_.push_back(job);
    metrics_.queued(queue_.size());
  }
  wake_.notify_one();
  return job;
}

void Scheduler::admit(std::vector<std::unique_ptr<Active>>& active) {
  while (active.size() < size_t(options_.max_seqs) && !queue_.empty()) {
    auto job = std::move(queue_.front());
    queue_.pop_front();
    if (job->finish_if_cancelled()) continue;
    try {
      auto a = std::make_unique<Active>(model_, tokenizer_, options_, job);
      if (a->generation.done()) {  // max_tokens 0
        a->finish(metrics_);
        continue;
      }
      reuse_prefix(*a);
      active.push_back(std::move(a));
    } catch (const std::exception& e) {  // request parsing validated it; this is a last line
      job->fail(e.what());
    }
  }
  metrics_.queued(queue_.size());
}

// The Generation was built over a fresh, empty sequence, so its context check counted the whole
// prompt. The cached sequence then takes that one's place (the Generation refers to the member),
// and the prompt tokens it holds count as fed: the Generation keeps the whole prompt as the
// history its penalties count and as prompt_tokens, and feeds only the rest. Their logits are
// those of a full prefill (tests/model/batch_test.cpp TruncateRewindsTheCache), so the reply is
// the same bits with or without the hit.
void Scheduler::reuse_prefix(Active& a) {
  auto hit = cache_.take(a.job->prompt_);
  if (!hit) return;
  a.sequence = std::move(hit->sequence);
  if (hit->kept > 0) a.generation.advance(hit->kept, {});  // the prompt is not in yet: no logits
  a.cached_tokens = hit->kept;
}

// What a sequence holds: the prompt, then each generated token but the last (never fed), or less
// when the request ended early. Where generated tokens' rows are computed otherwise than prompt
// rows (Model::splits_rows), only the prompt is kept: a later prompt holding the reply must get the
// bits a prefill of it gives.
void Scheduler::retire(Active& a) {
  if (!cache_.enabled()) return;
  std::vector<TokenId> tokens = a.job->prompt_;
  if (model_.splits_rows()) {
    const int kept = a.sequence.truncate(std::min<int>(a.sequence.length(), tokens.size()));
    tokens.resize(kept);
    return cache_.put(std::move(a.sequence), tokens);
  }
  const auto& generated = a.generation.generated();
  tokens.insert(tokens.end(), generated.begin(), generated.end());
  cache_.put(std::move(a.sequence), tokens);
}

void Scheduler::step(std::vector<std::unique_ptr<Active>>& active) {
  std::vector<BatchItem> batch;
  for (auto& a : active) batch.push_back(a->generation.next_item(options_.chunk));
  try {
    model_.step(batch, logits_);
  } catch (const std::exception& e) {
    for (auto& a : active) a->job->fail(e.what());
    active.clear();
    return;
  }
  int generated = 0;
  for (size_t i = 0; i < active.size(); ++i) {
    Active& a = *active[i];
    std::vector<GeneratedToken> tokens;
    try {
      tokens = a.generation.advance(static_cast<int>(batch[i].tokens.size()), logits_[i]);
    } catch (
        const std::exception& e) {  // this request alone fails (a grammar no token can continue)
      a.generation.cancel();
      a.job->fail(e.what());
      a.failed = true;
      continue;
    }
    if (tokens.empty()) continue;
    generated += static_cast<int>(tokens.size());
    if (a.first_token) {
      metrics_.first_token(
          std::chrono::duration<double>(Job::Clock::now() - a.job->arrived_).count());
      a.first_token = false;
    }
    for (auto& token : tokens) a.job->push(std::move(token));
    if (a.generation.done()) a.finish(metrics_);
  }
  std::erase_if(active, [&](auto& a) {
    if (!a->generation.done() && !a->failed) return false;
    retire(*a);
    return true;
  });
  metrics_.generated(generated);
}

void Scheduler::loop() {
  std::vector<std::unique_ptr<Active>> active;
  metrics_.prefix_cache(cache_.stats(), options_.cache_bytes);  // the budget, before any request
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty() || !active.empty(); });
      if (stopping_) break;
      admit(active);
    }
    // A client that left frees its slot before the next step.
    std::erase_if(active, [&](auto& a) {
      if (!a->job->cancelled_) return false;
      a->generation.cancel();
      a->finish(metrics_);
      retire(*a);
      return true;
    });
    if (!active.empty()) step(active);
    metrics_.active(active.size());
    metrics_.prefix_cache(cache_.stats(), options_.cache_bytes);
  }
  for (auto& a : active) a->job->fail("the server is shutting down");
}

}  // namespace qwen3::server
