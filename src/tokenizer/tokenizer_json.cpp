// Loads tokenizer.json (Hugging Face `tokenizers` format) into the tokenizer's tables.
// Only the Qwen pipeline (Qwen2 to Qwen3.5) is accepted: anything else is rejected rather than
// tokenized wrongly.
#include <simdjson.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <exception>
#include <fstream>
#include <future>
#include <optional>
#include <utility>

#include "io/mapped_file.h"
#include "qwen3/error.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/tokenizer_impl.h"

namespace qwen3::detail {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

class Reader {
 public:
  explicit Reader(std::filesystem::path file) : file_(std::move(file)) {}

  [[noreturn]] void fail(ErrorKind kind, const std::string& what) const {
    throw Error(kind, file_.string() + ": " + what);
  }

  element field(element obj, std::string_view key, std::string_view where) const {
    element value;
    if (obj.type() != element_type::OBJECT || obj.at_key(key).get(value)) {
      fail(ErrorKind::format, "missing field " + std::string(where));
    }
    return value;
  }
  std::string_view string(element e, std::string_view where) const {
    std::string_view s;
    if (e.get(s)) fail(ErrorKind::format, std::string(where) + " is not a string");
    return s;
  }
  int64_t integer(element e, std::string_view where) const {
    int64_t v;
    if (e.get(v)) fail(ErrorKind::format, std::string(where) + " is not an integer");
    return v;
  }
  bool boolean(element obj, std::string_view key, std::string_view where) const {
    bool v = false;
    element e;
    if (!obj.at_key(key).get(e) && !e.is_null() && e.get(v)) {
      fail(ErrorKind::format, std::string(where) + " is not a boolean");
    }
    return v;
  }
  // Optional string field: "" when absent or null.
  std::string_view optional_string(element obj, std::string_view key,
                                   std::string_view where) const {
    element e;
    if (obj.at_key(key).get(e) || e.is_null()) return {};
    return string(e, where);
  }
  void expect(element obj, std::string_view key, std::string_view value,
              std::string_view where) const {
    std::string_view actual = string(field(obj, key, where), where);
    if (actual != value) {
      fail(ErrorKind::unsupported, std::string(where) + " is '" + std::string(actual) +
                                       "', expected '" + std::string(value) + "'");
    }
  }

 private:
  std::filesystem::path file_;
};

// The Qwen pipeline: NFC, Split(pattern, Isolated) then ByteLevel without its own regex, and a
// ByteLevel decoder. Other settings would need code this tokenizer does not have. Returns which
// of the known Split patterns it uses.
SplitPattern check_pipeline(const Reader& r, element root) {
  r.expect(r.field(root, "normalizer", "normalizer"), "type", "NFC", "normalizer.type");
  element pre = r.field(root, "pre_tokenizer", "pre_tokenizer");
  r.expect(pre, "type", "Sequence", "pre_tokenizer.type");
  simdjson::dom::array steps;
  if (r.field(pre, "pretokenizers", "pre_tokenizer.pretokenizers").get(steps) ||
      steps.size() != 2) {
    r.fail(ErrorKind::unsupported, "pre_tokenizer.pretokenizers: expected [Split, ByteLevel]");
  }
  element split = steps.at(0).value_unsafe(), byte_level = steps.at(1).value_unsafe();
  r.expect(split, "type", "Split", "pre_tokenizer.pretokenizers[0].type");
  const std::string_view regex =
      r.string(r.field(r.field(split, "pattern", "Split.pattern"), "Regex", "Split.pattern.Regex"),
               "Split.pattern.Regex");
  const std::optional<SplitPattern> pattern = split_pattern_of(regex);
  if (!pattern) {
    r.fail(ErrorKind::unsupported,
           "Split.pattern.Regex is neither Qwen3's nor Qwen3.5's pre-tokenizer pattern");
  }
  r.expect(split, "behavior", "Isolated", "Split.behavior");
  if (r.boolean(split, "invert", "Split.invert"))
    r.fail(ErrorKind::unsupported, "Split.invert is true");
  r.expect(byte_level, "type", "ByteLevel", "pre_tokenizer.pretokenizers[1].type");
  if (r.boolean(byte_level, "add_prefix_space", "ByteLevel.add_prefix_space") ||
      r.boolean(byte_level, "use_regex", "ByteLevel.use_regex")) {
    r.fail(ErrorKind::unsupported,
           "pre_tokenizer ByteLevel: add_prefix_space and use_regex must be false");
  }
  r.expect(r.field(root, "decoder", "decoder"), "type", "ByteLevel", "decoder.type");

  element model = r.field(root, "model", "model");
  if (r.boolean(model, "byte_fallback", "model.byte_fallback") ||
      r.boolean(model, "ignore_merges", "model.ignore_merges") ||
      !r.optional_string(model, "continuing_subword_prefix", "model.continuing_subword_prefix")
           .empty() ||
      !r.optional_string(model, "end_of_word_suffix", "model.end_of_word_suffix").empty()) {
    r.fail(ErrorKind::unsupported,
           "model: byte_fallback, ignore_merges, continuing_subword_prefix and end_of_word_suffix "
           "are not supported");
  }
  element dropout;
  if (!model.at_key("dropout").get(dropout) && !dropout.is_null()) {
    r.fail(ErrorKind::unsupported, "model.dropout is not supported");
  }
  return *pattern;
}

TokenId checked_id(const Reader& r, int64_t id, std::string_view where) {
  // Ids index a dense table; 2^24 is far above any real vocabulary and keeps it small.
  if (id < 0 || id >= (int64_t{1} << 24))
    r.fail(ErrorKind::format, std::string(where) + ": id out of range");
  return TokenId(id);
}

void add_entry(Tokenizer::Impl& t, const Reader& r, TokenId id, std::string_view piece, bool added,
               bool special) {
  if (t.entries.size() <= size_t(id)) t.entries.resize(size_t(id) + 1);
  Tokenizer::Impl::Entry& e = t.entries[size_t(id)];
  if (e.known) r.fail(ErrorKind::format, "id " + std::to_string(id) + " is used twice");
  e.known = true;
  e.special = special;
  e.piece_offset = uint32_t(t.arena.size());
  e.piece_size = uint32_t(piece.size());
  t.arena.append(piece);
  e.bytes_offset = uint32_t(t.arena.size());
  // HF's ByteLevel decoder maps a token through the byte map, or uses it verbatim when some
  // character is not in the map, as for most added tokens' content.
  if (!piece_to_bytes(piece, t.arena)) {
    if (!added)
      r.fail(ErrorKind::format, "vocabulary piece '" + std::string(piece) + "' is not byte-level");
    t.arena.append(piece);
  }
  e.bytes_size = uint32_t(t.arena.size() - e.bytes_offset);
}

void load_vocab_and_added(Tokenizer::Impl& t, const Reader& r, element root) {
  simdjson::dom::object vocab;
  if (r.field(r.field(root, "model", "model"), "vocab", "model.vocab").get(vocab)) {
    r.fail(ErrorKind::format, "model.vocab is not an object");
  }
  t.entries.reserve(vocab.size() + 512);
  t.arena.reserve(vocab.size() * 16);
  for (auto [piece, id] : vocab) {
    add_entry(t, r, checked_id(r, r.integer(id, "model.vocab"), "model.vocab"), piece, false,
              false);
  }
  simdjson::dom::array added;
  if (r.field(root, "added_tokens", "added_tokens").get(added))
    r.fail(ErrorKind::format, "added_tokens is not an array");
  for (element a : added) {
    TokenId id = checked_id(
        r, r.integer(r.field(a, "id", "added_tokens[].id"), "added_tokens[].id"), "added_tokens");
    std::string_view content =
        r.string(r.field(a, "content", "added_tokens[].content"), "added_tokens[].content");
    if (content.empty())
      r.fail(ErrorKind::format, "added token " + std::to_string(id) + " is empty");
    if (r.boolean(a, "lstrip", "lstrip") || r.boolean(a, "rstrip", "rstrip") ||
        r.boolean(a, "single_word", "single_word")) {
      r.fail(ErrorKind::unsupported,
             "added token '" + std::string(content) + "': lstrip, rstrip, single_word");
    }
    add_entry(t, r, id, content, true, r.boolean(a, "special", "added_tokens[].special"));
    t.added.push_back({std::string(content), id});
  }
  // Views into the arena are taken only now that it no longer grows. Added tokens go last so
  // that they win over a vocabulary piece with the same spelling, as in HF's token_to_id.
  t.piece_ids.reserve(t.entries.size());
  for (size_t id = 0; id < t.entries.size(); ++id) {
    if (t.entries[id].known) t.piece_ids.insert(t.piece(TokenId(id)), TokenId(id));
  }
  for (const auto& a : t.added) t.piece_ids.insert(t.piece(a.id), a.id);
  std::stable_sort(t.added.begin(), t.added.end(), [](const auto& a, const auto& b) {
    return a.content.size() > b.content.size();
  });
  for (const auto& a : t.added) t.added_first_byte[static_cast<unsigned char>(a.content[0])] = true;
}

using MergePieces = std::vector<std::pair<std::string_view, std::string_view>>;  // left, right

// The ids of merges [begin, end): two or three lookups each, the bulk of a load (cache misses
// into a 151k-entry index), so the two halves of the list are resolved on two threads.
void resolve_merges(const Tokenizer::Impl& t, const Reader& r, const MergePieces& pieces,
                    bool unique, size_t begin, size_t end, std::vector<Merge>& ranked) {
  auto lookup = [&](std::string_view piece, size_t rank) {
    TokenId id = t.piece_ids.find(piece);
    if (id < 0) {
      r.fail(ErrorKind::format, "merge " + std::to_string(rank) + ": '" + std::string(piece) +
                                    "' is not in the vocabulary");
    }
    return id;
  };
  std::string joined;
  for (size_t rank = begin; rank < end; ++rank) {
    const auto& [left, right] = pieces[rank];
    // BPE training appends each merge's result to the vocabulary, so merge r's result is usually
    // the id after merge r - 1's: checked by its spelling, which (no spelling used twice) is the
    // lookup's answer, without a third probe of the index.
    const TokenId next = rank > begin ? ranked[rank - 1].merged + 1 : -1;
    const std::string_view spelled = t.known(next) ? t.piece(next) : std::string_view();
    const bool follows = unique && spelled.size() == left.size() + right.size() &&
                         spelled.starts_with(left) && spelled.ends_with(right);
    if (!follows) joined.assign(left).append(right);
    ranked[rank] = {lookup(left, rank), lookup(right, rank), follows ? next : lookup(joined, rank)};
  }
}

void load_merges(Tokenizer::Impl& t, const Reader& r, element root) {
  simdjson::dom::array merges;
  if (r.field(r.field(root, "model", "model"), "merges", "model.merges").get(merges)) {
    r.fail(ErrorKind::format, "model.merges is not an array");
  }
  MergePieces pieces;
  pieces.reserve(merges.size());
  for (element m : merges) {
    // Newer files write a merge as ["a", "b"], older ones as "a b".
    std::string_view left, right;
    simdjson::dom::array pair;
    std::string_view line;
    if (!m.get(pair) && pair.size() == 2) {
      left = r.string(pair.at(0).value_unsafe(), "model.merges[]");
      right = r.string(pair.at(1).value_unsafe(), "model.merges[]");
    } else if (!m.get(line) && line.find(' ') != std::string_view::npos) {
      left = line.substr(0, line.find(' '));
      right = line.substr(line.find(' ') + 1);
    } else {
      r.fail(ErrorKind::format,
             "merge " + std::to_string(pieces.size()) + " is neither [\"a\", \"b\"] nor \"a b\"");
    }
    pieces.emplace_back(left, right);
  }
  std::vector<Merge> ranked(pieces.size());
  const bool unique =
      t.piece_ids.size() == size_t(std::count_if(t.entries.begin(), t.entries.end(),
                                                 [](const auto& e) { return e.known; }));
  const size_t half = pieces.size() / 2;
  auto first = std::async(std::launch::async,
                          [&] { resolve_merges(t, r, pieces, unique, 0, half, ranked); });
  std::exception_ptr second;
  try {
    resolve_merges(t, r, pieces, unique, half, pieces.size(), ranked);
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
      r.fail(ErrorKind::format, "model.vocab has no piece for byte " + std::to_string(b));
  }
  t.bpe = Bpe(byte_ids, ranked);
}

// tokenizer_config.json only matters to decoding through clean_up_tokenization_spaces, which
// would rewrite " ." to "." and the like; Qwen3 has it off and this tokenizer does not do it.
void check_tokenizer_config(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(ErrorKind::io, file.string() + ": cannot open");
  nlohmann::json config = nlohmann::json::parse(in, nullptr, false);
  if (config.is_discarded() || !config.is_object()) {
    throw Error(ErrorKind::format, file.string() + ": malformed JSON");
  }
  if (config.value("clean_up_tokenization_spaces", false) == true) {
    throw Error(ErrorKind::unsupported,
                file.string() + ": clean_up_tokenization_spaces=true is not supported");
  }
}

}  // namespace

std::unique_ptr<Tokenizer::Impl> load_tokenizer_json(const std::filesystem::path& model_dir) {
  std::filesystem::path file = model_dir / "tokenizer.json";
  Reader r(file);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) r.fail(ErrorKind::io, "no such file");
  io::MappedFile text(file, false, simdjson::SIMDJSON_PADDING);
  simdjson::dom::parser parser;
  element root;
  if (auto err =
          parser.parse(reinterpret_cast<const char*>(text.data()), text.size(), false).get(root)) {
    r.fail(ErrorKind::format, std::string("malformed JSON: ") + simdjson::error_message(err));
  }
  if (root.type() != element_type::OBJECT) r.fail(ErrorKind::format, "not a JSON object");
  r.expect(r.field(root, "model", "model"), "type", "BPE", "model.type");
  const SplitPattern pattern = check_pipeline(r, root);

  auto t = std::make_unique<Tokenizer::Impl>();
  t->split_pattern = pattern;
  load_vocab_and_added(*t, r, root);
  load_merges(*t, r, root);
  std::filesystem::path config = model_dir / "tokenizer_config.json";
  if (std::filesystem::exists(config, ec)) check_tokenizer_config(config);
  return t;
}

}  // namespace qwen3::detail
