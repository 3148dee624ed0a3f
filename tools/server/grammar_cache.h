// Compiled grammars by their text, shared by requests: a schema sent again skips compiling, and
// its per-state token cache (the first visits' trie walks) is already filled.
#pragma once

#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "qwen3/grammar.h"

namespace qwen3::server {

class GrammarCache {
 public:
  GrammarCache(std::shared_ptr<const TokenVocabulary> vocabulary, size_t capacity = 32)
      : vocabulary_(std::move(vocabulary)), capacity_(capacity) {}

  // The grammar of `text` bound to the vocabulary, compiled on first use; the least recently used
  // beyond `capacity` are dropped. Throws Error (invalid_argument) for a grammar that does not
  // compile.
  std::shared_ptr<const TokenGrammar> get(const std::string& text);
  const TokenVocabulary& vocabulary() const { return *vocabulary_; }

 private:
  std::shared_ptr<const TokenVocabulary> vocabulary_;
  size_t capacity_;
  std::mutex mutex_;
  std::list<std::pair<std::string, std::shared_ptr<const TokenGrammar>>>
      entries_;  // most recent first
  std::unordered_map<std::string, decltype(entries_)::iterator> index_;
};

}  // namespace qwen3::server
