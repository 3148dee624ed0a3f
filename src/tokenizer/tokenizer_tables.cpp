// Builds the tokenizer's tables (entries, piece index, ranked merges) from any source's lists.
#include "tokenizer/tokenizer_tables.h"

#include <algorithm>
#include <array>
#include <exception>
#include <future>

#include "qwen3/error.h"
#include "tokenizer/byte_level.h"

namespace qwen3::detail {
namespace {

class Builder {
 public:
  explicit Builder(const TokenizerSource& s) : s_(s), t_(std::make_unique<Tokenizer::Impl>()) {}

  std::unique_ptr<Tokenizer::Impl> build() {
    t_->split_pattern = s_.split_pattern;
    add_vocab_and_added();
    add_merges();
    return std::move(t_);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(ErrorKind::format, s_.file + ": " + what);
  }

  TokenId checked_id(TokenId id, std::string_view where) const {
    // Ids index a dense table; 2^24 is far above any real vocabulary and keeps it small.
    if (id < 0 || id >= (TokenId{1} << 24)) fail(std::string(where) + ": id out of range");
    return id;
  }

  void add_entry(TokenId id, std::string_view piece, bool added, bool special) {
    Tokenizer::Impl& t = *t_;
    if (t.entries.size() <= size_t(id)) t.entries.resize(size_t(id) + 1);
    Tokenizer::Impl::Entry& e = t.entries[size_t(id)];
    if (e.known) fail("id " + std::to_string(id) + " is used twice");
    e.known = true;
    e.special = special;
    e.piece_offset = uint32_t(t.arena.size());
    e.piece_size = uint32_t(piece.size());
    t.arena.append(piece);
    e.bytes_offset = uint32_t(t.arena.size());
    // HF's ByteLevel decoder maps a token through the byte map, or uses it verbatim when some
    // character is not in the map, as for most added tokens' content.
    if (!piece_to_bytes(piece, t.arena)) {
      if (!added) fail("vocabulary piece '" + std::string(piece) + "' is not byte-level");
      t.arena.append(piece);
    }
    e.bytes_size = uint32_t(t.arena.size() - e.bytes_offset);
  }

  void add_vocab_and_added() {
    Tokenizer::Impl& t = *t_;
    t.entries.reserve(s_.vocab.size() + s_.added.size());
    t.arena.reserve(s_.vocab.size() * 16);
    for (const auto& [piece, id] : s_.vocab)
      add_entry(checked_id(id, "vocabulary"), piece, false, false);
    for (const auto& a : s_.added) {
      checked_id(a.id, "added token");
      if (a.content.empty()) fail("added token " + std::to_string(a.id) + " is empty");
      add_entry(a.id, a.content, true, a.special);
      t.added.push_back({std::string(a.content), a.id});
    }
    // Views into the arena are taken only now that it no longer grows. Added tokens go last so
    // that they win over a vocabulary piece with the same spelling, as in HF's token_to_id.
    t.piece_ids.reserve(t.entries.size());
    for (size_t id = 0; id < t.entries.size(); ++id)
      if (t.entries[id].known) t.piece_ids.insert(t.piece(TokenId(id)), TokenId(id));
    for (const auto& a : t.added) t.piece_ids.insert(t.piece(a.id), a.id);
    std::stable_sort(t.added.begin(), t.added.end(), [](const auto& a, const auto& b) {
      return a.content.size() > b.content.size();
    });
    for (const auto& a : t.added)
      t.added_first_byte[static_cast<unsigned char>(a.content[0])] = true;
  }

  // The ids of merges [begin, end): two or three lookups each, the bulk of a load (cache misses
  // into a 151k-entry index), so the two halves of the list are resolved on two threads.
  void resolve_merges(bool unique, size_t begin, size_t end, std::vector<Merge>& ranked) const {
    const Tokenizer::Impl& t = *t_;
    auto lookup = [&](std::string_view piece, size_t rank) {
      TokenId id = t.piece_ids.find(piece);
      if (id < 0)
        fail("merge " + std::to_string(rank) + ": '" + std::string(piece) +
             "' is not in the vocabulary");
      return id;
    };
    std::string joined;
    for (size_t rank = begin; rank < end; ++rank) {
      const auto& [left, right] = s_.merges[rank];
      // BPE training appends each merge's result to the vocabulary, so merge r's result is
      // usually the id after merge r - 1's: checked by its spelling, which (no spelling used
      // twice) is the lookup's answer, without a third probe of the index.
      const TokenId next = rank > begin ? ranked[rank - 1].merged + 1 : -1;
      const std::string_view spelled = t.known(next) ? t.piece(next) : std::string_view();
      const bool follows = unique && spelled.size() == left.size() + right.size() &&
                           spelled.starts_with(left) && spelled.ends_with(right);
      if (!follows) joined.assign(left).append(right);
      ranked[rank] = {lookup(left, rank), lookup(right, rank),
                      follows ? next : lookup(joined, rank)};
    }
  }

  void add_merges() {
    Tokenizer::Impl& t = *t_;
    std::vector<Merge> ranked(s_.merges.size());
    const bool unique =
        t.piece_ids.size() == size_t(std::count_if(t.entries.begin(), t.entries.end(),
                                                   [](const auto& e) { return e.known; }));
    const size_t half = s_.merges.size() / 2;
    auto first = std::async(std::launch::async, [&] { resolve_merges(unique, 0, half, ranked); });
    std::exception_ptr second;
    try {
      resolve_merges(unique, half, s_.merges.size(), ranked);
    } catch (...) {
      second = std::current_exception();
    }
    first.get();  // the lower-ranked bad merge is the one reported
    if (second) std::rethrow_exception(second);
    std::array<Id, 256> byte_ids;
    std::string piece;
    for (int b = 0; b < 256; ++b) {
      piece.clear();
      char byte = char(b);
      bytes_to_piece(std::string_view(&byte, 1), piece);
      byte_ids[size_t(b)] = t.piece_ids.find(piece);
      if (byte_ids[size_t(b)] < 0)
        fail("the vocabulary has no piece for byte " + std::to_string(b));
    }
    t.bpe = Bpe(byte_ids, ranked);
  }

  const TokenizerSource& s_;
  std::unique_ptr<Tokenizer::Impl> t_;
};

}  // namespace

std::unique_ptr<Tokenizer::Impl> build_tokenizer(const TokenizerSource& source) {
  return Builder(source).build();
}

}  // namespace qwen3::detail
