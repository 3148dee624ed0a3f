// `--spec` and `--spec-tokens` as a user runs them: the same output as without, the acceptance
// reported, and one-line errors for what cannot work.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"
#include "io/json_file.h"

namespace qwen3 {
namespace {

namespace fs = std::filesystem;
using test::run_qwen3;
using test::shell_quote;
const std::string kTiny = shell_quote(test::tiny_model().string());
const std::string kUntied = shell_quote(test::untied_model().string());
const std::string kHybrid = shell_quote((test::fixtures() / "models" / "qwen35-tiny").string());

TEST(SpecCli, RunPrintsThePlainOutputAndTheAcceptance) {
  const std::string run = "run " + kTiny + " 'The capital of France is' --temp 0 -n 24";
  auto plain = run_qwen3(run, "", false);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  for (const std::string spec : {std::string("ngram"), test::tiny_model().string()}) {
    auto fast = run_qwen3(run + " --spec " + shell_quote(spec) + " --spec-tokens 3", "", false);
    ASSERT_EQ(fast.exit_code, 0) << fast.err;
    EXPECT_EQ(fast.output, plain.output) << spec;
    EXPECT_NE(fast.err.find("Speculation: "), std::string::npos) << fast.err;
  }
  // A draft that is the model itself is always right.
  auto self = run_qwen3(run + " --spec " + kTiny, "", false);
  EXPECT_NE(self.err.find("100% of"), std::string::npos) << self.err;
}

TEST(SpecCli, GenerateWithTheMtpHeadGivesThePlainIds) {
  const std::string generate = "generate " + kHybrid + " --ids 5,6,7,8,5,6,7 -n 30";
  auto plain = run_qwen3(generate, "", false);
  auto mtp = run_qwen3(generate + " --spec mtp --spec-tokens 2", "", false);
  ASSERT_EQ(mtp.exit_code, 0) << mtp.err;
  EXPECT_EQ(mtp.output, plain.output);
}

TEST(SpecCli, WhatCannotWorkIsAOneLineError) {
  // A draft whose tokenizer has one piece changed.
  const fs::path other = fs::temp_directory_path() / ("qwen3-spec-" + std::to_string(getpid()));
  fs::create_directories(other);
  for (auto& f : fs::directory_iterator(test::untied_model()))
    if (f.path().filename() != "tokenizer.json") fs::copy(f.path(), other / f.path().filename());
  auto tokenizer = io::read_json(test::untied_model() / "tokenizer.json");
  tokenizer["added_tokens"][0]["content"] = "<|not_the_same|>";
  std::ofstream(other / "tokenizer.json") << tokenizer.dump();

  struct Case {
    std::string args, message;
  } cases[] = {
      {"generate " + kUntied + " --ids 1,2 --spec mtp",
       "error: --spec mtp: qwen3-tiny-untied has no multi-token-prediction head"},
      {"generate " + kUntied + " --ids 1,2 --spec ngram --spec-tokens 0",
       "error: --spec-tokens must be between 1 and 16, got 0"},
      {"run " + kTiny + " 'hi' --spec ngram --spec-tokens 17",
       "error: --spec-tokens must be between 1 and 16, got 17"},
      {"run " + kTiny + " 'hi' --spec-tokens 3", "error: --spec-tokens needs --spec"},
      {"generate " + kTiny + " --ids 1,2 --spec " + kUntied,
       "error: the draft model's vocabulary has 2048 entries, the model's 151936"},
      {"generate " + kUntied + " --ids 1,2 --spec " + shell_quote(other.string()),
       "the draft model's tokenizer is not the model's"},
      {"generate " + kUntied + " --ids 1,2 --spec /nonexistent/draft",
       "error: /nonexistent/draft: no such model folder"},
      {"bench " + kUntied + " -p 0 -n 0 --spec ngram", "error: --spec needs tokens to decode"},
  };
  for (auto& c : cases) {
    auto run = run_qwen3(c.args, "", false);
    EXPECT_NE(run.exit_code, 0) << c.args;
    EXPECT_NE(run.err.find(c.message), std::string::npos) << c.args << "\n" << run.err;
    EXPECT_EQ(run.err.find('\n'), run.err.size() - 1) << "one line: " << run.err;
  }
  fs::remove_all(other);
}

// The copying workload: prompt lookup finds every token it drafts.
TEST(SpecCli, BenchReportsTheVerificationCostAndTheSpeedUp) {
  auto bench = run_qwen3(
      "bench " + kUntied + " -p 0 -n 16 -r 1 --spec ngram --spec-copy --spec-tokens 3 --json", "",
      false);
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  const auto spec = nlohmann::json::parse(bench.output)["speculation"];
  ASSERT_EQ(spec["verify_cost"].size(), 3u);
  EXPECT_GT(spec["verify_cost"][2]["ratio"].get<double>(), 0);
  EXPECT_GT(spec["acceptance"].get<double>(), 0.9);
  EXPECT_GT(spec["tokens_per_step"].get<double>(), 3);
  EXPECT_GT(spec["speedup"].get<double>(), 0);
}

}  // namespace
}  // namespace qwen3
