// Chat messages -> prompt ids, where only the template's own control tokens are special.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "qwen3/chat.h"
#include "qwen3/tokenizer.h"

namespace qwen3::server {

struct ChatPrompt {
  std::vector<TokenId> ids;
  std::string text;  // the rendered prompt, as the model reads it
};

// `messages` are OpenAI messages whose "content" (and "reasoning_content") are strings.
ChatPrompt tokenize_chat(const ChatTemplate& chat, const Tokenizer& tokenizer, const nlohmann::ordered_json& messages,
                         const ChatOptions& options);

}  // namespace qwen3::server
