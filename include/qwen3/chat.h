// Rendering a conversation into a prompt with the model's own chat template (tokenizer_config.json).
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace qwen3 {

struct ChatOptions {
  bool add_generation_prompt = true;
  bool enable_thinking = true;
  nlohmann::json tools = nullptr;  // OpenAI tool definitions, or null
};

class ChatTemplate {
 public:
  // Reads the "chat_template" of MODEL_DIR/tokenizer_config.json.
  static ChatTemplate load(const std::filesystem::path& model_dir);
  explicit ChatTemplate(std::string source);  // parses; throws qwen3::Error (format) with line:col

  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;
  ~ChatTemplate();

  // `messages` in OpenAI form: [{"role": "system"|"user"|"assistant"|"tool", "content": ...,
  // "reasoning_content"?, "tool_calls"?}]. Throws qwen3::Error (invalid_argument) on bad input.
  std::string render(const nlohmann::json& messages, const ChatOptions& options = {}) const;

  struct Program;

 private:
  std::unique_ptr<Program> program_;
};

}  // namespace qwen3
