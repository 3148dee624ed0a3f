// Jinja's filters, tests, global functions and the Python methods of str and dict that templates
// call.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chat/value.h"

namespace qwen3::chat {

struct Args {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> named;
  // The argument at `index` or called `name`, else null.
  const Value* get(size_t index, std::string_view name) const;
  // The keyword argument called `name`, else null.
  const Value* named_arg(std::string_view name) const;
};

Value apply_filter(const Site& site, const std::string& name, const Value& subject,
                   const Args& args);
bool apply_test(const Site& site, const std::string& name, const Value& subject, const Args& args);
// `object.name(args)`; fails for unknown methods.
Value call_method(const Site& site, const Value& object, const std::string& name, const Args& args);
// raise_exception, namespace, range, dict.
bool is_global_function(const std::string& name);
Value call_function(const Site& site, const std::string& name, const Args& args);

}  // namespace qwen3::chat
