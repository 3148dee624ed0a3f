// Continuous batching: one thread owns the model and steps every active request together.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "qwen3/generation.h"
#include "qwen3/model.h"
#include "qwen3/speculative.h"
#include "qwen3/tokenizer.h"
#include "server/metrics.h"
#include "server/prefix_cache.h"

namespace qwen3::server {

struct SchedulerOptions {
  int max_seqs = 4;       // requests generated concurrently
  int context = 4096;     // tokens per sequence
  size_t max_queue = 64;  // requests waiting for a slot before 429s
  int chunk = 256;  // prompt tokens per request per step, so long prompts don't stall decoding
  size_t cache_bytes = 0;  // the prefix cache's budget for finished requests' sequences; 0 = off
  // Speculative decoding for every request (--spec): its proposer, and the draft model when it
  // is one (the server keeps it alive).
  SpeculativeOptions spec;
  Model* draft = nullptr;
};

// One request's channel between the HTTP thread waiting on it and the scheduler running it.
class Job {
 public:
  using Clock = std::chrono::steady_clock;
  struct Update {
    std::vector<GeneratedToken> tokens;  // new since the last wait()
    bool finished = false;
    FinishReason reason = FinishReason::none;
    int prompt_tokens = 0, completion_tokens = 0;
    int cached_tokens = 0;     // prompt tokens taken from the prefix cache, not prefilled
    int reasoning_tokens = 0;  // of completion_tokens, inside <think>
    std::vector<ReasoningEvent> reasoning_events;  // the thinking budget's, the loop guard's
    std::string error;                             // the engine failed this request
  };

  Job(std::vector<TokenId> prompt, GenerationOptions options);
  Update wait(std::chrono::milliseconds timeout);  // returns early on news
  void cancel() { cancelled_ = true; }             // the client is gone or timed out

 private:
  friend class Scheduler;
  void push(GeneratedToken token);
  void finish(Update last);      // its counts and reason; the tokens pushed stay pending
  void fail(std::string error);  // ends it with an error for the client
  bool finish_if_cancelled();    // true when it was cancelled (and is now finished)

  std::vector<TokenId> prompt_;
  GenerationOptions options_;
  Clock::time_point arrived_ = Clock::now();
  std::atomic<bool> cancelled_{false};
  std::mutex mutex_;
  std::condition_variable cv_;
  Update pending_;
};

class Scheduler {
 public:
  Scheduler(Model& model, const Tokenizer& tokenizer, SchedulerOptions options, Metrics& metrics);
  ~Scheduler();  // finishes waiting and running requests with an error, then joins

  // Queues a request; throws ApiError(429) when max_queue requests are already waiting.
  std::shared_ptr<Job> submit(std::vector<TokenId> prompt, GenerationOptions options);

 private:
  struct Active;
  void loop();
  void admit(std::vector<std::unique_ptr<Active>>& active);  // under mutex_
  void step(std::vector<std::unique_ptr<Active>>& active);
  void reuse_prefix(Active& a);  // a cached sequence in place of a's fresh one
  void retire(Active& a);        // a's sequence into the prefix cache

  Model& model_;
  const Tokenizer& tokenizer_;
  SchedulerOptions options_;
  Metrics& metrics_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Job>> queue_;
  bool stopping_ = false;
  std::vector<std::vector<float>>
      logits_;          // the last step's, its memory reused (loop's thread only)
  PrefixCache cache_;   // loop's thread only
  std::thread thread_;  // last: starts after everything it uses
};

}  // namespace qwen3::server
