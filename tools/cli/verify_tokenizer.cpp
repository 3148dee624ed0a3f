// Checks a tokenizer against a Hugging Face reference file (tests/fixtures/reference/tokenizer.json
// format).
#include "cli/verify_tokenizer.h"

#include <string>
#include <vector>

#include "qwen3/error.h"

namespace {

// "" if equal, else where and how two sequences first differ.
template <typename T>
std::string first_difference(const std::vector<T>& expected, const std::vector<T>& actual) {
  size_t i = 0;
  while (i < expected.size() && i < actual.size() && expected[i] == actual[i]) ++i;
  if (i == expected.size() && i == actual.size()) return "";
  auto show = [&](const std::vector<T>& v) {
    return i < v.size() ? nlohmann::json(v[i]).dump() : "(end)";
  };
  return "position " + std::to_string(i) + ": expected " + show(expected) + ", got " + show(actual);
}

std::string first_difference(const std::string& expected, const std::string& actual) {
  return first_difference(std::vector<char>(expected.begin(), expected.end()),
                          std::vector<char>(actual.begin(), actual.end()));
}

const nlohmann::json& cases(const nlohmann::json& reference, const char* key) {
  if (!reference.is_object() || !reference.contains(key) || !reference[key].is_array()) {
    throw qwen3::Error(qwen3::ErrorKind::format,
                       std::string("tokenizer reference: no '") + key + "' array");
  }
  return reference[key];
}

// Each failing check of one case, as "what: difference" lines.
std::vector<std::string> check_encode(const qwen3::Tokenizer& tok, const nlohmann::json& c) {
  std::vector<std::string> failures;
  auto note = [&](const char* what, const std::string& diff) {
    if (!diff.empty()) failures.push_back(std::string(what) + " differ at " + diff);
  };
  std::vector<qwen3::TokenId> ids = tok.encode(c.at("text").get<std::string>());
  std::vector<std::string> tokens;
  for (auto id : ids) tokens.emplace_back(tok.token(id));
  auto expected_ids = c.at("ids").get<std::vector<qwen3::TokenId>>();
  note("ids", first_difference(expected_ids, ids));
  note("tokens", first_difference(c.at("tokens").get<std::vector<std::string>>(), tokens));
  // Decoding is checked on the reference ids, so an encode error is not counted twice.
  note("decoded bytes",
       first_difference(c.at("decoded").get<std::string>(), tok.decode(expected_ids)));
  note("decoded_skip_special bytes",
       first_difference(c.at("decoded_skip_special").get<std::string>(),
                        tok.decode(expected_ids, true)));
  return failures;
}

std::vector<std::string> check_decode(const qwen3::Tokenizer& tok, const nlohmann::json& c) {
  std::vector<std::string> failures;
  auto ids = c.at("ids").get<std::vector<qwen3::TokenId>>();
  if (auto d = first_difference(c.at("decoded").get<std::string>(), tok.decode(ids)); !d.empty()) {
    failures.push_back("decoded bytes differ at " + d);
  }
  if (auto d =
          first_difference(c.at("decoded_skip_special").get<std::string>(), tok.decode(ids, true));
      !d.empty()) {
    failures.push_back("decoded_skip_special bytes differ at " + d);
  }
  return failures;
}

}  // namespace

int verify_tokenizer_reference(const qwen3::Tokenizer& tokenizer, const nlohmann::json& reference,
                               std::FILE* out) {
  size_t total = 0, matching = 0;
  auto run = [&](const char* kind, const nlohmann::json& list, auto check) {
    for (size_t i = 0; i < list.size(); ++i, ++total) {
      std::vector<std::string> failures;
      try {
        failures = check(tokenizer, list[i]);
      } catch (const nlohmann::json::exception& e) {
        throw qwen3::Error(qwen3::ErrorKind::format, "tokenizer reference: " + std::string(kind) +
                                                         "[" + std::to_string(i) +
                                                         "]: " + e.what());
      } catch (const qwen3::Error& e) {
        failures.push_back(e.what());
      }
      if (failures.empty()) ++matching;
      for (const auto& f : failures)
        std::fprintf(out, "tokenizer: %s[%zu]: %s\n", kind, i, f.c_str());
    }
  };
  run("encode", cases(reference, "encode"), check_encode);
  run("decode", cases(reference, "decode"), check_decode);
  std::fprintf(out, "tokenizer: %zu/%zu cases match\n", matching, total);
  return matching == total ? 0 : 1;
}
