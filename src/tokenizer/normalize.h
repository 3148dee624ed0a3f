// The NFC normalizer of tokenizer.json.
#pragma once

#include <string>
#include <string_view>

namespace qwen3::detail {

// Returns text in Unicode Normalization Form C. text must be well-formed UTF-8.
// Returns a view of text itself when it is already NFC for certain; otherwise stores the
// normalized text in storage and returns a view of that.
std::string_view nfc(std::string_view text, std::string& storage);

}  // namespace qwen3::detail
