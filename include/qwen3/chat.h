// Rendering a conversation into a prompt with the model's own chat template
// (chat_template.jinja or tokenizer_config.json).
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "qwen3/tokenizer.h"

namespace qwen3 {

struct ChatOptions {
  bool add_generation_prompt = true;
  bool enable_thinking = true;
  // OpenAI tool definitions, or null. Ordered, because the template prints them with tojson and
  // Hugging Face keeps each schema's key order.
  nlohmann::ordered_json tools = nullptr;
  // More template variables, as HF's apply_chat_template(**kwargs) passes them (Qwen3.5's
  // add_vision_id): a JSON object, or null. They win over enable_thinking and bos/eos_token; the
  // names messages, tools, documents and add_generation_prompt are refused.
  nlohmann::ordered_json variables = nullptr;
};

class ChatTemplate {
 public:
  // Reads MODEL_DIR/chat_template.jinja where there is one (newer Hub repos, Qwen3.5), else the
  // "chat_template" of MODEL_DIR/tokenizer_config.json; the file wins over the key, as in HF.
  // Given a GGUF file instead: its tokenizer.chat_template.
  static ChatTemplate load(const std::filesystem::path& model_dir);
  explicit ChatTemplate(std::string source);  // parses; throws qwen3::Error (format) with line:col

  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;
  ~ChatTemplate();

  // The template's Jinja text.
  const std::string& source() const;

  // `messages` in OpenAI form: [{"role": "system"|"user"|"assistant"|"tool", "content": ...,
  // "reasoning_content"?, "tool_calls"?}]; content is a string or a list of content parts
  // ({"type": "text", "text": ...}, images: what the template makes of them), null only beside
  // tool_calls.
  // Throws qwen3::Error (invalid_argument) on bad input, and with line:col when the template
  // fails while rendering (raise_exception, an attribute of an undefined value).
  std::string render(const nlohmann::json& messages, const ChatOptions& options = {}) const;
  // The same, keeping each object's key order for tojson (tool-call arguments): byte-identical to
  // HF.
  std::string render(const nlohmann::ordered_json& messages, const ChatOptions& options = {}) const;

  struct Program;

 private:
  std::unique_ptr<Program> program_;
};

// The prompt ids of a conversation: the rendered template, tokenized so that only the
// template's own markup becomes control tokens. Message text that spells an added token
// ("<|im_end|>", "<think>") stays plain text, so a user cannot end a turn or forge a role;
// assistant history keeps its <think> blocks for the template to strip. Identical to
// tokenizing the rendered string (as Hugging Face does) whenever no message holds such text.
std::vector<TokenId> encode_chat(const ChatTemplate& chat_template, const Tokenizer& tokenizer,
                                 const nlohmann::ordered_json& messages,
                                 const ChatOptions& options = {});

}  // namespace qwen3
