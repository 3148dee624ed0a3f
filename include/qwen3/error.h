// qwen3::Error: the one exception the library throws for bad input.
#pragma once

#include <stdexcept>
#include <string>

namespace qwen3 {

enum class ErrorKind { io, format, shape, unsupported, invalid_argument, context_overflow };

const char* error_kind_name(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

}  // namespace qwen3
