// JSON Schema -> grammar: what each keyword allows, the errors naming unsupported ones, and
// sampling under the mask with the real Qwen3 tokenizer: every output parses and validates.
#include <gtest/gtest.h>

#include <chrono>
#include <random>

#include "qwen3/error.h"
#include "qwen3/grammar.h"
#include "qwen3/sampler.h"
#include "qwen3/tokenizer.h"
#include "test_paths.h"

namespace qwen3 {
namespace {

using json = nlohmann::ordered_json;

std::shared_ptr<const TokenVocabulary> bytes_vocabulary() {
  static auto v = [] {
    std::vector<std::string> bytes;
    for (int b = 0; b < 256; ++b) bytes.push_back(std::string(1, char(b)));
    return std::make_shared<TokenVocabulary>(bytes, std::set<TokenId>{});
  }();
  return v;
}

bool accepts(const std::string& grammar, const std::string& text) {
  GrammarMatcher m(std::make_shared<TokenGrammar>(Grammar::parse(grammar), bytes_vocabulary()), {});
  return m.accept_bytes(text) && m.complete();
}

std::string schema_error(const std::string& schema) {
  try {
    json_schema_grammar(json::parse(schema));
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::unsupported);
    return e.what();
  }
  ADD_FAILURE() << "no error for " << schema;
  return "";
}

// A small validator for the supported subset, written from the JSON Schema spec (not from the
// compiler), as the oracle of the sampling tests.
size_t code_point_count(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

bool valid(const json& v, const json& schema, const json& root) {
  if (schema.is_boolean()) return schema.get<bool>();
  if (schema.contains("$ref")) {
    const std::string ref = schema["$ref"];
    if (ref == "#") return valid(v, root, root);
    const auto slash = ref.rfind('/');
    const std::string section = ref.substr(2, slash - 2), name = ref.substr(slash + 1);
    return valid(v, root[section][name], root);
  }
  if (schema.contains("allOf"))
    for (auto& s : schema["allOf"])
      if (!valid(v, s, root)) return false;
  if (schema.contains("anyOf")) {
    bool any = false;
    for (auto& s : schema["anyOf"]) any = any || valid(v, s, root);
    if (!any) return false;
  }
  if (schema.contains("enum") &&
      std::find(schema["enum"].begin(), schema["enum"].end(), v) == schema["enum"].end())
    return false;
  if (schema.contains("const") && schema["const"] != v) return false;
  if (schema.contains("type")) {
    auto types = schema["type"].is_array() ? schema["type"] : json::array({schema["type"]});
    bool ok = false;
    for (auto& t : types) {
      const std::string type = t;
      ok = ok || (type == "object" && v.is_object()) || (type == "array" && v.is_array()) ||
           (type == "string" && v.is_string()) || (type == "number" && v.is_number()) ||
           (type == "integer" &&
            (v.is_number_integer() ||
             (v.is_number_float() && v.get<double>() == std::floor(v.get<double>())))) ||
           (type == "boolean" && v.is_boolean()) || (type == "null" && v.is_null());
    }
    if (!ok) return false;
  }
  if (v.is_object()) {
    for (auto& r : schema.value("required", json::array()))
      if (!v.contains(r.get<std::string>())) return false;
    const json props = schema.value("properties", json::object());
    for (auto& [key, value] : v.items()) {
      if (props.contains(key)) {
        if (!valid(value, props[key], root)) return false;
      } else if (schema.contains("additionalProperties") &&
                 !valid(value, schema["additionalProperties"], root)) {
        return false;
      }
    }
  }
  if (v.is_array()) {
    if (v.size() < schema.value("minItems", 0u) || v.size() > schema.value("maxItems", 1000000u))
      return false;
    if (schema.contains("items"))
      for (auto& item : v)
        if (!valid(item, schema["items"], root)) return false;
  }
  if (v.is_string()) {
    const size_t n = code_point_count(v.get<std::string>());
    if (n < schema.value("minLength", 0u) || n > schema.value("maxLength", 1000000u)) return false;
    if (schema.value("format", "") == "date") {
      const std::string s = v;
      if (s.size() != 10 || s[4] != '-' || s[7] != '-') return false;
      const int month = std::stoi(s.substr(5, 2)), day = std::stoi(s.substr(8, 2));
      const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
      if (month < 1 || month > 12 || day < 1 || day > days[month - 1]) return false;
    }
  }
  return true;
}

TEST(JsonSchemaGrammar, TypesAndKeywords) {
  auto g = [](const char* schema) { return json_schema_grammar(json::parse(schema)); };
  EXPECT_TRUE(accepts(g(R"({"type": "integer"})"), "-12"));
  EXPECT_FALSE(accepts(g(R"({"type": "integer"})"), "1.5"));
  EXPECT_FALSE(accepts(g(R"({"type": "integer"})"), "012"));
  EXPECT_TRUE(accepts(g(R"({"type": "number"})"), "1.5e+3"));
  EXPECT_TRUE(accepts(g(R"({"type": ["string", "null"]})"), "null"));
  EXPECT_TRUE(accepts(g(R"({"type": "string"})"), R"("a\"\u00e9\n é")"));
  EXPECT_FALSE(accepts(g(R"({"type": "string"})"), "\"a\nb\""));     // a raw control character
  EXPECT_FALSE(accepts(g(R"({"type": "string"})"), R"("\ud800")"));  // a lone surrogate
  EXPECT_TRUE(accepts(g(R"({"type": "string", "minLength": 2, "maxLength": 3})"), R"("é\n")"));
  EXPECT_FALSE(accepts(g(R"({"type": "string", "minLength": 2, "maxLength": 3})"), R"("abcd")"));
  EXPECT_TRUE(accepts(g(R"({"enum": ["a", 1, null, {"x": [true]}]})"), R"({"x":[true]})"));
  EXPECT_FALSE(accepts(g(R"({"enum": ["a", 1]})"), R"("b")"));
  EXPECT_TRUE(accepts(g(R"({"const": "yes"})"), R"("yes")"));
  EXPECT_TRUE(accepts(g(R"({"type": "string", "format": "date"})"), R"("2024-02-28")"));
  EXPECT_FALSE(accepts(g(R"({"type": "string", "format": "date"})"), R"("2024-02-30")"));
  EXPECT_TRUE(accepts(g(R"({"type": "string", "format": "date-time"})"),
                      R"("2024-12-31T23:59:59.5+01:00")"));
  EXPECT_TRUE(accepts(g(R"({"type": "string", "format": "uuid"})"),
                      R"("123e4567-e89b-12d3-a456-426614174000")"));
  EXPECT_TRUE(
      accepts(g(R"({"type": "array", "items": {"type": "boolean"}, "minItems": 1, "maxItems": 2})"),
              "[true, false]"));
  EXPECT_FALSE(accepts(
      g(R"({"type": "array", "items": {"type": "boolean"}, "minItems": 1, "maxItems": 2})"), "[]"));
  EXPECT_FALSE(
      accepts(g(R"({"type": "array", "items": {"type": "boolean"}, "minItems": 1, "maxItems": 2})"),
              "[true,true,true]"));
  EXPECT_TRUE(accepts(
      g(R"({"anyOf": [{"type": "integer"}, {"type": "array", "items": {"type": "integer"}}]})"),
      "[1,2]"));
  EXPECT_TRUE(accepts(g(R"({})"), R"({"any": [1, "thing", null]})"));
  // Leading whitespace (the text after </think>), but nothing after the value.
  EXPECT_TRUE(accepts(g(R"({"type": "integer"})"), "\n\n 7"));
  EXPECT_FALSE(accepts(g(R"({"type": "integer"})"), "7 "));
}

// Integer bounds compile to digit ranges: every integer from -1200 to 1200 matches exactly when
// it is within them.
TEST(JsonSchemaGrammar, IntegerBounds) {
  const std::vector<std::string> bounds{R"("minimum": 0)",
                                        R"("minimum": 1, "maximum": 12)",
                                        R"("minimum": -37, "maximum": 450)",
                                        R"("exclusiveMinimum": 99, "exclusiveMaximum": 1001)",
                                        R"("maximum": -5)",
                                        R"("minimum": 6.5, "maximum": 7.5)",
                                        R"("minimum": -1000, "maximum": -10)",
                                        R"("minimum": 0.5, "exclusiveMaximum": 100.5)",
                                        R"("minimum": 190, "maximum": 1109)"};
  for (auto& b : bounds) {
    const json schema = json::parse("{\"type\": \"integer\", " + b + "}");
    auto g = std::make_shared<TokenGrammar>(Grammar::parse(json_schema_grammar(schema)),
                                            bytes_vocabulary());
    for (int v = -1200; v <= 1200; ++v) {
      const json value = v;
      const bool inside =
          (!schema.contains("minimum") || v >= schema["minimum"].get<double>()) &&
          (!schema.contains("maximum") || v <= schema["maximum"].get<double>()) &&
          (!schema.contains("exclusiveMinimum") || v > schema["exclusiveMinimum"].get<double>()) &&
          (!schema.contains("exclusiveMaximum") || v < schema["exclusiveMaximum"].get<double>());
      GrammarMatcher m(g, {});
      ASSERT_EQ(m.accept_bytes(std::to_string(v)) && m.complete(), inside) << b << ": " << v;
    }
  }
  EXPECT_TRUE(accepts(json_schema_grammar(json::parse(R"({"type": "integer", "minimum": 0})")),
                      "9999999999999999"));
  EXPECT_FALSE(
      accepts(json_schema_grammar(json::parse(R"({"type": "integer", "minimum": 0})")), "01"));
  EXPECT_TRUE(
      accepts(json_schema_grammar(json::parse(R"({"type": "number", "minimum": 0})")), "0.5e-3"));
  EXPECT_FALSE(
      accepts(json_schema_grammar(json::parse(R"({"type": "number", "minimum": 0})")), "-1"));
  EXPECT_NE(schema_error(R"({"type": "number", "maximum": 3})")
                .find("maximum: on a number only 'minimum': 0"),
            std::string::npos);
  EXPECT_NE(schema_error(R"({"type": "integer", "minimum": 5, "maximum": 4})").find("no integer"),
            std::string::npos);
  EXPECT_NE(schema_error(R"({"type": "integer", "minimum": 1, "exclusiveMinimum": true})")
                .find("exclusiveMinimum"),
            std::string::npos);
}

// Long bounded repetitions stay small: array items are referenced, not copied a thousand times;
// a bounded string's characters are written out (its masks stay cheap) at ~14 states each.
TEST(JsonSchemaGrammar, LongBoundsStaySmall) {
  auto states = [](const char* schema) {
    return Grammar::parse(json_schema_grammar(json::parse(schema)))->states();
  };
  EXPECT_LT(states(R"({"type": "array", "items": {"type": "integer"}, "maxItems": 1000})"), 6000u);
  EXPECT_LT(states(R"({"type": "string", "maxLength": 1000})"), 16000u);
  const auto twelve = json_schema_grammar(json::parse(
      R"({"type": "array", "items": {"type": "integer"}, "minItems": 10, "maxItems": 12})"));
  std::string items = "[1";
  for (int k = 2; k <= 13; ++k) {
    EXPECT_EQ(accepts(twelve, items + "]"), k - 1 >= 10 && k - 1 <= 12) << items;
    items += ", " + std::to_string(k);
  }
}

TEST(JsonSchemaGrammar, Objects) {
  const auto strict = json_schema_grammar(json::parse(R"({"type": "object", "properties": {
      "a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "boolean"}},
      "required": ["a", "c"], "additionalProperties": false})"));
  EXPECT_TRUE(accepts(strict, R"({"a": 1, "c": true})"));
  EXPECT_TRUE(accepts(strict, R"({ "a":1 , "b":"x" , "c":false })"));
  EXPECT_TRUE(accepts(strict, "{\n  \"a\": 1,\n  \"b\": \"x\",\n  \"c\": false\n}"));
  EXPECT_FALSE(accepts(strict, R"({"c": true})"));                  // a required one missing
  EXPECT_FALSE(accepts(strict, R"({"a": 1, "c": true, "d": 1})"));  // no additional properties
  EXPECT_FALSE(accepts(strict, R"({"a": 1, "c": true,})"));
  const auto optional = json_schema_grammar(
      json::parse(R"({"properties": {"x": {"type": "integer"}, "y": {"type": "integer"}}})"));
  EXPECT_TRUE(accepts(optional, "{}"));
  EXPECT_TRUE(accepts(optional, R"({"y": 2})"));
  EXPECT_TRUE(
      accepts(optional, R"({"x": 1, "zz": "extra", "q": null})"));  // additional allowed by default
  EXPECT_TRUE(accepts(optional, R"({"xy": 1})"));  // a key that only starts like "x"
  EXPECT_FALSE(
      accepts(optional, R"({"y": 1, "x": "not an integer"})"));  // declared keys only in order
  EXPECT_FALSE(
      accepts(optional, R"({"zz": 1, "x": "dup"})"));  // an extra key never repeats a declared one
  const auto typed_extra = json_schema_grammar(
      json::parse(R"({"type": "object", "additionalProperties": {"type": "integer"}})"));
  EXPECT_TRUE(accepts(typed_extra, R"({"a": 1, "b": 2})"));
  EXPECT_FALSE(accepts(typed_extra, R"({"a": "x"})"));
  const auto recursive = json_schema_grammar(
      json::parse(R"({"$ref": "#/$defs/node", "$defs": {"node": {"type": "object",
      "properties": {"name": {"type": "string"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
      "required": ["name"], "additionalProperties": false}}})"));
  EXPECT_TRUE(
      accepts(recursive, R"({"name": "a", "kids": [{"name": "b", "kids": []}, {"name": "c"}]})"));
  EXPECT_FALSE(accepts(recursive, R"({"name": "a", "kids": [{"kids": []}]})"));
}

TEST(JsonSchemaGrammar, UnsupportedKeywordsAreNamed) {
  EXPECT_EQ(schema_error(R"({"type": "integer", "multipleOf": 3})"),
            "schema: 'multipleOf' is not supported");
  EXPECT_EQ(schema_error(R"({"properties": {"age": {"type": "number", "multipleOf": 2}}})"),
            "properties.age: 'multipleOf' is not supported");
  EXPECT_NE(schema_error(R"({"type": "string", "pattern": "^a"})").find("'pattern'"),
            std::string::npos);
  EXPECT_NE(schema_error(R"({"oneOf": [{"type": "string"}]})").find("'oneOf'"), std::string::npos);
  EXPECT_NE(schema_error(R"({"type": "string", "format": "email"})").find("format \"email\""),
            std::string::npos);
  EXPECT_NE(schema_error(R"({"type": "array", "items": [{"type": "string"}]})").find("items"),
            std::string::npos);
  EXPECT_NE(schema_error(R"({"allOf": [{"type": "string"}, {"maxLength": 2}]})").find("allOf"),
            std::string::npos);
  EXPECT_NE(schema_error(R"({"$ref": "https://example.com/s.json"})").find("$ref"),
            std::string::npos);
  EXPECT_NE(schema_error(R"({"type": "object", "anyOf": [{}]})").find("beside"), std::string::npos);
  EXPECT_NE(schema_error(R"({"type": "date"})").find("unknown type"), std::string::npos);
  EXPECT_NE(schema_error(R"({"type": "array", "maxItems": 100000})").find("maxItems"),
            std::string::npos);
  EXPECT_NE(schema_error(R"({"type": "array", "uniqueItems": true})").find("uniqueItems"),
            std::string::npos);
  EXPECT_NE(schema_error(R"({"enum": ["a"], "maxLength": 0})").find("beside 'enum'"),
            std::string::npos);
  EXPECT_NE(schema_error(R"({"nullable": true})").find("'nullable'"), std::string::npos);
  // Annotations describe and are accepted.
  EXPECT_NO_THROW(
      json_schema_grammar(json::parse(R"({"title": "t", "description": "d", "default": 1,
      "examples": [1], "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "integer"})")));
}

struct Sampled {
  std::string text;
  bool ended = false;
};

// Random logits that lean towards closing characters (as a trained model would end values),
// masked, then sampled at temperature 1; until an end token or `steps`.
Sampled sample_under_mask(const Tokenizer& tokenizer, std::shared_ptr<const TokenGrammar> grammar,
                          uint64_t seed, int steps) {
  const TokenId end = 151645;
  TokenConstraint constraint({grammar, GrammarConstraint::Reasoning::none, -1, -1}, {end});
  SamplingParams params;
  params.temperature = 1.0f;
  params.seed = seed;
  Sampler sampler(params);
  std::mt19937_64 rng(seed);
  // Fresh noise per step from one table at a random offset: drawing 151936 normals a step would
  // take most of the test's time.
  static const std::vector<float> noise = [] {
    std::mt19937_64 r(99);
    std::normal_distribution<float> d(0.0f, 2.0f);
    std::vector<float> n(2 * 151936);
    for (auto& x : n) x = d(r);
    return n;
  }();
  static const std::vector<float> lean = [&] {
    std::vector<float> l(151936, 0.0f);
    for (TokenId id = 0; id < 151669; ++id) {
      std::string_view b = tokenizer.token_bytes(id);
      if (b.find_first_of("\"]},") != std::string_view::npos) l[size_t(id)] = 5.0f;
    }
    l[end] = 5.0f;
    return l;
  }();
  std::vector<float> logits(151936);
  Sampled out;
  for (int step = 0; step < steps; ++step) {
    const size_t offset = rng() % 151936;
    for (size_t i = 0; i < logits.size(); ++i) logits[i] = noise[offset + i] + lean[i];
    const TokenId id = sampler.sample(logits, {}, constraint.mask(logits.size()));
    constraint.accept(id);
    if (id == end) {
      out.ended = true;
      break;
    }
    out.text += tokenizer.token_bytes(id);
  }
  return out;
}

TEST(JsonSchemaSampling, EverySampleParsesAndValidatesWithTheRealTokenizer) {
  const auto tokenizer = Tokenizer::load(test::tiny_model());
  const auto vocabulary = std::make_shared<const TokenVocabulary>(tokenizer);
  const std::vector<std::string> schemas{
      R"({"type": "object"})",
      R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 12}, "age": {"type": "integer"},
          "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "minItems": 1, "maxItems": 3},
          "born": {"type": "string", "format": "date"}, "ok": {"type": ["boolean", "null"]}},
          "required": ["name", "age", "tags", "born", "ok"], "additionalProperties": false})",
      R"({"type": "array", "items": {"anyOf": [{"type": "number"}, {"type": "object", "properties":
          {"k": {"const": "v"}}, "required": ["k"]}]}, "maxItems": 4})",
      R"({"$ref": "#/$defs/tree", "$defs": {"tree": {"type": "object", "properties": {"v": {"type": "integer"},
          "kids": {"type": "array", "items": {"$ref": "#/$defs/tree"}, "maxItems": 2}}, "required": ["v"],
          "additionalProperties": false}}})",
      R"({"type": "object", "properties": {"id": {"type": "integer"}}, "additionalProperties": {"type": "string"}})",
  };
  int ended = 0, total = 0;
  for (auto& text : schemas) {
    const json schema = json::parse(text);
    auto grammar = std::make_shared<const TokenGrammar>(Grammar::parse(json_schema_grammar(schema)),
                                                        vocabulary);
    for (uint64_t seed = 1; seed <= 5; ++seed) {
      const Sampled s = sample_under_mask(tokenizer, grammar, seed, 300);
      ++total;
      if (!s.ended) continue;  // ran out of steps: a prefix, checked by the mask tests
      ++ended;
      nlohmann::json parsed = nlohmann::json::parse(s.text, nullptr, false);
      ASSERT_FALSE(parsed.is_discarded()) << text << "\nseed " << seed << ": " << s.text;
      EXPECT_TRUE(valid(json::parse(s.text), schema, schema))
          << text << "\nseed " << seed << ": " << s.text;
    }
  }
  EXPECT_GE(ended, total * 3 / 4) << "too few samples reached the end token";
}

}  // namespace
}  // namespace qwen3
