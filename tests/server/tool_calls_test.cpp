// Tool calls: the streaming parser on both markup forms (several calls, any split of the text,
// malformed markup left as content), the grammar that forces calls, and calls in a Reply.
#include <gtest/gtest.h>

#include <random>

#include "qwen3/chat.h"
#include "qwen3/error.h"
#include "server/tool_calls.h"
#include "test_paths.h"

namespace qwen3::server {
namespace {

using json = nlohmann::ordered_json;

struct Parsed {
  std::string content;
  std::vector<std::pair<std::string, std::string>> calls;  // name, arguments
  bool operator==(const Parsed&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Parsed& p) {
  os << "content " << json(p.content).dump() << ", calls:";
  for (auto& [name, args] : p.calls) os << " " << name << " " << args << ";";
  return os;
}

std::vector<ToolSpec> tools() {
  return {
      {"get_weather", json::parse(R"({"type": "object", "properties": {"city": {"type": "string"},
                                          "days": {"type": "integer"}}, "required": ["city"]})")},
      {"now", nullptr}};
}

Parsed collect(const std::vector<ToolEvent>& events, Parsed p = {}) {
  for (auto& e : events) {
    switch (e.kind) {
      case ToolEvent::Kind::content: p.content += e.text; break;
      case ToolEvent::Kind::call:
        EXPECT_EQ(e.index, p.calls.size());
        p.calls.push_back({e.text, ""});
        break;
      case ToolEvent::Kind::arguments:
        EXPECT_EQ(e.index + 1, p.calls.size());
        p.calls.back().second += e.text;
        break;
    }
  }
  return p;
}

Parsed parse(ToolSyntax syntax, const std::vector<std::string>& pieces) {
  ToolCallParser parser(syntax, tools());
  Parsed p;
  for (auto& piece : pieces) p = collect(parser.push(piece), p);
  return collect(parser.finish(), p);
}

Parsed whole(ToolSyntax syntax, const std::string& text) { return parse(syntax, {text}); }

// The same result for one piece, one byte at a time, and random splits.
void expect_split_invariant(ToolSyntax syntax, const std::string& text) {
  const Parsed expected = whole(syntax, text);
  std::vector<std::string> bytes;
  for (char c : text) bytes.push_back(std::string(1, c));
  EXPECT_EQ(parse(syntax, bytes), expected) << text;
  std::mt19937 rng(7);
  for (int round = 0; round < 20; ++round) {
    std::vector<std::string> pieces;
    for (size_t i = 0; i < text.size();) {
      const size_t n = std::min(text.size() - i, size_t(1 + rng() % 9));
      pieces.push_back(text.substr(i, n));
      i += n;
    }
    EXPECT_EQ(parse(syntax, pieces), expected) << text;
  }
}

const std::string kCall =
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": "
    "3}}\n</tool_call>";

TEST(ToolCallParser, Qwen3JsonCalls) {
  EXPECT_EQ(whole(ToolSyntax::json, kCall),
            (Parsed{"", {{"get_weather", R"({"city": "Paris", "days": 3})"}}}));
  const std::string two = "Let me look.\n\n" + kCall +
                          "\n<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>";
  EXPECT_EQ(whole(ToolSyntax::json, two),
            (Parsed{"Let me look.",
                    {{"get_weather", R"({"city": "Paris", "days": 3})"}, {"now", "{}"}}}));
  // Braces and tags inside argument strings are data.
  const std::string tricky =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"}</tool_call>{\\\"\"}}\n</tool_call>";
  EXPECT_EQ(whole(ToolSyntax::json, tricky),
            (Parsed{"", {{"get_weather", R"({"city": "}</tool_call>{\""})"}}}));
  // Another key order, and arguments as a JSON string, are calls too.
  EXPECT_EQ(
      whole(ToolSyntax::json,
            "<tool_call>{\"arguments\": {\"city\": \"X\"}, \"name\": \"get_weather\"}</tool_call>"),
      (Parsed{"", {{"get_weather", R"({"city":"X"})"}}}));
  EXPECT_EQ(
      whole(ToolSyntax::json, "<tool_call>{\"name\": \"now\", \"arguments\": \"{}\"}</tool_call>"),
      (Parsed{"", {{"now", "{}"}}}));
  // Text around calls keeps its inner whitespace; a reply without calls keeps all of it.
  EXPECT_EQ(whole(ToolSyntax::json, "  a  b \n"), (Parsed{"  a  b \n", {}}));
  EXPECT_EQ(whole(ToolSyntax::json, kCall + "\n\nThen more."),
            (Parsed{"Then more.", {{"get_weather", R"({"city": "Paris", "days": 3})"}}}));
  for (auto& text : {kCall, two, tricky, std::string("a <tool b <tool_call"),
                     std::string("x <tool_call>\n{\"name\": \"zzz\"}")})
    expect_split_invariant(ToolSyntax::json, text);
}

TEST(ToolCallParser, MalformedMarkupStaysContent) {
  for (std::string text : {"<tool_call>\nnot json\n</tool_call>",
                           "<tool_call>\n{\"name\": \"unknown\", \"arguments\": {}}\n</tool_call>",
                           "<tool_call>\n{\"name\": \"now\"}\n</tool_call>",
                           "<tool_call>\n{\"name\": 5, \"arguments\": {}}"}) {
    EXPECT_EQ(whole(ToolSyntax::json, text), (Parsed{text, {}})) << text;
    expect_split_invariant(ToolSyntax::json, text);
  }
}

TEST(ToolCallParser, CutOffMarkupIsDroppedAndCutOffArgumentsKeepTheCall) {
  EXPECT_EQ(whole(ToolSyntax::json, "I <tool_call>\n{\"name\": \"get_w"), (Parsed{"I ", {}}));
  EXPECT_EQ(whole(ToolSyntax::json, "<tool_call>"), (Parsed{"", {}}));
  EXPECT_EQ(whole(ToolSyntax::xml, "<tool_call>\n<func"), (Parsed{"", {}}));
  // As OpenAI does at max_tokens: the call with the arguments written so far.
  EXPECT_EQ(whole(ToolSyntax::json,
                  "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par"),
            (Parsed{"", {{"get_weather", R"({"city": "Par)"}}}));
}

TEST(ToolCallParser, Qwen35XmlCalls) {
  const std::string call =
      "<tool_call>\n<function=get_weather>\n<parameter=city>\n123 Main "
      "St\n</parameter>\n<parameter=days>\n3\n</parameter>\n"
      "</function>\n</tool_call>";
  // A string-typed parameter stays a string even when it reads as JSON; others are JSON.
  EXPECT_EQ(whole(ToolSyntax::xml, call),
            (Parsed{"", {{"get_weather", R"({"city": "123 Main St", "days": 3})"}}}));
  const std::string none = "ok\n<tool_call>\n<function=now>\n</function>\n</tool_call>";
  EXPECT_EQ(whole(ToolSyntax::xml, none), (Parsed{"ok", {{"now", "{}"}}}));
  const std::string text_value =
      "<tool_call>\n<function=get_weather>\n<parameter=city>\n7\n</"
      "parameter>\n<parameter=days>\nsoon\n</parameter>\n</function>\n</tool_call>";
  EXPECT_EQ(whole(ToolSyntax::xml, text_value),
            (Parsed{"", {{"get_weather", R"({"city": "7", "days": "soon"})"}}}));
  for (auto& text : {call, call + "\n" + call, none, text_value})
    expect_split_invariant(ToolSyntax::xml, text);
  for (std::string bad :
       {"<tool_call>\n<function=nope>\n</function>\n</tool_call>", "<tool_call>\n<function=now\n>"})
    EXPECT_EQ(whole(ToolSyntax::xml, bad), (Parsed{bad, {}})) << bad;
}

TEST(ToolCallParser, SyntaxFromTheTemplate) {
  EXPECT_EQ(tool_syntax_of_template("{{- '<tool_call>\\n{\"name\": ' }}"), ToolSyntax::json);
  EXPECT_EQ(tool_syntax_of_template("<tool_call>\\n<function=' + tool_call.name + '>"),
            ToolSyntax::xml);
  // The real templates: Qwen3's in tokenizer_config.json, Qwen3.5's in chat_template.jinja.
  EXPECT_EQ(tool_syntax_of_template(ChatTemplate::load(test::tiny_model()).source()),
            ToolSyntax::json);
  EXPECT_EQ(tool_syntax_of_template(ChatTemplate::load(test::qwen35_chat()).source()),
            ToolSyntax::xml);
}

// The forced-call grammars accept the canonical markup, with the added tokens as tokens.
TEST(ToolCallGrammar, AcceptsTheCanonicalForms) {
  std::vector<std::string> bytes;
  for (int b = 0; b < 256; ++b) bytes.push_back(std::string(1, char(b)));
  bytes.push_back("<tool_call>");
  bytes.push_back("</tool_call>");
  auto vocabulary = std::make_shared<const TokenVocabulary>(bytes, std::set<TokenId>{256, 257});
  auto run = [&](ToolSyntax syntax, bool parallel, const std::vector<std::string>& calls) {
    JsonSchemaGrammar g;
    const std::string root =
        g.common("lead-ws") + " " + tool_call_rule(syntax, tools(), parallel, g);
    GrammarMatcher m(std::make_shared<TokenGrammar>(Grammar::parse(g.text(root)), vocabulary), {});
    for (size_t i = 0; i < calls.size(); ++i) {
      if (i > 0 && !m.accept_bytes("\n")) return false;
      if (!m.accept(256) || !m.accept_bytes(calls[i]) || !m.accept(257)) return false;
    }
    return m.complete();
  };
  const std::string json_call =
      "\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n";
  const std::string json_now = "\n{\"name\": \"now\", \"arguments\": {}}\n";
  EXPECT_TRUE(run(ToolSyntax::json, true, {json_call, json_now}));
  EXPECT_TRUE(run(ToolSyntax::json, false, {json_now}));
  EXPECT_FALSE(run(ToolSyntax::json, false, {json_now, json_now}));
  EXPECT_FALSE(
      run(ToolSyntax::json, true,
          {"\n{\"name\": \"get_weather\", \"arguments\": {\"days\": 3}}\n"}));  // city required
  EXPECT_FALSE(run(ToolSyntax::json, true, {"\n{\"name\": \"other\", \"arguments\": {}}\n"}));
  const std::string xml_call =
      "\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</"
      "parameter>\n</function>\n";
  EXPECT_TRUE(run(ToolSyntax::xml, true, {xml_call, "\n<function=now>\n</function>\n"}));
  EXPECT_FALSE(run(ToolSyntax::xml, true,
                   {"\n<function=get_weather>\n<parameter=days>\n3\n</parameter>\n</function>\n"}));
  // A parameters schema the compiler refuses names the tool.
  JsonSchemaGrammar g;
  try {
    tool_call_rule(
        ToolSyntax::json,
        {{"f",
          json::parse(
              R"({"type": "object", "properties": {"n": {"type": "integer", "multipleOf": 2}}})")}},
        true, g);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "tools[0].function.parameters: properties.n: 'multipleOf' is not supported");
  }
}

}  // namespace
}  // namespace qwen3::server
