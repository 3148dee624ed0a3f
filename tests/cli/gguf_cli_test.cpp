// End-to-end: the qwen3 command given GGUF files where it takes a model folder.
#include <gtest/gtest.h>

#include "cli/cli_runner.h"

namespace qwen3 {
namespace {

using test::run_qwen3;
using test::shell_quote;

std::string gguf(const std::string& name) {
  return shell_quote((test::fixtures() / "gguf" / name).string());
}

TEST(GgufCli, GenerateGivesTheFoldersTokens) {
  const std::string args = " --ids 40,1079,311,264,1803 -n 12";
  const auto folder = run_qwen3("generate " + shell_quote(test::untied_model().string()) + args);
  const auto file = run_qwen3("generate " + gguf("qwen3-tiny-untied-f32.gguf") + args);
  ASSERT_EQ(folder.exit_code, 0) << folder.output;
  ASSERT_EQ(file.exit_code, 0) << file.output;
  EXPECT_EQ(file.output, folder.output);
}

TEST(GgufCli, TokenizeAsTheFolder) {
  const std::string text = " 'The capital of France is <think>' --json";
  const auto folder = run_qwen3("tokenize " + shell_quote(test::tiny_model().string()) + text);
  const auto file = run_qwen3("tokenize " + gguf("qwen3-vocab.gguf") + text);
  ASSERT_EQ(folder.exit_code, 0) << folder.output;
  EXPECT_EQ(file.output, folder.output);
}

TEST(GgufCli, RunVerboseSaysWhatWasConverted) {
  const auto run =
      run_qwen3("run " + gguf("qwen3-256-q4_k_m.gguf") + " 'hello' --temp 0 -n 3 -v", "", false);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("Model:  qwen3-256-q4_k_m (1 layers, 256 dim"), std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("Converted: q4_K: "), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("Converted: q6_K: "), std::string::npos) << run.err;
}

TEST(GgufCli, AFileThatIsNotGgufIsOneLine) {
  const auto run =
      run_qwen3("run " + shell_quote((test::fixtures() / "gguf" / "types.txt").string()) + " 'hi'",
                "", false);
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.err.find("types.txt: not a model folder"), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find('\n'), run.err.size() - 1) << run.err;
}

}  // namespace
}  // namespace qwen3
