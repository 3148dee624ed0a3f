// `qwen3 random-model` as a user runs it: presets, shape overrides, direct q4, and clear errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"
#include "io/json_file.h"

namespace qwen3 {
namespace {

namespace fs = std::filesystem;
using test::run_qwen3;
using test::shell_quote;

class RandomModelCli : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("qwen3-random-cli-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string tokenizer() const {
    return " --tokenizer-from " + shell_quote(test::untied_model().string());
  }
  fs::path dir_;
};

TEST_F(RandomModelCli, MoePresetWithOverridesWritesAModelThatRuns) {
  const std::string small =
      " --preset qwen3-moe-small --hidden 64 --layers 2 --heads 4 --kv-heads 2 --head-dim 32"
      " --vocab 2048 --experts 6 --experts-per-tok 3 --moe-intermediate 32";
  auto r =
      run_qwen3("random-model " + shell_quote(dir_.string()) + small + " --quant q4" + tokenizer());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto config = io::read_json(dir_ / "config.json");
  EXPECT_EQ(config["model_type"], "qwen3_moe");
  EXPECT_EQ(config["architectures"][0], "Qwen3MoeForCausalLM");
  EXPECT_EQ(config["num_experts"], 6);
  EXPECT_EQ(config["num_experts_per_tok"], 3);
  auto bench =
      run_qwen3("bench " + shell_quote(dir_.string()) + " -p 0 -n 2 -r 1 -t 1 --json", "", false);
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  // Bytes per token: q4 attention (18 bytes per 32 weights), bf16 routers, 3 of 6 experts, q4 head.
  const double q4 = 18.0 / 32;
  const double attention = 2.0 * (4 + 2) * 32 * 64 * q4, router = 6.0 * 64 * 2,
               expert = 3.0 * 32 * 64 * q4;
  const double want = 2 * (attention + router + 3 * expert) + 2048.0 * 64 * q4;
  EXPECT_NEAR(nlohmann::json::parse(bench.output)["gb_per_token"].get<double>(), want / 1e9, 1e-12);
  auto run = run_qwen3("generate " + shell_quote(dir_.string()) + " --ids 1,2,3 -n 4");
  EXPECT_EQ(run.exit_code, 0) << run.output;
}

TEST_F(RandomModelCli, BadPresetsAndOverridesAreOneLineErrors) {
  auto unknown =
      run_qwen3("random-model " + shell_quote(dir_.string()) + " --preset qwen9" + tokenizer());
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE(
      unknown.output.find("unknown preset \"qwen9\" (qwen3-0.6b, qwen3-30b-a3b, qwen3-moe-small, qwen3.5-0.8b"),
      std::string::npos)
      << unknown.output;
  auto dense_experts =
      run_qwen3("random-model " + shell_quote(dir_.string()) + " --experts 4" + tokenizer());
  EXPECT_NE(dense_experts.exit_code, 0);
  EXPECT_NE(dense_experts.output.find("preset qwen3-0.6b has no experts to size"),
            std::string::npos)
      << dense_experts.output;
  auto too_many =
      run_qwen3("random-model " + shell_quote(dir_.string()) +
                " --preset qwen3-moe-small --experts 4 --experts-per-tok 5" + tokenizer());
  EXPECT_NE(too_many.exit_code, 0);
  EXPECT_NE(too_many.output.find("num_experts_per_tok\" (5) must not exceed num_experts (4)"),
            std::string::npos)
      << too_many.output;
  auto quant =
      run_qwen3("random-model " + shell_quote(dir_.string()) + " --quant q3" + tokenizer());
  EXPECT_NE(quant.exit_code, 0);
  EXPECT_NE(quant.output.find("--quant: q3 not in {q8,q4}"), std::string::npos) << quant.output;
}

}  // namespace
}  // namespace qwen3
