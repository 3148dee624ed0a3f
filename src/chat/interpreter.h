// Renders a parsed template against a set of variables, within limits on work and output.
#pragma once

#include <cstddef>
#include <string>

#include "chat/ast.h"

namespace qwen3::chat {

struct Limits {
  size_t max_output = size_t{64} << 20;  // bytes of rendered text; also caps any single value
  size_t max_steps = size_t{10} << 20;   // statements, expressions and loop iterations evaluated;
                                         // a Qwen3 turn takes ~100, so 10M is far beyond any chat
};

// `variables` is a JSON object of the template's globals. Throws qwen3::Error (invalid_argument)
// with line:col on a runtime error, raise_exception, or a limit exceeded.
std::string render(const Template& program, const Json& variables, const Limits& limits = {});

}  // namespace qwen3::chat
