// The prefix cache: longest-common-prefix lookup over whole cached sequences, LRU eviction by
// bytes.
#include "server/prefix_cache.h"

#include <algorithm>

namespace qwen3::server {

// A linear scan over the entries rather than a radix tree or block hashes (vLLM, SGLang): those
// index KV blocks that many sequences share, and this engine's sequences own their caches whole,
// so the cache holds at most budget / (one sequence's bytes) entries: tens to a few hundred. A
// scan compares a few thousand token ids per entry, microseconds, where each prefilled token
// costs about a millisecond.
std::optional<PrefixCache::Hit> PrefixCache::take(std::span<const TokenId> prompt) {
  if (!enabled() || prompt.empty()) return std::nullopt;
  // The last prompt token is always fed again: its logits choose the first new token.
  const size_t limit = prompt.size() - 1;
  auto best = entries_.end();
  size_t best_common = 0;
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    const size_t n = std::min(limit, it->tokens.size());
    const size_t common =
        std::mismatch(prompt.begin(), prompt.begin() + n, it->tokens.begin()).first -
        prompt.begin();
    // Ties go to the shorter entry, which loses less when it is cut back (then the more recent).
    if (common > best_common ||
        (common == best_common && common > 0 && it->tokens.size() < best->tokens.size())) {
      best = it;
      best_common = common;
    }
  }
  // Taking an entry cuts it back to the shared prefix, so a short match would destroy a long
  // conversation (two users who share only the system prompt would keep evicting each other's
  // history). An entry is taken when the match is at least half of it, or at least half of the
  // prompt; otherwise a fresh sequence leaves it for the request that continues it.
  if (best == entries_.end() ||
      (2 * best_common < best->tokens.size() && 2 * best_common < prompt.size())) {
    ++stats_.misses;
    return std::nullopt;
  }
  Hit hit{std::move(best->sequence), 0};
  stats_.bytes -= best->bytes;
  entries_.erase(best);
  --stats_.entries;
  // Sequence::truncate may keep less (a hybrid model's state snapshot): that length is the hit.
  hit.kept = hit.sequence.truncate(static_cast<int>(best_common));
  if (hit.kept == 0) {
    ++stats_.misses;
  } else {
    ++stats_.hits;
    stats_.cached_tokens += hit.kept;
  }
  return hit;
}

void PrefixCache::put(Sequence sequence, std::span<const TokenId> tokens) {
  const int length = sequence.length();
  if (!enabled() || length == 0 || tokens.size() < size_t(length)) return;
  const size_t bytes = sequence.bytes();
  if (bytes > budget_) {
    ++stats_.evictions;
    return;
  }
  while (stats_.bytes + bytes > budget_) evict_oldest();
  entries_.push_front({std::move(sequence), {tokens.begin(), tokens.begin() + length}, bytes});
  stats_.bytes += bytes;
  ++stats_.entries;
}

void PrefixCache::evict_oldest() {
  stats_.bytes -= entries_.back().bytes;
  entries_.pop_back();
  --stats_.entries;
  ++stats_.evictions;
}

}  // namespace qwen3::server
