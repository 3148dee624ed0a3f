// Chat template tests: HF ground-truth renderings byte for byte, the Jinja subset, and error
// messages.
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "chat/interpreter.h"
#include "chat/parser.h"
#include "qwen3/chat.h"
#include "qwen3/error.h"
#include "test_paths.h"

namespace qwen3 {
namespace {

using OrderedJson = nlohmann::ordered_json;

OrderedJson reference_cases() {
  std::ifstream in(test::reference("chat_template.json"));
  return OrderedJson::parse(in)["cases"];
}

ChatOptions options_of(const OrderedJson& c) {
  ChatOptions options;
  if (c.contains("enable_thinking")) options.enable_thinking = c["enable_thinking"].get<bool>();
  if (c.contains("add_generation_prompt"))
    options.add_generation_prompt = c["add_generation_prompt"].get<bool>();
  if (c.contains("tools")) options.tools = c["tools"];
  if (c.contains("kwargs")) options.variables = c["kwargs"];
  return options;
}

TEST(ChatTemplate, EveryReferenceCaseMatchesHuggingFace) {
  const auto tmpl = ChatTemplate::load(test::tiny_model());
  const auto cases = reference_cases();
  ASSERT_GE(cases.size(), 8u);
  for (const auto& c : cases) {
    EXPECT_EQ(tmpl.render(c["messages"], options_of(c)), c["rendered"].get<std::string>())
        << c["name"];
  }
}

TEST(ChatTemplate, EveryQwen35ReferenceCaseMatchesHuggingFace) {
  // Qwen3.5 ships its template as chat_template.jinja; tokenizer_config.json has none.
  std::ifstream in(test::reference("chat_template_qwen35.json"));
  const auto reference = OrderedJson::parse(in);
  const auto tmpl = ChatTemplate::load(test::qwen35_chat());
  ASSERT_EQ(tmpl.source(), reference["template"].get<std::string>());
  size_t rendered = 0, refused = 0;
  for (const auto& c : reference["cases"]) {
    const std::string name = c["name"];
    if (c["rendered"].is_string()) {
      EXPECT_EQ(tmpl.render(c["messages"], options_of(c)), c["rendered"].get<std::string>())
          << name;
      ++rendered;
      continue;
    }
    // HF raised: the engine must refuse with the same message, not render something.
    const std::string want = c["error"];
    try {
      const std::string got = tmpl.render(c["messages"], options_of(c));
      ADD_FAILURE() << name << ": rendered " << got.size() << " bytes, expected: " << want;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_argument) << name;
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << name << ": " << e.what();
    }
    ++refused;
  }
  EXPECT_GE(rendered, 15u);
  EXPECT_GE(refused, 3u);
}

OrderedJson qwen35_render_args(const std::string& arguments) {
  return OrderedJson::parse(R"([{"role": "user", "content": "x"},
    {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f", "arguments": )" +
                            arguments + "}}]}]");
}

TEST(ChatTemplate, Qwen35PrintsArgumentsAsPython) {
  // The XML form prints each argument with Python's str() unless it is a list or dict (tojson).
  const auto tmpl = ChatTemplate::load(test::qwen35_chat());
  ChatOptions options;
  options.add_generation_prompt = false;
  const auto messages = qwen35_render_args(
      R"({"flag": true, "none": null, "small": 1e-07, "big": 1e16, "half": 0.5, "n": -3,
          "s": "tekst \"quoted\"", "list": [1, "é", null], "dict": {"b": false, "a": 1.0}})");
  EXPECT_EQ(tmpl.render(messages, options),
            "<|im_start|>user\nx<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
            "<tool_call>\n<function=f>\n"
            "<parameter=flag>\nTrue\n</parameter>\n<parameter=none>\nNone\n</parameter>\n"
            "<parameter=small>\n1e-07\n</parameter>\n<parameter=big>\n1e+16\n</parameter>\n"
            "<parameter=half>\n0.5\n</parameter>\n<parameter=n>\n-3\n</parameter>\n"
            "<parameter=s>\ntekst \"quoted\"\n</parameter>\n"
            "<parameter=list>\n[1, \"é\", null]\n</parameter>\n"
            "<parameter=dict>\n{\"b\": false, \"a\": 1.0}\n</parameter>\n"
            "</function>\n</tool_call><|im_end|>\n");
}

TEST(ChatTemplate, Qwen35TrimsUnicodeWhitespaceAsPython) {
  // Every message goes through |trim, which is Python's str.strip(): U+3000, U+00A0 and U+2028
  // are whitespace to it, U+200B (a format character) is not.
  const auto tmpl = ChatTemplate::load(test::qwen35_chat());
  ChatOptions options;
  options.add_generation_prompt = false;
  const auto messages = OrderedJson::parse(
      R"([{"role": "user", "content": "\u3000\u00a0 hi\u2028\n"}, {"role": "user", "content": "\u200bx\u200b"}])");
  EXPECT_EQ(tmpl.render(messages, options),
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>user\n\u200bx\u200b<|im_end|>\n");
}

TEST(ChatTemplate, Qwen35VisionIdsAreTemplateVariables) {
  const auto tmpl = ChatTemplate::load(test::qwen35_chat());
  const auto messages = OrderedJson::parse(
      R"([{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "?"}]}])");
  ChatOptions options;
  const std::string plain = tmpl.render(messages, options);
  options.variables = {{"add_vision_id", true}};
  const std::string numbered = tmpl.render(messages, options);
  EXPECT_EQ(plain,
            "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>?<|im_end|>\n"
            "<|im_start|>assistant\n<think>\n");
  EXPECT_EQ(numbered,
            "<|im_start|>user\nPicture 1: <|vision_start|><|image_pad|><|vision_end|>?<|im_end|>\n"
            "<|im_start|>assistant\n<think>\n");
}

// Renders a small template with `vars` as its globals.
std::string run(const std::string& source, const std::string& vars = "{}") {
  return chat::render(chat::parse(source), chat::Json::parse(vars));
}

TEST(ChatTemplate, MultiStepToolHistory) {
  // Tool calls and responses, where HF keeps reasoning only after the last real user query.
  const auto tmpl = ChatTemplate::load(test::tiny_model());
  auto messages = OrderedJson::parse(R"([
    {"role": "user", "content": "Weather?"},
    {"role": "assistant", "content": "<think>\nneed tool\n</think>\n\n", "tool_calls": [
      {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "C"}}}]},
    {"role": "tool", "content": "20C"},
    {"role": "tool", "content": "sunny"},
    {"role": "assistant", "content": "It is 20C.", "reasoning_content": "summarise"}])");
  const std::string want =
      "<|im_start|>user\nWeather?<|im_end|>\n"
      "<|im_start|>assistant\n<think>\nneed tool\n</think>\n\n"
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": "
      "\"C\"}}\n</tool_call><|im_end|>\n"
      "<|im_start|>user\n<tool_response>\n20C\n</tool_response>\n<tool_response>\nsunny\n</"
      "tool_response><|im_end|>\n"
      "<|im_start|>assistant\n<think>\nsummarise\n</think>\n\nIt is 20C.<|im_end|>\n";
  ChatOptions options;
  options.add_generation_prompt = false;
  EXPECT_EQ(tmpl.render(messages, options), want);
}

TEST(ChatTemplate, NullContentBesideToolCallsIsEmpty) {
  const auto tmpl = ChatTemplate::load(test::tiny_model());
  auto messages = OrderedJson::parse(R"([{"role": "user", "content": "x"},
    {"role": "assistant", "content": null, "tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]}])");
  ChatOptions options;
  options.add_generation_prompt = false;
  EXPECT_EQ(tmpl.render(messages, options),
            "<|im_start|>user\nx<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
            "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call><|im_end|>\n");
}

TEST(Jinja, LoopVariablesAndReversal) {
  EXPECT_EQ(
      run("{% for x in xs %}{{ loop.index0 }}{{ x }}{% if not loop.last %},{% endif %}{% endfor %}",
          R"({"xs": ["a", "b", "c"]})"),
      "0a,1b,2c");
  EXPECT_EQ(run("{% for x in xs[::-1] %}{{ x }}{{ loop.index }}/{{ loop.length }}{% endfor %}",
                R"({"xs": [1, 2]})"),
            "21/212/2");
  EXPECT_EQ(run("{% for x in [] %}a{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(
      run("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", R"({"d": {"b": 1, "a": 2}})"),
      "b=1;a=2;");
  EXPECT_EQ(run("{% for x in range(10) if x is odd %}{{ x }}{% if x > 4 %}{% break %}{% endif %}{% "
                "endfor %}"),
            "135");
}

TEST(Jinja, LoopNeighbours) {
  EXPECT_EQ(run("{% for x in xs %}[{{ loop.previtem }}<{{ x }}>{{ loop.nextitem }}]{% endfor %}",
                R"({"xs": [{"r": 1}, "b", 3]})"),
            "[<{'r': 1}>b][{'r': 1}<b>3][b<3>]");
  EXPECT_EQ(run("{% for x in xs %}{{ loop.previtem is defined }}{% for y in [7] %}{{ "
                "loop.previtem is defined }}{% endfor %}{% endfor %}",
                R"({"xs": [1, 2]})"),
            "FalseFalseTrueFalse");  // the inner loop has no previous item of its own
  EXPECT_EQ(run("{% for m in ms %}{% if loop.previtem and loop.previtem.role != m.role %}|{% endif "
                "%}{{ m.role }}{% endfor %}",
                R"({"ms": [{"role": "a"}, {"role": "a"}, {"role": "b"}]})"),
            "aa|b");
}

TEST(Jinja, ScopingAndNamespace) {
  // A set inside a loop does not leak out; a namespace attribute does.
  EXPECT_EQ(run("{% set x = 1 %}{% set ns = namespace(y=1) %}{% for i in [5] %}{% set x = i %}{% "
                "set ns.y = i %}"
                "{% endfor %}{{ x }} {{ ns.y }}"),
            "1 5");
  EXPECT_EQ(run("{% set s %}a{{ 1 + 1 }}{% endset %}[{{ s }}]"), "[a2]");
}

TEST(Jinja, Macros) {
  EXPECT_EQ(run("{% macro tag(name, body='-') %}<{{ name }}>{{ body }}{% endmacro %}{{ tag('a') "
                "}}{{ tag('b', body=x) }}",
                R"({"x": 1})"),
            "<a>-<b>1");
  // A macro sees the template's top level, not the caller's loop variables.
  EXPECT_EQ(run("{% set g = 'G' %}{% macro m() %}{{ g }}{{ i }}{% endmacro %}{% for i in [1] %}{{ "
                "m() }}{% endfor %}"),
            "G");
  EXPECT_EQ(
      run("{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(3) }}"),
      "321");
}

TEST(Jinja, FiltersAndMethods) {
  EXPECT_EQ(
      run("{{ '  hi  ' | trim }}|{{ xs | length }}|{{ 'abc' | length }}|{{ 'zażółć' | length }}",
          R"({"xs": [1, 2, 3]})"),
      "hi|3|3|6");
  EXPECT_EQ(run("{{ x | tojson }}", R"({"x": {"b": "zé\n", "a": [1, 2.5, null, true]}})"),
            R"({"b": "zé\n", "a": [1, 2.5, null, true]})");
  EXPECT_EQ(run("{{ x | tojson(indent=2) }}", R"({"x": {"a": [1]}})"),
            "{\n  \"a\": [\n    1\n  ]\n}");
  EXPECT_EQ(run("{{ 'a</think>\\n\\nb'.split('</think>')[-1].lstrip('\\n') }}"), "b");
  EXPECT_EQ(run("{{ ' a  b '.split() }}|{{ 'x'.startswith('x') }}|{{ 'xy'.endswith(('q', 'y')) }}"),
            "['a', 'b']|True|True");
  EXPECT_EQ(run("{{ '\\nab\\n'.strip('\\n') }}|{{ 'abc'.rstrip('c') }}|{{ 'Ab'.upper() }}{{ 'Ab' | "
                "lower }}"),
            "ab|ab|ABab");
  EXPECT_EQ(
      run("{{ ms | selectattr('role', 'equalto', 'user') | map(attribute='content') | join(',') }}|"
          "{{ ms | rejectattr('role', 'eq', 'user') | list | length }}|{{ [0, 1, 2] | select | "
          "list }}|"
          "{{ [1, 2, 3] | reject('odd') | list }}|{{ ['a', 'B'] | map('upper') | list }}|{{ d | "
          "items | list }}",
          R"({"ms": [{"role": "user", "content": "a"}, {"role": "system", "content": "s"},
                           {"role": "user", "content": "b"}], "d": {"k": 1}})"),
      "a,b|1|[1, 2]|[2]|['A', 'B']|[['k', 1]]");
  EXPECT_EQ(run("{{ missing | default('d') }}|{{ [1, 2] | join('-') }}|{{ d.get('k', 0) }}",
                R"({"d": {}})"),
            "d|1-2|0");
}

TEST(Jinja, PythonStringWhitespace) {
  // str.strip()/split() without arguments take Python's whitespace, not only ASCII's.
  EXPECT_EQ(run("[{{ '\u3000\u00a0a b\u2029\x1f' | trim }}]|{{ 'a\u3000b\u0085c'.split() "
                "}}|[{{ '\u200ba'.strip() }}]"),
            "[a b]|['a', 'b', 'c']|[\u200ba]");
  // A set of characters, each a whole code point: stripping "é" never cuts "ê" in half.
  EXPECT_EQ(run("{{ 'éêé'.strip('é') }}|{{ 'xéx'.lstrip('x') }}|{{ '--a--'.rstrip('-') }}"),
            "ê|éx|--a");
  EXPECT_EQ(run("{{ '  1   2   3  '.split(none, 1) }}|{{ ' a b '.split(none, 0) }}"),
            "['1', '2   3  ']|['a b ']");
}

TEST(Jinja, TestsOnUndefinedAndItems) {
  // Jinja's Undefined iterates as empty and has a length, so it passes `iterable` and `sequence`.
  EXPECT_EQ(
      run("{{ u is iterable }} {{ u is sequence }} {{ u is mapping }} {{ none is iterable }}"),
      "True True False False");
  EXPECT_EQ(run("{% for k, v in d | items %}{{ k }}={{ v }};{% endfor %}|{% for k, v in u | items "
                "%}x{% endfor %}",
                R"({"d": {"b": 1, "a": [2]}})"),
            "b=1;a=[2];|");
}

TEST(Jinja, Expressions) {
  EXPECT_EQ(run("{{ 1 + 2 * 3 }} {{ 7 // 2 }} {{ -7 % 3 }} {{ 2 ** 3 }} {{ 1 / 4 }} {{ 'a' ~ 1 ~ "
                "none }}"),
            "7 3 2 8 0.25 a1None");
  EXPECT_EQ(run("{{ 'b' in 'abc' }} {{ 2 not in [1, 2] }} {{ 'k' in d }} {{ 1 < 2 and 2 >= 2 }} {{ "
                "not 0 or 5 }}",
                R"({"d": {"k": 1}})"),
            "True False True True True");
  EXPECT_EQ(run("{{ 'yes' if x else 'no' }} {{ x is defined }} {{ y is defined }} {{ x is string "
                "}} {{ n is none }}",
                R"({"x": "s", "n": null})"),
            "yes True False True True");
  EXPECT_EQ(run("{{ xs[1:] }} {{ xs[-1] }} {{ 'héllo'[1:3] }} {{ xs[10] is undefined }}",
                R"({"xs": [1, 2, 3]})"),
            "[2, 3] 3 él True");
  EXPECT_EQ(run("{{ undefined_var }}|{{ (1, 2) }}|{{ {'a': 1}['a'] }}|{{ true }}"),
            "|[1, 2]|1|True");
}

TEST(Jinja, WhitespaceControl) {
  // HF's trim_blocks and lstrip_blocks: the tag's own line vanishes.
  EXPECT_EQ(run("a\n  {% if true %}\n  b\n  {% endif %}\nc"), "a\n  b\nc");
  EXPECT_EQ(run("a  {{- 'x' -}}  \n b"), "axb");
  EXPECT_EQ(run("a\n{%- if true %} b {% endif -%}\n c"), "a b c");
  EXPECT_EQ(run("{# comment #}\nx{#- c -#} y"), "xy");
  EXPECT_EQ(run("x\n"), "x");  // one trailing newline dropped, as keep_trailing_newline=False
  EXPECT_EQ(run("a\r\nb"), "a\nb");
}

// Checks that rendering throws qwen3::Error of `kind` whose message contains `needle`.
template <typename F>
void expect_error(F&& f, ErrorKind kind, const std::string& needle) {
  try {
    f();
    FAIL() << "no error; expected " << needle;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(ChatTemplateErrors, ParseErrorsCarryLineAndColumn) {
  expect_error([] { ChatTemplate t("x\n{% if a %}never closed"); }, ErrorKind::format,
               "2:4: unclosed 'if' block");
  expect_error(
      [] {
        ChatTemplate t("{{ x | nope }}");
        auto r = t.render(nlohmann::json::array());
      },
      ErrorKind::invalid_argument, "1:6: unknown filter 'nope'");
  expect_error([] { ChatTemplate t("{{ x "); }, ErrorKind::format, "1:1: unclosed tag '{{'");
  expect_error([] { ChatTemplate t("ab\n {# x"); }, ErrorKind::format, "2:2: unclosed comment");
  expect_error([] { ChatTemplate t("{% include 'x' %}"); }, ErrorKind::format,
               "1:4: unknown or unsupported tag 'include'");
  expect_error([] { ChatTemplate t("{% if x %}{% break %}{% endif %}"); }, ErrorKind::format,
               "1:14: 'break' outside a for loop");
  expect_error([] { ChatTemplate t("{% endfor %}"); }, ErrorKind::format, "unexpected 'endfor'");
  expect_error([] { ChatTemplate t("{{ 'abc }}"); }, ErrorKind::format, "1:4: unterminated string");
  expect_error(
      [] {
        ChatTemplate t(
            "{{ "
            "(((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((("
            "(((((((((((((((((((((((((((((((((((((((((((((((((1 }}");
      },
      ErrorKind::format, "nesting deeper than");
}

TEST(ChatTemplateErrors, RuntimeErrorsAndRaiseException) {
  expect_error([] { run("{{ raise_exception('System message must come first') }}"); },
               ErrorKind::invalid_argument, "System message must come first");
  expect_error([] { run("\n  {{ x.y.z }}", R"({"x": {}})"); }, ErrorKind::invalid_argument,
               "2:9: cannot read attribute 'z'");
  expect_error([] { run("{{ 1 + 'a' }}"); }, ErrorKind::invalid_argument,
               "unsupported operand types for +: int and str");
  expect_error([] { run("{% for i in range(100000000) %}{% endfor %}"); },
               ErrorKind::invalid_argument, "exceeds the limit");
  // Jinja's own wording, which Qwen3.5's reference expects for arguments given as a string.
  expect_error([] { run("{% for k, v in '{}' | items %}{% endfor %}"); },
               ErrorKind::invalid_argument, "1:21: Can only get item pairs from a mapping.");
}

TEST(ChatTemplateErrors, LimitsStopRunawayTemplates) {
  chat::Limits limits;
  limits.max_output = 1000;
  limits.max_steps = 10000;
  expect_error(
      [&] {
        chat::render(
            chat::parse(
                "{% for i in range(900) %}{% for j in range(900) %}{% endfor %}{% endfor %}"),
            chat::Json::object(), limits);
      },
      ErrorKind::invalid_argument, "steps");
  expect_error(
      [&] {
        chat::render(chat::parse("{% for i in range(900) %}xx{% endfor %}"), chat::Json::object(),
                     limits);
      },
      ErrorKind::invalid_argument, "output exceeds 1000 bytes");
  expect_error([] { run("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}"); },
               ErrorKind::invalid_argument, "macro calls nested deeper than 16");
  expect_error(
      [&] { chat::render(chat::parse("{{ 'ab' * 100000 }}"), chat::Json::object(), limits); },
      ErrorKind::invalid_argument, "size limit");
  // Deep nesting would overflow the stack when copied or printed: refused as it is built.
  expect_error(
      [] {
        run("{% set ns = namespace(a=1) %}{% for i in range(1000) %}{% set ns.a = [ns.a] %}{% "
            "endfor %}"
            "{{ ns.a | tojson }}");
      },
      ErrorKind::invalid_argument, "nested deeper than 256 levels");
}

TEST(ChatTemplateErrors, BadMessages) {
  const auto tmpl = ChatTemplate::load(test::tiny_model());
  expect_error([&] { auto r = tmpl.render(nlohmann::json::object()); }, ErrorKind::invalid_argument,
               "messages: expected an array");
  expect_error(
      [&] {
        auto r = tmpl.render(nlohmann::json::parse(R"([{"role": "wizard", "content": "x"}])"));
      },
      ErrorKind::invalid_argument, "messages[0]: unknown role 'wizard'");
  expect_error(
      [&] {
        auto r = tmpl.render(nlohmann::json::parse(
            R"([{"role": "user", "content": "a"}, {"role": "user", "content": 5}])"));
      },
      ErrorKind::invalid_argument,
      "messages[1]: field 'content' must be a string or a list of content parts (objects)");
  expect_error(
      [&] {
        auto r = tmpl.render(nlohmann::json::parse(R"([{"role": "user", "content": ["hi"]}])"));
      },
      ErrorKind::invalid_argument, "messages[0]: field 'content' must be a string or a list");
  // Qwen3's template concatenates content as a string: parts are refused there, with line:col.
  expect_error(
      [&] {
        auto r = tmpl.render(nlohmann::json::parse(
            R"([{"role": "user", "content": [{"type": "text", "text": "a"}]}])"));
      },
      ErrorKind::invalid_argument, "chat template ");
  ChatOptions reserved;
  reserved.variables = {{"messages", nlohmann::ordered_json::array()}};
  expect_error(
      [&] {
        auto r =
            tmpl.render(nlohmann::json::parse(R"([{"role": "user", "content": "x"}])"), reserved);
      },
      ErrorKind::invalid_argument, "template variables: 'messages' is set by the request itself");
  reserved.variables = 5;
  expect_error(
      [&] {
        auto r =
            tmpl.render(nlohmann::json::parse(R"([{"role": "user", "content": "x"}])"), reserved);
      },
      ErrorKind::invalid_argument, "template variables: expected an object");
  expect_error([&] { auto r = tmpl.render(nlohmann::json::parse(R"([{"content": "x"}])")); },
               ErrorKind::invalid_argument, "messages[0]: missing string field 'role'");
  expect_error([&] { auto r = tmpl.render(nlohmann::json::parse(R"(["hi"])")); },
               ErrorKind::invalid_argument, "messages[0]: expected an object");
  const std::string deep = std::string(300, '[') + std::string(300, ']');
  expect_error(
      [&] {
        auto r = tmpl.render(
            nlohmann::json::parse(R"([{"role": "user", "content": "x", "extra": )" + deep + "}]"));
      },
      ErrorKind::invalid_argument, "messages: nested deeper than 256 levels");
}

TEST(ChatTemplateErrors, LoadNamesTheFile) {
  expect_error([] { ChatTemplate::load(test::fixtures() / "no-such-model"); }, ErrorKind::io,
               "tokenizer_config.json");
}

class ConfigDir : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("qwen3_chat_" +
            std::string(testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write(const std::string& text) { std::ofstream(dir_ / "tokenizer_config.json") << text; }
  std::filesystem::path dir_;
};

TEST_F(ConfigDir, NamedTemplateListPicksDefault) {
  write(
      R"({"eos_token": {"content": "</s>"}, "chat_template": [{"name": "tool_use", "template": "T"},
           {"name": "default", "template": "{{ messages[0].content }}{{ eos_token }}"}]})");
  EXPECT_EQ(ChatTemplate::load(dir_).render(
                nlohmann::json::parse(R"([{"role": "user", "content": "hi"}])")),
            "hi</s>");
}

TEST_F(ConfigDir, JinjaFileWinsOverTheConfigKey) {
  // As in transformers: chat_template.jinja replaces tokenizer_config.json's template, whose
  // special tokens still apply; without a config the file alone is enough.
  write(R"({"eos_token": "</s>", "chat_template": "config"})");
  std::ofstream(dir_ / "chat_template.jinja") << "file {{ eos_token }}\n";
  const auto messages = nlohmann::json::parse(R"([{"role": "user", "content": "hi"}])");
  EXPECT_EQ(ChatTemplate::load(dir_).render(messages), "file </s>");
  std::filesystem::remove(dir_ / "tokenizer_config.json");
  EXPECT_EQ(ChatTemplate::load(dir_).render(messages), "file ");
  std::ofstream(dir_ / "chat_template.jinja") << "{% if %}";
  expect_error([&] { ChatTemplate::load(dir_); }, ErrorKind::format,
               "chat_template.jinja: chat template 1:7: unexpected '%}'");
}

TEST_F(ConfigDir, MissingOrBrokenTemplate) {
  write(R"({"eos_token": "x"})");
  expect_error([&] { ChatTemplate::load(dir_); }, ErrorKind::format,
               "no string field 'chat_template' (or a list entry named default), and no "
               "chat_template.jinja");
  write(R"({"chat_template": "{% if %}"})");
  expect_error([&] { ChatTemplate::load(dir_); }, ErrorKind::format,
               "tokenizer_config.json: chat template 1:7: unexpected '%}'");
  write(R"({"chat_template": )");
  expect_error([&] { ChatTemplate::load(dir_); }, ErrorKind::format,
               "tokenizer_config.json: malformed JSON");
}

}  // namespace
}  // namespace qwen3
