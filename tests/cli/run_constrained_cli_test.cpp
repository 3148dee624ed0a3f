// `qwen3 run --json-schema / --grammar`: the output stays inside the constraint, and bad
// constraint files are one-line errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"

namespace qwen3 {
namespace {

namespace fs = std::filesystem;
using test::run_qwen3;
using test::shell_quote;
const std::string kTiny = shell_quote(test::tiny_model().string());

fs::path write_file(const std::string& name, const std::string& text) {
  const fs::path p =
      fs::temp_directory_path() / ("qwen3-run-" + std::to_string(::getpid()) + "-" + name);
  std::ofstream(p) << text;
  return p;
}

TEST(RunConstrainedCli, JsonSchemaOutputParsesAndValidates) {
  const auto schema =
      write_file("schema.json", R"({"type": "object", "properties": {"ok": {"type": "boolean"},
    "n": {"enum": [1, 2, 3]}}, "required": ["ok", "n"], "additionalProperties": false})");
  for (const char* flags :
       {"--temp 0", "--temp 1 --seed 5", "--chat --no-think --temp 0.7 --seed 2"}) {
    auto run = run_qwen3("run " + kTiny + " 'Answer in JSON:' -n 60 " + flags + " --json-schema " +
                             shell_quote(schema.string()),
                         "", false);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_NE(run.err.find("Stopped: end-of-sequence token"), std::string::npos)
        << flags << run.err;
    std::string text = run.output;
    if (text.rfind("Answer in JSON:", 0) == 0) text = text.substr(15);
    const auto value = nlohmann::json::parse(text);  // throws (fails) unless it is one JSON value
    ASSERT_TRUE(value.is_object()) << text;
    EXPECT_EQ(value.size(), 2u) << text;
    EXPECT_TRUE(value["ok"].is_boolean()) << text;
    EXPECT_TRUE(value["n"] == 1 || value["n"] == 2 || value["n"] == 3) << text;
  }
  fs::remove(schema);
}

TEST(RunConstrainedCli, GrammarFileConstrainsTheText) {
  const auto grammar =
      write_file("colour.gbnf", "root ::= (\"red\" | \"green\" | \"blue\") \"!\"\n");
  auto run = run_qwen3("run " + kTiny + " 'Pick one:' -n 20 --temp 1 --seed 3 --grammar " +
                           shell_quote(grammar.string()),
                       "", false);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string text = run.output.substr(std::string("Pick one:").size());
  EXPECT_TRUE(text == "red!\n" || text == "green!\n" || text == "blue!\n") << "'" << text << "'";
  fs::remove(grammar);
}

TEST(RunConstrainedCli, BadConstraintsAreOneLineErrors) {
  const auto bad_grammar = write_file("bad.gbnf", "root ::= undefined-rule\n");
  auto g = run_qwen3("run " + kTiny + " hi --grammar " + shell_quote(bad_grammar.string()));
  EXPECT_NE(g.exit_code, 0);
  EXPECT_NE(g.output.find("undefined-rule"), std::string::npos) << g.output;
  const auto unsupported = write_file("bad.json", R"({"type": "integer", "multipleOf": 3})");
  auto s = run_qwen3("run " + kTiny + " hi --json-schema " + shell_quote(unsupported.string()));
  EXPECT_NE(s.exit_code, 0);
  EXPECT_NE(s.output.find("'multipleOf' is not supported"), std::string::npos) << s.output;
  auto both = run_qwen3("run " + kTiny + " hi --json-schema " + shell_quote(unsupported.string()) +
                        " --grammar " + shell_quote(bad_grammar.string()));
  EXPECT_NE(both.exit_code, 0);
  EXPECT_NE(both.output.find("excludes"), std::string::npos) << both.output;
  fs::remove(bad_grammar);
  fs::remove(unsupported);
}

}  // namespace
}  // namespace qwen3
