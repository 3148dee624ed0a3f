// Names of error kinds, for messages and tests.
#include "qwen3/error.h"

namespace qwen3 {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::io: return "io";
    case ErrorKind::format: return "format";
    case ErrorKind::shape: return "shape";
    case ErrorKind::unsupported: return "unsupported";
    case ErrorKind::invalid_argument: return "invalid_argument";
    case ErrorKind::context_overflow: return "context_overflow";
  }
  return "unknown";
}

}  // namespace qwen3
