// qwen3::Tokenizer and StreamDecoder: text -> ids and back, over the loaded tables.
#include "qwen3/tokenizer.h"

#include "io/gguf.h"
#include "qwen3/error.h"
#include "tokenizer/normalize.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/utf8.h"

namespace qwen3 {
namespace {

// HF order for text between added tokens: normalize (NFC), pre-tokenize, then BPE each piece.
void encode_plain(const Tokenizer::Impl& t, std::string_view text, std::vector<TokenId>& ids) {
  if (text.empty()) return;
  thread_local std::string normalized;
  thread_local std::vector<std::string_view> pieces;
  pieces.clear();
  detail::pretokenize(detail::nfc(text, normalized), t.split_pattern, pieces);
  for (std::string_view piece : pieces) t.bpe.encode(piece, ids);
}

// The added token written at text[pos], longest first (HF matches leftmost-longest), or null.
const Tokenizer::Impl::AddedToken* added_at(const Tokenizer::Impl& t, std::string_view text,
                                            size_t pos) {
  if (!t.added_first_byte[static_cast<unsigned char>(text[pos])]) return nullptr;
  for (const auto& a : t.added) {
    if (text.compare(pos, a.content.size(), a.content) == 0) return &a;
  }
  return nullptr;
}

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::load(const std::filesystem::path& model_dir) {
  return Tokenizer(io::is_gguf_file(model_dir) ? detail::load_tokenizer_gguf(model_dir)
                                               : detail::load_tokenizer_json(model_dir));
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, bool parse_special) const {
  if (size_t bad = detail::find_invalid_utf8(text); bad != std::string_view::npos) {
    static const char hex[] = "0123456789ABCDEF";
    auto byte = static_cast<unsigned char>(text[bad]);
    throw Error(ErrorKind::invalid_argument,
                std::string("encode: text is not valid UTF-8 (byte 0x") + hex[byte >> 4] +
                    hex[byte & 15] + " at offset " + std::to_string(bad) + ")");
  }
  std::vector<TokenId> ids;
  ids.reserve(text.size() / 4 + 1);
  size_t start = 0;
  if (parse_special) {
    // Added tokens are matched on the raw text, before normalization (all of Qwen3's are
    // normalized=false), and the text between them is encoded on its own.
    for (size_t pos = 0; pos < text.size();) {
      if (const auto* a = added_at(*impl_, text, pos)) {
        encode_plain(*impl_, text.substr(start, pos - start), ids);
        ids.push_back(a->id);
        pos += a->content.size();
        start = pos;
      } else {
        ++pos;
      }
    }
  }
  encode_plain(*impl_, text.substr(start), ids);
  return ids;
}

std::string Tokenizer::decode(std::span<const TokenId> ids, bool skip_special) const {
  // Like HF: unknown ids are dropped, the tokens' bytes are joined, and only then is the whole
  // decoded, so a character split across tokens comes out whole.
  std::string bytes;
  for (TokenId id : ids) {
    if (!impl_->known(id) || (skip_special && impl_->entries[size_t(id)].special)) continue;
    bytes.append(impl_->bytes(id));
  }
  std::string text;
  text.reserve(bytes.size());
  detail::append_utf8_lossy(bytes, text);
  return text;
}

std::string_view Tokenizer::token(TokenId id) const {
  return impl_->known(id) ? impl_->piece(id) : std::string_view{};
}

std::string_view Tokenizer::token_bytes(TokenId id) const {
  return impl_->known(id) ? impl_->bytes(id) : std::string_view{};
}

TokenId Tokenizer::token_id(std::string_view piece) const { return impl_->piece_ids.find(piece); }

bool Tokenizer::is_special(TokenId id) const {
  return impl_->known(id) && impl_->entries[size_t(id)].special;
}

size_t Tokenizer::vocab_size() const { return impl_->entries.size(); }

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool skip_special)
    : tokenizer_(tokenizer), skip_special_(skip_special) {}

std::string StreamDecoder::push(TokenId id) {
  const Tokenizer::Impl& t = *tokenizer_.impl_;
  if (!t.known(id) || (skip_special_ && t.entries[size_t(id)].special)) return {};
  pending_.append(t.bytes(id));
  // Everything before an unfinished character decodes the same now as it will in the full
  // text: its last sequence is followed by a lead byte either way, so nothing spans the cut.
  size_t ready = pending_.size() - detail::incomplete_utf8_tail(pending_);
  std::string text;
  detail::append_utf8_lossy(std::string_view(pending_).substr(0, ready), text);
  pending_.erase(0, ready);
  return text;
}

std::string StreamDecoder::flush() {
  std::string text;
  detail::append_utf8_lossy(pending_, text);
  pending_.clear();
  return text;
}

}  // namespace qwen3
