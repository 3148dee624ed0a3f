// Tool calls in a reply: parsing the model's call markup (Qwen3's JSON form, Qwen3.5's XML form)
// as text streams in, and the grammar that forces calls (tool_choice "required" or a function).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "qwen3/grammar.h"

namespace qwen3::server {

enum class ToolSyntax {
  json,  // Qwen3: <tool_call>\n{"name": NAME, "arguments": {...}}\n</tool_call>
  xml,   // Qwen3.5:
        // <tool_call>\n<function=NAME>\n<parameter=ARG>\nvalue\n</parameter>\n</function>\n</tool_call>
};

// The syntax a model's chat template (ChatTemplate::source(), from chat_template.jinja or
// tokenizer_config.json) teaches: XML when it writes "<function=", else JSON.
ToolSyntax tool_syntax_of_template(std::string_view chat_template);

struct ToolSpec {
  std::string name;
  nlohmann::ordered_json parameters;  // a JSON Schema, or null (no arguments)
};

// What the parser reports, in order: text that is content, a call's start (its name known), and
// pieces of its arguments (JSON text; concatenated they are the call's "arguments" string).
struct ToolEvent {
  enum class Kind { content, call, arguments };
  Kind kind;
  size_t index = 0;  // the call's position in the reply
  std::string text;  // content, the call's name, or an arguments piece
};

// Splits a reply's content into text and tool calls as it streams in. Any split of the same text
// into pieces gives the same events once merged: the non-streamed reply is the streamed one
// joined. Text that may still turn into markup is held back; markup that turns out malformed
// before a call's name is known stays content (so does a call of an unknown function), markup
// the end of the reply cuts short is dropped; whitespace around calls is dropped.
class ToolCallParser {
 public:
  ToolCallParser(ToolSyntax syntax, std::vector<ToolSpec> tools);
  std::vector<ToolEvent> push(std::string_view text);
  std::vector<ToolEvent> finish();  // what was held back
  size_t calls() const { return calls_; }

 private:
  enum class State {
    text,
    header,
    object,
    arguments,
    tail,
    close_tag,
    xml_header,
    xml_body,
    xml_value
  };
  void drain(bool final, std::vector<ToolEvent>& out);
  void content(std::string_view text, std::vector<ToolEvent>& out);
  void start_call(const std::string& name, std::vector<ToolEvent>& out);
  void arguments(std::string text, std::vector<ToolEvent>& out);
  const ToolSpec* find(std::string_view name) const;
  bool not_markup(std::vector<ToolEvent>& out);  // gives the held "<tool_call>" back as text
  bool cut_off();                                // drops markup the end of the reply cut short
  bool match_tail(bool final, std::vector<ToolEvent>& out);

  ToolSyntax syntax_;
  std::vector<ToolSpec> tools_;
  State state_ = State::text;
  std::string buffer_;       // text not yet decided
  std::string pending_ws_;   // whitespace held until what follows it is known
  bool after_call_ = false;  // the last thing emitted was a call
  size_t calls_ = 0;
  // Arguments of the JSON form, scanned as they stream: nesting depth and string state.
  int depth_ = 0;
  bool in_string_ = false, escaped_ = false;
  // XML form: the current call's spec, parameter, and whether a parameter was written.
  const ToolSpec* spec_ = nullptr;
  std::string parameter_;
  bool wrote_parameter_ = false;
};

// Grammar rules for tool calls in `syntax` to one of `tools` (each with its parameters schema),
// added to `g`; returns the rule for one or more calls (one only unless `parallel`). Throws
// Error(unsupported) from a parameters schema, with the tool's index in the message.
std::string tool_call_rule(ToolSyntax syntax, const std::vector<ToolSpec>& tools, bool parallel,
                           JsonSchemaGrammar& g);

}  // namespace qwen3::server
