// Python semantics for template values: truthiness, str(), json.dumps, float repr and the
// operators.
#include "chat/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

#include "qwen3/error.h"

namespace qwen3::chat {

void Site::fail(const std::string& message) const {
  throw Error(ErrorKind::invalid_argument,
              "chat template " + std::to_string(line) + ":" + std::to_string(col) + ": " + message);
}

void Site::check_size(size_t size) const {
  if (size > max_size)
    fail("value of " + std::to_string(size) + " exceeds the limit of " + std::to_string(max_size));
}

void Site::check_items(size_t count) const {
  if (count > max_items)
    fail("list of " + std::to_string(count) + " items exceeds the limit of " +
         std::to_string(max_items));
}

void Site::check_nesting(const Json& element, int levels) const {
  if (nesting_depth(element) + levels > kMaxDepth)
    fail("value nested deeper than " + std::to_string(kMaxDepth) + " levels");
}

int nesting_depth(const Json& j) {
  int deepest = 0;
  std::vector<std::pair<const Json*, int>> stack = {{&j, 0}};
  while (!stack.empty()) {
    auto [node, depth] = stack.back();
    stack.pop_back();
    if (!node->is_structured()) continue;
    deepest = std::max(deepest, depth + 1);
    if (deepest > kMaxDepth) return deepest;
    for (const auto& child : *node) stack.emplace_back(&child, depth + 1);
  }
  return deepest;
}

bool truthy(const Value& v) {
  switch (v.kind) {
    case Value::Kind::undefined: return false;
    case Value::Kind::ns:
    case Value::Kind::function: return true;
    case Value::Kind::data: break;
  }
  const Json& j = v.json();
  if (j.is_null()) return false;
  if (j.is_boolean()) return j.get<bool>();
  if (j.is_number_float()) return j.get<double>() != 0.0;
  if (j.is_number()) return j.get<int64_t>() != 0;
  if (j.is_string()) return !j.get_ref<const std::string&>().empty();
  return !j.empty();
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  // Shortest round-trip digits, laid out like Python's repr: fixed for 1e-4 <= |d| < 1e16.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  const auto e_pos = sci.find('e');
  const int exponent = std::stoi(sci.substr(e_pos + 1));
  std::string sign;
  std::string mantissa = sci.substr(0, e_pos);
  if (mantissa[0] == '-') {
    sign = "-";
    mantissa.erase(0, 1);
  }
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits += c;
  }
  if (exponent >= -4 && exponent < 16) {
    std::string out;
    if (exponent < 0) {
      out = "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    } else if (static_cast<int>(digits.size()) <= exponent + 1) {
      out = digits + std::string(static_cast<size_t>(exponent + 1) - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, static_cast<size_t>(exponent + 1)) + "." +
            digits.substr(static_cast<size_t>(exponent + 1));
    }
    return sign + out;
  }
  std::string out = digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  char exp_buf[16];
  std::snprintf(exp_buf, sizeof exp_buf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  return sign + out + exp_buf;
}

namespace {

std::string json_string(const std::string& s) {
  return Json(s).dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string python_str_repr(const std::string& s) {
  const char quote =
      (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"' : '\'';
  std::string out(1, quote);
  for (unsigned char c : s) {
    if (c == '\\' || c == static_cast<unsigned char>(quote)) {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + quote;
}

std::string scalar_text(const Json& j) {
  if (j.is_null()) return "None";
  if (j.is_boolean()) return j.get<bool>() ? "True" : "False";
  if (j.is_number_float()) return float_repr(j.get<double>());
  return j.dump();
}

// Python repr() of a list or dict, as str() prints containers.
std::string python_repr(const Json& j) {
  if (j.is_string()) return python_str_repr(j.get_ref<const std::string&>());
  if (j.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < j.size(); ++i) out += (i ? ", " : "") + python_repr(j[i]);
    return out + "]";
  }
  if (j.is_object()) {
    std::string out = "{";
    bool first = true;
    for (const auto& [key, value] : j.items()) {
      out += (first ? "" : ", ") + python_str_repr(key) + ": " + python_repr(value);
      first = false;
    }
    return out + "}";
  }
  return scalar_text(j);
}

void dump(const Json& j, int indent, int level, std::string& out) {
  const bool pretty = indent >= 0;
  const auto newline = [&](int depth) {
    out += '\n';
    out.append(static_cast<size_t>(indent) * static_cast<size_t>(depth), ' ');
  };
  if (j.is_string()) {
    out += json_string(j.get_ref<const std::string&>());
  } else if (j.is_null()) {
    out += "null";
  } else if (j.is_boolean()) {
    out += j.get<bool>() ? "true" : "false";
  } else if (j.is_number_float()) {
    const double d = j.get<double>();
    out += std::isnan(d)   ? "NaN"
           : std::isinf(d) ? (d > 0 ? "Infinity" : "-Infinity")
                           : float_repr(d);
  } else if (j.is_number()) {
    out += j.dump();
  } else if (j.empty()) {
    out += j.is_array() ? "[]" : "{}";
  } else {
    out += j.is_array() ? '[' : '{';
    bool first = true;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!first) out += pretty ? "," : ", ";
      first = false;
      if (pretty) newline(level + 1);
      if (j.is_object()) out += json_string(it.key()) + ": ";
      dump(*it, indent, level + 1, out);
    }
    if (pretty) newline(level);
    out += j.is_array() ? ']' : '}';
  }
}

}  // namespace

std::string to_json_text(const Json& j, int indent) {
  std::string out;
  dump(j, indent, 0, out);
  return out;
}

std::string to_text(const Value& v) {
  switch (v.kind) {
    case Value::Kind::undefined: return "";
    case Value::Kind::ns: return "<Namespace " + python_repr(*v.attrs) + ">";
    case Value::Kind::function: return "<built-in function " + v.name + ">";
    case Value::Kind::data: break;
  }
  const Json& j = v.json();
  if (j.is_string()) return j.get<std::string>();
  if (j.is_structured()) return python_repr(j);
  return scalar_text(j);
}

std::string type_name(const Value& v) {
  switch (v.kind) {
    case Value::Kind::undefined: return "undefined";
    case Value::Kind::ns: return "namespace";
    case Value::Kind::function: return "function";
    case Value::Kind::data: break;
  }
  const Json& j = v.json();
  if (j.is_null()) return "NoneType";
  if (j.is_boolean()) return "bool";
  if (j.is_number_float()) return "float";
  if (j.is_number()) return "int";
  if (j.is_string()) return "str";
  if (j.is_array()) return "list";
  return "dict";
}

bool as_int(const Json& j, int64_t& out) {
  if (j.is_boolean()) {
    out = j.get<bool>() ? 1 : 0;
    return true;
  }
  if (j.is_number_unsigned()) {
    const auto u = j.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
    out = static_cast<int64_t>(u);
    return true;
  }
  if (j.is_number_integer()) {
    out = j.get<int64_t>();
    return true;
  }
  return false;
}

bool is_number(const Json& j) { return j.is_number() || j.is_boolean(); }

double as_double(const Json& j) {
  if (j.is_boolean()) return j.get<bool>() ? 1.0 : 0.0;
  return j.get<double>();
}

std::vector<std::string_view> characters(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xe  ? 3
                 : (c >> 3) == 0x1e ? 4
                                    : 1;
    if (i + len > s.size()) len = 1;
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) {
        len = 1;
        break;
      }
    }
    out.push_back(s.substr(i, len));
    i += len;
  }
  return out;
}

namespace {

Value arithmetic(const Site& site, std::string_view op, const Json& a, const Json& b) {
  int64_t x = 0, y = 0;
  if (as_int(a, x) && as_int(b, y) && op != "/") {
    int64_t r = 0;
    bool overflow = false;
    if (op == "+") overflow = __builtin_add_overflow(x, y, &r);
    if (op == "-") overflow = __builtin_sub_overflow(x, y, &r);
    if (op == "*") overflow = __builtin_mul_overflow(x, y, &r);
    if (overflow)
      site.fail("integer overflow");  // Python would grow a bignum; no template needs one
    if (op == "+" || op == "-" || op == "*") return Value::of(r);
    if (op == "//" || op == "%") {
      if (y == 0) site.fail("integer division or modulo by zero");
      if (x == std::numeric_limits<int64_t>::min() && y == -1) site.fail("integer overflow");
      int64_t q = x / y, m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) {  // Python floors toward negative infinity
        --q;
        m += y;
      }
      return Value::of(op == "//" ? q : m);
    }
    if (op == "**" && y >= 0) {
      if (x == 0 || x == 1) return Value::of(y == 0 ? int64_t{1} : x);
      if (x == -1) return Value::of(y % 2 ? int64_t{-1} : int64_t{1});
      int64_t acc = 1;  // |x| >= 2 overflows within 63 steps, so the loop is short
      for (int64_t i = 0; i < y; ++i) {
        if (__builtin_mul_overflow(acc, x, &acc)) site.fail("integer overflow");
      }
      return Value::of(acc);
    }
  }
  const double x_d = as_double(a), y_d = as_double(b);
  if (op == "+") return Value::of(x_d + y_d);
  if (op == "-") return Value::of(x_d - y_d);
  if (op == "*") return Value::of(x_d * y_d);
  if (op == "**") return Value::of(std::pow(x_d, y_d));
  if (y_d == 0) site.fail("float division by zero");
  if (op == "/") return Value::of(x_d / y_d);
  if (op == "//") return Value::of(std::floor(x_d / y_d));
  double m = std::fmod(x_d, y_d);
  if (m != 0 && ((m < 0) != (y_d < 0))) m += y_d;
  return Value::of(m);
}

Value repeat(const Site& site, const Json& seq, int64_t times) {
  if (times <= 0) return Value::of(seq.is_string() ? Json("") : Json::array());
  const size_t unit = seq.is_string() ? seq.get_ref<const std::string&>().size() : seq.size();
  const size_t cap = seq.is_string() ? site.max_size : site.max_items;
  if (unit != 0 && static_cast<uint64_t>(times) > cap / unit)
    site.fail("repetition exceeds the size limit");
  Json out = seq.is_string() ? Json("") : Json::array();
  for (int64_t i = 0; i < times && unit != 0; ++i) {
    if (seq.is_string()) {
      out.get_ref<std::string&>() += seq.get_ref<const std::string&>();
    } else {
      for (const auto& e : seq) out.push_back(e);
    }
  }
  return Value::of(std::move(out));
}

int order(const Site& site, const Value& a, const Value& b) {
  if (a.is_data() && b.is_data()) {
    const Json& x = a.json();
    const Json& y = b.json();
    if (is_number(x) && is_number(y)) {
      int64_t i = 0, k = 0;
      if (as_int(x, i) && as_int(y, k)) return i < k ? -1 : i > k ? 1 : 0;
      const double p = as_double(x), q = as_double(y);
      return p < q ? -1 : p > q ? 1 : 0;
    }
    if (x.is_string() && y.is_string()) {
      const int c = x.get_ref<const std::string&>().compare(y.get_ref<const std::string&>());
      return c < 0 ? -1 : c > 0 ? 1 : 0;
    }
  }
  site.fail("cannot order " + type_name(a) + " and " + type_name(b));
}

}  // namespace

bool equals(const Value& a, const Value& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Value::Kind::undefined: return true;
    case Value::Kind::ns: return a.attrs == b.attrs;
    case Value::Kind::function: return a.name == b.name;
    case Value::Kind::data: break;
  }
  const Json& x = a.json();
  const Json& y = b.json();
  if (is_number(x) && is_number(y)) {
    int64_t i = 0, k = 0;
    if (as_int(x, i) && as_int(y, k)) return i == k;
    return as_double(x) == as_double(y);
  }
  return x == y;
}

bool contains(const Site& site, const Value& container, const Value& item) {
  if (container.is_undefined()) return false;  // Jinja's Undefined iterates as empty
  if (container.is_data()) {
    const Json& c = container.json();
    if (c.is_string()) {
      if (!item.is_data() || !item.json().is_string())
        site.fail("'in <string>' requires a string, got " + type_name(item));
      return c.get_ref<const std::string&>().find(item.json().get_ref<const std::string&>()) !=
             std::string::npos;
    }
    if (c.is_array()) {
      for (const auto& e : c) {
        if (equals(Value::child(container, e), item)) return true;
      }
      return false;
    }
    if (c.is_object())
      return item.is_data() && item.json().is_string() &&
             c.contains(item.json().get<std::string>());
  }
  if (container.kind == Value::Kind::ns) {
    return item.is_data() && item.json().is_string() &&
           container.attrs->contains(item.json().get<std::string>());
  }
  site.fail("argument of type " + type_name(container) + " is not iterable");
}

Value binary_op(const Site& site, std::string_view op, const Value& a, const Value& b) {
  if (op == "==") return Value::of(equals(a, b));
  if (op == "!=") return Value::of(!equals(a, b));
  if (op == "<") return Value::of(order(site, a, b) < 0);
  if (op == "<=") return Value::of(order(site, a, b) <= 0);
  if (op == ">") return Value::of(order(site, a, b) > 0);
  if (op == ">=") return Value::of(order(site, a, b) >= 0);
  if (op == "in") return Value::of(contains(site, b, a));
  if (op == "~") {
    std::string s = to_text(a) + to_text(b);
    site.check_size(s.size());
    return Value::of(std::move(s));
  }
  if (!a.is_data() || !b.is_data()) {
    site.fail("unsupported operand types for " + std::string(op) + ": " + type_name(a) + " and " +
              type_name(b));
  }
  const Json& x = a.json();
  const Json& y = b.json();
  if (is_number(x) && is_number(y)) return arithmetic(site, op, x, y);
  if (op == "+" && x.is_string() && y.is_string()) {
    site.check_size(x.get_ref<const std::string&>().size() +
                    y.get_ref<const std::string&>().size());
    return Value::of(x.get<std::string>() + y.get_ref<const std::string&>());
  }
  if (op == "+" && x.is_array() && y.is_array()) {
    site.check_items(x.size() + y.size());
    Json out = x;
    for (const auto& e : y) out.push_back(e);
    return Value::of(std::move(out));
  }
  int64_t times = 0;
  if (op == "*" && (x.is_string() || x.is_array()) && !y.is_boolean() && as_int(y, times))
    return repeat(site, x, times);
  if (op == "*" && (y.is_string() || y.is_array()) && !x.is_boolean() && as_int(x, times))
    return repeat(site, y, times);
  site.fail("unsupported operand types for " + std::string(op) + ": " + type_name(a) + " and " +
            type_name(b));
}

}  // namespace qwen3::chat
