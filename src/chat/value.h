// Template values: JSON data (shared, zero-copy views into messages), Jinja's undefined,
// namespaces, builtins.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace qwen3::chat {

// Insertion-ordered, because HF's tojson is json.dumps(sort_keys=False): tool schemas keep their
// key order.
using Json = nlohmann::ordered_json;

struct Value {
  enum class Kind { undefined, data, ns, function };
  Kind kind = Kind::undefined;
  // Immutable and shared: attribute access aliases into the parent instead of copying a whole
  // conversation.
  std::shared_ptr<const Json> data;
  std::shared_ptr<Json> attrs;  // ns: the namespace's attributes, mutable and shared by every copy
  std::string name;             // function: the builtin's or macro's name
  const void* macro = nullptr;  // function: the macro's definition (a Stmt), null for a builtin

  static Value of(Json j) {
    Value v;
    v.kind = Kind::data;
    v.data = std::make_shared<const Json>(std::move(j));
    return v;
  }
  // A view of `element`, which lives inside `parent`'s data.
  static Value child(const Value& parent, const Json& element) {
    Value v;
    v.kind = Kind::data;
    v.data = std::shared_ptr<const Json>(parent.data, &element);
    return v;
  }
  static Value function(std::string name) {
    Value v;
    v.kind = Kind::function;
    v.name = std::move(name);
    return v;
  }
  bool is_data() const { return kind == Kind::data; }
  bool is_undefined() const { return kind == Kind::undefined; }
  const Json& json() const { return *data; }
};

// Nesting of lists and dicts any value may reach. Copying, comparing and printing JSON recurse,
// so a value built deeper (a loop wrapping a list in a list) must be refused before it is built.
inline constexpr int kMaxDepth = 256;

// Nesting depth of `j` (a scalar is 0), counted without recursion; stops early past kMaxDepth.
int nesting_depth(const Json& j);

// Where an expression sits in the template, and the size cap every value must respect; builtins
// report errors through it so each message carries line:col.
struct Site {
  int line = 0;
  int col = 0;
  size_t max_size = 0;   // bytes of a string
  size_t max_items = 0;  // elements of a list, far fewer: each costs a JSON node and a loop step
  [[noreturn]] void fail(const std::string& message) const;
  void check_size(size_t size) const;
  void check_items(size_t count) const;
  // Fails unless `element` can sit `levels` deeper inside a new list or dict.
  void check_nesting(const Json& element, int levels = 1) const;
};

// Python truthiness: empty strings, containers, 0, None and undefined are false.
bool truthy(const Value& v);
// Python str(): what {{ x }} and ~ print.
std::string to_text(const Value& v);
// Python json.dumps(ensure_ascii=False) with separators (", ", ": "), or indented when indent >= 0.
std::string to_json_text(const Json& j, int indent = -1);
std::string float_repr(double d);
// Python type name, for error messages.
std::string type_name(const Value& v);

// Integers are int64 even when nlohmann parsed them as unsigned; false when not an integer.
bool as_int(const Json& j, int64_t& out);
bool is_number(const Json& j);  // bool counts, as in Python
double as_double(const Json& j);

// UTF-8 characters as byte slices, so indexing and len() count code points like Python; a stray
// invalid byte counts as one character and survives slicing unchanged.
std::vector<std::string_view> characters(std::string_view s);

// Operators of the expression language. `op` is the token: + - * / // % ** ~ == != < <= > >= in.
Value binary_op(const Site& site, std::string_view op, const Value& a, const Value& b);
bool equals(const Value& a, const Value& b);
bool contains(const Site& site, const Value& container, const Value& item);

}  // namespace qwen3::chat
