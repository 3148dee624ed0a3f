// Jinja lexer: template source -> text and tag tokens, applying HF's whitespace rules.
#pragma once

#include <string>
#include <vector>

namespace qwen3::chat {

enum class TokenKind {
  text,
  var_begin,
  var_end,
  block_begin,
  block_end,
  name,
  string,
  integer,
  floating,
  op,
  eof
};

struct Token {
  TokenKind kind;
  std::string value;  // text, name, decoded string literal, number spelling or operator
  int line;
  int col;
};

// Hugging Face renders with trim_blocks and lstrip_blocks on, keep_trailing_newline off, so this
// lexer does the same: a newline right after %} or #} goes, and so does indentation before {% or
// {#. Throws qwen3::Error (format) with line:col on an unclosed tag or comment or a bad character.
std::vector<Token> tokenize(const std::string& source);

}  // namespace qwen3::chat
