// JSON Schema -> grammar text: one rule per schema node, the shared JSON rules once. Keywords
// outside the supported subset are errors that name them (docs/grammar.md).
#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "qwen3/error.h"
#include "qwen3/grammar.h"

namespace qwen3 {

using json = nlohmann::ordered_json;

namespace {

constexpr int kMaxBound = 1000;  // minItems/maxItems/minLength/maxLength above this are refused

// Keywords that only describe, never constrain: accepted and left out of the grammar.
const std::set<std::string> kAnnotations{"$schema",     "$id",      "$comment", "title",
                                         "description", "default",  "examples", "deprecated",
                                         "readOnly",    "writeOnly"};
const std::set<std::string> kSupported{"type",
                                       "properties",
                                       "required",
                                       "additionalProperties",
                                       "items",
                                       "minItems",
                                       "maxItems",
                                       "enum",
                                       "const",
                                       "anyOf",
                                       "allOf",
                                       "$ref",
                                       "$defs",
                                       "definitions",
                                       "minLength",
                                       "maxLength",
                                       "format",
                                       "uniqueItems",
                                       "minimum",
                                       "maximum",
                                       "exclusiveMinimum",
                                       "exclusiveMaximum"};
const std::vector<std::string> kBounds{"minimum", "maximum", "exclusiveMinimum",
                                       "exclusiveMaximum"};
constexpr int64_t kLargest = 9'999'999'999'999'999;  // 16 digits: json-integer's own bound
const std::set<std::string> kFormats{"date", "time", "date-time", "uuid"};

[[noreturn]] void unsupported(const std::string& path, const std::string& message) {
  throw Error(ErrorKind::unsupported,
              (path.empty() ? std::string("schema") : path) + ": " + message);
}

std::string join(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

std::string hex(uint32_t cp) {
  char buf[12];
  std::snprintf(buf, sizeof buf, cp <= 0xFFFF ? "\\u%04X" : "\\U%08X", cp);
  return buf;
}

// UTF-8 -> code points (the input is JSON text, so valid UTF-8).
std::vector<uint32_t> code_points(std::string_view s) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
    uint32_t cp = extra ? c & (0x3F >> extra) : c;
    for (int k = 1; k <= extra && i + size_t(k) < s.size(); ++k)
      cp = cp << 6 | (static_cast<unsigned char>(s[i + size_t(k)]) & 0x3F);
    out.push_back(cp);
    i += size_t(extra) + 1;
  }
  return out;
}

bool is_integral(const json& v) {
  return v.is_number_integer() || (v.is_number_float() && std::isfinite(v.get<double>()) &&
                                   std::floor(v.get<double>()) == v.get<double>());
}

bool has_type(const json& v, const std::string& type) {
  if (type == "string") return v.is_string();
  if (type == "number") return v.is_number();
  if (type == "integer") return is_integral(v);
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  return false;
}

int bound(const json& schema, const char* key, const std::string& path, int fallback) {
  auto it = schema.find(key);
  if (it == schema.end()) return fallback;
  if (!it->is_number_integer() || it->get<int64_t>() < 0)
    unsupported(join(path, key), "must be a non-negative integer");
  if (it->get<int64_t>() > kMaxBound)
    unsupported(join(path, key),
                "values above " + std::to_string(kMaxBound) + " are not supported");
  return int(it->get<int64_t>());
}

// The decimal numbers from lo to hi, both written with the same number of digits.
std::string same_length_range(const std::string& lo, const std::string& hi) {
  const size_t n = lo.size();
  if (lo == hi) return grammar_literal(lo);
  if (n == 1) return std::string("[") + lo[0] + "-" + hi[0] + "]";
  if (lo[0] == hi[0])
    return grammar_literal(lo.substr(0, 1)) + " ( " +
           same_length_range(lo.substr(1), hi.substr(1)) + " )";
  std::vector<std::string> alternatives;
  const std::string rest_lo = lo.substr(1), rest_hi = hi.substr(1);
  char first = lo[0], last = hi[0];
  if (rest_lo.find_first_not_of('0') !=
      std::string::npos) {  // lo's first digit, the rest from rest_lo up
    alternatives.push_back(grammar_literal(lo.substr(0, 1)) + " ( " +
                           same_length_range(rest_lo, std::string(n - 1, '9')) + " )");
    ++first;
  }
  if (rest_hi.find_first_not_of('9') !=
      std::string::npos) {  // hi's first digit, the rest up to rest_hi
    alternatives.push_back(grammar_literal(hi.substr(0, 1)) + " ( " +
                           same_length_range(std::string(n - 1, '0'), rest_hi) + " )");
    --last;
  }
  if (first <= last)
    alternatives.push_back(std::string("[") + first + "-" + last + "] [0-9]{" +
                           std::to_string(n - 1) + "}");
  std::string out;
  for (auto& a : alternatives) out += (out.empty() ? "" : " | ") + a;
  return out;
}

// The integers from lo to hi (0 <= lo <= hi), without leading zeros.
std::string natural_range(int64_t lo, int64_t hi) {
  std::string out;
  int64_t low_end = 0;  // the smallest number of the current digit count
  for (int64_t top = 9; low_end <= hi; low_end = top + 1, top = top * 10 + 9) {
    const int64_t a = std::max(lo, low_end), b = std::min(hi, top);
    if (a <= b)
      out += (out.empty() ? "" : " | ") + std::string("( ") +
             same_length_range(std::to_string(a), std::to_string(b)) + " )";
    if (top >= kLargest) break;
  }
  return out;
}

// The integers from lo to hi, negative ones with a minus sign.
std::string integer_range(int64_t lo, int64_t hi) {
  std::string negative, natural;
  if (lo < 0) negative = "\"-\" ( " + natural_range(hi < 0 ? -hi : 1, -lo) + " )";
  if (hi >= 0) natural = natural_range(std::max<int64_t>(lo, 0), hi);
  if (negative.empty()) return natural;
  if (natural.empty()) return negative;
  return negative + " | " + natural;
}

std::string repeat(const std::string& item, int min, int max) {
  if (max < 0) return min == 0 ? "(" + item + ")*" : "(" + item + "){" + std::to_string(min) + ",}";
  return "(" + item + "){" + std::to_string(min) + "," + std::to_string(max) + "}";
}

}  // namespace

std::string grammar_literal(std::string_view bytes) {
  std::string out = "\"";
  for (char c : bytes) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

struct JsonSchemaGrammar::Context {
  const json* root;
  std::string prefix;
  std::map<std::string, std::string> refs;  // "$ref" -> rule name
};

JsonSchemaGrammar::JsonSchemaGrammar() = default;

std::string JsonSchemaGrammar::add_rule(const std::string& name, const std::string& body) {
  if (rules_.emplace(name, body).second) order_.push_back(name);
  else rules_[name] = body;
  return name;
}

std::string JsonSchemaGrammar::text(const std::string& root_body) const {
  std::string out;
  for (auto& name : order_) out += name + " ::= " + rules_.at(name) + "\n";
  return out + "root ::= " + root_body + "\n";
}

// The shared JSON rules. Whitespace and numbers are bounded so that a weak model cannot pad or
// count forever (as llama.cpp's JSON grammars do), and so that every number is a finite double
// (at most 16 + 16 digits, exponent up to 99); strings never hold a lone surrogate escape.
std::string JsonSchemaGrammar::common(const std::string& name) {
  if (rules_.count(name)) return name;
  static const std::map<std::string, std::string> bodies{
      // One space, or a newline and indentation (pretty-printed JSON); "\n\n" only before the
      // value.
      {"ws", R"(( " " | "\n" [ \t]{0,24} )?)"},
      {"lead-ws", R"([ \t\n]{0,4})"},
      {"json-char",
       R"([^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" ( [0-9a-cA-Ce-fE-F] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2} ) ))"},
      {"json-string", R"("\"" json-char* "\"")"},
      {"json-integer", R"("-"? ( "0" | [1-9] [0-9]{0,15} ))"},
      {"json-number",
       R"("-"? ( "0" | [1-9] [0-9]{0,15} ) ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,2} )?)"},
      {"json-boolean", R"("true" | "false")"},
      {"json-null", R"("null")"},
      {"json-value",
       "json-object | json-array | json-string | json-number | json-boolean | json-null"},
      {"json-object",
       R"("{" ws ( json-string ws ":" ws json-value ws ( "," ws json-string ws ":" ws json-value ws )* )? "}")"},
      {"json-array", R"("[" ws ( json-value ws ( "," ws json-value ws )* )? "]")"},
      {"json-date",
       R"([0-9]{4} "-" ( ( "01" | "03" | "05" | "07" | "08" | "10" | "12" ) "-" ( json-day28 | "29" | "30" | "31" ) | ( "04" | "06" | "09" | "11" ) "-" ( json-day28 | "29" | "30" ) | "02-" json-day28 ))"},
      {"json-day28", R"("0" [1-9] | "1" [0-9] | "2" [0-8])"},
      {"json-time",
       R"(( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{1,6} )? ( "Z" | [+-] ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ))"},
      {"json-uuid",
       R"([0-9a-f]{8} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{12})"},
  };
  auto it = bodies.find(name);
  // The rule's own references first, so the text reads top-down either way.
  add_rule(name, it->second);
  for (auto& dep : {"ws", "json-char", "json-string", "json-number", "json-boolean", "json-null",
                    "json-object", "json-array", "json-value", "json-day28"})
    if (it->second.find(dep) != std::string::npos && !rules_.count(dep)) common(dep);
  return name;
}

std::string JsonSchemaGrammar::add(const json& schema, const std::string& prefix) {
  Context context{&schema, prefix.empty() ? "s" : prefix, {}};
  return compile(schema, context.prefix, context, "");
}

std::string JsonSchemaGrammar::compile(const json& schema, const std::string& name,
                                       Context& context, const std::string& path) {
  if (schema.is_boolean()) {
    if (!schema.get<bool>()) unsupported(path, "the schema false matches nothing");
    return common("json-value");
  }
  if (!schema.is_object()) unsupported(path, "a schema must be an object or a boolean");
  std::vector<std::string> constraints;
  for (auto& [key, value] : schema.items()) {
    if (kAnnotations.count(key)) continue;
    if (!kSupported.count(key)) unsupported(path, "'" + key + "' is not supported");
    if (key != "$defs" && key != "definitions") constraints.push_back(key);
  }
  auto only = [&](const char* keyword) {
    for (auto& k : constraints)
      if (k != keyword) unsupported(path, "'" + k + "' beside '" + keyword + "' is not supported");
  };

  if (auto it = schema.find("$ref"); it != schema.end()) {
    only("$ref");
    if (!it->is_string()) unsupported(join(path, "$ref"), "must be a string");
    const std::string ref = it->get<std::string>();
    if (auto known = context.refs.find(ref); known != context.refs.end()) return known->second;
    const json* target = nullptr;
    if (ref == "#") {
      target = context.root;
    } else {
      for (const char* defs : {"#/$defs/", "#/definitions/"}) {
        if (!ref.starts_with(defs)) continue;
        const std::string key = ref.substr(std::string(defs).size());
        auto section =
            context.root->find(std::string(defs).substr(2, std::string(defs).size() - 3));
        if (section == context.root->end() || !section->is_object()) continue;
        if (auto it = section->find(key); it != section->end()) target = &*it;
      }
    }
    if (!target)
      unsupported(join(path, "$ref"),
                  "'" + ref + "' is not a local #/$defs/ or #/definitions/ reference");
    std::string rule;
    for (char c : ref.substr(1)) rule += std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
    rule = context.prefix + "-ref" + rule + "-" + std::to_string(anonymous_++);
    context.refs[ref] = rule;  // before compiling: a recursive schema refers to itself
    add_rule(rule, "json-null");
    add_rule(rule, compile(*target, rule + "-v", context, ref));
    return rule;
  }
  if (auto it = schema.find("allOf"); it != schema.end()) {
    only("allOf");
    if (!it->is_array() || it->size() != 1)
      unsupported(join(path, "allOf"), "only a single-schema allOf is supported");
    return compile((*it)[0], name, context, join(path, "allOf[0]"));
  }
  if (auto it = schema.find("anyOf"); it != schema.end()) {
    only("anyOf");
    if (!it->is_array() || it->empty())
      unsupported(join(path, "anyOf"), "must be a non-empty array");
    std::string body;
    for (size_t k = 0; k < it->size(); ++k) {
      const std::string kid = compile((*it)[k], name + "-" + std::to_string(k), context,
                                      join(path, "anyOf[" + std::to_string(k) + "]"));
      body += (k ? " | " : "") + kid;
    }
    return add_rule(name, body);
  }

  // Types: "type" as written, else what the keywords imply.
  std::vector<std::string> types;
  if (auto it = schema.find("type"); it != schema.end()) {
    for (auto& t : it->is_array() ? *it : json::array({*it})) {
      static const std::set<std::string> kTypes{"string", "number", "integer", "boolean",
                                                "null",   "object", "array"};
      if (!t.is_string() || !kTypes.count(t.get<std::string>()))
        unsupported(join(path, "type"), "unknown type " + t.dump());
      types.push_back(t.get<std::string>());
    }
    if (types.empty()) unsupported(join(path, "type"), "must not be empty");
  }

  for (const char* key : {"enum", "const"}) {
    auto it = schema.find(key);
    if (it == schema.end()) continue;
    for (auto& k : constraints)
      if (k != key && k != "type")
        unsupported(path, "'" + k + "' beside '" + key + "' is not supported");
    const json values = std::string(key) == "const" ? json::array({*it}) : *it;
    if (!values.is_array() || values.empty())
      unsupported(join(path, key), "must be a non-empty array");
    std::string body;
    for (auto& v : values) {
      if (!types.empty() &&
          std::none_of(types.begin(), types.end(), [&](auto& t) { return has_type(v, t); }))
        continue;
      body += (body.empty() ? "" : " | ") + grammar_literal(v.dump());
    }
    if (body.empty()) unsupported(join(path, key), "no value is of the schema's type");
    return add_rule(name, body);
  }

  if (types.empty()) {
    auto any = [&](std::initializer_list<const char*> keys) {
      return std::any_of(keys.begin(), keys.end(),
                         [&](const char* k) { return schema.contains(k); });
    };
    if (any({"properties", "required", "additionalProperties"})) types = {"object"};
    else if (any({"items", "minItems", "maxItems", "uniqueItems"})) types = {"array"};
    else if (any({"minLength", "maxLength", "format"})) types = {"string"};
    else if (any({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}))
      types = {"number"};
    else return common("json-value");
  }

  std::string body;
  for (size_t k = 0; k < types.size(); ++k) {
    const std::string& type = types[k];
    const std::string kid = types.size() == 1 ? name : name + "-" + type;
    std::string rule;
    if (type == "object") {
      rule = object_rule(schema, kid, context, path);
    } else if (type == "array") {
      if (auto u = schema.find("uniqueItems");
          u != schema.end() && !(u->is_boolean() && !u->get<bool>()))
        unsupported(join(path, "uniqueItems"), "only false is supported");
      std::string item = common("json-value");
      if (auto it = schema.find("items"); it != schema.end()) {
        if (it->is_array())
          unsupported(join(path, "items"), "tuple items (an array) are not supported");
        item = compile(*it, kid + "-item", context, join(path, "items"));
      }
      const int min = bound(schema, "minItems", path, 0), max = bound(schema, "maxItems", path, -1);
      if (max >= 0 && max < min) unsupported(join(path, "maxItems"), "is below minItems");
      std::string items;
      if (max == 0) items = "";
      else if (min == 0)
        items = "( " + item + " ws " +
                repeat("\",\" ws " + item + " ws", 0, max < 0 ? -1 : max - 1) + " )?";
      else
        items = item + " ws " + repeat("\",\" ws " + item + " ws", min - 1, max < 0 ? -1 : max - 1);
      common("ws");
      rule = add_rule(kid, "\"[\" ws " + items + " \"]\"");
    } else if (type == "string") {
      const int min = bound(schema, "minLength", path, 0),
                max = bound(schema, "maxLength", path, -1);
      if (max >= 0 && max < min) unsupported(join(path, "maxLength"), "is below minLength");
      if (auto f = schema.find("format"); f != schema.end()) {
        if (!f->is_string() || !kFormats.count(f->get<std::string>()))
          unsupported(join(path, "format"),
                      "format " + f->dump() + " is not supported (date, time, date-time, uuid)");
        if (schema.contains("minLength") || schema.contains("maxLength"))
          unsupported(path, "'format' beside minLength/maxLength is not supported");
        const std::string fmt = f->get<std::string>();
        std::string inner = fmt == "date"   ? common("json-date")
                            : fmt == "time" ? common("json-time")
                            : fmt == "uuid" ? common("json-uuid")
                                            : common("json-date") + " \"T\" " + common("json-time");
        rule = add_rule(kid, "\"\\\"\" " + inner + " \"\\\"\"");
      } else if (min == 0 && max < 0) {
        rule = common("json-string");
      } else {
        // The character written out, not referenced: a long repetition keeps references as such,
        // and a string's characters belong in its own automaton (cheap masks).
        common("json-char");
        rule = add_rule(kid, "\"\\\"\" " + repeat(rules_.at("json-char"), min, max) + " \"\\\"\"");
      }
    } else if (type == "integer") {
      rule = integer_rule(schema, kid, path);
    } else if (type == "number") {
      rule = common("json-number");
      for (auto& key : kBounds) {
        if (!schema.contains(key)) continue;
        // Non-negative numbers are json-number without its sign; other bounds on fractions are
        // refused.
        if (key != "minimum" || !schema[key].is_number() || schema[key].get<double>() != 0)
          unsupported(
              join(path, key),
              "on a number only 'minimum': 0 is supported (bounds of any value need type integer)");
        rule = add_rule(
            kid, R"(( "0" | [1-9] [0-9]{0,15} ) ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,2} )?)");
      }
    } else if (type == "boolean") {
      rule = common("json-boolean");
    } else {
      rule = common("json-null");
    }
    body += (k ? " | " : "") + rule;
  }
  if (types.size() == 1) return body;
  return add_rule(name, body);
}

// An integer between the schema's bounds (minimum, maximum and their exclusive forms as numbers),
// within json-integer's 16 digits.
std::string JsonSchemaGrammar::integer_rule(const json& schema, const std::string& name,
                                            const std::string& path) {
  int64_t lo = -kLargest, hi = kLargest;
  bool bounded = false;
  for (auto& key : kBounds) {
    auto it = schema.find(key);
    if (it == schema.end()) continue;
    if (!it->is_number())
      unsupported(join(path, key), "must be a number (draft 4's boolean form is not supported)");
    const double v = it->get<double>();
    if (!std::isfinite(v) || std::fabs(v) > 1e17) unsupported(join(path, key), "is out of range");
    bounded = true;
    if (key == "minimum") lo = std::max(lo, int64_t(std::ceil(v)));
    if (key == "exclusiveMinimum") lo = std::max(lo, int64_t(std::floor(v)) + 1);
    if (key == "maximum") hi = std::min(hi, int64_t(std::floor(v)));
    if (key == "exclusiveMaximum") hi = std::min(hi, int64_t(std::ceil(v)) - 1);
  }
  if (!bounded) return common("json-integer");
  lo = std::max(lo, -kLargest);
  hi = std::min(hi, kLargest);
  if (lo > hi) unsupported(path, "no integer lies between its bounds");
  return add_rule(name, integer_range(lo, hi));
}

// Properties in the order written; the required ones always, the others optional. Two rule
// chains place the commas: F<i> (nothing written yet) and R<i> (something written before).
std::string JsonSchemaGrammar::object_rule(const json& schema, const std::string& name,
                                           Context& context, const std::string& path) {
  struct Property {
    std::string key, value;
    bool required;
  };
  std::vector<Property> properties;
  std::set<std::string> required;
  if (auto it = schema.find("required"); it != schema.end()) {
    if (!it->is_array()) unsupported(join(path, "required"), "must be an array of strings");
    for (auto& r : *it) {
      if (!r.is_string()) unsupported(join(path, "required"), "must be an array of strings");
      required.insert(r.get<std::string>());
    }
  }
  std::set<std::string> declared;
  if (auto it = schema.find("properties"); it != schema.end()) {
    if (!it->is_object()) unsupported(join(path, "properties"), "must be an object");
    size_t k = 0;
    for (auto& [key, sub] : it->items()) {
      const std::string value = compile(sub, name + "-p" + std::to_string(k++), context,
                                        join(join(path, "properties"), key));
      properties.push_back({key, value, required.count(key) > 0});
      declared.insert(key);
    }
  }
  for (auto& r : required)  // required but not described: any value
    if (!declared.count(r)) {
      properties.push_back({r, common("json-value"), true});
      declared.insert(r);
    }

  // Additional properties: absent or true allow any other key; false none; a schema constrains
  // their values. Keys never repeat a declared name (JSON.parse would keep the last one).
  std::string extra_value;
  auto ap = schema.find("additionalProperties");
  if (ap == schema.end() || (ap->is_boolean() && ap->get<bool>())) {
    extra_value = common("json-value");
  } else if (ap->is_object()) {
    extra_value = compile(*ap, name + "-extra", context, join(path, "additionalProperties"));
  } else if (!ap->is_boolean()) {
    unsupported(join(path, "additionalProperties"), "must be a boolean or a schema");
  }

  common("ws");
  std::string extra_kv;
  if (!extra_value.empty()) {
    std::string key = common("json-string");
    if (!declared.empty()) {
      // A trie of the declared names over code points: a key may follow a name only while it
      // has not diverged (no escapes there), and may not stop at a name's end.
      struct TrieNode {
        std::map<uint32_t, size_t> kids;
        bool end = false;
      };
      std::vector<TrieNode> trie(1);
      for (auto& d : declared) {
        size_t node = 0;
        for (uint32_t cp : code_points(d)) {
          auto [it, fresh] = trie[node].kids.emplace(cp, trie.size());
          if (fresh) trie.emplace_back();
          node = it->second;
        }
        trie[node].end = true;
      }
      const std::string rest = add_rule(name + "-krest", common("json-char") + "* \"\\\"\"");
      for (size_t n = 0; n < trie.size(); ++n) {
        std::string body, excluded = "\"\\\\\\x00-\\x1F";
        if (!trie[n].end) body = "\"\\\"\"";
        for (auto [cp, kid] : trie[n].kids) {
          body += (body.empty() ? "" : " | ") + std::string("\"") + hex(cp) + "\" " + name + "-k" +
                  std::to_string(kid);
          excluded += hex(cp);
        }
        body += (body.empty() ? "" : " | ") + std::string("[^") + excluded + "] " + rest;
        add_rule(name + "-k" + std::to_string(n), body);
      }
      key = add_rule(name + "-key", "\"\\\"\" " + name + "-k0");
    }
    extra_kv = add_rule(name + "-kv", key + " ws \":\" ws " + extra_value);
  }

  const size_t n = properties.size();
  std::string f_next =
      extra_kv.empty() ? "" : "( " + extra_kv + " ws ( \",\" ws " + extra_kv + " ws )* )?";
  std::string r_next = extra_kv.empty() ? "" : "( \",\" ws " + extra_kv + " ws )*";
  for (size_t k = n; k-- > 0;) {
    const Property& p = properties[k];
    const std::string kv = grammar_literal(json(p.key).dump()) + " ws \":\" ws " + p.value + " ws";
    const std::string rk = name + "-r" + std::to_string(k), fk = name + "-f" + std::to_string(k);
    add_rule(rk, "\",\" ws " + kv + (r_next.empty() ? "" : " " + r_next) +
                     (p.required ? "" : " | " + (r_next.empty() ? "\"\"" : r_next)));
    add_rule(fk, kv + (r_next.empty() ? "" : " " + r_next) +
                     (p.required ? "" : " | " + (f_next.empty() ? "\"\"" : f_next)));
    r_next = rk;
    f_next = fk;
  }
  return add_rule(name, "\"{\" ws " + (f_next.empty() ? "" : f_next + " ") + "\"}\"");
}

std::string json_schema_grammar(const json& schema) {
  JsonSchemaGrammar g;
  const std::string value = g.add(schema);
  return g.text(g.common("lead-ws") + " " + value);
}

std::string json_object_grammar() {
  JsonSchemaGrammar g;
  const std::string value = g.add(json{{"type", "object"}});
  return g.text(g.common("lead-ws") + " " + value);
}

}  // namespace qwen3
