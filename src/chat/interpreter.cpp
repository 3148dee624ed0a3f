// Tree-walking evaluator: Jinja scoping (a loop body is a new scope; namespaces escape it), Python
// semantics.
#include "chat/interpreter.h"

#include <algorithm>
#include <unordered_map>

#include "chat/builtins.h"
#include "qwen3/error.h"

namespace qwen3::chat {
namespace {

enum class Flow { normal, break_loop, continue_loop };

// Each macro call recurses through exec and eval, up to kMaxNesting frames per level: a recursive
// macro must stop well before the stack does (8 MB, less under AddressSanitizer).
constexpr int kMaxMacroDepth = 16;

class Renderer {
 public:
  Renderer(const Json& variables, const Limits& limits) : limits_(limits) {
    globals_ = Value::of(variables);
    scopes_.emplace_back();
  }

  std::string run(const Template& program) {
    exec(program);
    return std::move(out_);
  }

 private:
  Site site(int line, int col) const {
    return Site{line, col, limits_.max_output, limits_.max_steps};
  }
  template <typename Node>
  Site site(const Node& n) const {
    return site(n.line, n.col);
  }

  void step(const Site& at) {
    if (++steps_ > limits_.max_steps)
      at.fail("template exceeded " + std::to_string(limits_.max_steps) + " steps");
  }

  void emit(const Site& at, const std::string& text) {
    out_ += text;
    if (out_.size() > limits_.max_output) {
      at.fail("output exceeds " + std::to_string(limits_.max_output) + " bytes");
    }
  }

  Value lookup(const std::string& name) const {
    // Inside a macro only its own frames and the template's top level are visible, as in Jinja.
    for (size_t i = scopes_.size(); i-- > base_;) {
      auto it = scopes_[i].find(name);
      if (it != scopes_[i].end()) return it->second;
    }
    if (base_ > 0) {
      auto it = scopes_[0].find(name);
      if (it != scopes_[0].end()) return it->second;
    }
    const Json& g = globals_.json();
    auto it = g.find(name);
    if (it != g.end()) return Value::child(globals_, *it);
    if (is_global_function(name)) return Value::function(name);
    return Value();
  }

  Flow exec(const std::vector<Stmt>& body) {
    for (const Stmt& s : body) {
      const Flow flow = exec(s);
      if (flow != Flow::normal) return flow;
    }
    return Flow::normal;
  }

  Flow exec(const Stmt& s) {
    const Site at = site(s);
    step(at);
    switch (s.kind) {
      case Stmt::Kind::text: emit(at, s.text); break;
      case Stmt::Kind::output: emit(at, to_text(eval(*s.expr))); break;
      case Stmt::Kind::if_chain:
        for (const auto& [cond, body] : s.branches) {
          if (truthy(eval(*cond))) return exec(body);
        }
        return exec(s.else_body);
      case Stmt::Kind::for_loop: exec_for(s); break;
      case Stmt::Kind::set: exec_set(s); break;
      case Stmt::Kind::set_block: {
        // Capture the body's output by rendering into a fresh buffer.
        std::string saved = std::move(out_);
        out_.clear();
        const Flow flow = exec(s.body);
        std::string captured = std::move(out_);
        out_ = std::move(saved);
        scopes_.back()[s.targets[0]] = Value::of(std::move(captured));
        return flow;
      }
      case Stmt::Kind::break_loop: return Flow::break_loop;
      case Stmt::Kind::continue_loop: return Flow::continue_loop;
      case Stmt::Kind::block: return exec(s.body);
      case Stmt::Kind::macro: {
        Value macro = Value::function(s.targets[0]);
        macro.macro = &s;
        scopes_.back()[s.targets[0]] = std::move(macro);
        break;
      }
    }
    return Flow::normal;
  }

  // Renders the body of a macro into a string: parameters bind by position, then by name, then
  // from their defaults; the caller's locals stay invisible.
  Value call_macro(const Site& at, const Stmt& macro, const Args& args) {
    if (macro_depth_ >= kMaxMacroDepth)
      at.fail("macro calls nested deeper than " + std::to_string(kMaxMacroDepth));
    if (args.positional.size() > macro.params.size())
      at.fail("macro '" + macro.targets[0] + "' takes " + std::to_string(macro.params.size()) +
              " arguments");
    std::unordered_map<std::string, Value> frame;
    for (size_t i = 0; i < macro.params.size(); ++i) {
      const auto& [name, fallback] = macro.params[i];
      if (const Value* given = args.get(i, name)) {
        frame[name] = *given;
      } else {
        frame[name] = fallback ? eval(*fallback) : Value();
      }
    }
    for (const auto& [name, value] : args.named) {
      if (std::none_of(macro.params.begin(), macro.params.end(),
                       [&](const auto& p) { return p.first == name; })) {
        at.fail("macro '" + macro.targets[0] + "' has no parameter '" + name + "'");
      }
    }
    const size_t saved_base = base_;
    scopes_.push_back(std::move(frame));
    base_ = scopes_.size() - 1;
    ++macro_depth_;
    std::string saved = std::move(out_);
    out_.clear();
    exec(macro.body);
    std::string rendered = std::move(out_);
    out_ = std::move(saved);
    --macro_depth_;
    base_ = saved_base;
    scopes_.pop_back();
    return Value::of(std::move(rendered));
  }

  void exec_set(const Stmt& s) {
    Value value = eval(*s.expr);
    if (s.attr.empty()) {
      scopes_.back()[s.targets[0]] = std::move(value);
      return;
    }
    const Value target = lookup(s.targets[0]);
    if (target.kind != Value::Kind::ns) {
      site(s).fail("cannot assign attribute '" + s.attr + "' of " + type_name(target) + " '" +
                   s.targets[0] + "': only namespace() objects are mutable");
    }
    if (!value.is_data()) site(s).fail("cannot store " + type_name(value) + " in a namespace");
    site(s).check_nesting(value.json());
    (*target.attrs)[s.attr] = value.json();
  }

  // The items a for loop visits: list elements, string characters or dict keys, as Python iterates.
  std::vector<Value> iterate(const Site& at, const Value& v) {
    std::vector<Value> items;
    if (v.is_undefined()) return items;
    if (!v.is_data()) at.fail(type_name(v) + " is not iterable");
    const Json& j = v.json();
    if (j.is_array()) {
      for (const auto& e : j) items.push_back(Value::child(v, e));
    } else if (j.is_object()) {
      for (auto it = j.begin(); it != j.end(); ++it) items.push_back(Value::of(it.key()));
    } else if (j.is_string()) {
      for (auto c : characters(j.get_ref<const std::string&>()))
        items.push_back(Value::of(std::string(c)));
    } else {
      at.fail(type_name(v) + " is not iterable");
    }
    return items;
  }

  void bind_targets(const Stmt& s, std::unordered_map<std::string, Value>& scope,
                    const Value& item) {
    if (s.targets.size() == 1) {
      scope[s.targets[0]] = item;
      return;
    }
    if (!item.is_data() || !item.json().is_array() || item.json().size() != s.targets.size()) {
      site(s).fail("cannot unpack " + type_name(item) + " into " +
                   std::to_string(s.targets.size()) + " loop variables");
    }
    for (size_t i = 0; i < s.targets.size(); ++i)
      scope[s.targets[i]] = Value::child(item, item.json()[i]);
  }

  void exec_for(const Stmt& s) {
    const Site at = site(s);
    std::vector<Value> items = iterate(at, eval(*s.expr));
    if (s.filter) {
      // The loop's `if` filters before counting, so loop.index and loop.last see only kept items.
      std::vector<Value> kept;
      for (auto& item : items) {
        scopes_.emplace_back();
        bind_targets(s, scopes_.back(), item);
        const bool keep = truthy(eval(*s.filter));
        scopes_.pop_back();
        if (keep) kept.push_back(std::move(item));
      }
      items = std::move(kept);
    }
    if (items.empty()) {
      exec(s.else_body);
      return;
    }
    const auto n = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < n; ++i) {
      step(at);
      scopes_.emplace_back();
      auto& scope = scopes_.back();
      bind_targets(s, scope, items[static_cast<size_t>(i)]);
      Value loop = Value::of(Json{{"index0", i},
                                  {"index", i + 1},
                                  {"revindex0", n - 1 - i},
                                  {"revindex", n - i},
                                  {"first", i == 0},
                                  {"last", i == n - 1},
                                  {"length", n}});
      loops_.push_back({loop.data.get(), &items, static_cast<size_t>(i)});
      scope["loop"] = std::move(loop);
      const Flow flow = exec(s.body);
      loops_.pop_back();
      scopes_.pop_back();
      if (flow == Flow::break_loop) break;
    }
  }

  // loop.previtem and loop.nextitem are looked up in the loop's items when asked for, rather than
  // copied into every iteration's loop object: each would copy a whole message.
  Value neighbour(const Value& object, const std::string& name) const {
    if (!object.is_data() || (name != "previtem" && name != "nextitem")) return Value();
    for (const LoopFrame& frame : loops_) {
      if (frame.loop != object.data.get()) continue;
      if (name == "previtem") return frame.index > 0 ? (*frame.items)[frame.index - 1] : Value();
      return frame.index + 1 < frame.items->size() ? (*frame.items)[frame.index + 1] : Value();
    }
    return Value();
  }

  Args eval_args(const Expr& e, size_t first) {
    Args args;
    for (size_t i = first; i < e.operands.size(); ++i)
      args.positional.push_back(eval(*e.operands[i]));
    for (const auto& [name, value] : e.kwargs) args.named.emplace_back(name, eval(*value));
    return args;
  }

  Value get_attr(const Site& at, const Value& object, const std::string& name) {
    if (object.is_undefined())
      at.fail("cannot read attribute '" + name + "' of an undefined value");
    if (object.kind == Value::Kind::ns) {
      auto it = object.attrs->find(name);
      return it == object.attrs->end() ? Value() : Value::of(*it);
    }
    if (object.is_data() && object.json().is_object()) {
      auto it = object.json().find(name);
      if (it != object.json().end()) return Value::child(object, *it);
    }
    return neighbour(object, name);
  }

  Value get_item(const Site& at, const Value& object, const Value& key) {
    if (object.is_undefined()) at.fail("cannot index an undefined value");
    if (object.kind == Value::Kind::ns && key.is_data() && key.json().is_string()) {
      return get_attr(at, object, key.json().get<std::string>());
    }
    if (!object.is_data() || !key.is_data()) return Value();
    const Json& j = object.json();
    int64_t index = 0;
    if (j.is_object() && key.json().is_string())
      return get_attr(at, object, key.json().get<std::string>());
    if ((j.is_array() || j.is_string()) && as_int(key.json(), index)) {
      if (j.is_array()) {
        const auto n = static_cast<int64_t>(j.size());
        if (index < 0) index += n;
        return index >= 0 && index < n ? Value::child(object, j[static_cast<size_t>(index)])
                                       : Value();
      }
      auto chars = characters(j.get_ref<const std::string&>());
      const auto n = static_cast<int64_t>(chars.size());
      if (index < 0) index += n;
      return index >= 0 && index < n ? Value::of(std::string(chars[static_cast<size_t>(index)]))
                                     : Value();
    }
    return Value();
  }

  // Python slice semantics: clamped bounds, negative indices from the end, any non-zero step.
  Value slice(const Expr& e) {
    const Site at = site(e);
    const Value object = eval(*e.operands[0]);
    int64_t parts[3] = {0, 0, 1};
    bool given[3] = {false, false, false};
    for (int k = 0; k < 3; ++k) {
      if (!e.operands[static_cast<size_t>(k) + 1]) continue;
      const Value v = eval(*e.operands[static_cast<size_t>(k) + 1]);
      if (v.is_data() && v.json().is_null()) continue;
      if (!v.is_data() || !as_int(v.json(), parts[k])) at.fail("slice indices must be integers");
      given[k] = true;
    }
    if (!object.is_data() || !(object.json().is_array() || object.json().is_string())) {
      at.fail("cannot slice " + type_name(object));
    }
    const int64_t step = parts[2];
    if (step == 0) at.fail("slice step cannot be zero");
    const bool is_string = object.json().is_string();
    std::vector<std::string_view> chars;
    if (is_string) chars = characters(object.json().get_ref<const std::string&>());
    const int64_t n =
        is_string ? static_cast<int64_t>(chars.size()) : static_cast<int64_t>(object.json().size());
    auto bound = [&](int k, int64_t fallback) {
      if (!given[k]) return fallback;
      int64_t v = parts[k];
      if (v < 0) v += n;
      return step > 0 ? std::clamp<int64_t>(v, 0, n) : std::clamp<int64_t>(v, -1, n - 1);
    };
    const int64_t start = bound(0, step > 0 ? 0 : n - 1);
    const int64_t stop = bound(1, step > 0 ? n : -1);
    Json list = Json::array();
    std::string text;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
      if (is_string) {
        text += chars[static_cast<size_t>(i)];
      } else {
        list.push_back(object.json()[static_cast<size_t>(i)]);
      }
      if ((step > 0 && stop - i <= step) || (step < 0 && i - stop <= -step))
        break;  // next i would pass stop
    }
    return is_string ? Value::of(std::move(text)) : Value::of(std::move(list));
  }

  Value call(const Expr& e) {
    const Site at = site(e);
    const Expr& callee = *e.operands[0];
    if (callee.kind == Expr::Kind::attr) {
      const Value object = eval(*callee.operands[0]);
      if (object.is_undefined())
        at.fail("cannot call method '" + callee.name + "' of an undefined value");
      return call_method(at, object, callee.name, eval_args(e, 1));
    }
    const Value f = eval(callee);
    if (f.kind != Value::Kind::function) {
      at.fail((callee.kind == Expr::Kind::name ? "'" + callee.name + "'" : type_name(f)) +
              " is not callable");
    }
    if (f.macro) return call_macro(at, *static_cast<const Stmt*>(f.macro), eval_args(e, 1));
    return call_function(at, f.name, eval_args(e, 1));
  }

  Value eval(const Expr& e) {
    const Site at = site(e);
    step(at);
    switch (e.kind) {
      case Expr::Kind::literal: return e.value;
      case Expr::Kind::name: return lookup(e.name);
      case Expr::Kind::attr: return get_attr(at, eval(*e.operands[0]), e.name);
      case Expr::Kind::index: {
        const Value object = eval(*e.operands[0]);
        return get_item(at, object, eval(*e.operands[1]));
      }
      case Expr::Kind::slice: return slice(e);
      case Expr::Kind::call: return call(e);
      case Expr::Kind::filter: {
        const Value subject = eval(*e.operands[0]);
        return apply_filter(at, e.name, subject, eval_args(e, 1));
      }
      case Expr::Kind::test: {
        const Value subject = eval(*e.operands[0]);
        return Value::of(apply_test(at, e.name, subject, eval_args(e, 1)) != e.negated);
      }
      case Expr::Kind::unary: {
        const Value v = eval(*e.operands[0]);
        if (e.name == "not") return Value::of(!truthy(v));
        if (!v.is_data() || !is_number(v.json()))
          at.fail("bad operand type for unary " + e.name + ": " + type_name(v));
        if (e.name == "+") return v;
        return binary_op(at, "-", Value::of(int64_t{0}), v);
      }
      case Expr::Kind::binary: {
        const Value a = eval(*e.operands[0]);
        const Value b = eval(*e.operands[1]);
        if (e.name == "not in") return Value::of(!contains(at, b, a));
        return binary_op(at, e.name, a, b);
      }
      // Python's and/or return an operand, not a bool.
      case Expr::Kind::logical_and: {
        Value a = eval(*e.operands[0]);
        return truthy(a) ? eval(*e.operands[1]) : a;
      }
      case Expr::Kind::logical_or: {
        Value a = eval(*e.operands[0]);
        return truthy(a) ? a : eval(*e.operands[1]);
      }
      case Expr::Kind::conditional:
        if (truthy(eval(*e.operands[1]))) return eval(*e.operands[0]);
        return e.operands[2] ? eval(*e.operands[2]) : Value();
      case Expr::Kind::list: {
        Json list = Json::array();
        for (const auto& item : e.operands) {
          const Value v = eval(*item);
          if (!v.is_data()) at.fail("cannot store " + type_name(v) + " in a list");
          at.check_nesting(v.json());
          list.push_back(v.json());
        }
        return Value::of(std::move(list));
      }
      case Expr::Kind::dict: {
        Json dict = Json::object();
        for (size_t i = 0; i + 1 < e.operands.size(); i += 2) {
          const Value key = eval(*e.operands[i]);
          const Value v = eval(*e.operands[i + 1]);
          if (!key.is_data() || !key.json().is_string()) at.fail("dict keys must be strings");
          if (!v.is_data()) at.fail("cannot store " + type_name(v) + " in a dict");
          at.check_nesting(v.json());
          dict[key.json().get<std::string>()] = v.json();
        }
        return Value::of(std::move(dict));
      }
    }
    at.fail("unknown expression");
  }

  // A running for loop: its loop object (by address) and the items it visits.
  struct LoopFrame {
    const Json* loop;
    const std::vector<Value>* items;
    size_t index;
  };

  const Limits& limits_;
  Value globals_;
  std::vector<LoopFrame> loops_;  // innermost last
  std::vector<std::unordered_map<std::string, Value>>
      scopes_;       // innermost last; [0] is the template's top level
  size_t base_ = 0;  // the first frame visible to lookup: a macro call's own, else 0
  int macro_depth_ = 0;
  std::string out_;
  size_t steps_ = 0;
};

}  // namespace

std::string render(const Template& program, const Json& variables, const Limits& limits) {
  return Renderer(variables, limits).run(program);
}

}  // namespace qwen3::chat
