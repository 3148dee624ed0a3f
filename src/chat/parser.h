// Jinja parser: tokens -> syntax tree, once per template.
#pragma once

#include <string>

#include "chat/ast.h"

namespace qwen3::chat {

// Nesting deeper than this (blocks or parentheses) is refused, so hostile templates cannot
// overflow the stack of the recursive parser or evaluator.
inline constexpr int kMaxNesting = 128;

// Throws qwen3::Error (format) with line:col on any syntax error, unknown tag or unclosed block.
Template parse(const std::string& source);

}  // namespace qwen3::chat
