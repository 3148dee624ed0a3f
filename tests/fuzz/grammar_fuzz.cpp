// Fuzz target: grammar text (or a JSON Schema) then bytes to match. Grammar errors are the only
// allowed failure; a schema compiles to grammar text that parses, or names what it refuses; on a
// small vocabulary every mask bit agrees with asking the matcher token by token, at every step.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "qwen3/error.h"
#include "qwen3/grammar.h"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "grammar_fuzz: %s\n", what);
    std::abort();
  }
}

std::shared_ptr<const qwen3::TokenVocabulary> vocabulary() {
  static const auto v = [] {
    std::vector<std::string> bytes;
    for (int b = 0; b < 256; ++b) bytes.push_back(std::string(1, char(b)));
    for (const char* piece : {"ab", "abc", "\"", "\",", "{\"", "}", "[1", "12", "true", "null",
                              " \"", "\n  ", "\xC3\xA9", "\xC3", "<x>", "<end>"})
      bytes.push_back(piece);
    const auto end = qwen3::TokenId(bytes.size() - 1);
    return std::make_shared<const qwen3::TokenVocabulary>(bytes, std::set<qwen3::TokenId>{end});
  }();
  return v;
}

void walk(const std::string& text, std::string_view steps) {
  std::shared_ptr<const qwen3::Grammar> grammar;
  try {
    grammar = qwen3::Grammar::parse(text, 4000);
  } catch (const qwen3::Error& e) {
    check(e.kind() == qwen3::ErrorKind::invalid_argument, "grammar error of the wrong kind");
    return;
  }
  std::shared_ptr<const qwen3::TokenGrammar> bound;
  try {
    bound = std::make_shared<const qwen3::TokenGrammar>(grammar, vocabulary());
  } catch (const qwen3::Error&) {  // a <token> the vocabulary lacks
    return;
  }
  const auto n = qwen3::TokenId(vocabulary()->size());
  qwen3::GrammarMatcher m(bound, {n - 1});
  std::vector<uint64_t> mask((size_t(n) + 63) / 64);
  for (unsigned char pick : steps) {
    m.fill_mask(mask);
    std::vector<qwen3::TokenId> allowed;
    for (qwen3::TokenId id = 0; id < n; ++id) {
      const bool bit = mask[size_t(id) / 64] >> (id % 64) & 1;
      check(bit == m.allows(id), "mask differs from allows()");
      if (bit) allowed.push_back(id);
    }
    if (allowed.empty()) return;
    check(m.accept(allowed[pick % allowed.size()]), "an allowed token was refused");
    if (m.ended()) return;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find('\0');
  const std::string text = input.substr(0, split);
  const std::string_view steps = split == std::string::npos
                                     ? std::string_view()
                                     : std::string_view(input).substr(split + 1, 64);
  if (!text.empty() && (text[0] == '{' || text[0] == '[')) {  // a JSON Schema
    const auto schema = nlohmann::ordered_json::parse(text, nullptr, false);
    if (schema.is_discarded()) return 0;
    std::string grammar;
    try {
      grammar = qwen3::json_schema_grammar(schema);
    } catch (const qwen3::Error& e) {
      check(e.kind() == qwen3::ErrorKind::unsupported && std::strstr(e.what(), ": ") != nullptr,
            "schema error without a place");
      return 0;
    }
    try {
      qwen3::Grammar::parse(grammar, 4000);
    } catch (const qwen3::Error& e) {
      check(std::strstr(e.what(), "too large") != nullptr,
            "a compiled schema's grammar does not parse");
      return 0;
    }
    walk(grammar, steps);
    return 0;
  }
  walk(text, steps);
  return 0;
}

std::vector<std::vector<uint8_t>> fuzz_seeds() {
  std::vector<std::vector<uint8_t>> seeds;
  const std::string steps("\0\x01\x07\x13\x02\x05\x0b\x11\x03\x17\x1d\x04\x09\x10", 14);
  for (
      std::string s :
      {std::string("root ::= \"a\" [b-d]+ x?\nx ::= \"e\" | <end>"),
       std::string("root ::= item (\",\" item)*\nitem ::= \"\\\"\" [^\"]* \"\\\"\" | [0-9]{1,3}"),
       std::string("root ::= ( \"ab\" | \"c\" )* . [\\u00e9-\\u00ff]"),
       std::string("root ::= a\na ::= \"(\" a \")\" | \"\""), qwen3::json_object_grammar(),
       std::string(
           R"({"type": "object", "properties": {"a": {"type": "integer", "minimum": 3}, "b": {"enum": ["x", 1]}}, "required": ["a"]})"),
       std::string(
           R"({"type": "array", "items": {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "null"}]}, "maxItems": 4})"),
       std::string(
           R"({"$ref": "#/$defs/n", "$defs": {"n": {"type": "object", "properties": {"k": {"$ref": "#/$defs/n"}}}}})")}) {
    s += steps;
    seeds.emplace_back(s.begin(), s.end());
  }
  return seeds;
}
