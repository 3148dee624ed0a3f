// Fuzz target: mutated Jinja sources parsed and rendered on a fixed conversation; only qwen3::Error
// may escape.
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "chat/interpreter.h"
#include "chat/parser.h"
#include "qwen3/error.h"

namespace {

const qwen3::chat::Json& conversation() {
  static const auto vars = qwen3::chat::Json::parse(R"({
    "messages": [
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": "Hi <tool_response>x</tool_response>"},
      {"role": "assistant", "content": "<think>\nhm\n</think>\n\nHello", "tool_calls": [
        {"type": "function", "function": {"name": "f", "arguments": {"a": [1, 2.5, null]}}}]},
      {"role": "tool", "content": "ok"}],
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
    "add_generation_prompt": true, "enable_thinking": false, "eos_token": "<|im_end|>"})");
  return vars;
}

}  // namespace

std::vector<std::vector<uint8_t>> fuzz_seeds() {
  const char* sources[] = {
      "{%- for m in messages[::-1] %}{{ loop.index0 }}{{ m.role | upper }}{% endfor %}",
      "{% set ns = namespace(a=1, b=messages|length - 1) %}{% for m in messages %}{% set ns.a = "
      "ns.a * 2 %}"
      "{% endfor %}{{ ns.a ~ ns.b }}",
      "{% if tools %}{% for t in tools %}{{ t | tojson }}{% endfor %}{% elif x is defined %}a{% "
      "else %}b{% endif %}",
      "{{ messages[2].content.split('</think>')[-1].lstrip('\\n') }}{{ 'a' * 3 }}{{ (1, 2)[0] + 2 "
      "** 3 // 2 }}",
      "{% for k, v in messages[0].items() %}{{ k }}={{ v }}{% if loop.last %}{% break %}{% endif "
      "%}{% endfor %}",
      "{% set x %}{{ range(5) | list | join(',') }}{% endset %}{{ x[1:3] }}{# c #}\n  {%+ if true "
      "-%} y {%- endif %}",
      "{{ 'yes' if enable_thinking is false and 'Hi' in messages[1].content else "
      "raise_exception('no') }}",
      "{{ messages[2].tool_calls[0].function.arguments | tojson(indent=2) }}{{ d.get('k', 0) }}{{ "
      "{'a': [1]} }}",
      "{% macro f(n, s='-') %}{% if n > 0 %}{{ s }}{{ f(n - 1, s=s ~ n) }}{% endif %}{% endmacro "
      "%}{{ f(3) }}",
  };
  std::vector<std::vector<uint8_t>> seeds;
  for (const char* s : sources) seeds.emplace_back(s, s + std::char_traits<char>::length(s));
  // The real Qwen3 template, when run from tests/fixtures as ctest does: mutations of it reach
  // every feature a production template uses.
  std::ifstream config("models/qwen3-tiny/tokenizer_config.json");
  if (config) {
    const auto json = qwen3::chat::Json::parse(config, nullptr, false);
    if (json.is_object() && json.contains("chat_template") && json["chat_template"].is_string()) {
      const auto& source = json["chat_template"].get_ref<const std::string&>();
      seeds.emplace_back(source.begin(), source.end());
    }
  }
  return seeds;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Small limits keep each input fast: a mutated loop bound could otherwise run for minutes.
  qwen3::chat::Limits limits;
  limits.max_output = 1 << 16;
  limits.max_steps = 1 << 16;
  try {
    const auto program = qwen3::chat::parse(std::string(reinterpret_cast<const char*>(data), size));
    qwen3::chat::render(program, conversation(), limits);
  } catch (const qwen3::Error&) {
    // Rejecting a bad template is the expected outcome; anything else escapes and fails the run.
  }
  return 0;
}
