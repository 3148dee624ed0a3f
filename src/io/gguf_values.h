// The encoding of GGUF metadata values, shared by the parser and the typed getters.
#pragma once

#include <cstddef>
#include <cstdint>

#include "io/gguf.h"

namespace qwen3::io {

// A little-endian unsigned integer of n bytes (n <= 8), from any alignment.
inline uint64_t read_le(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

// Bytes of one value of a fixed-size type; 0 for string and array.
inline size_t gguf_value_size(GgufValueType t) {
  switch (t) {
    case GgufValueType::uint8:
    case GgufValueType::int8:
    case GgufValueType::boolean: return 1;
    case GgufValueType::uint16:
    case GgufValueType::int16: return 2;
    case GgufValueType::uint32:
    case GgufValueType::int32:
    case GgufValueType::float32: return 4;
    case GgufValueType::uint64:
    case GgufValueType::int64:
    case GgufValueType::float64: return 8;
    case GgufValueType::string:
    case GgufValueType::array: return 0;
  }
  return 0;
}

}  // namespace qwen3::io
