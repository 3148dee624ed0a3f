// Tests of the chat part of `qwen3 verify` and of the `qwen3 template` subcommand.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "cli/verify_chat.h"
#include "qwen3/chat.h"
#include "test_paths.h"

namespace qwen3 {
namespace {

nlohmann::ordered_json reference() {
  std::ifstream in(test::reference("chat_template.json"));
  return nlohmann::ordered_json::parse(in);
}

// Runs verify_chat_reference, capturing what it prints.
int verify(const nlohmann::ordered_json& ref, std::string& printed) {
  std::FILE* out = std::tmpfile();
  const int rc = cli::verify_chat_reference(ChatTemplate::load(test::tiny_model()), ref, out);
  std::rewind(out);
  printed.clear();
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, out)) > 0) printed.append(buf, n);
  std::fclose(out);
  return rc;
}

TEST(VerifyChat, AllReferenceCasesMatch) {
  std::string printed;
  const auto ref = reference();
  EXPECT_EQ(verify(ref, printed), 0);
  EXPECT_EQ(printed, "chat template: " + std::to_string(ref["cases"].size()) + "/" +
                         std::to_string(ref["cases"].size()) + " cases match\n");
}

TEST(VerifyChat, MismatchReportsFirstDifferingByte) {
  auto ref = reference();
  auto& rendered = ref["cases"][0]["rendered"];
  std::string text = rendered.get<std::string>();
  text[10] = 'X';  // "<|im_start|>user" -> byte 10 is the '|' before '>'
  rendered = text;
  std::string printed;
  EXPECT_EQ(verify(ref, printed), 1);
  EXPECT_NE(printed.find("case single: first difference at byte 10"), std::string::npos) << printed;
  EXPECT_NE(printed.find("expected: \"<|im_startX>user\\nWhat"), std::string::npos) << printed;
  const auto total = std::to_string(ref["cases"].size());
  EXPECT_NE(printed.find("chat template: " + std::to_string(ref["cases"].size() - 1) + "/" + total +
                         " cases match"),
            std::string::npos)
      << printed;
}

// Runs the built qwen3 binary, returning stdout and the exit status.
std::string run_cli(const std::string& args, int& status) {
  const std::string cmd = test::qwen3_binary() + " " + args + " 2>&1";
  std::FILE* pipe = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  status = pclose(pipe);
  return out;
}

class TemplateCommand : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("qwen3_template_" +
            std::string(testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }
  std::filesystem::path dir_;
};

TEST_F(TemplateCommand, PrintsThePromptForAnArray) {
  const auto file = write("chat.json", R"([{"role": "user", "content": "Hi"}])");
  int status = 0;
  EXPECT_EQ(run_cli("template " + test::tiny_model().string() + " " + file + " --no-think", status),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  EXPECT_EQ(status, 0);
}

TEST_F(TemplateCommand, ObjectWithToolsAndNoGenerationPrompt) {
  const auto ref = reference();
  nlohmann::ordered_json tools_case;
  for (const auto& c : ref["cases"]) {
    if (c.contains("tools")) tools_case = c;
  }
  ASSERT_FALSE(tools_case.is_null());
  nlohmann::ordered_json doc = {{"messages", tools_case["messages"]},
                                {"tools", tools_case["tools"]}};
  const auto file = write("chat.json", doc.dump());
  int status = 0;
  const std::string want = tools_case["rendered"].get<std::string>();
  const std::string without_prompt =
      want.substr(0, want.size() - std::string("<|im_start|>assistant\n").size());
  EXPECT_EQ(
      run_cli("template " + test::tiny_model().string() + " " + file + " --no-generation-prompt",
              status),
      without_prompt);
  EXPECT_EQ(status, 0);
}

TEST_F(TemplateCommand, BadConversationIsAnError) {
  const auto file = write("chat.json", R"([{"role": "user", "content": 3}])");
  int status = 0;
  const auto out = run_cli("template " + test::tiny_model().string() + " " + file, status);
  EXPECT_NE(status, 0);
  EXPECT_NE(out.find("error: messages[0]: field 'content' must be a string"), std::string::npos)
      << out;
}

}  // namespace
}  // namespace qwen3
