// Loads tokenizer.json (Hugging Face `tokenizers` format) into the tokenizer's tables.
// Only the Qwen pipeline (Qwen2 to Qwen3.5) is accepted: anything else is rejected rather than
// tokenized wrongly.
#include <simdjson.h>

#include <nlohmann/json.hpp>

#include <climits>
#include <fstream>
#include <optional>

#include "io/mapped_file.h"
#include "qwen3/error.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/tokenizer_tables.h"

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

TokenId checked_id(const Reader& r, element id, std::string_view where) {
  const int64_t v = r.integer(id, where);
  // Ids index a dense table: the builder refuses what is beyond 2^24, this what int32 cannot hold.
  if (v < 0 || v > INT32_MAX) r.fail(ErrorKind::format, std::string(where) + ": id out of range");
  return TokenId(v);
}

// model.vocab, added_tokens and model.merges as the builder's lists (views into the document).
void read_vocab_and_added(const Reader& r, element root, TokenizerSource& s) {
  simdjson::dom::object vocab;
  if (r.field(r.field(root, "model", "model"), "vocab", "model.vocab").get(vocab)) {
    r.fail(ErrorKind::format, "model.vocab is not an object");
  }
  s.vocab.reserve(vocab.size());
  for (auto [piece, id] : vocab) s.vocab.push_back({piece, checked_id(r, id, "model.vocab")});
  simdjson::dom::array added;
  if (r.field(root, "added_tokens", "added_tokens").get(added))
    r.fail(ErrorKind::format, "added_tokens is not an array");
  for (element a : added) {
    const TokenId id = checked_id(r, r.field(a, "id", "added_tokens[].id"), "added_tokens[].id");
    std::string_view content =
        r.string(r.field(a, "content", "added_tokens[].content"), "added_tokens[].content");
    if (r.boolean(a, "lstrip", "lstrip") || r.boolean(a, "rstrip", "rstrip") ||
        r.boolean(a, "single_word", "single_word")) {
      r.fail(ErrorKind::unsupported,
             "added token '" + std::string(content) + "': lstrip, rstrip, single_word");
    }
    s.added.push_back({content, id, r.boolean(a, "special", "added_tokens[].special")});
  }
}

void read_merges(const Reader& r, element root, TokenizerSource& s) {
  simdjson::dom::array merges;
  if (r.field(r.field(root, "model", "model"), "merges", "model.merges").get(merges)) {
    r.fail(ErrorKind::format, "model.merges is not an array");
  }
  s.merges.reserve(merges.size());
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
             "merge " + std::to_string(s.merges.size()) + " is neither [\"a\", \"b\"] nor \"a b\"");
    }
    s.merges.emplace_back(left, right);
  }
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

  TokenizerSource source{file.string(), pattern, {}, {}, {}};
  read_vocab_and_added(r, root, source);
  read_merges(r, root, source);
  auto t = build_tokenizer(source);
  std::filesystem::path config = model_dir / "tokenizer_config.json";
  if (std::filesystem::exists(config, ec)) check_tokenizer_config(config);
  return t;
}

}  // namespace qwen3::detail
