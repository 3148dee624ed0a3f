// An error answered to the client in OpenAI's shape {"error": {message, type, param, code}}.
#pragma once

#include <stdexcept>
#include <string>

namespace qwen3::server {

struct ApiError : std::runtime_error {
  ApiError(int status, std::string message, std::string param = "", std::string code = "")
      : std::runtime_error(std::move(message)),
        status(status),
        param(std::move(param)),
        code(std::move(code)) {}
  int status;         // HTTP status
  std::string param;  // the offending request field, or ""
  std::string code;   // machine-readable reason ("context_length_exceeded"), or ""
};

// OpenAI's error "type" for an HTTP status.
inline const char* error_type(int status) {
  switch (status) {
    case 401: return "authentication_error";
    case 404: return "not_found_error";
    case 413:
    case 400: return "invalid_request_error";
    case 429: return "rate_limit_error";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

}  // namespace qwen3::server
