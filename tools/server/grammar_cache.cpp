// The server's grammar cache: least recently used out, compiled outside the lock.
#include "server/grammar_cache.h"

namespace qwen3::server {

std::shared_ptr<const TokenGrammar> GrammarCache::get(const std::string& text) {
  {
    std::lock_guard lock(mutex_);
    if (auto it = index_.find(text); it != index_.end()) {
      entries_.splice(entries_.begin(), entries_, it->second);
      return it->second->second;
    }
  }
  // At most 100000 automaton states (about a second to compile, a few MB): a larger schema is a
  // 400.
  auto grammar = std::make_shared<const TokenGrammar>(Grammar::parse(text, 100000), vocabulary_);
  // The first mask's trie walks here, on the request's thread, rather than in the batch's step.
  std::vector<uint64_t> mask((vocabulary_->size() + 63) / 64);
  GrammarMatcher(grammar, {}).fill_mask(mask);
  std::lock_guard lock(mutex_);
  if (auto it = index_.find(text); it != index_.end())
    return it->second->second;  // compiled meanwhile
  entries_.emplace_front(text, grammar);
  index_[text] = entries_.begin();
  while (entries_.size() > capacity_) {
    index_.erase(entries_.back().first);
    entries_.pop_back();
  }
  return grammar;
}

}  // namespace qwen3::server
