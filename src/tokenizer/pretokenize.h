// Qwen2/Qwen3 pre-tokenizer: the Split regex of tokenizer.json, hand-written as a scanner.
#pragma once

#include <string_view>
#include <vector>

namespace qwen3::detail {

// The pattern this scanner implements; the loader rejects a tokenizer.json with any other.
inline constexpr std::string_view kQwenSplitPattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// Splits NFC-normalized, well-formed UTF-8 text into pre-tokens (views into text), exactly as
// Hugging Face's Split(pattern, behavior=Isolated) does with Oniguruma's leftmost-first matching.
void pretokenize(std::string_view text, std::vector<std::string_view>& out);

}  // namespace qwen3::detail
