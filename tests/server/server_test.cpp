// The server's parts without a socket: request parsing, safe chat tokenization, the <think>
// splitter, reply shapes and the continuous-batching scheduler on the tiny model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "qwen3/chat.h"
#include "qwen3/generation.h"
#include "qwen3/model.h"
#include "qwen3/reasoning.h"
#include "qwen3/tokenizer.h"
#include "server/api_error.h"
#include "server/grammar_cache.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/scheduler.h"
#include "server/scheduler_runner.h"
#include "test_paths.h"

namespace qwen3::server {
namespace {

using nlohmann::json;

struct Served {
  Tokenizer tokenizer = Tokenizer::load(test::tiny_model());
  ChatTemplate chat = ChatTemplate::load(test::tiny_model());
  GrammarCache grammars{std::make_shared<const TokenVocabulary>(tokenizer)};
  ServedModel model;
  Served() {
    model.grammars = &grammars;
    model.name = "qwen3-tiny";
    model.tokenizer = &tokenizer;
    model.chat = &chat;
    model.defaults = SamplingParams::from_generation_config(test::tiny_model());
    model.eos = {151645, 151643};
    model.context = 64;
    model.vocab_size = 151936;
  }
};

const Served& served() {
  static Served s;
  return s;
}

// The same model with room for a prompt that lists tools.
const ServedModel& roomy() {
  static ServedModel m = [] {
    ServedModel copy = served().model;
    copy.context = 1024;
    return copy;
  }();
  return m;
}

// Qwen3.5's template (chat_template.jinja, the same tokenizer): XML tool calls, and a prompt that
// opens the <think> block itself.
TEST(OpenAiRequest, Qwen35TemplateParsesStringArgumentsAndOpensThink) {
  static const ChatTemplate chat = ChatTemplate::load(test::qwen35_chat());
  ServedModel model = roomy();
  model.chat = &chat;
  model.tool_syntax = tool_syntax_of_template(chat.source());
  const std::string body = R"({"messages": [
      {"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"days\": 2}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "21C"}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "parameters":
      {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}}]})";
  const ApiRequest r = parse_request(Endpoint::chat, body, model);
  const std::string prompt = served().tokenizer.decode(r.prompt);
  // OpenAI clients send arguments as a JSON string; the template's |items needs the object.
  EXPECT_NE(prompt.find("<|im_start|>assistant\n<think>\n\n</think>\n\n<tool_call>\n"
                        "<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
                        "<parameter=days>\n2\n</parameter>\n</function>\n</tool_call><|im_end|>\n"
                        "<|im_start|>user\n<tool_response>\n21C\n</tool_response><|im_end|>\n"),
            std::string::npos)
      << prompt;
  EXPECT_TRUE(prompt.ends_with("<|im_start|>assistant\n<think>\n")) << prompt;
  EXPECT_TRUE(r.thinking_opened);
  EXPECT_EQ(r.tool_syntax, ToolSyntax::xml);
  const ApiRequest off = parse_request(
      Endpoint::chat,
      R"({"messages": [{"role": "user", "content": "hi"}], "chat_template_kwargs": {"enable_thinking": false}})",
      model);
  EXPECT_TRUE(served().tokenizer.decode(off.prompt).ends_with("<think>\n\n</think>\n\n"));
  EXPECT_FALSE(off.thinking_opened);
}

ApiError error_of(Endpoint endpoint, const std::string& body) {
  try {
    parse_request(endpoint, body, served().model);
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "no error for " << body;
  return ApiError(0, "");
}

TEST(OpenAiRequest, ChatDefaultsAndParameters) {
  auto r = parse_request(Endpoint::chat,
                         R"({"model": "m", "messages": [{"role": "user", "content": "hi"}],
      "temperature": 0, "top_k": -1, "seed": 3, "stop": "x", "max_tokens": 5, "stream": true,
      "stream_options": {"include_usage": true}, "logprobs": true, "top_logprobs": 2})",
                         served().model);
  EXPECT_EQ(r.options.sampling.temperature, 0);
  EXPECT_EQ(r.options.sampling.top_k, 0);
  EXPECT_EQ(r.options.sampling.top_p, 0.95f);  // generation_config.json
  EXPECT_EQ(r.options.sampling.seed, 3u);
  EXPECT_EQ(r.options.stop, std::vector<std::string>{"x"});
  EXPECT_EQ(r.options.max_tokens, 5);
  EXPECT_EQ(r.options.eos, (std::vector<TokenId>{151645, 151643}));
  EXPECT_TRUE(r.stream && r.include_usage && r.options.logprobs && r.thinking);
  EXPECT_EQ(r.options.top_logprobs, 2);
  EXPECT_EQ(r.prompt.size(), 9u);
}

TEST(OpenAiRequest, ReasoningControlFields) {
  const std::string messages = R"("messages": [{"role": "user", "content": "hi"}])";
  auto plain = parse_request(Endpoint::chat, "{" + messages + "}", served().model);
  ASSERT_TRUE(plain.options.reasoning) << "every chat reply counts its reasoning tokens";
  EXPECT_FALSE(plain.options.reasoning->thinking_budget);
  EXPECT_EQ(plain.options.reasoning->loop_action, LoopAction::close);
  auto set = parse_request(
      Endpoint::chat,
      "{" + messages + R"(, "thinking_budget": 64, "thinking_loop_guard": "penalize"})",
      served().model);
  EXPECT_EQ(set.options.reasoning->thinking_budget, 64);
  EXPECT_EQ(set.options.reasoning->loop_action, LoopAction::penalize);
  auto off = parse_request(Endpoint::chat, "{" + messages + R"(, "thinking_loop_guard": "off"})",
                           served().model);
  EXPECT_EQ(off.options.reasoning->loop_action, LoopAction::off);
  EXPECT_FALSE(
      parse_request(Endpoint::completion, R"({"prompt": [1]})", served().model).options.reasoning);
}

TEST(OpenAiRequest, CompletionPromptForms) {
  auto ids = parse_request(Endpoint::completion, R"({"prompt": [1, 2, 3], "ignore_eos": true})",
                           served().model);
  EXPECT_EQ(ids.prompt, (std::vector<TokenId>{1, 2, 3}));
  EXPECT_TRUE(ids.options.eos.empty());
  EXPECT_EQ(ids.options.max_tokens, 61);  // the rest of the context
  auto text = parse_request(Endpoint::completion, R"({"prompt": ["Hello"], "logprobs": 3})",
                            served().model);
  EXPECT_EQ(text.prompt, served().tokenizer.encode("Hello"));
  EXPECT_EQ(text.options.top_logprobs, 3);
}

TEST(OpenAiRequest, ErrorsNameTheField) {
  EXPECT_EQ(error_of(Endpoint::chat, "{").status, 400);
  EXPECT_EQ(error_of(Endpoint::chat, R"({"messages": []})").param, "messages");
  EXPECT_EQ(error_of(Endpoint::chat, R"({"messages": [{"role": "x", "content": ""}]})").param,
            "messages[0].role");
  EXPECT_EQ(
      error_of(Endpoint::chat, R"({"messages": [{"role": "user", "content": "a"}], "n": 2})").param,
      "n");
  EXPECT_EQ(error_of(Endpoint::chat,
                     R"({"messages": [{"role": "user", "content": "a"}], "temperature": "1"})")
                .param,
            "temperature");
  EXPECT_EQ(error_of(Endpoint::completion, R"({"prompt": [1, 2], "top_p": 0})").status, 400);
  EXPECT_EQ(error_of(Endpoint::completion, R"({"prompt": [1, 2], "max_tokens": 1e30})").param,
            "max_tokens");
  auto too_long =
      error_of(Endpoint::completion, json({{"prompt", std::vector<int>(64, 5)}}).dump());
  EXPECT_EQ(too_long.code, "context_length_exceeded");
}

const std::string kMessages = R"("messages": [{"role": "user", "content": "weather?"}])";
const std::string kTool =
    R"({"type": "function", "function": {"name": "get_weather", "description": "d",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}})";

ApiError chat_error(const std::string& fields) {
  try {
    parse_request(Endpoint::chat, "{" + kMessages + ", " + fields + "}", roomy());
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "no error for " << fields;
  return ApiError(0, "");
}

TEST(OpenAiRequest, ToolAndFormatErrorsNameTheField) {
  EXPECT_EQ(chat_error(R"("tools": [{"type": "function", "function": {"parameters": {}}}])").param,
            "tools[0].function.name");
  EXPECT_EQ(
      chat_error(R"("tools": [{"type": "function", "function": {"name": "has space"}}])").param,
      "tools[0].function.name");
  EXPECT_EQ(chat_error(R"("tools": [{"type": "retrieval"}])").param, "tools[0].type");
  EXPECT_EQ(chat_error(R"("tools": [)" + kTool + ", " + kTool + "]").param,
            "tools[1].function.name");
  EXPECT_EQ(
      chat_error(R"("tools": [{"type": "function", "function": {"name": "f", "parameters": 3}}])")
          .param,
      "tools[0].function.parameters");
  auto unknown =
      chat_error(R"("tools": [)" + kTool +
                 R"(], "tool_choice": {"type": "function", "function": {"name": "nope"}})");
  EXPECT_EQ(unknown.param, "tool_choice");
  EXPECT_NE(std::string(unknown.what()).find("'nope'"), std::string::npos);
  EXPECT_EQ(chat_error(R"("tool_choice": "required")").param, "tool_choice");
  EXPECT_EQ(chat_error(R"("tools": [)" + kTool + R"(], "tool_choice": "sometimes")").param,
            "tool_choice");
  // A schema the grammar compiler refuses is a 400 naming the keyword, only where it is enforced.
  const std::string min_tool =
      R"({"type": "function", "function": {"name": "f", "parameters": {"type": "object",
      "properties": {"n": {"type": "integer", "multipleOf": 2}}}}})";
  auto refused = chat_error(R"("tools": [)" + min_tool + R"(], "tool_choice": "required")");
  EXPECT_EQ(refused.param, "tools[0].function.parameters");
  EXPECT_NE(std::string(refused.what()).find("'multipleOf'"), std::string::npos);
  EXPECT_NO_THROW(parse_request(Endpoint::chat,
                                "{" + kMessages + R"(, "tools": [)" + min_tool + "]}", roomy()));

  EXPECT_EQ(chat_error(R"("response_format": {"type": "xml"})").param, "response_format.type");
  EXPECT_EQ(chat_error(R"("response_format": {"type": "json_schema"})").param,
            "response_format.json_schema");
  EXPECT_EQ(
      chat_error(R"("response_format": {"type": "json_schema", "json_schema": {"schema": {}}})")
          .param,
      "response_format.json_schema.name");
  auto pattern = chat_error(
      R"("response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema":
      {"type": "object", "properties": {"id": {"type": "string", "pattern": "^[a-z]+$"}}}}})");
  EXPECT_EQ(pattern.param, "response_format.json_schema.schema");
  EXPECT_NE(std::string(pattern.what()).find("properties.id: 'pattern' is not supported"),
            std::string::npos);
  EXPECT_EQ(chat_error(R"("response_format": {"type": "json_object"}, "ignore_eos": true)").param,
            "ignore_eos");
  EXPECT_EQ(error_of(Endpoint::completion,
                     R"({"prompt": "x", "response_format": {"type": "json_object"}})")
                .param,
            "response_format");

  // Earlier calls in the history carry JSON object arguments.
  const std::string history =
      R"("messages": [{"role": "user", "content": "w?"}, {"role": "assistant", "content": null,
      "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Par"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "sunny"}])";
  EXPECT_EQ(error_of(Endpoint::chat, "{" + history + "}").param,
            "messages[1].tool_calls[0].function.arguments");
  EXPECT_NO_THROW(parse_request(Endpoint::chat,
                                "{" + std::string(R"("messages": [{"role": "user", "content": "w?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name":
      "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]}, {"role": "tool", "tool_call_id": "c1", "content": "sunny"}])") +
                                    "}",
                                roomy()));
}

TEST(OpenAiRequest, ConstraintsAndToolChoice) {
  auto parse = [](const std::string& fields) {
    return parse_request(Endpoint::chat, "{" + kMessages + ", " + fields + "}", roomy());
  };
  using R = GrammarConstraint::Reasoning;
  auto thinking = parse(R"("response_format": {"type": "json_object"})");
  ASSERT_TRUE(thinking.options.grammar);
  EXPECT_EQ(thinking.options.grammar->reasoning, R::optional);  // Qwen3 opens <think> itself
  EXPECT_EQ(thinking.options.grammar->think_start, 151667);
  EXPECT_EQ(thinking.options.grammar->think_end, 151668);
  EXPECT_EQ(thinking.options.grammar->end_tokens,
            std::vector<TokenId>{151645});  // <|im_end|>, not <|endoftext|>
  auto direct = parse(
      R"("response_format": {"type": "json_schema", "json_schema": {"name": "x", "strict": true,
      "schema": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}}}, "enable_thinking": false)");
  ASSERT_TRUE(direct.options.grammar);
  EXPECT_EQ(direct.options.grammar->reasoning, R::none);
  EXPECT_FALSE(parse(R"("response_format": {"type": "text"})").options.grammar);
  // The same schema again reuses the compiled grammar (and its filled cache).
  auto again = parse(R"("response_format": {"type": "json_object"})");
  EXPECT_EQ(again.options.grammar->grammar.get(), thinking.options.grammar->grammar.get());

  auto automatic = parse(R"("tools": [)" + kTool + "]");
  EXPECT_FALSE(automatic.options.grammar);
  ASSERT_EQ(automatic.tools.size(), 1u);
  EXPECT_EQ(automatic.tools[0].name, "get_weather");
  auto none = parse(R"("tools": [)" + kTool + R"(], "tool_choice": "none")");
  EXPECT_TRUE(none.tools.empty());
  EXPECT_LT(none.prompt.size() + 50, automatic.prompt.size());  // the tools are not in the prompt
  auto required = parse(R"("tools": [)" + kTool + R"(], "tool_choice": "required")");
  EXPECT_TRUE(required.options.grammar);
  auto named =
      parse(R"("tools": [)" + kTool +
            R"(], "tool_choice": {"type": "function", "function": {"name": "get_weather"}})");
  EXPECT_TRUE(named.options.grammar);
  auto single = parse(R"("tools": [)" + kTool + R"(], "parallel_tool_calls": false)");
  EXPECT_TRUE(single.options.grammar);  // text, then at most one call
}

TEST(Reply, ToolCallsAfterThinking) {
  ApiRequest request =
      parse_request(Endpoint::chat, "{" + kMessages + R"(, "tools": [)" + kTool + "]}", roomy());
  Reply reply(request, served().tokenizer, "m");
  std::vector<json> chunks;
  for (std::string piece : {"<think>", "need weather</think>\n\n<tool",
                            "_call>\n{\"name\": \"get_weather\", \"arguments\": ", "{\"city\": ",
                            "\"Paris\"}}\n</tool_call>"})
    for (auto& c : reply.on_token({1, 0, {}, piece})) chunks.push_back(c);
  for (auto& c : reply.on_finish(FinishReason::eos, {5, 5})) chunks.push_back(c);
  auto body = reply.body();
  auto message = body["choices"][0]["message"];
  EXPECT_EQ(message["reasoning_content"], "need weather");
  EXPECT_TRUE(message["content"].is_null());
  ASSERT_EQ(message["tool_calls"].size(), 1u);
  EXPECT_EQ(message["tool_calls"][0]["type"], "function");
  EXPECT_EQ(message["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(message["tool_calls"][0]["function"]["arguments"], R"({"city": "Paris"})");
  EXPECT_TRUE(message["tool_calls"][0]["id"].get<std::string>().starts_with("call_"));
  EXPECT_EQ(body["choices"][0]["finish_reason"], "tool_calls");
  // The stream: the call's header once (index, id, type, name), then argument pieces that join up.
  std::string args;
  int headers = 0;
  for (auto& c : chunks) {
    auto delta = c["choices"][0]["delta"];
    EXPECT_FALSE(delta.contains("content") &&
                 delta["content"].get<std::string>().find('<') != std::string::npos)
        << delta;
    if (!delta.contains("tool_calls")) continue;
    for (auto& t : delta["tool_calls"]) {
      EXPECT_EQ(t["index"], 0);
      if (t.contains("id")) {
        ++headers;
        EXPECT_EQ(t["id"], message["tool_calls"][0]["id"]);
        EXPECT_EQ(t["function"]["name"], "get_weather");
      }
      args += t["function"]["arguments"].get<std::string>();
    }
  }
  EXPECT_EQ(headers, 1);
  EXPECT_EQ(args, R"({"city": "Paris"})");
  EXPECT_EQ(chunks.back()["choices"][0]["finish_reason"], "tool_calls");
}

TEST(EosIds, GenerationConfigListPlusConfig) {
  auto config = ModelConfig::load(test::tiny_model());
  EXPECT_EQ(eos_tokens(test::tiny_model(), config), (std::vector<TokenId>{151645, 151643}));
}

std::pair<std::string, std::string> split_all(ThinkSplitter s,
                                              const std::vector<std::string>& pieces) {
  std::string reasoning, content;
  for (auto& p : pieces) {
    auto out = s.push(p);
    reasoning += out.reasoning;
    content += out.content;
  }
  auto out = s.finish();
  return {reasoning + out.reasoning, content + out.content};
}

TEST(ThinkSplitter, ModelWrittenTagsInAnyPieces) {
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(split_all(ThinkSplitter(true, false), {"<think>\nhm", "m\n</th", "ink>\n\nAns", "wer"}),
            P("\nhmm\n", "Answer"));
  EXPECT_EQ(split_all(ThinkSplitter(true, false), {"<", "thi", "nk>a</think>b"}), P("a", "b"));
  EXPECT_EQ(split_all(ThinkSplitter(true, false), {"<thought", ">"}), P("", "<thought>"));
  EXPECT_EQ(split_all(ThinkSplitter(true, true), {"why</think>\n\nso"}),
            P("why", "so"));  // prompt opened it
  EXPECT_EQ(split_all(ThinkSplitter(true, false), {"<think>unfinished </thi"}),
            P("unfinished </thi", ""));
  EXPECT_EQ(split_all(ThinkSplitter(false, false), {"<think>a</think>b"}),
            P("", "<think>a</think>b"));
}

TEST(Reply, ChatBodyAndChunks) {
  ApiRequest request =
      parse_request(Endpoint::chat, R"({"messages": [{"role": "user", "content": "a"}],
      "stream_options": {"include_usage": true}, "stream": true})",
                    served().model);
  Reply reply(request, served().tokenizer, "qwen3-tiny");
  EXPECT_EQ(reply.start()[0]["choices"][0]["delta"]["role"], "assistant");
  GeneratedToken think{151667, -0.5f, {}, "<think>"}, word{1, -0.1f, {}, "x</think>\n\nok"};
  EXPECT_TRUE(reply.on_token(think).empty());  // held: nothing to say yet
  auto chunks = reply.on_token(word);
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0]["choices"][0]["delta"],
            json({{"reasoning_content", "x"}, {"content", "ok"}}));
  EXPECT_TRUE(chunks[0]["usage"].is_null());
  auto last = reply.on_finish(FinishReason::eos, {9, 2});
  ASSERT_EQ(last.size(), 2u);
  EXPECT_EQ(last[0]["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(last[1]["usage"]["total_tokens"], 11);
  auto body = reply.body();
  EXPECT_EQ(body["object"], "chat.completion");
  EXPECT_EQ(body["choices"][0]["message"]["content"], "ok");
  EXPECT_EQ(body["choices"][0]["message"]["reasoning_content"], "x");
  EXPECT_EQ(sse_event(json{{"a", 1}}), "data: {\"a\":1}\n\n");
}

TEST(Reply, ReasoningTokensAndControlEvents) {
  ApiRequest request = parse_request(Endpoint::chat, R"({"messages": [{"role": "user",
      "content": "a"}], "stream": true, "stream_options": {"include_usage": true}})",
                                     served().model);
  const std::vector<ReasoningEvent> events{
      {ReasoningEvent::Cause::loop, ReasoningEvent::Action::raised_presence_penalty, 40},
      {ReasoningEvent::Cause::thinking_budget, ReasoningEvent::Action::closed_thinking, 70}};
  Reply reply(request, served().tokenizer, "m");
  reply.on_token({151667, 0, {}, "<think>"});
  reply.on_token({1, 0, {}, "x\n</think>\n\nok"});
  auto last = reply.on_finish(FinishReason::eos, {9, 80, 0, 71}, events);
  const json expected = json::array(
      {{{"cause", "loop"}, {"action", "raised_presence_penalty"}, {"reasoning_tokens", 40}},
       {{"cause", "thinking_budget"}, {"action", "closed_thinking"}, {"reasoning_tokens", 70}}});
  EXPECT_EQ(last[0]["choices"][0]["reasoning_control"], expected);
  EXPECT_EQ(last[0]["choices"][0]["finish_reason"], "stop") << "stays OpenAI's";
  EXPECT_EQ(last[1]["usage"]["completion_tokens_details"]["reasoning_tokens"], 71);
  auto body = reply.body();
  EXPECT_EQ(body["choices"][0]["reasoning_control"], expected);
  EXPECT_EQ(body["usage"]["completion_tokens_details"]["reasoning_tokens"], 71);
  // Nothing done: no field.
  Reply quiet(request, served().tokenizer, "m");
  quiet.on_finish(FinishReason::eos, {9, 1});
  EXPECT_FALSE(quiet.body()["choices"][0].contains("reasoning_control"));
}

TEST(Reply, CompletionLogprobs) {
  ApiRequest request = parse_request(Endpoint::completion, R"({"prompt": [1], "logprobs": 1,
      "return_tokens_as_token_ids": true})",
                                     served().model);
  Reply reply(request, served().tokenizer, "m");
  reply.on_token({42, -1.5f, {{42, 0.25f}}, "K"});
  reply.on_finish(FinishReason::length, {1, 1});
  auto lp = reply.body()["choices"][0]["logprobs"];
  EXPECT_EQ(lp["tokens"], json({"token_id:42"}));
  EXPECT_EQ(lp["token_logprobs"][0], -1.5f);
  EXPECT_NEAR(lp["top_logprobs"][0]["token_id:42"].get<double>(), std::log(0.25), 1e-6);
  EXPECT_EQ(lp["text_offset"], json({0}));
}

TEST(ErrorBody, OpenAiShape) {
  auto body = error_body(ApiError(429, "busy", "", "rate_limit_exceeded"));
  EXPECT_EQ(body,
            json::parse(R"({"error": {"message": "busy", "type": "rate_limit_error", "param": null,
                                            "code": "rate_limit_exceeded"}})"));
}

// Requests stepped together give the same tokens as each alone.
TEST(Scheduler, BatchedEqualsSolo) {
  auto model = Model::load(test::tiny_model(), {.threads = 1});
  Metrics metrics;
  GenerationOptions options;
  options.sampling.temperature = 0;
  options.max_tokens = 6;
  auto run = [&](Scheduler& scheduler, const std::vector<std::vector<TokenId>>& prompts) {
    return run_jobs(scheduler, prompts, options);
  };
  std::vector<std::vector<TokenId>> prompts{{1, 2, 3}, {7}, std::vector<TokenId>(20, 9), {4, 5}};
  Scheduler batched(*model, served().tokenizer, {4, 64, 8, 4}, metrics);
  auto together = run(batched, prompts);
  Scheduler single(*model, served().tokenizer, {1, 64, 8, 256}, metrics);
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(together[i], run(single, {prompts[i]})[0]) << i;
    EXPECT_EQ(together[i].size(), 6u);
  }
}

TEST(Scheduler, QueueLimitIs429) {
  auto model = Model::load(test::tiny_model(), {.threads = 1});
  Metrics metrics;
  GenerationOptions options;
  options.max_tokens = 50;
  Scheduler scheduler(*model, served().tokenizer, {1, 64, 1, 256}, metrics);
  std::vector<std::shared_ptr<Job>> jobs;
  int rejected = 0;
  for (int i = 0; i < 6; ++i) try {
      jobs.push_back(scheduler.submit({1, 2}, options));
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status, 429);
      ++rejected;
    }
  EXPECT_GE(rejected, 3);
  for (auto& j : jobs) j->cancel();
}

// A request that times out while still queued must end, or its HTTP thread would wait forever.
TEST(Scheduler, CancelledWhileQueuedStillFinishes) {
  auto model = Model::load(test::tiny_model(), {.threads = 1});
  Metrics metrics;
  GenerationOptions options;
  options.max_tokens = 40;
  Scheduler scheduler(*model, served().tokenizer, {1, 64, 4, 256}, metrics);
  auto running = scheduler.submit({1, 2}, options);
  auto queued = scheduler.submit({3, 4}, options);
  queued->cancel();
  Job::Update update;
  for (int i = 0; i < 100 && !update.finished; ++i)
    update = queued->wait(std::chrono::milliseconds(100));
  EXPECT_TRUE(update.finished);
  EXPECT_EQ(update.completion_tokens, 0);
  running->cancel();
}

}  // namespace
}  // namespace qwen3::server
