// Jinja's filters, tests, global functions and the Python str/dict methods that templates call.
#include "chat/builtins.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "qwen3/error.h"

namespace qwen3::chat {

const Value* Args::get(size_t index, std::string_view name) const {
  return index < positional.size() ? &positional[index] : named_arg(name);
}

const Value* Args::named_arg(std::string_view name) const {
  for (const auto& [key, value] : named) {
    if (key == name) return &value;
  }
  return nullptr;
}

namespace {

const std::string& need_string(const Site& site, const Value* v, const char* what) {
  if (!v || !v->is_data() || !v->json().is_string()) {
    site.fail(std::string(what) + " expects a string, got " + (v ? type_name(*v) : "nothing"));
  }
  return v->json().get_ref<const std::string&>();
}

int64_t need_int(const Site& site, const Value* v, const char* what) {
  int64_t out = 0;
  if (!v || !v->is_data() || !as_int(v->json(), out)) {
    site.fail(std::string(what) + " expects an integer, got " + (v ? type_name(*v) : "nothing"));
  }
  return out;
}

// Python's str.isspace(): the characters of bidirectional class WS, B or S, or category Zs.
// str.strip() and split() without arguments, and so Jinja's trim, remove all of them: a message
// that starts with U+3000 or a no-break space loses it in HF too.
bool python_space(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

// Bytes of the character at s[i], as characters() cuts: a stray byte is a character of its own.
size_t char_size(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 1;
  if (i + len > s.size()) return 1;
  for (size_t k = 1; k < len; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 1;
  }
  return len;
}

// Start of the character that ends at s[end - 1].
size_t char_start_before(std::string_view s, size_t end) {
  for (size_t k = 1; k <= 4 && k <= end; ++k) {
    const size_t start = end - k;
    if ((static_cast<unsigned char>(s[start]) & 0xc0) != 0x80)
      return char_size(s.substr(0, end), start) == k ? start : end - 1;
  }
  return end - 1;
}

uint32_t code_point(std::string_view c) {
  const auto b = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(c[i])); };
  switch (c.size()) {
    case 1: return b(0) < 0x80 ? b(0) : 0xFFFFFFFF;  // a stray byte is no character at all
    case 2: return ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
    case 3: return ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
    default:
      return ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
  }
}

// The characters a strip removes: Python's whitespace, or those of the `chars` argument.
struct StripSet {
  bool whitespace = true;
  std::vector<std::string_view> chars;  // when not whitespace; views into the argument
  bool has(std::string_view c) const {
    if (whitespace) return python_space(code_point(c));
    return std::find(chars.begin(), chars.end(), c) != chars.end();
  }
};

StripSet strip_set(const Site& site, const Args& args) {
  const Value* chars = args.get(0, "chars");
  if (!chars || (chars->is_data() && chars->json().is_null())) return {};
  return {false, characters(need_string(site, chars, "strip"))};
}

std::string strip(const std::string& s, const StripSet& set, bool left, bool right) {
  size_t begin = 0, end = s.size();
  const std::string_view view = s;
  if (left) {
    while (begin < end) {
      const size_t n = char_size(view.substr(0, end), begin);
      if (!set.has(view.substr(begin, n))) break;
      begin += n;
    }
  }
  if (right) {
    while (end > begin) {
      const size_t start = std::max(char_start_before(view, end), begin);
      if (!set.has(view.substr(start, end - start))) break;
      end = start;
    }
  }
  return s.substr(begin, end - begin);
}

Json split(const Site& site, const std::string& s, const Args& args) {
  const Value* sep_value = args.get(0, "sep");
  const int64_t max_split =
      args.get(1, "maxsplit") ? need_int(site, args.get(1, "maxsplit"), "split") : -1;
  Json out = Json::array();
  if (!sep_value || (sep_value->is_data() && sep_value->json().is_null())) {
    // No separator: runs of whitespace split and leading/trailing whitespace vanish.
    const std::string_view view = s;
    const StripSet space;
    size_t pos = 0, word = std::string::npos;
    while (pos < view.size()) {
      const size_t n = char_size(view, pos);
      const bool is_space = space.has(view.substr(pos, n));
      if (word == std::string::npos && !is_space) {
        if (max_split >= 0 && static_cast<int64_t>(out.size()) == max_split) {
          out.push_back(s.substr(pos));  // Python keeps the rest whole, trailing spaces too
          return out;
        }
        word = pos;
      } else if (word != std::string::npos && is_space) {
        out.push_back(s.substr(word, pos - word));
        word = std::string::npos;
      }
      pos += n;
    }
    if (word != std::string::npos) out.push_back(s.substr(word));
    return out;
  }
  const std::string& sep = need_string(site, sep_value, "split");
  if (sep.empty()) site.fail("split: empty separator");
  size_t pos = 0;
  while (true) {
    const size_t hit = s.find(sep, pos);
    if (hit == std::string::npos ||
        (max_split >= 0 && static_cast<int64_t>(out.size()) == max_split)) {
      out.push_back(s.substr(pos));
      return out;
    }
    out.push_back(s.substr(pos, hit - pos));
    pos = hit + sep.size();
  }
}

std::string replace(const Site& site, const std::string& s, const std::string& old,
                    const std::string& with, int64_t count) {
  if (old.empty()) site.fail("replace: empty search string is not supported");
  std::string out;
  size_t pos = 0;
  for (int64_t n = 0; count < 0 || n < count; ++n) {
    const size_t hit = s.find(old, pos);
    if (hit == std::string::npos) break;
    out.append(s, pos, hit - pos);
    out += with;
    site.check_size(out.size());
    pos = hit + old.size();
  }
  out.append(s, pos);
  site.check_size(out.size());
  return out;
}

std::string change_case(std::string s, int (*f)(int)) {
  for (char& c : s) c = static_cast<char>(f(static_cast<unsigned char>(c)));
  return s;
}

std::string capitalize(const std::string& s) {
  std::string out = change_case(s, [](int c) { return std::tolower(c); });
  if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
  return out;
}

bool prefix_match(const Site& site, const std::string& s, const Value* arg, bool at_start) {
  auto test = [&](const std::string& p) { return at_start ? s.starts_with(p) : s.ends_with(p); };
  if (arg && arg->is_data() && arg->json().is_array()) {  // Python accepts a tuple of prefixes
    for (const auto& p : arg->json()) {
      if (p.is_string() && test(p.get_ref<const std::string&>())) return true;
    }
    return false;
  }
  return test(need_string(site, arg, at_start ? "startswith" : "endswith"));
}

Value string_method(const Site& site, const std::string& s, const std::string& name,
                    const Args& args) {
  if (name == "startswith" || name == "endswith") {
    return Value::of(prefix_match(site, s, args.get(0, "prefix"), name == "startswith"));
  }
  if (name == "strip") return Value::of(strip(s, strip_set(site, args), true, true));
  if (name == "lstrip") return Value::of(strip(s, strip_set(site, args), true, false));
  if (name == "rstrip") return Value::of(strip(s, strip_set(site, args), false, true));
  if (name == "split") return Value::of(split(site, s, args));
  if (name == "upper") return Value::of(change_case(s, [](int c) { return std::toupper(c); }));
  if (name == "lower") return Value::of(change_case(s, [](int c) { return std::tolower(c); }));
  if (name == "capitalize") return Value::of(capitalize(s));
  if (name == "replace") {
    const Value* count = args.get(2, "count");
    return Value::of(replace(site, s, need_string(site, args.get(0, "old"), "replace"),
                             need_string(site, args.get(1, "new"), "replace"),
                             count ? need_int(site, count, "replace") : -1));
  }
  if (name == "find") {
    const size_t hit = s.find(need_string(site, args.get(0, "sub"), "find"));
    return Value::of(hit == std::string::npos
                         ? int64_t{-1}
                         : static_cast<int64_t>(characters(s.substr(0, hit)).size()));
  }
  if (name == "join") {
    const Value* items = args.get(0, "iterable");
    if (!items || !items->is_data() || !items->json().is_array()) site.fail("join expects a list");
    std::string out;
    bool first = true;
    for (const auto& e : items->json()) {
      if (!e.is_string()) site.fail("join: sequence item is not a string");
      if (!first) out += s;
      out += e.get_ref<const std::string&>();
      first = false;
      site.check_size(out.size());
    }
    return Value::of(std::move(out));
  }
  site.fail("str has no method '" + name + "'");
}

Value dict_method(const Site& site, const Value& object, const std::string& name,
                  const Args& args) {
  const Json& d = object.json();
  if (name == "items" || name == "keys" || name == "values") {
    site.check_nesting(d, 1);  // items() wraps each value in a pair inside a list: one level deeper
    Json out = Json::array();
    for (auto it = d.begin(); it != d.end(); ++it) {
      if (name == "items") {
        out.push_back(Json::array({it.key(), *it}));
      } else {
        out.push_back(name == "keys" ? Json(it.key()) : *it);
      }
    }
    return Value::of(std::move(out));
  }
  if (name == "get") {
    const std::string& key = need_string(site, args.get(0, "key"), "get");
    auto it = d.find(key);
    if (it != d.end()) return Value::child(object, *it);
    const Value* fallback = args.get(1, "default");
    return fallback ? *fallback : Value::of(nullptr);
  }
  site.fail("dict has no method '" + name + "'");
}

int64_t length(const Site& site, const Value& v) {
  if (v.is_undefined()) return 0;
  if (v.is_data()) {
    const Json& j = v.json();
    if (j.is_string())
      return static_cast<int64_t>(characters(j.get_ref<const std::string&>()).size());
    if (j.is_structured()) return static_cast<int64_t>(j.size());
  }
  site.fail("object of type " + type_name(v) + " has no len()");
}

Json as_list(const Site& site, const Value& v) {
  if (v.is_data()) {
    const Json& j = v.json();
    if (j.is_array()) return j;
    if (j.is_string()) {
      Json out = Json::array();
      for (auto c : characters(j.get_ref<const std::string&>())) out.push_back(std::string(c));
      return out;
    }
    if (j.is_object()) {
      Json out = Json::array();
      for (auto it = j.begin(); it != j.end(); ++it) out.push_back(it.key());
      return out;
    }
  }
  if (v.is_undefined()) return Json::array();
  site.fail(type_name(v) + " is not iterable");
}

// An item's attribute for selectattr/map: a dict key, else undefined.
Value attribute_of(const Value& item, const std::string& name) {
  if (item.is_data() && item.json().is_object()) {
    auto it = item.json().find(name);
    if (it != item.json().end()) return Value::child(item, *it);
  }
  return Value();
}

// select/reject/selectattr/rejectattr: `args` holds [attribute,] test name, then the test's
// arguments.
Value filter_items(const Site& site, const std::string& name, const Value& subject,
                   const Args& args) {
  const bool by_attribute = name.ends_with("attr");
  const bool keep_matches = name.starts_with("select");
  const size_t first_test_arg = by_attribute ? 1 : 0;
  std::string attribute;
  if (by_attribute) attribute = need_string(site, args.get(0, "attribute"), name.c_str());
  const Value* test = args.get(first_test_arg, "test");
  Args test_args;
  for (size_t i = first_test_arg + 1; i < args.positional.size(); ++i)
    test_args.positional.push_back(args.positional[i]);
  const Value list = Value::of(as_list(site, subject));
  Json out = Json::array();
  for (const auto& element : list.json()) {
    const Value item = Value::child(list, element);
    const Value probe = by_attribute ? attribute_of(item, attribute) : item;
    const bool match =
        test ? apply_test(site, need_string(site, test, name.c_str()), probe, test_args)
             : truthy(probe);
    if (match == keep_matches) out.push_back(element);
  }
  return Value::of(std::move(out));
}

}  // namespace

Value apply_filter(const Site& site, const std::string& name, const Value& subject,
                   const Args& args) {
  if (name == "length" || name == "count") return Value::of(length(site, subject));
  if (name == "default" || name == "d") {
    const Value* boolean = args.get(1, "boolean");
    const bool use_fallback =
        subject.is_undefined() || (boolean && truthy(*boolean) && !truthy(subject));
    if (!use_fallback) return subject;
    const Value* fallback = args.get(0, "default_value");
    return fallback ? *fallback : Value::of("");
  }
  if (name == "tojson") {
    if (!subject.is_data()) site.fail("tojson: cannot serialise " + type_name(subject));
    const Value* indent = args.get(0, "indent");
    const bool has_indent = indent && !(indent->is_data() && indent->json().is_null());
    std::string text = to_json_text(
        subject.json(),
        has_indent ? static_cast<int>(std::clamp<int64_t>(need_int(site, indent, "tojson"), 0, 64))
                   : -1);
    site.check_size(text.size());
    return Value::of(std::move(text));
  }
  if (name == "string") return Value::of(to_text(subject));
  if (name == "list") return Value::of(as_list(site, subject));
  if (name == "first" || name == "last") {
    Json list = as_list(site, subject);
    if (list.empty()) return Value();
    return Value::of(name == "first" ? list.front() : list.back());
  }
  if (name == "reverse") {
    if (subject.is_data() && subject.json().is_string()) {
      auto chars = characters(subject.json().get_ref<const std::string&>());
      std::string out;
      for (auto it = chars.rbegin(); it != chars.rend(); ++it) out += *it;
      return Value::of(std::move(out));
    }
    Json list = as_list(site, subject);
    std::reverse(list.begin(), list.end());
    return Value::of(std::move(list));
  }
  if (name == "join") {
    Json list = as_list(site, subject);
    const Value* sep = args.get(0, "d");
    const std::string separator = sep ? to_text(*sep) : "";
    std::string out;
    for (size_t i = 0; i < list.size(); ++i) {
      if (i) out += separator;
      out += to_text(Value::of(list[i]));
      site.check_size(out.size());
    }
    return Value::of(std::move(out));
  }
  if (name == "int") {
    if (subject.is_data()) {
      const Json& j = subject.json();
      int64_t i = 0;
      if (as_int(j, i)) return Value::of(i);
      if (j.is_number_float() && std::abs(j.get<double>()) < 9e18)
        return Value::of(static_cast<int64_t>(j.get<double>()));
      if (j.is_string()) {
        try {
          size_t used = 0;
          const auto s = strip(j.get<std::string>(), StripSet{}, true, true);
          const long long v = std::stoll(s, &used);
          if (used == s.size()) return Value::of(static_cast<int64_t>(v));
        } catch (const std::exception&) {}
      }
    }
    return Value::of(int64_t{0});
  }
  if (name == "abs" && subject.is_data() && is_number(subject.json())) {
    int64_t i = 0;
    if (as_int(subject.json(), i) && i != INT64_MIN) return Value::of(i < 0 ? -i : i);
    return Value::of(std::abs(as_double(subject.json())));
  }
  if (name == "safe") return subject;
  if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr") {
    return filter_items(site, name, subject, args);
  }
  if (name == "map") {
    // map(attribute='x', default=d) or map('filter', args...).
    const Value list = Value::of(as_list(site, subject));
    const Value* attribute = args.named_arg("attribute");
    const Value* fallback = args.named_arg("default");
    Args filter_args;
    for (size_t i = 1; i < args.positional.size(); ++i)
      filter_args.positional.push_back(args.positional[i]);
    Json out = Json::array();
    for (const auto& element : list.json()) {
      const Value item = Value::child(list, element);
      Value mapped = attribute ? attribute_of(item, need_string(site, attribute, "map"))
                               : apply_filter(site, need_string(site, args.get(0, "filter"), "map"),
                                              item, filter_args);
      if (mapped.is_undefined() && fallback) mapped = *fallback;
      if (!mapped.is_data()) site.fail("map: cannot collect " + type_name(mapped));
      out.push_back(mapped.json());
    }
    return Value::of(std::move(out));
  }
  if (name == "items") {
    // Jinja's own message: Qwen3.5's template reaches it with tool-call arguments given as a
    // JSON string, and HF fails with exactly this.
    if (subject.is_undefined()) return Value::of(Json::array());
    if (!subject.is_data() || !subject.json().is_object())
      site.fail("Can only get item pairs from a mapping.");
    return dict_method(site, subject, "items", args);
  }
  if (subject.is_data() && subject.json().is_string()) {
    const std::string& s = subject.json().get_ref<const std::string&>();
    if (name == "trim") return Value::of(strip(s, strip_set(site, args), true, true));
    if (name == "upper" || name == "lower" || name == "capitalize" || name == "replace") {
      return string_method(site, s, name, args);
    }
  }
  if (name == "trim" || name == "upper" || name == "lower" || name == "capitalize" ||
      name == "replace" || name == "abs") {
    site.fail("filter '" + name + "' cannot apply to " + type_name(subject));
  }
  site.fail("unknown filter '" + name + "'");
}

bool apply_test(const Site& site, const std::string& name, const Value& subject, const Args& args) {
  const bool data = subject.is_data();
  const Json* j = data ? &subject.json() : nullptr;
  if (name == "defined") return !subject.is_undefined();
  if (name == "undefined") return subject.is_undefined();
  if (name == "none") return data && j->is_null();
  if (name == "string") return data && j->is_string();
  if (name == "number") return data && j->is_number();
  if (name == "integer") return data && j->is_number_integer();
  if (name == "float") return data && j->is_number_float();
  if (name == "boolean") return data && j->is_boolean();
  if (name == "true") return data && j->is_boolean() && j->get<bool>();
  if (name == "false") return data && j->is_boolean() && !j->get<bool>();
  if (name == "mapping") return (data && j->is_object()) || subject.kind == Value::Kind::ns;
  // Jinja's Undefined has a length (0) and iterates as empty, so it passes both.
  if (name == "sequence" || name == "iterable")
    return subject.is_undefined() || (data && (j->is_array() || j->is_string() || j->is_object()));
  if (name == "callable") return subject.kind == Value::Kind::function;
  if (name == "even" || name == "odd") {
    const int64_t v = need_int(site, &subject, name.c_str());
    return (v % 2 == 0) == (name == "even");
  }
  if (name == "eq" || name == "equalto" || name == "==" || name == "sameas") {
    const Value* other = args.get(0, "other");
    if (!other) site.fail("test '" + name + "' needs an argument");
    return equals(subject, *other);
  }
  if (name == "lower" || name == "upper") {
    if (!data || !j->is_string()) return false;
    const auto& s = j->get_ref<const std::string&>();
    return std::none_of(s.begin(), s.end(), [&](char c) {
      return name == "lower" ? std::isupper(static_cast<unsigned char>(c))
                             : std::islower(static_cast<unsigned char>(c));
    });
  }
  site.fail("unknown test '" + name + "'");
}

Value call_method(const Site& site, const Value& object, const std::string& name,
                  const Args& args) {
  if (object.is_data() && object.json().is_string())
    return string_method(site, object.json().get_ref<const std::string&>(), name, args);
  if (object.is_data() && object.json().is_object()) return dict_method(site, object, name, args);
  site.fail(type_name(object) + " has no method '" + name + "'");
}

bool is_global_function(const std::string& name) {
  return name == "raise_exception" || name == "namespace" || name == "range" || name == "dict";
}

Value call_function(const Site& site, const std::string& name, const Args& args) {
  if (name == "raise_exception") {
    const Value* message = args.get(0, "message");
    throw Error(ErrorKind::invalid_argument,
                "chat template raised: " + (message ? to_text(*message) : std::string()));
  }
  if (name == "namespace" || name == "dict") {
    Json attrs = Json::object();
    for (const auto& v : args.positional) {
      if (!v.is_data() || !v.json().is_object())
        site.fail(name + "() takes keyword arguments or a dict");
      site.check_nesting(v.json(), 0);
      for (auto it = v.json().begin(); it != v.json().end(); ++it) attrs[it.key()] = *it;
    }
    for (const auto& [key, v] : args.named) {
      if (!v.is_data()) site.fail(name + "(): cannot store " + type_name(v) + " in '" + key + "'");
      site.check_nesting(v.json());
      attrs[key] = v.json();
    }
    if (name == "dict") return Value::of(std::move(attrs));
    Value ns;
    ns.kind = Value::Kind::ns;
    ns.attrs = std::make_shared<Json>(std::move(attrs));
    return ns;
  }
  // range([start,] stop[, step]), materialised as a list within the size limit.
  std::vector<int64_t> bounds;
  for (const auto& v : args.positional) bounds.push_back(need_int(site, &v, "range"));
  if (bounds.empty() || bounds.size() > 3) site.fail("range expects 1 to 3 integers");
  const int64_t start = bounds.size() > 1 ? bounds[0] : 0;
  const int64_t stop = bounds.size() > 1 ? bounds[1] : bounds[0];
  const int64_t step = bounds.size() > 2 ? bounds[2] : 1;
  if (step == 0) site.fail("range() step must not be zero");
  // Count first (in floating point, which cannot overflow) so a huge range fails before allocating.
  const double count = std::ceil((static_cast<double>(stop) - static_cast<double>(start)) /
                                 static_cast<double>(step));
  if (count > static_cast<double>(site.max_items))
    site.fail("range of " + float_repr(count) + " items exceeds the limit");
  Json out = Json::array();
  for (int64_t i = start; step > 0 ? i < stop : i > stop;) {
    out.push_back(i);
    if (__builtin_add_overflow(i, step, &i)) break;
  }
  return Value::of(std::move(out));
}

}  // namespace qwen3::chat
