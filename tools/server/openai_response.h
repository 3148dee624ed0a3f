// OpenAI response bodies and SSE chunks for one request, built as its tokens arrive.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <optional>

#include "qwen3/generation.h"
#include "qwen3/reasoning.h"
#include "qwen3/reasoning_control.h"
#include "server/api_error.h"
#include "server/openai_request.h"
#include "server/tool_calls.h"

namespace qwen3::server {

struct Usage {
  int prompt_tokens = 0, completion_tokens = 0;
  int cached_tokens = 0;     // of prompt_tokens, taken from the prefix cache
  int reasoning_tokens = 0;  // of completion_tokens, inside <think>
};

// The same calls serve streaming (send what each returns as SSE chunks) and non-streaming
// (ignore the chunks, then send body()).
class Reply {
 public:
  Reply(const ApiRequest& request, const Tokenizer& tokenizer, std::string model_name);

  std::vector<nlohmann::json> start();  // chat: the chunk announcing the assistant role
  std::vector<nlohmann::json> on_token(const GeneratedToken& token);
  // The last chunk (with the reasoning events), then the usage chunk if asked for.
  std::vector<nlohmann::json> on_finish(FinishReason reason, Usage usage,
                                        std::vector<ReasoningEvent> reasoning_events = {});
  nlohmann::json body() const;  // the whole non-streaming response, after on_finish

 private:
  // What one step adds to the reply: reasoning, content, and tool-call deltas.
  struct Delta {
    std::string reasoning, content;
    nlohmann::json tool_calls = nlohmann::json::array();
    bool empty() const { return reasoning.empty() && content.empty() && tool_calls.empty(); }
  };
  Delta take(const ThinkSplitter::Piece& piece, bool final);
  void apply(const std::vector<ToolEvent>& events, Delta& delta);
  const char* finish_reason() const;
  nlohmann::json chunk(nlohmann::json choice) const;
  nlohmann::json delta_choice(const Delta& delta, nlohmann::json logprobs) const;
  nlohmann::json logprob_entry(const GeneratedToken& token);  // and appends it to the totals
  nlohmann::json usage_json() const;
  void add_reasoning_control(nlohmann::json& choice) const;

  const ApiRequest& request_;
  const Tokenizer& tokenizer_;
  std::string model_, id_;
  int64_t created_;
  ThinkSplitter splitter_;
  std::optional<ToolCallParser> tool_parser_;  // chat with tools: calls come out of the content
  std::string content_, reasoning_;
  struct Call {
    std::string id, name, arguments;
  };
  std::vector<Call> calls_;
  nlohmann::json logprobs_;  // accumulated in the endpoint's own logprobs shape
  size_t text_offset_ = 0;   // completions' text_offset of the next token
  FinishReason finish_ = FinishReason::none;
  Usage usage_;
  std::vector<ReasoningEvent> reasoning_events_;
};

nlohmann::json error_body(const ApiError& error);
std::string sse_event(const nlohmann::json& data);  // "data: {...}\n\n"
std::string dump(const nlohmann::json& j);          // invalid UTF-8 replaced, never throws

}  // namespace qwen3::server
