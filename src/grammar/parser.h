// The grammar text's syntax: rules of alternatives, sequences, literals, classes, references,
// tokens and repetitions, parsed into a tree for the automaton builder (docs/grammar.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/automaton.h"

namespace qwen3::grammar {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;
constexpr int kMaxRepeat = 10000;

struct Node {
  enum class Kind { alt, seq, literal, cls, ref, token, repeat };
  Kind kind = Kind::seq;
  std::vector<Node> kids;
  std::string text;                                   // literal: bytes; ref: rule name
  std::vector<std::pair<uint32_t, uint32_t>> ranges;  // cls: code point ranges, sorted, merged
  int min = 0, max = 0;                               // repeat; max -1 = unbounded
  int32_t index = -1;                                 // ref: rule; token: token index
  size_t pos = 0;                                     // where it was written, for errors
};

struct RuleDef {
  std::string name;
  Node body;
  size_t pos;
};

// The rules of `text` in order; token references are added to `tokens` (each once).
// Throws Error(invalid_argument) "grammar LINE:COL: ...".
std::vector<RuleDef> parse_rules(std::string_view text,
                                 std::vector<Grammar::Impl::TokenRef>& tokens);

[[noreturn]] void syntax_error(std::string_view text, size_t pos, const std::string& message);

}  // namespace qwen3::grammar
