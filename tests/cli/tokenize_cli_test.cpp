// End-to-end: the built `qwen3 tokenize` command on the tiny model's folder.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_runner.h"

namespace {

using qwen3::test::CliRun;

CliRun qwen3(const std::string& args, const std::string& stdin_text = "") {
  return qwen3::test::run_qwen3(args, stdin_text);
}

const std::string kModel = "'" + qwen3::test::tiny_model().string() + "'";

TEST(TokenizeCli, JsonGivesTheCanonicalIds) {
  CliRun run = qwen3("tokenize " + kModel + " 'The capital of France is' --json");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  auto j = nlohmann::json::parse(run.output);
  EXPECT_EQ(j["ids"], nlohmann::json({785, 6722, 315, 9625, 374}));
  EXPECT_EQ(j["tokens"], nlohmann::json({"The", "Ġcapital", "Ġof", "ĠFrance", "Ġis"}));
}

TEST(TokenizeCli, TableShowsReadablePieces) {
  CliRun run = qwen3("tokenize " + kModel + " 'The capital<|im_end|>'");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("6722  \" capital\""), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("151645  \"<|im_end|>\"  (special)"), std::string::npos) << run.output;
}

TEST(TokenizeCli, DecodeRoundTrip) {
  CliRun run = qwen3("tokenize " + kModel + " --decode 785,6722,315,9625,374 --json");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(nlohmann::json::parse(run.output)["text"], "The capital of France is");
  CliRun plain = qwen3("tokenize " + kModel + " --decode 785,6722,315,9625,374");
  EXPECT_EQ(plain.output, "The capital of France is\n");
}

TEST(TokenizeCli, StdinAndNoSpecial) {
  CliRun special = qwen3("tokenize " + kModel + " - --json", "<|im_end|>");
  ASSERT_EQ(special.exit_code, 0) << special.output;
  EXPECT_EQ(nlohmann::json::parse(special.output)["ids"], nlohmann::json({151645}));
  CliRun plain = qwen3("tokenize " + kModel + " - --json --no-special", "<|im_end|>");
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  EXPECT_GT(nlohmann::json::parse(plain.output)["ids"].size(), 1u);
}

TEST(TokenizeCli, BadModelDirIsAOneLineError) {
  CliRun run = qwen3("tokenize /nonexistent/model 'hello'");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.output.rfind("error: ", 0), 0u) << run.output;
  EXPECT_EQ(run.output.find('\n'), run.output.size() - 1) << run.output;
  EXPECT_NE(run.output.find("/nonexistent/model/tokenizer.json"), std::string::npos) << run.output;
}

TEST(TokenizeCli, BadIdIsAnError) {
  CliRun run = qwen3("tokenize " + kModel + " --decode 1,x,3");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.output, "error: --decode: 'x' is not a token id\n");
}

}  // namespace
