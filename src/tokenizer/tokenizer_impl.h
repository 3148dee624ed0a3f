// The tokenizer's tables, shared by the tokenizer.json loader and encode/decode.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "qwen3/tokenizer.h"
#include "tokenizer/bpe.h"
#include "tokenizer/piece_index.h"
#include "tokenizer/pretokenize.h"

namespace qwen3 {

struct Tokenizer::Impl {
  struct Entry {
    uint32_t piece_offset = 0, piece_size = 0;  // in arena: the byte-level piece or added content
    uint32_t bytes_offset = 0, bytes_size = 0;  // in arena: the bytes decode() emits
    bool known = false;                         // ids may have gaps; decode skips unknown ones
    bool special = false;
  };
  struct AddedToken {
    std::string content;
    TokenId id;
  };

  std::string arena;
  io::Buffer<Entry> entries;     // [vocab_size], by id
  detail::PieceIndex piece_ids;  // views into arena
  detail::Bpe bpe;
  detail::SplitPattern split_pattern = detail::SplitPattern::qwen2;
  std::vector<AddedToken> added;  // longest first, so the first match is the longest
  bool added_first_byte[256] = {};

  std::string_view piece(TokenId id) const {
    const Entry& e = entries[size_t(id)];
    return {arena.data() + e.piece_offset, e.piece_size};
  }
  std::string_view bytes(TokenId id) const {
    const Entry& e = entries[size_t(id)];
    return {arena.data() + e.bytes_offset, e.bytes_size};
  }
  bool known(TokenId id) const {
    return id >= 0 && size_t(id) < entries.size() && entries[size_t(id)].known;
  }
};

namespace detail {

// Parses and checks model_dir/tokenizer.json (and tokenizer_config.json when present).
std::unique_ptr<Tokenizer::Impl> load_tokenizer_json(const std::filesystem::path& model_dir);
// Reads and checks a GGUF file's tokenizer.ggml.* metadata.
std::unique_ptr<Tokenizer::Impl> load_tokenizer_gguf(const std::filesystem::path& file);

}  // namespace detail
}  // namespace qwen3
