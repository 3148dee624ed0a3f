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

nlohmann::ordered_json reference(const std::string& name = "chat_template.json") {
  std::ifstream in(test::reference(name));
  return nlohmann::ordered_json::parse(in);
}

// Runs verify_chat_reference with the template of `model`, capturing what it prints.
int verify(const nlohmann::ordered_json& ref, std::string& printed,
           const std::filesystem::path& model = test::tiny_model()) {
  std::FILE* out = std::tmpfile();
  const int rc = cli::verify_chat_reference(ChatTemplate::load(model), ref, out);
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

TEST(VerifyChat, Qwen35CasesIncludingTheRefusedOnes) {
  auto ref = reference("chat_template_qwen35.json");
  std::string printed;
  const auto total = std::to_string(ref["cases"].size());
  EXPECT_EQ(verify(ref, printed, test::qwen35_chat()), 0);
  EXPECT_EQ(printed, "chat template: " + total + "/" + total + " cases match\n");
  // A case HF refused must be refused: one that renders, or fails otherwise, is a mismatch.
  for (auto& c : ref["cases"]) {
    if (c["name"] == "raise-system-not-first") c["messages"][1]["role"] = "user";
    if (c["name"] == "raise-no-user-query") c["error"] = "some other message";
  }
  EXPECT_EQ(verify(ref, printed, test::qwen35_chat()), 1);
  EXPECT_NE(printed.find("case raise-system-not-first: rendered "), std::string::npos) << printed;
  EXPECT_NE(printed.find("bytes; expected the error \"System message must be at the beginning.\""),
            std::string::npos)
      << printed;
  EXPECT_NE(printed.find("case raise-no-user-query: error: chat template raised: No user query "
                         "found in messages.; expected the error \"some other message\""),
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

TEST_F(TemplateCommand, Qwen35TemplateFileAndKwargs) {
  // The folder has chat_template.jinja and a tokenizer_config.json without a template.
  const auto file = write("chat.json", R"({"messages": [{"role": "user", "content": [
      {"type": "image"}, {"type": "text", "text": "Hi"}]}], "chat_template_kwargs": {"add_vision_id": true}})");
  int status = 0;
  EXPECT_EQ(run_cli("template " + test::qwen35_chat().string() + " " + file, status),
            "<|im_start|>user\nPicture 1: <|vision_start|><|image_pad|><|vision_end|>Hi<|im_end|>\n"
            "<|im_start|>assistant\n<think>\n");
  EXPECT_EQ(status, 0);
  const std::string verified = run_cli("verify " + test::qwen35_chat().string() + " " +
                                           test::reference("chat_template_qwen35.json").string(),
                                       status);
  EXPECT_EQ(status, 0) << verified;
  EXPECT_NE(verified.find("cases match"), std::string::npos) << verified;
}

TEST_F(TemplateCommand, BadConversationIsAnError) {
  const auto file = write("chat.json", R"([{"role": "user", "content": 3}])");
  int status = 0;
  const auto out = run_cli("template " + test::tiny_model().string() + " " + file, status);
  EXPECT_NE(status, 0);
  EXPECT_NE(out.find("error: messages[0]: field 'content' must be a string or a list"),
            std::string::npos)
      << out;
}

}  // namespace
}  // namespace qwen3
