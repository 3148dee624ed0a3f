// Qwen's pre-tokenizers: the Split regexes of tokenizer.json, hand-written as one scanner.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace qwen3::detail {

// The Split patterns this scanner implements; the loader rejects a tokenizer.json with any other.
enum class SplitPattern : uint8_t {
  qwen2,   // Qwen2, Qwen2.5 and Qwen3
  qwen35,  // Qwen3.5: combining marks (\p{M}) count with letters, so a word keeps its accents
};

inline constexpr std::string_view kQwen2SplitPattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
inline constexpr std::string_view kQwen35SplitPattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| "
    "?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// The pattern spelled exactly `regex`, or nothing.
std::optional<SplitPattern> split_pattern_of(std::string_view regex);

// Splits NFC-normalized, well-formed UTF-8 text into pre-tokens (views into text), exactly as
// Hugging Face's Split(pattern, behavior=Isolated) does with Oniguruma's leftmost-first matching.
void pretokenize(std::string_view text, SplitPattern pattern, std::vector<std::string_view>& out);

}  // namespace qwen3::detail
