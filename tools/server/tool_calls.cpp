// Tool calls: an incremental parser for both markup forms, and the grammar that forces them.
#include "server/tool_calls.h"

#include "qwen3/error.h"

namespace qwen3::server {

using json = nlohmann::ordered_json;

namespace {

constexpr std::string_view kOpen = "<tool_call>", kClose = "</tool_call>";

bool space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// A cursor over held text: each match says ok, not yet (the text ends first) or no.
enum class Match { ok, more, no };

struct Cursor {
  std::string_view s;
  size_t i = 0;
  void ws() {
    while (i < s.size() && space(s[i])) ++i;
  }
  Match lit(std::string_view word) {
    for (size_t k = 0; k < word.size(); ++k) {
      if (i + k >= s.size()) return Match::more;
      if (s[i + k] != word[k]) return Match::no;
    }
    i += word.size();
    return Match::ok;
  }
  // A JSON string starting here, decoded.
  Match string(std::string& out) {
    if (i >= s.size()) return Match::more;
    if (s[i] != '"') return Match::no;
    for (size_t k = i + 1; k < s.size(); ++k) {
      if (s[k] == '\\') {
        ++k;
        continue;
      }
      if (s[k] != '"') continue;
      json v = json::parse(s.substr(i, k + 1 - i), nullptr, false);
      if (!v.is_string()) return Match::no;
      out = v.get<std::string>();
      i = k + 1;
      return Match::ok;
    }
    return Match::more;
  }
};

#define QWEN3_MATCH(expr)           \
  do {                              \
    const Match m_ = (expr);        \
    if (m_ != Match::ok) return m_; \
  } while (0)

// `{"name": "NAME", "arguments": {` at the start of s (after whitespace).
Match json_header(std::string_view s, std::string& name, size_t& consumed) {
  Cursor c{s};
  c.ws();
  QWEN3_MATCH(c.lit("{"));
  c.ws();
  QWEN3_MATCH(c.lit("\"name\""));
  c.ws();
  QWEN3_MATCH(c.lit(":"));
  c.ws();
  QWEN3_MATCH(c.string(name));
  c.ws();
  QWEN3_MATCH(c.lit(","));
  c.ws();
  QWEN3_MATCH(c.lit("\"arguments\""));
  c.ws();
  QWEN3_MATCH(c.lit(":"));
  c.ws();
  QWEN3_MATCH(c.lit("{"));
  consumed = c.i;
  return Match::ok;
}

// The end of the JSON object starting at s's first non-space character: ok with `end` one past
// its closing brace, more when the text ends first, no when it does not start with '{'.
Match object_end(std::string_view s, size_t& begin, size_t& end) {
  Cursor c{s};
  c.ws();
  if (c.i >= s.size()) return Match::more;
  if (s[c.i] != '{') return Match::no;
  begin = c.i;
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t k = c.i; k < s.size(); ++k) {
    const char ch = s[k];
    if (in_string) {
      if (escaped) escaped = false;
      else if (ch == '\\') escaped = true;
      else if (ch == '"') in_string = false;
    } else if (ch == '"') {
      in_string = true;
    } else if (ch == '{' || ch == '[') {
      ++depth;
    } else if ((ch == '}' || ch == ']') && --depth == 0) {
      end = k + 1;
      return Match::ok;
    }
  }
  return Match::more;
}

// The longest end of `s` that is a proper prefix of `word`.
size_t partial_suffix(std::string_view s, std::string_view word) {
  for (size_t n = std::min(s.size(), word.size() - 1); n > 0; --n)
    if (s.substr(s.size() - n) == word.substr(0, n)) return n;
  return 0;
}

bool string_typed(const json& schema) {
  if (!schema.is_object()) return false;
  if (auto t = schema.find("type"); t != schema.end() && *t == "string") return true;
  if (auto e = schema.find("enum"); e != schema.end() && e->is_array() && !e->empty())
    return std::all_of(e->begin(), e->end(), [](const json& v) { return v.is_string(); });
  return false;
}

}  // namespace

ToolSyntax tool_syntax_of_template(std::string_view chat_template) {
  return chat_template.find("<function=") != std::string_view::npos ? ToolSyntax::xml
                                                                    : ToolSyntax::json;
}

ToolCallParser::ToolCallParser(ToolSyntax syntax, std::vector<ToolSpec> tools)
    : syntax_(syntax), tools_(std::move(tools)) {}

const ToolSpec* ToolCallParser::find(std::string_view name) const {
  for (auto& t : tools_)
    if (t.name == name) return &t;
  return nullptr;
}

std::vector<ToolEvent> ToolCallParser::push(std::string_view text) {
  std::vector<ToolEvent> out;
  buffer_ += text;
  drain(false, out);
  return out;
}

std::vector<ToolEvent> ToolCallParser::finish() {
  std::vector<ToolEvent> out;
  drain(true, out);
  if (calls_ == 0 && !pending_ws_.empty()) {
    if (!out.empty() && out.back().kind == ToolEvent::Kind::content) out.back().text += pending_ws_;
    else out.push_back({ToolEvent::Kind::content, 0, pending_ws_});
  }
  pending_ws_.clear();
  return out;
}

// Text that is content: whitespace at its end waits for what comes next (dropped before or
// after a call), and whitespace just after a call is dropped.
void ToolCallParser::content(std::string_view text, std::vector<ToolEvent>& out) {
  const size_t last = text.find_last_not_of(" \t\r\n");
  if (last == std::string_view::npos) {
    pending_ws_ += text;
    return;
  }
  std::string body;
  if (after_call_) {
    body = std::string(text.substr(text.find_first_not_of(" \t\r\n"),
                                   last + 1 - text.find_first_not_of(" \t\r\n")));
  } else {
    body = pending_ws_ + std::string(text.substr(0, last + 1));
  }
  pending_ws_ = std::string(text.substr(last + 1));
  after_call_ = false;
  if (!out.empty() && out.back().kind == ToolEvent::Kind::content) out.back().text += body;
  else out.push_back({ToolEvent::Kind::content, 0, std::move(body)});
}

void ToolCallParser::start_call(const std::string& name, std::vector<ToolEvent>& out) {
  pending_ws_.clear();
  after_call_ = true;
  out.push_back({ToolEvent::Kind::call, calls_++, name});
}

void ToolCallParser::arguments(std::string text, std::vector<ToolEvent>& out) {
  if (text.empty()) return;
  if (!out.empty() && out.back().kind == ToolEvent::Kind::arguments &&
      out.back().index == calls_ - 1)
    out.back().text += text;
  else out.push_back({ToolEvent::Kind::arguments, calls_ - 1, std::move(text)});
}

// The reply ended inside a call's opening markup (max_tokens): it was a call, cut off before
// its name was complete; dropped, as content never carries call markup.
bool ToolCallParser::cut_off() {
  buffer_.clear();
  state_ = State::text;
  return true;
}

bool ToolCallParser::not_markup(std::vector<ToolEvent>& out) {
  content(kOpen, out);
  state_ = State::text;
  return true;
}

// After a call's arguments: [ "}" ] then "</tool_call>", whitespace around. Returns whether to go
// on draining.
bool ToolCallParser::match_tail(bool final, std::vector<ToolEvent>& out) {
  Cursor c{buffer_};
  c.ws();
  Match m = Match::ok;
  if (state_ == State::tail) {
    m = c.lit("}");
    if (m == Match::ok) c.ws();
  }
  if (m == Match::ok) m = c.lit(kClose);
  if (m == Match::more && !final) return false;
  if (m == Match::ok) buffer_.erase(0, c.i);
  else if (m == Match::more) buffer_.clear();  // cut off by the end of the reply: markup, dropped
  // Match::no: the call is over; what follows is content.
  state_ = State::text;
  (void)out;
  return true;
}

void ToolCallParser::drain(bool final, std::vector<ToolEvent>& out) {
  for (;;) {
    switch (state_) {
      case State::text: {
        const size_t at = buffer_.find(kOpen);
        if (at != std::string::npos) {
          content(std::string_view(buffer_).substr(0, at), out);
          buffer_.erase(0, at + kOpen.size());
          state_ = syntax_ == ToolSyntax::json ? State::header : State::xml_header;
          continue;
        }
        const size_t keep = final ? 0 : partial_suffix(buffer_, kOpen);
        content(std::string_view(buffer_).substr(0, buffer_.size() - keep), out);
        buffer_.erase(0, buffer_.size() - keep);
        return;
      }
      case State::header: {
        std::string name;
        size_t consumed = 0;
        const Match m = json_header(buffer_, name, consumed);
        if (m == Match::more && !final) return;
        if (m == Match::more && cut_off()) continue;
        if (m == Match::ok && find(name)) {
          start_call(name, out);
          buffer_.erase(0, consumed);
          depth_ = 1;
          in_string_ = escaped_ = false;
          arguments("{", out);
          state_ = State::arguments;
          continue;
        }
        if (m == Match::no) {  // another key order, or arguments as a string: the whole object
          state_ = State::object;
          continue;
        }
        not_markup(out);
        continue;
      }
      case State::object: {
        size_t begin = 0, end = 0;
        const Match m = object_end(buffer_, begin, end);
        if (m == Match::more && !final) return;
        if (m == Match::more && cut_off()) continue;
        if (m == Match::ok) {
          const json call =
              json::parse(std::string_view(buffer_).substr(begin, end - begin), nullptr, false);
          const json* args =
              call.is_object() && call.contains("arguments") ? &call["arguments"] : nullptr;
          if (call.is_object() && call.contains("name") && call["name"].is_string() &&
              find(call["name"].get<std::string>()) && args &&
              (args->is_object() ||
               (args->is_string() &&
                json::parse(args->get<std::string>(), nullptr, false).is_object()))) {
            start_call(call["name"].get<std::string>(), out);
            arguments(args->is_string() ? args->get<std::string>() : args->dump(), out);
            buffer_.erase(0, end);
            state_ = State::close_tag;  // "</tool_call>" without a brace first
            continue;
          }
        }
        not_markup(out);
        continue;
      }
      case State::arguments: {
        size_t k = 0;
        for (; k < buffer_.size() && depth_ > 0; ++k) {
          const char ch = buffer_[k];
          if (in_string_) {
            if (escaped_) escaped_ = false;
            else if (ch == '\\') escaped_ = true;
            else if (ch == '"') in_string_ = false;
          } else if (ch == '"') {
            in_string_ = true;
          } else if (ch == '{' || ch == '[') {
            ++depth_;
          } else if (ch == '}' || ch == ']') {
            --depth_;
          }
        }
        arguments(buffer_.substr(0, k), out);
        buffer_.erase(0, k);
        if (depth_ > 0) {
          if (final) {  // cut off inside the arguments: the call keeps what it has
            buffer_.clear();
            state_ = State::text;
          }
          return;
        }
        state_ = State::tail;
        continue;
      }
      case State::tail:
      case State::close_tag:
        if (!match_tail(final, out)) return;
        continue;
      case State::xml_header: {
        Cursor c{buffer_};
        c.ws();
        Match m = c.lit("<function=");
        std::string name;
        if (m == Match::ok) {
          const size_t close = buffer_.find_first_of(">\n", c.i);
          if (close == std::string::npos) m = Match::more;
          else if (buffer_[close] != '>') m = Match::no;
          else name = buffer_.substr(c.i, close - c.i), c.i = close + 1;
        }
        if (m == Match::more && !final) return;
        if (m == Match::more && cut_off()) continue;
        if (m == Match::ok && (spec_ = find(name))) {
          start_call(name, out);
          buffer_.erase(0, c.i);
          wrote_parameter_ = false;
          state_ = State::xml_body;
          continue;
        }
        not_markup(out);
        continue;
      }
      case State::xml_body: {
        Cursor c{buffer_};
        c.ws();
        const Match param = c.lit("<parameter=");
        if (param == Match::ok) {
          const size_t close = buffer_.find('>', c.i);
          if (close == std::string::npos && !final) return;
          if (close != std::string::npos) {
            parameter_ = buffer_.substr(c.i, close - c.i);
            buffer_.erase(0, close + 1);
            state_ = State::xml_value;
            continue;
          }
        }
        Cursor e{buffer_};
        e.ws();
        const Match end = e.lit("</function>");
        if ((param == Match::more || end == Match::more) && !final) return;
        arguments(wrote_parameter_ ? "}" : "{}", out);
        if (end == Match::ok) {
          buffer_.erase(0, e.i);
          state_ = State::close_tag;
        } else {
          if (final) buffer_.clear();
          state_ = State::text;  // malformed after the call started: the rest is content
        }
        continue;
      }
      case State::xml_value: {
        const size_t close = buffer_.find("</parameter>");
        if (close == std::string::npos && !final) return;
        std::string value = buffer_.substr(0, close == std::string::npos ? buffer_.size() : close);
        buffer_.erase(0, close == std::string::npos
                             ? buffer_.size()
                             : close + std::string_view("</parameter>").size());
        if (value.starts_with('\n')) value.erase(0, 1);
        if (value.ends_with('\n')) value.pop_back();
        const json& props =
            spec_ && spec_->parameters.is_object() && spec_->parameters.contains("properties")
                ? spec_->parameters["properties"]
                : json::object();
        const bool as_string =
            props.is_object() && props.contains(parameter_) && string_typed(props[parameter_]);
        json parsed = as_string ? json() : json::parse(value, nullptr, false);
        const std::string text =
            as_string || parsed.is_discarded() ? json(value).dump() : parsed.dump();
        arguments((wrote_parameter_ ? ", " : "{") + json(parameter_).dump() + ": " + text, out);
        wrote_parameter_ = true;
        state_ = State::xml_body;
        continue;
      }
    }
  }
}

std::string tool_call_rule(ToolSyntax syntax, const std::vector<ToolSpec>& tools, bool parallel,
                           JsonSchemaGrammar& g) {
  std::string calls;
  for (size_t i = 0; i < tools.size(); ++i) {
    const ToolSpec& tool = tools[i];
    const std::string prefix = "tool" + std::to_string(i);
    auto compile = [&](const json& schema, const std::string& name) {
      try {
        return g.add(schema, name);
      } catch (const Error& e) {
        throw Error(e.kind(), "tools[" + std::to_string(i) + "].function.parameters: " + e.what());
      }
    };
    std::string body;
    if (syntax == ToolSyntax::json) {
      const std::string args = tool.parameters.is_null()
                                   ? g.add_rule(prefix + "-none", R"("{" ws "}")")
                                   : compile(tool.parameters, prefix);
      g.common("ws");
      body = grammar_literal("\n{\"name\": " + json(tool.name).dump() + ", \"arguments\": ") + " " +
             args + " " + grammar_literal("}\n");
    } else {
      body = grammar_literal("\n<function=" + tool.name + ">\n");
      const json& params = tool.parameters;
      if (!params.is_null()) {
        if (!params.is_object() || !params.value("properties", json::object()).is_object())
          throw Error(
              ErrorKind::unsupported,
              "tools[" + std::to_string(i) + "].function.parameters: must be an object schema");
        std::set<std::string> required;
        for (auto& r : params.value("required", json::array()))
          if (r.is_string()) required.insert(r.get<std::string>());
        size_t k = 0;
        const json properties = params.value("properties", json::object());
        for (auto& [name, schema] : properties.items()) {
          std::string value;
          const std::string rule = prefix + "-x" + std::to_string(k++);
          if (string_typed(schema) && schema.contains("enum")) {
            std::string alts;
            for (auto& v : schema["enum"])
              alts += (alts.empty() ? "" : " | ") + grammar_literal(v.get<std::string>());
            value = g.add_rule(rule, alts);
          } else if (string_typed(schema) && !schema.contains("format")) {
            const int lo = schema.value("minLength", 0), hi = schema.value("maxLength", -1);
            value =
                g.add_rule(rule, hi < 0 && lo == 0 ? R"(( [^<] | "<" [^/] )*)"
                                                   : "[^<]{" + std::to_string(lo) + "," +
                                                         (hi < 0 ? "" : std::to_string(hi)) + "}");
          } else {
            value = compile(schema, rule);
          }
          const std::string item = grammar_literal("<parameter=" + name + ">\n") + " " + value +
                                   " " + grammar_literal("\n</parameter>\n");
          body += " " + (required.count(name) ? item : "( " + item + " )?");
        }
      }
      body += " " + grammar_literal("</function>\n");
    }
    const std::string call = g.add_rule(prefix + "-call", "<tool_call> " + body + " </tool_call>");
    calls += (calls.empty() ? "" : " | ") + call;
  }
  const std::string one = g.add_rule("tool-call", calls);
  return parallel ? g.add_rule("tool-calls", one + " ( \"\\n\" " + one + " )*") : one;
}

}  // namespace qwen3::server
