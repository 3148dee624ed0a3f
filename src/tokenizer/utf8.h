// UTF-8 primitives: validation, Hugging Face-compatible lossy decoding, and stream boundaries.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace qwen3::detail {

// Byte offset of the first byte that does not begin a well-formed UTF-8 character, or npos.
// Rejects overlong forms, surrogates and code points above U+10FFFF, as Rust's str does.
size_t find_invalid_utf8(std::string_view s);

// Appends s to out with each maximal ill-formed subsequence replaced by one U+FFFD, byte for
// byte what Rust's String::from_utf8_lossy (and so Hugging Face's decode) produces.
void append_utf8_lossy(std::string_view s, std::string& out);

// Number of trailing bytes of s (0-3) that begin a UTF-8 character still waiting for its
// continuation bytes: the part a stream must hold back rather than emit as U+FFFD.
size_t incomplete_utf8_tail(std::string_view s);

// Decodes the character starting at p in well-formed UTF-8; stores its byte length in *len.
inline uint32_t decode_utf8(const unsigned char* p, int* len) {
  if (p[0] < 0x80) {
    *len = 1;
    return p[0];
  }
  if (p[0] < 0xE0) {
    *len = 2;
    return (uint32_t(p[0] & 0x1F) << 6) | (p[1] & 0x3F);
  }
  if (p[0] < 0xF0) {
    *len = 3;
    return (uint32_t(p[0] & 0x0F) << 12) | (uint32_t(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
  }
  *len = 4;
  return (uint32_t(p[0] & 0x07) << 18) | (uint32_t(p[1] & 0x3F) << 12) |
         (uint32_t(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
}

void append_utf8(uint32_t cp, std::string& out);

}  // namespace qwen3::detail
