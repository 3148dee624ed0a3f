// UTF-8 primitives: validation, Hugging Face-compatible lossy decoding, and stream boundaries.
#include "tokenizer/utf8.h"

#include <cstring>

namespace qwen3::detail {
namespace {

struct Scan {
  size_t len;     // bytes of the character, or of the maximal ill-formed prefix
  bool complete;  // a well-formed character
};

// The Unicode "maximal subpart" rule (Unicode 15, §3.9, table 3-7): the second byte's range
// depends on the lead byte, which is what excludes overlongs, surrogates and > U+10FFFF.
Scan scan_utf8(const unsigned char* p, size_t avail) {
  unsigned b = p[0];
  if (b < 0x80) return {1, true};
  int need;
  unsigned lo = 0x80, hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) {
    need = 1;
  } else if (b >= 0xE0 && b <= 0xEF) {
    need = 2;
    if (b == 0xE0) lo = 0xA0;
    if (b == 0xED) hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    need = 3;
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;
  } else {
    return {1, false};  // a continuation byte or a byte that never occurs in UTF-8
  }
  size_t len = 1;
  for (int k = 0; k < need; ++k, ++len) {
    if (len >= avail || p[len] < lo || p[len] > hi) return {len, false};
    lo = 0x80;
    hi = 0xBF;
  }
  return {len, true};
}

bool ascii8(const unsigned char* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  return (w & 0x8080808080808080ull) == 0;
}

}  // namespace

size_t find_invalid_utf8(std::string_view s) {
  auto p = reinterpret_cast<const unsigned char*>(s.data());
  size_t i = 0, n = s.size();
  while (i < n) {
    if (i + 8 <= n && ascii8(p + i)) {
      i += 8;
      continue;
    }
    Scan sc = scan_utf8(p + i, n - i);
    if (!sc.complete) return i;
    i += sc.len;
  }
  return std::string_view::npos;
}

void append_utf8_lossy(std::string_view s, std::string& out) {
  auto p = reinterpret_cast<const unsigned char*>(s.data());
  size_t i = 0, n = s.size();
  while (i < n) {
    Scan sc = scan_utf8(p + i, n - i);
    if (sc.complete) {
      out.append(s.data() + i, sc.len);
    } else {
      out.append("\xEF\xBF\xBD");
    }
    i += sc.len;
  }
}

size_t incomplete_utf8_tail(std::string_view s) {
  auto p = reinterpret_cast<const unsigned char*>(s.data());
  for (size_t k = 1; k <= 3 && k <= s.size(); ++k) {
    size_t pos = s.size() - k;
    if (p[pos] >= 0x80 && p[pos] <= 0xBF) continue;  // continuation byte: look further back
    if (p[pos] < 0xC2 || p[pos] > 0xF4) return 0;
    Scan sc = scan_utf8(p + pos, k);
    return !sc.complete && sc.len == k ? k : 0;
  }
  return 0;
}

void append_utf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

}  // namespace qwen3::detail
