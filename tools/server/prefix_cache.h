// The prefix cache: sequences of finished requests, kept with the token ids they hold, so that a
// new request starting with the same tokens (the same system prompt, the earlier turns of a chat)
// prefills only the rest.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <span>
#include <vector>

#include "qwen3/model.h"

namespace qwen3::server {

struct PrefixCacheStats {
  uint64_t hits = 0, misses = 0;  // lookups that reused a sequence, or found none worth it
  uint64_t cached_tokens = 0;     // prompt tokens not prefilled thanks to a hit
  uint64_t evictions = 0;         // sequences dropped to stay within the budget
  size_t bytes = 0, entries = 0;  // what the cache holds now
};

// Used by the scheduler's thread only. Each entry is a whole Sequence: a request that reuses one
// takes it out of the cache (two concurrent requests never share one), and puts it back when it
// ends. Sequences in use count against --max-seqs x --ctx, not against this budget.
class PrefixCache {
 public:
  explicit PrefixCache(size_t budget_bytes) : budget_(budget_bytes) {}
  bool enabled() const { return budget_ > 0; }

  struct Hit {
    Sequence sequence;
    int kept = 0;  // its length: the prompt tokens it already holds
  };
  // The entry sharing the longest token prefix with `prompt`, removed from the cache and
  // truncated to that prefix (at most all but the last prompt token, whose logits the request
  // needs). A hybrid model's sequence may keep fewer tokens than asked (Sequence::truncate): the
  // caller prefills the prompt from `kept` on. nullopt on a miss: the caller starts a fresh one.
  std::optional<Hit> take(std::span<const TokenId> prompt);

  // Keeps a finished request's sequence; `tokens` are the ids it holds (its first length()).
  // Evicts the least recently used entries until it fits the budget; a sequence larger than the
  // whole budget is dropped.
  void put(Sequence sequence, std::span<const TokenId> tokens);

  const PrefixCacheStats& stats() const { return stats_; }

 private:
  struct Entry {
    Sequence sequence;
    std::vector<TokenId> tokens;  // [sequence.length()]
    size_t bytes = 0;
  };
  void evict_oldest();

  size_t budget_;
  std::list<Entry> entries_;  // most recently used first
  PrefixCacheStats stats_;
};

}  // namespace qwen3::server
