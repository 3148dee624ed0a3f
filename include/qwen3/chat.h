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
  // OpenAI tool definitions, or null. Ordered, because the template prints them with tojson and
  // Hugging Face keeps each schema's key order.
  nlohmann::ordered_json tools = nullptr;
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
  // The same, keeping each object's key order for tojson (tool-call arguments): byte-identical to HF.
  std::string render(const nlohmann::ordered_json& messages, const ChatOptions& options = {}) const;

  struct Program;

 private:
  std::unique_ptr<Program> program_;
};

}  // namespace qwen3
