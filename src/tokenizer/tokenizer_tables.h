// The one builder of a tokenizer's tables from its vocabulary, added tokens and ranked merges,
// wherever they were read from (tokenizer.json, a GGUF file's tokenizer.ggml.* metadata).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/tokenizer_impl.h"

namespace qwen3::detail {

struct TokenizerSource {
  std::string file;  // names the source in errors
  SplitPattern split_pattern = SplitPattern::qwen2;
  struct Piece {
    std::string_view text;  // byte-level piece, or an added token's content
    TokenId id;
  };
  std::vector<Piece> vocab;  // byte-level pieces
  struct Added {
    std::string_view content;
    TokenId id;
    bool special;
  };
  std::vector<Added> added;
  std::vector<std::pair<std::string_view, std::string_view>> merges;  // (left, right), rank order
};

// Checks and indexes the source (its views need only live through the call). Throws
// qwen3::Error naming source.file: an id used twice or out of range, a piece that is not
// byte-level, an empty added token, a merge of pieces not in the vocabulary, a missing byte.
std::unique_ptr<Tokenizer::Impl> build_tokenizer(const TokenizerSource& source);

}  // namespace qwen3::detail
