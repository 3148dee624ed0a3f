// A grammar as automata: one deterministic automaton per rule over bytes, rule references and
// added tokens, all states numbered together. The matcher walks stacks of these states.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "qwen3/grammar.h"

namespace qwen3 {

struct Grammar::Impl {
  struct Edge {
    int32_t symbol;  // a rule index (references) or a token index (added tokens)
    int32_t target;  // the state after it
  };

  std::string text;
  std::vector<std::string> rule_names;  // [rules]
  std::vector<int32_t> rule_start;      // [rules] start state
  int32_t root = 0;                     // rule index of "root"
  // A token written <name> (name as written, "<|im_end|>"), or <[id]> (id >= 0, name empty).
  struct TokenRef {
    std::string name;
    int32_t id = -1;
  };
  std::vector<TokenRef> tokens;

  // Byte transitions, -1 = none: [states * classes], bytes that every state treats alike sharing
  // a class (a JSON grammar has a few dozen), indexed through byte_class.
  std::vector<int32_t> next;
  uint8_t byte_class[256] = {};
  size_t classes = 256;
  std::vector<uint8_t> accepting;     // [states] the rule may end here
  std::vector<uint8_t> can_complete;  // [states] ...or after rules that match nothing
  std::vector<uint8_t> final_state;   // [states] accepting, and nothing can follow
  std::vector<uint32_t> ref_begin;    // [states + 1] into refs
  std::vector<Edge> refs;
  std::vector<uint32_t> token_begin;  // [states + 1] into token_edges
  std::vector<Edge> token_edges;

  size_t states() const { return accepting.size(); }
  int32_t step(int32_t state, uint8_t byte) const {
    return next[size_t(state) * classes + byte_class[byte]];
  }
};

namespace grammar {

// Parses grammar text and compiles it (Grammar::parse's work).
void compile(std::string_view text, size_t max_states, Grammar::Impl& out);

// Code point ranges [lo, hi] -> the byte-range sequences that encode exactly them in UTF-8
// (surrogates excluded).
using ByteRanges = std::vector<std::pair<uint8_t, uint8_t>>;
void utf8_sequences(uint32_t lo, uint32_t hi, std::vector<ByteRanges>& out);

}  // namespace grammar
}  // namespace qwen3
