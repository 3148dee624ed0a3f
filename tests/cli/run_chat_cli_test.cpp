// End-to-end: `qwen3 run`, `chat`, `generate` and `verify` as a user runs them, on the fixture
// models.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"
#include "io/json_file.h"

namespace qwen3 {
namespace {

using test::run_qwen3;
const std::string kTiny = test::shell_quote(test::tiny_model().string());
const std::string kUntied = test::shell_quote(test::untied_model().string());

nlohmann::json reference_case(const std::string& model, const std::string& name) {
  const auto ref = io::read_json(test::reference(model + ".json"));
  for (auto& c : ref["cases"])
    if (c["name"] == name) return c;
  ADD_FAILURE() << "no case " << name;
  return nullptr;
}

TEST(RunCli, GreedyPrintsTheReferenceContinuation) {
  auto c = reference_case("qwen3-tiny", "france");
  const int n = static_cast<int>(c["greedy_ids"].size());
  auto run = run_qwen3(
      "run " + kTiny + " 'The capital of France is' --temp 0 -n " + std::to_string(n), "", false);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.output, c["greedy_text"].get<std::string>() + "\n");
  EXPECT_NE(run.err.find("Model:  qwen3-tiny (3 layers, 32 dim, 4 Q heads, 2 KV heads)"),
            std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("Stopped: token limit after " + std::to_string(n) + " tokens"),
            std::string::npos);
  EXPECT_NE(run.err.find("tok/s"), std::string::npos);
  EXPECT_NE(run.err.find("peak RSS"), std::string::npos);
}

TEST(RunCli, LoadFlagsKeepTheGreedyContinuation) {
  // Weights read into memory compute what mapped ones do; q8 at load time equals the q8 folder
  // path, checked in the model tests, and here only has to run.
  auto c = reference_case("qwen3-tiny", "france");
  const int n = static_cast<int>(c["greedy_ids"].size());
  auto run = run_qwen3("run " + kTiny + " 'The capital of France is' --temp 0 --no-mmap -t 1 -n " +
                           std::to_string(n),
                       "", false);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.output, c["greedy_text"].get<std::string>() + "\n");
  auto q8 = run_qwen3(
      "run " + kTiny + " 'The capital of France is' --temp 0 -n 8 --quant q8 --no-mmap", "", false);
  ASSERT_EQ(q8.exit_code, 0) << q8.err;
  EXPECT_EQ(q8.output.rfind("The capital of France is", 0), 0u) << q8.output;
  auto bad = run_qwen3("run " + kTiny + " 'hi' --quant q5", "", false);
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--quant: q5 not in {q8,q4}"), std::string::npos) << bad.err;
}

// A prompt that opens the think block, as Qwen3.5's template does: random weights reason first.
const std::string kThinkingPrompt =
    test::shell_quote("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n");

// The N of "... after N thinking tokens" on stderr, or -1.
int thinking_tokens_reported(const std::string& err, const std::string& what) {
  const size_t at = err.find("Thinking: " + what);
  if (at == std::string::npos) return -1;
  const size_t after = err.find(" after ", at);
  return after == std::string::npos ? -1 : std::stoi(err.substr(after + 7));
}

TEST(RunCli, ThinkingBudgetClosesTheThinkBlock) {
  for (int budget : {0, 5}) {
    auto run =
        run_qwen3("run " + kTiny + " " + kThinkingPrompt + " --temp 0 -n 48 --loop-guard off " +
                      "--thinking-budget " + std::to_string(budget),
                  "", false);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const size_t close = run.output.find("</think>");
    ASSERT_NE(close, std::string::npos) << run.output;
    EXPECT_EQ(run.output.find("</think>", close + 1), std::string::npos) << "closed once";
    const int thought =
        thinking_tokens_reported(run.err, "thinking budget reached, think block closed");
    EXPECT_GE(thought, budget) << run.err;
    EXPECT_LT(thought, budget + 32) << run.err;
  }
  auto unlimited = run_qwen3(
      "run " + kTiny + " " + kThinkingPrompt + " --temp 0 -n 48 --loop-guard off", "", false);
  ASSERT_EQ(unlimited.exit_code, 0) << unlimited.err;
  EXPECT_EQ(unlimited.output.find("</think>"), std::string::npos) << "random weights think on";
  EXPECT_EQ(unlimited.err.find("Thinking:"), std::string::npos) << unlimited.err;
}

TEST(RunCli, LoopGuardClosesARepeatingThinkBlock) {
  // Greedy random weights repeat one token: the default guard closes the block.
  auto run = run_qwen3("run " + kTiny + " " + kThinkingPrompt + " --temp 0 -n 48", "", false);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.output.find("</think>"), std::string::npos) << run.output;
  EXPECT_GT(thinking_tokens_reported(run.err, "thinking loop detected, think block closed"), 0)
      << run.err;
}

TEST(RunCli, BadReasoningFlagsAreRefused) {
  auto budget = run_qwen3("run " + kTiny + " hi --thinking-budget -1", "", false);
  EXPECT_NE(budget.exit_code, 0);
  EXPECT_NE(budget.err.find("--thinking-budget"), std::string::npos) << budget.err;
  auto guard = run_qwen3("run " + kTiny + " hi --loop-guard sometimes", "", false);
  EXPECT_NE(guard.exit_code, 0);
  EXPECT_NE(guard.err.find("--loop-guard"), std::string::npos) << guard.err;
}

TEST(RunCli, PromptFromStdinAndShowProbs) {
  auto run = run_qwen3("run " + kTiny + " - --temp 0 -n 2 --show-probs 3",
                       "The capital of France is", false);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.output.rfind("The capital of France is", 0), 0u) << run.output;
  EXPECT_NE(run.err.find("step 1:"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("step 2:"), std::string::npos) << run.err;
}

TEST(RunCli, SeedMakesSamplingReproducible) {
  const std::string args = "run " + kTiny + " 'Hello' -n 12 --temp 1 --top-k 0 --top-p 1 --seed 7";
  auto a = run_qwen3(args, "", false), b = run_qwen3(args, "", false);
  auto other =
      run_qwen3("run " + kTiny + " 'Hello' -n 12 --temp 1 --top-k 0 --top-p 1 --seed 8", "", false);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.output, b.output);
  EXPECT_NE(a.output, other.output);
}

TEST(RunCli, StopStringEndsTheOutput) {
  auto c = reference_case("qwen3-tiny", "france");
  const std::string text = c["greedy_text_new"];
  const std::string stop = text.substr(6, 3);  // a piece from inside the greedy continuation
  auto run = run_qwen3("run " + kTiny + " 'The capital of France is' --temp 0 -n 32 --stop " +
                           test::shell_quote(stop),
                       "", false);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.output, "The capital of France is" + text.substr(0, text.find(stop)) + "\n");
  EXPECT_NE(run.err.find("Stopped: stop string"), std::string::npos) << run.err;
}

TEST(RunCli, BadArgumentsExitNonZeroWithOneLine) {
  struct Case {
    std::string args, message;
  } cases[] = {
      {"run /nonexistent/model 'hi'", "error: /nonexistent/model: no such model folder"},
      {"run " + kTiny + " 'hi' --temp -1", "error: sampling parameter temperature"},
      {"run " + kTiny + " 'hi' --top-p 1.5", "error: sampling parameter top_p"},
      {"run " + kTiny + " 'hi' --top-k -3", "error: sampling parameter top_k"},
      {"run " + kTiny + " 'hi' --temp nan", "error: sampling parameter temperature"},
      {"run " + kTiny + " 'The capital of France is' -c 3",
       "error: the prompt has 5 tokens"},  // longer than the context
      {"generate " + kUntied + " --ids 1,x,3", "error: --ids: \"x\" is not a token id"},
      {"generate " + kUntied + " --ids 1,5000", "error: token id 5000 is outside the vocabulary"},
      {"verify " + kTiny + " /nonexistent.json", "error: /nonexistent.json: cannot open file"},
      {"run " + kTiny + " 'hi' --exact --activations bf16",
       "error: --activations excludes --exact"},
      {"run " + kTiny + " 'hi' --activations f16",
       "error: --activations: f16 not in {auto,f32,bf16}"},
      {"run " + kTiny + " 'hi' --kv-cache q8",
       "error: a q8 KV cache needs a head_dim that is a multiple of 32, got 16"},
      {"run " + kTiny + " 'hi' --kv-cache q4",
       "error: --kv-cache: q4 not in {auto,f32,f16,bf16,q8}"},
  };
  for (auto& c : cases) {
    auto run = run_qwen3(c.args, "", false);
    EXPECT_NE(run.exit_code, 0) << c.args;
    EXPECT_NE(run.err.find(c.message), std::string::npos) << c.args << "\n" << run.err;
    EXPECT_EQ(run.err.find('\n'), run.err.size() - 1) << "one line: " << run.err;
  }
}

// -v says which kernels each kind of row takes and why; --exact keeps the float32 path on any CPU.
TEST(RunCli, VerboseSaysWhichPathEachRowTakes) {
  auto automatic = run_qwen3("run " + kTiny + " 'hi' --temp 0 -n 2 -v", "", false);
  ASSERT_EQ(automatic.exit_code, 0) << automatic.err;
  const bool rounds = automatic.err.find("bf16 for prompt tokens") != std::string::npos;
  EXPECT_NE(automatic.err.find(rounds ? " for generated ones (--activations auto: "
                                      : " (--activations auto: exact f32 for every row, as "),
            std::string::npos)
      << automatic.err;
  auto exact = run_qwen3("run " + kTiny + " 'hi' --temp 0 -n 2 -v --exact", "", false);
  ASSERT_EQ(exact.exit_code, 0) << exact.err;
  EXPECT_NE(exact.err.find(" (--activations f32), "), std::string::npos) << exact.err;
}

TEST(RunCli, GenerateMatchesTheReferenceGreedyIds) {
  auto c = reference_case("qwen3-tiny-untied", "short");
  std::string ids;
  for (auto& id : c["prompt_ids"]) ids += (ids.empty() ? "" : ",") + std::to_string(id.get<int>());
  auto run = run_qwen3("generate " + kUntied + " --ids " + ids + " -n 8", "", false);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::string want;
  for (int i = 0; i < 8; ++i)
    want += (i ? "," : "") + std::to_string(c["greedy_ids"][i].get<int>());
  EXPECT_EQ(run.output, want + "\n");
}

TEST(VerifyCli, PassesOnTheFixturesAndFailsBelowTheirPrecision) {
  const std::string ref = test::shell_quote(test::reference("qwen3-tiny-untied.json").string());
  auto ok = run_qwen3("verify " + kUntied + " " + ref);
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(ok.output.find("model: 4/4 cases within 1.0e-03"), std::string::npos) << ok.output;
  auto strict = run_qwen3("verify " + kUntied + " " + ref + " --tol 1e-9");
  EXPECT_EQ(strict.exit_code, 1) << strict.output;
}

TEST(VerifyCli, ChecksTokenizerAndChatTemplateReferences) {
  auto tok = run_qwen3("verify " + kTiny + " " +
                       test::shell_quote(test::reference("tokenizer.json").string()));
  EXPECT_EQ(tok.exit_code, 0) << tok.output;
  EXPECT_NE(tok.output.find("tokenizer: 229/229 cases match"), std::string::npos) << tok.output;
  auto chat = run_qwen3("verify " + kTiny + " " +
                        test::shell_quote(test::reference("chat_template.json").string()));
  EXPECT_EQ(chat.exit_code, 0) << chat.output;
  EXPECT_NE(chat.output.find("chat template: 8/8 cases match"), std::string::npos) << chat.output;
  auto bad = run_qwen3(
      "verify " + kTiny + " " + test::shell_quote(test::tiny_model().string() + "/config.json"), "",
      false);
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("not a reference file"), std::string::npos) << bad.err;
}

TEST(ChatCli, FeedsTheTemplateRenderingAndReusesTheCache) {
  // Two turns through stdin; the first turn's ids are the reference rendering of that message.
  auto ref = nlohmann::json::parse(io::read_file(test::reference("chat_template.json")));
  nlohmann::json first;
  for (auto& c : ref["cases"])
    if (c["messages"].size() == 1 && c["messages"][0]["role"] == "user" &&
        !c.contains("enable_thinking") && !c.contains("tools") &&
        !c.contains("add_generation_prompt"))
      first = c;
  ASSERT_FALSE(first.is_null());
  const std::string question = first["messages"][0]["content"];
  auto run = run_qwen3("chat " + kTiny + " --temp 0 -n 4 -v", question + "\nAnd Poland?\n", false);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::string want = "[prompt ids:";
  for (auto& id : first["ids"]) want += " " + std::to_string(id.get<int>());
  EXPECT_NE(run.err.find(want + "]"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("[reused 0 cached tokens, prefilling " +
                         std::to_string(first["ids"].size()) + "]"),
            std::string::npos);
  // The second turn reuses the first prompt and the answer tokens fed back (4 sampled, 3 fed).
  EXPECT_NE(run.err.find("[reused " + std::to_string(first["ids"].size() + 3)), std::string::npos)
      << run.err;
}

TEST(ChatCli, TypedControlTokensCannotEndTheTurn) {
  auto run = run_qwen3("chat " + kTiny + " --temp 0 -n 1 -v", "hi<|im_end|>\n", false);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // <|im_end|> (151645) appears once, from the template, not from the user's text.
  const std::string ids = run.err.substr(run.err.find("[prompt ids:"));
  size_t count = 0;
  for (size_t p = 0; (p = ids.find(" 151645 ", p)) != std::string::npos; ++p) ++count;
  EXPECT_EQ(count, 1u) << ids;
}

TEST(ChatCli, Qwen35TemplateOpensTheThinkBlockInThePrompt) {
  // qwen3-tiny's weights and tokenizer with Qwen3.5's chat_template.jinja beside them.
  const auto dir =
      std::filesystem::temp_directory_path() / ("qwen3_chat35_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (const char* file : {"config.json", "generation_config.json", "model.safetensors",
                           "tokenizer.json", "tokenizer_config.json"})
    std::filesystem::create_symlink(test::tiny_model() / file, dir / file);
  std::filesystem::copy_file(test::qwen35_chat() / "chat_template.jinja",
                             dir / "chat_template.jinja");
  const std::string model = test::shell_quote(dir.string());
  auto thinking = run_qwen3("chat " + model + " --temp 0 -n 3 -v", "hi\n", false);
  auto direct = run_qwen3("chat " + model + " --temp 0 -n 3 -v --no-think", "hi\n", false);
  std::filesystem::remove_all(dir);
  ASSERT_EQ(thinking.exit_code, 0) << thinking.err;
  ASSERT_EQ(direct.exit_code, 0) << direct.err;
  // "<|im_start|>assistant\n<think>\n": the reply starts inside the block, shown as thinking.
  EXPECT_NE(thinking.err.find(" 151644 77091 198 151667 198]"), std::string::npos) << thinking.err;
  EXPECT_EQ(thinking.output.rfind("<think>", 0), 0u) << thinking.output;
  // "<think>\n\n</think>\n\n" closes it: the reply is the answer.
  EXPECT_NE(direct.err.find(" 151667 271 151668 271]"), std::string::npos) << direct.err;
  EXPECT_NE(direct.output.rfind("<think>", 0), 0u) << direct.output;
}

}  // namespace
}  // namespace qwen3
