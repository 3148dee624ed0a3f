// Qwen's pre-tokenizers: the Split regexes of tokenizer.json, hand-written as one scanner.
#include "tokenizer/pretokenize.h"

#include <utf8proc.h>

#include <array>
#include <cstdint>

#include "tokenizer/utf8.h"

namespace qwen3::detail {
namespace {

enum : uint8_t {
  kLetter = 1,   // \p{L}
  kNumber = 2,   // \p{N}
  kSpace = 4,    // \s: Oniguruma's Unicode \s is the White_Space property
  kNewline = 8,  // \r or \n
  kMark = 16,    // \p{M}: Mn, Mc, Me (a Thai vowel sign, a Devanagari virama, an Arabic haraka)
};

bool is_white_space(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

uint8_t classify_slow(uint32_t cp) {
  uint8_t c = is_white_space(cp) ? kSpace : 0;
  if (cp == '\r' || cp == '\n') c |= kNewline;
  switch (utf8proc_category(utf8proc_int32_t(cp))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO: c |= kLetter; break;
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO: c |= kNumber; break;
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME: c |= kMark; break;
    default: break;
  }
  return c;
}

const std::array<uint8_t, 128>& ascii_classes() {
  static const auto table = [] {
    std::array<uint8_t, 128> t{};
    for (uint32_t cp = 0; cp < 128; ++cp) t[cp] = classify_slow(cp);
    return t;
  }();
  return table;
}

struct Char {
  uint32_t cp;
  uint32_t offset;  // byte offset in the text
  uint8_t cls;
};

// The two classes the patterns differ in: what a word is made of ([\p{L}] or [\p{L}\p{M}]), and
// what a run of punctuation excludes besides \s and \p{N} ([^\s\p{L}\p{N}] or
// [^\s\p{L}\p{M}\p{N}]). Qwen2's pattern leaves a mark to the punctuation run, so "हिन्दी"
// falls apart at every vowel sign; Qwen3.5's keeps it in the word.
struct Classes {
  uint8_t word;       // bits of a character that continues a word
  uint8_t not_other;  // bits of a character that stops a punctuation run
};

Classes classes_of(SplitPattern pattern) {
  if (pattern == SplitPattern::qwen35) {
    return {kLetter | kMark, kLetter | kMark | kNumber | kSpace};
  }
  return {kLetter, kLetter | kNumber | kSpace};
}

uint32_t ascii_lower(uint32_t cp) { return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp; }

// (?i:'s|'t|'re|'ve|'m|'ll|'d) at c[i] == '\''; the alternatives start with different letters,
// so the first that matches is the only one. U+017F (long s) case-folds to 's' in Oniguruma.
size_t contraction(const Char* c, size_t i, size_t n) {
  if (i + 1 >= n) return 0;
  uint32_t a = ascii_lower(c[i + 1].cp);
  if (a == 's' || a == 0x17F || a == 't' || a == 'm' || a == 'd') return i + 2;
  if (i + 2 >= n) return 0;
  uint32_t b = ascii_lower(c[i + 2].cp);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
  return 0;
}

// End (character index) of the regex match starting at c[i]; every character is matched by
// some alternative, so pre-tokens tile the text.
size_t match_end(const Char* c, size_t i, size_t n, Classes k) {
  if (c[i].cp == '\'') {
    if (size_t end = contraction(c, i, n)) return end;
  }
  // [^\r\n\p{L}\p{N}]?\p{L}+ (Qwen3.5: [^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+). A mark may be the
  // optional first character too; then it is also a word character, and the match is the same.
  size_t j = i;
  if (!(c[i].cls & (kLetter | kNumber | kNewline)) && i + 1 < n && (c[i + 1].cls & k.word)) ++j;
  if (c[j].cls & k.word) {
    while (j < n && (c[j].cls & k.word)) ++j;
    return j;
  }
  // \p{N}
  if (c[i].cls & kNumber) return i + 1;
  //  ?[^\s\p{L}\p{N}]+[\r\n]* (Qwen3.5: [^\s\p{L}\p{M}\p{N}])
  auto other = [&](const Char& ch) { return (ch.cls & k.not_other) == 0; };
  j = (c[i].cp == ' ' && i + 1 < n && other(c[i + 1])) ? i + 1 : i;
  if (other(c[j])) {
    while (j < n && other(c[j])) ++j;
    while (j < n && (c[j].cls & kNewline)) ++j;
    return j;
  }
  // c[i] is white space from here on. \s*[\r\n]+ backtracks to the run's last newline.
  size_t last_newline = n;
  for (j = i; j < n && (c[j].cls & kSpace); ++j) {
    if (c[j].cls & kNewline) last_newline = j;
  }
  if (last_newline != n) return last_newline + 1;
  // \s+(?!\S): the whole run at the end of the text, else all but the run's last character.
  if (j == n) return n;
  if (j - i >= 2) return j - 1;
  return j;  // \s+
}

}  // namespace

std::optional<SplitPattern> split_pattern_of(std::string_view regex) {
  if (regex == kQwen2SplitPattern) return SplitPattern::qwen2;
  if (regex == kQwen35SplitPattern) return SplitPattern::qwen35;
  return std::nullopt;
}

void pretokenize(std::string_view text, SplitPattern pattern, std::vector<std::string_view>& out) {
  const Classes k = classes_of(pattern);
  thread_local std::vector<Char> chars;
  chars.clear();
  const auto& ascii = ascii_classes();
  auto p = reinterpret_cast<const unsigned char*>(text.data());
  for (size_t i = 0; i < text.size();) {
    int len;
    uint32_t cp = decode_utf8(p + i, &len);
    chars.push_back({cp, uint32_t(i), cp < 128 ? ascii[cp] : classify_slow(cp)});
    i += size_t(len);
  }
  const size_t n = chars.size();
  for (size_t i = 0; i < n;) {
    size_t end = match_end(chars.data(), i, n, k);
    size_t begin_byte = chars[i].offset;
    size_t end_byte = end < n ? chars[end].offset : text.size();
    out.push_back(text.substr(begin_byte, end_byte - begin_byte));
    i = end;
  }
}

}  // namespace qwen3::detail
