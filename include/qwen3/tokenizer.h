// Qwen3 byte-level BPE tokenizer, identical to Hugging Face `tokenizers` on tokenizer.json.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace qwen3 {

using TokenId = int32_t;

class Tokenizer {
 public:
  // Reads MODEL_DIR/tokenizer.json (and tokenizer_config.json when present), or, given a GGUF
  // file, its tokenizer.ggml.* metadata (the same ids as the tokenizer.json it was made from).
  // Throws qwen3::Error naming the file on anything it cannot use.
  static Tokenizer load(const std::filesystem::path& model_dir);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // Text -> ids. With parse_special, added tokens written in the text ("<|im_start|>") become
  // single tokens; without, they are ordinary text (for untrusted user content).
  // Throws qwen3::Error (invalid_argument) on text that is not valid UTF-8.
  std::vector<TokenId> encode(std::string_view text, bool parse_special = true) const;

  // Ids -> text. Invalid UTF-8 byte sequences become U+FFFD exactly as Hugging Face does.
  std::string decode(std::span<const TokenId> ids, bool skip_special = false) const;

  // The vocabulary piece of an id, in byte-level form ("Ġcapital"); "" for an unknown id.
  std::string_view token(TokenId id) const;
  // The raw bytes an id stands for, which decode() joins ("Ġcapital" -> " capital"); may be part
  // of a UTF-8 character. "" for an unknown id.
  std::string_view token_bytes(TokenId id) const;
  // The id of a piece or added token, or -1.
  TokenId token_id(std::string_view piece) const;
  bool is_special(TokenId id) const;
  // One past the largest id the tokenizer knows (vocab plus added tokens).
  size_t vocab_size() const;

  struct Impl;

 private:
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  friend class StreamDecoder;
};

// Streaming decode for generation: push ids as they arrive and get the text they complete.
// Never emits half a UTF-8 character; the concatenated pieces plus flush() equal decode(all ids).
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer, bool skip_special = false);
  std::string push(TokenId id);
  std::string flush();

 private:
  const Tokenizer& tokenizer_;
  bool skip_special_;
  std::string pending_;  // bytes of an incomplete UTF-8 character
};

}  // namespace qwen3
