// Constrained decoding: grammars over bytes (GBNF-like text, or compiled from JSON Schema) and the
// set of tokens they allow at each step of a generation (docs/grammar.md).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "qwen3/tokenizer.h"

namespace qwen3 {

// A parsed grammar, each rule compiled into one automaton over bytes, references to other rules
// and whole added tokens (<think>). Immutable; shared by every generation that uses it.
class Grammar {
 public:
  // Throws Error(invalid_argument) "grammar LINE:COL: ..." for bad syntax, an undefined rule, a
  // missing root rule, left recursion, a repetition of something that can be empty, or more than
  // `max_states` automaton states.
  static std::shared_ptr<const Grammar> parse(std::string_view text, size_t max_states = 200000);

  ~Grammar();
  const std::string& text() const;
  size_t states() const;  // automaton states over all rules

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  Grammar();
  std::unique_ptr<Impl> impl_;
};

// JSON Schema -> grammar text, for a documented subset of the keywords (docs/grammar.md). Every
// keyword outside it throws Error(unsupported) naming the keyword and where it is, e.g.
// "properties.age: 'multipleOf' is not supported": nothing is silently ignored.
class JsonSchemaGrammar {
 public:
  JsonSchemaGrammar();
  // Adds the rules matching `schema` (with its "$defs"/"definitions") and returns the name of the
  // rule for one value; `prefix` keeps the rule names of several schemas apart.
  std::string add(const nlohmann::ordered_json& schema, const std::string& prefix = "");
  // Adds `name ::= body` as written (body in grammar syntax) and returns name.
  std::string add_rule(const std::string& name, const std::string& body);
  // Every rule added so far, then "root ::= root_body".
  std::string text(const std::string& root_body) const;
  // One of the shared rules, added once: ws (JSON's whitespace: a space, or a newline and up to
  // 24 spaces or tabs), lead-ws (up to 4 whitespace characters before a value), json-value,
  // json-string, json-number, json-integer, json-boolean, json-null, json-object, json-array.
  std::string common(const std::string& name);

 private:
  struct Context;
  std::string compile(const nlohmann::ordered_json& schema, const std::string& name,
                      Context& context, const std::string& path);
  std::string object_rule(const nlohmann::ordered_json& schema, const std::string& name,
                          Context& context, const std::string& path);
  std::string integer_rule(const nlohmann::ordered_json& schema, const std::string& name,
                           const std::string& path);
  std::map<std::string, std::string> rules_;  // name -> body
  std::vector<std::string> order_;            // names in the order they were added
  int anonymous_ = 0;
};

// The grammar of one JSON value matching `schema`, with leading whitespace (text after </think>).
std::string json_schema_grammar(const nlohmann::ordered_json& schema);
// The grammar of any JSON object (response_format json_object).
std::string json_object_grammar();
// `bytes` as a grammar literal: "...", with escapes where needed.
std::string grammar_literal(std::string_view bytes);

// A tokenizer's vocabulary for masks: each token's decoded bytes, computed once, in a trie, so a
// mask checks a prefix shared by many tokens once. Added tokens (<|im_end|>, <think>) are not in
// the trie: a grammar allows them only by name.
class TokenVocabulary {
 public:
  explicit TokenVocabulary(const Tokenizer& tokenizer);
  // A hand-made vocabulary (tests): ids are positions; `added` are matched by name only.
  TokenVocabulary(std::vector<std::string> token_bytes, std::set<TokenId> added);
  ~TokenVocabulary();

  size_t size() const;                               // ids
  TokenId added_token(std::string_view name) const;  // the id of an added token, or -1
  std::string_view bytes(TokenId id) const;          // "" for added tokens and unknown ids

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// A grammar bound to a vocabulary, with what it has learnt of each grammar state: the tokens a
// state accepts on its own, and the few whose end depends on the rules around it. Filled as
// generations reach states; shared by them (thread-safe).
class TokenGrammar {
 public:
  // Throws Error(invalid_argument) for a <token> the vocabulary does not have.
  TokenGrammar(std::shared_ptr<const Grammar> grammar,
               std::shared_ptr<const TokenVocabulary> vocabulary);
  ~TokenGrammar();
  const Grammar& grammar() const { return *grammar_; }
  const TokenVocabulary& vocabulary() const { return *vocabulary_; }

  struct Cache;
  Cache& cache() const { return *cache_; }

 private:
  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const TokenVocabulary> vocabulary_;
  std::unique_ptr<Cache> cache_;
};

// One generation's position in a grammar.
class GrammarMatcher {
 public:
  // `end_tokens` (e.g. <|im_end|>) are allowed exactly when the root rule is complete.
  GrammarMatcher(std::shared_ptr<const TokenGrammar> grammar, std::vector<TokenId> end_tokens);
  GrammarMatcher(GrammarMatcher&&) noexcept;
  ~GrammarMatcher();

  // Sets bit (id % 64) of mask[id / 64] for every token that may come next, and clears the rest;
  // `mask` holds at least vocabulary size bits.
  void fill_mask(std::span<uint64_t> mask);
  bool allows(TokenId id);                    // one token, without a whole mask
  bool accept(TokenId id);                    // false, and no change, when `id` is not allowed
  bool accept_bytes(std::string_view bytes);  // the same for text (not through tokens)
  bool complete() const;                      // the root rule may end here
  bool ended() const { return ended_; }       // an end token was accepted

  struct State;

 private:
  std::shared_ptr<const TokenGrammar> grammar_;
  std::vector<TokenId> end_tokens_;
  std::unique_ptr<State> state_;
  bool ended_ = false;
};

// What a generation needs to be constrained: the grammar, and whether reasoning comes first.
// With reasoning, the model thinks freely (any token but an end token) until </think>, and the
// grammar starts after it.
struct GrammarConstraint {
  enum class Reasoning {
    none,      // the grammar applies from the first token
    optional,  // the reply may open with <think> (Qwen3 with thinking on); else the grammar applies
    open,      // the prompt opened the <think> block: free until </think>
  };
  std::shared_ptr<const TokenGrammar> grammar;
  Reasoning reasoning = Reasoning::none;
  TokenId think_start = -1, think_end = -1;  // <think> and </think>
  // The tokens that may end a complete output (e.g. <|im_end|> alone); empty: every eos token of
  // the generation. Each must be one of the generation's eos tokens.
  std::vector<TokenId> end_tokens = {};
};

// A generation's hook into sampling: the allowed tokens of each step, then the one chosen.
class TokenConstraint {
 public:
  TokenConstraint(const GrammarConstraint& constraint, std::vector<TokenId> end_tokens);

  // The tokens allowed next as a bitset of at least `vocab` bits (tokens past the vocabulary
  // never allowed). Throws Error(invalid_argument) when the grammar allows none (a grammar that
  // needs bytes no token has).
  std::span<const uint64_t> mask(size_t vocab);
  // Throws Error(invalid_argument) for a token the mask did not allow.
  void accept(TokenId id);
  bool thinking() const { return phase_ == Phase::thinking; }

 private:
  enum class Phase { maybe_thinking, thinking, grammar };
  GrammarConstraint constraint_;
  std::vector<TokenId> end_tokens_;
  GrammarMatcher matcher_;
  Phase phase_;
  std::vector<uint64_t> mask_;
};

}  // namespace qwen3
