// `qwen3 bench` as a user runs it: the tests asked for, and a clear error for bad sizes.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"

namespace qwen3 {
namespace {

using test::run_qwen3;
const std::string kTiny = test::shell_quote(test::tiny_model().string());

std::vector<std::string> test_names(const std::string& json) {
  const auto report = nlohmann::json::parse(json);
  std::vector<std::string> names;
  for (auto& t : report["tests"]) names.push_back(t["test"].get<std::string>());
  return names;
}

TEST(BenchCli, RunsTheTestsAskedForAndZeroSkipsOne) {
  auto both = run_qwen3("bench " + kTiny + " -p 4,8 -n 2 -r 1 -t 1 --json", "", false);
  ASSERT_EQ(both.exit_code, 0) << both.err;
  EXPECT_EQ(test_names(both.output), (std::vector<std::string>{"pp4", "pp8", "tg2"}));
  // Decode's bandwidth and the plain read of the same weights it is set against; none for prefill.
  const auto tests = nlohmann::json::parse(both.output)["tests"];
  EXPECT_EQ(tests[0]["read_gb_s"].get<double>(), 0);
  EXPECT_GT(tests[2]["gb_s"].get<double>(), 0);
  EXPECT_GT(tests[2]["read_gb_s"].get<double>(), 0);
  EXPECT_GT(tests[2]["read_share"].get<double>(), 0);
  EXPECT_EQ(tests[0]["read_share"].get<double>(), 0);
  auto decode_only = run_qwen3("bench " + kTiny + " -p 0 -n 2 -r 1 -t 1 --json", "", false);
  ASSERT_EQ(decode_only.exit_code, 0) << decode_only.err;
  EXPECT_EQ(test_names(decode_only.output), (std::vector<std::string>{"tg2"}));
  auto prefill_only = run_qwen3("bench " + kTiny + " -p 4 -n 0 -r 1 -t 1 --json", "", false);
  ASSERT_EQ(prefill_only.exit_code, 0) << prefill_only.err;
  EXPECT_EQ(test_names(prefill_only.output), (std::vector<std::string>{"pp4"}));
}

// A test's repetitions (and its warm-up run) reuse one sequence made with room for exactly one run
// after the depth: each must cut it back to the depth, or the second would overflow its context.
TEST(BenchCli, RepetitionsReuseOneSequenceCutBackToTheDepth) {
  auto r = run_qwen3("bench " + kTiny + " -d 3 -p 4 -n 2 -r 3 -b 2 -t 1 --json", "", false);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(test_names(r.output), (std::vector<std::string>{"pp4 @ d3", "tg2x2 @ d3"}));
}

// Batch sizes as a list: one decode test each, and each larger size's speed over size 1's when
// 1 is among them (the paired repetitions' median ratio, so a positive, finite number).
TEST(BenchCli, BatchSizesGiveATestEachAndTheirSpeedupOverOne) {
  auto r = run_qwen3("bench " + kTiny + " -p 0 -n 2 -r 3 -b 2,1,4 -t 1 --json", "", false);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(test_names(r.output), (std::vector<std::string>{"tg2x2", "tg2", "tg2x4"}));
  const auto tests = nlohmann::json::parse(r.output)["tests"];
  EXPECT_EQ(tests[0]["batch"].get<int>(), 2);
  EXPECT_EQ(tests[2]["batch"].get<int>(), 4);
  EXPECT_FALSE(tests[1].contains("speedup_vs_batch_1"));
  for (int i : {0, 2}) {
    const double speedup = tests[i]["speedup_vs_batch_1"].get<double>();
    EXPECT_GT(speedup, 0) << i;
    EXPECT_TRUE(std::isfinite(speedup)) << i;
  }
  auto table = run_qwen3("bench " + kTiny + " -p 0 -n 2 -r 1 -b 1,2 -t 1", "", false);
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.output.find("tg2x2 / tg2: "), std::string::npos) << table.output;
  auto no_one = run_qwen3("bench " + kTiny + " -p 0 -n 2 -r 1 -b 2,3 -t 1 --json", "", false);
  ASSERT_EQ(no_one.exit_code, 0) << no_one.err;
  const auto no_one_tests = nlohmann::json::parse(no_one.output)["tests"];
  ASSERT_EQ(no_one_tests.size(), 2u);
  for (const auto& t : no_one_tests) EXPECT_FALSE(t.contains("speedup_vs_batch_1"));
}

TEST(BenchCli, NegativeSizesAreRefused) {
  for (const char* flags : {"-p -4", "-n -1", "-r 0", "-b 0", "-b 1,0", "-d -2"}) {
    auto bad = run_qwen3("bench " + kTiny + " " + flags + " -t 1", "", false);
    EXPECT_NE(bad.exit_code, 0) << flags;
    EXPECT_FALSE(bad.err.empty()) << flags;
    EXPECT_EQ(bad.err.find("step:"), std::string::npos) << flags << ": " << bad.err;
  }
}

}  // namespace
}  // namespace qwen3
