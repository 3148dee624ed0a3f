// OpenAI request bodies (chat and legacy completions) -> a validated prompt and GenerationOptions.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "qwen3/chat.h"
#include "qwen3/generation.h"
#include "qwen3/grammar.h"
#include "qwen3/model.h"
#include "qwen3/tokenizer.h"
#include "server/grammar_cache.h"
#include "server/tool_calls.h"

namespace qwen3::server {

enum class Endpoint { chat, completion };

// What request parsing needs to know about the served model.
struct ServedModel {
  std::string name;  // reported as "model" and listed by /v1/models
  const Tokenizer* tokenizer = nullptr;
  const ChatTemplate* chat = nullptr;
  SamplingParams defaults;                    // generation_config.json
  std::vector<TokenId> eos;                   // generation_config.json and config.json
  int context = 0;                            // tokens per sequence (--ctx)
  int vocab_size = 0;                         // rows of the embedding: the valid prompt ids
  ToolSyntax tool_syntax = ToolSyntax::json;  // how the chat template writes tool calls
  GrammarCache* grammars = nullptr;           // compiled grammars (response_format, tool_choice)
};

struct ApiRequest {
  Endpoint endpoint = Endpoint::chat;
  std::vector<TokenId> prompt;
  GenerationOptions options;  // options.logprobs: per-token log-probabilities in the reply
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage: a final chunk with usage
  bool tokens_as_ids = false;  // vLLM's return_tokens_as_token_ids: logprob tokens as "token_id:N"
  bool thinking = false;       // chat: the <think> text goes to reasoning_content
  bool thinking_opened = false;  // chat: the prompt itself opened the <think> block
  // chat: the declared tools whose calls are parsed out of the reply (tools given, tool_choice
  // not "none"); empty: no parsing.
  std::vector<ToolSpec> tools;
  ToolSyntax tool_syntax = ToolSyntax::json;
};

// Throws ApiError (400) naming the offending field.
ApiRequest parse_request(Endpoint endpoint, std::string_view body, const ServedModel& model);

}  // namespace qwen3::server
