// The server's parts without a socket: request parsing, safe chat tokenization, the <think>
// splitter, reply shapes and the continuous-batching scheduler on the tiny model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "qwen3/chat.h"
#include "qwen3/model.h"
#include "qwen3/tokenizer.h"
#include "server/api_error.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "qwen3/reasoning.h"
#include "server/scheduler.h"
#include "qwen3/generation.h"
#include "test_paths.h"

namespace qwen3::server {
namespace {

using nlohmann::json;

struct Served {
  Tokenizer tokenizer = Tokenizer::load(test::tiny_model());
  ChatTemplate chat = ChatTemplate::load(test::tiny_model());
  ServedModel model;
  Served() {
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
  auto r = parse_request(Endpoint::chat, R"({"model": "m", "messages": [{"role": "user", "content": "hi"}],
      "temperature": 0, "top_k": -1, "seed": 3, "stop": "x", "max_tokens": 5, "stream": true,
      "stream_options": {"include_usage": true}, "logprobs": true, "top_logprobs": 2})", served().model);
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

TEST(OpenAiRequest, CompletionPromptForms) {
  auto ids = parse_request(Endpoint::completion, R"({"prompt": [1, 2, 3], "ignore_eos": true})", served().model);
  EXPECT_EQ(ids.prompt, (std::vector<TokenId>{1, 2, 3}));
  EXPECT_TRUE(ids.options.eos.empty());
  EXPECT_EQ(ids.options.max_tokens, 61);  // the rest of the context
  auto text = parse_request(Endpoint::completion, R"({"prompt": ["Hello"], "logprobs": 3})", served().model);
  EXPECT_EQ(text.prompt, served().tokenizer.encode("Hello"));
  EXPECT_EQ(text.options.top_logprobs, 3);
}

TEST(OpenAiRequest, ErrorsNameTheField) {
  EXPECT_EQ(error_of(Endpoint::chat, "{").status, 400);
  EXPECT_EQ(error_of(Endpoint::chat, R"({"messages": []})").param, "messages");
  EXPECT_EQ(error_of(Endpoint::chat, R"({"messages": [{"role": "x", "content": ""}]})").param, "messages[0].role");
  EXPECT_EQ(error_of(Endpoint::chat, R"({"messages": [{"role": "user", "content": "a"}], "n": 2})").param, "n");
  EXPECT_EQ(error_of(Endpoint::chat, R"({"messages": [{"role": "user", "content": "a"}], "temperature": "1"})").param, "temperature");
  EXPECT_EQ(error_of(Endpoint::completion, R"({"prompt": [1, 2], "top_p": 0})").status, 400);
  EXPECT_EQ(error_of(Endpoint::completion, R"({"prompt": [1, 2], "max_tokens": 1e30})").param, "max_tokens");
  auto too_long = error_of(Endpoint::completion, json({{"prompt", std::vector<int>(64, 5)}}).dump());
  EXPECT_EQ(too_long.code, "context_length_exceeded");
}

TEST(EosIds, GenerationConfigListPlusConfig) {
  auto config = ModelConfig::load(test::tiny_model());
  EXPECT_EQ(eos_tokens(test::tiny_model(), config), (std::vector<TokenId>{151645, 151643}));
}

std::pair<std::string, std::string> split_all(ThinkSplitter s, const std::vector<std::string>& pieces) {
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
  EXPECT_EQ(split_all(ThinkSplitter(true, false), {"<think>\nhm", "m\n</th", "ink>\n\nAns", "wer"}), P("\nhmm\n", "Answer"));
  EXPECT_EQ(split_all(ThinkSplitter(true, false), {"<", "thi", "nk>a</think>b"}), P("a", "b"));
  EXPECT_EQ(split_all(ThinkSplitter(true, false), {"<thought", ">"}), P("", "<thought>"));
  EXPECT_EQ(split_all(ThinkSplitter(true, true), {"why</think>\n\nso"}), P("why", "so"));  // prompt opened it
  EXPECT_EQ(split_all(ThinkSplitter(true, false), {"<think>unfinished </thi"}), P("unfinished </thi", ""));
  EXPECT_EQ(split_all(ThinkSplitter(false, false), {"<think>a</think>b"}), P("", "<think>a</think>b"));
}

TEST(Reply, ChatBodyAndChunks) {
  ApiRequest request = parse_request(Endpoint::chat, R"({"messages": [{"role": "user", "content": "a"}],
      "stream_options": {"include_usage": true}, "stream": true})", served().model);
  Reply reply(request, served().tokenizer, "qwen3-tiny");
  EXPECT_EQ(reply.start()[0]["choices"][0]["delta"]["role"], "assistant");
  GeneratedToken think{151667, -0.5f, {}, "<think>"}, word{1, -0.1f, {}, "x</think>\n\nok"};
  EXPECT_TRUE(reply.on_token(think).empty());  // held: nothing to say yet
  auto chunks = reply.on_token(word);
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0]["choices"][0]["delta"], json({{"reasoning_content", "x"}, {"content", "ok"}}));
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

TEST(Reply, CompletionLogprobs) {
  ApiRequest request = parse_request(Endpoint::completion, R"({"prompt": [1], "logprobs": 1,
      "return_tokens_as_token_ids": true})", served().model);
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
  EXPECT_EQ(body, json::parse(R"({"error": {"message": "busy", "type": "rate_limit_error", "param": null,
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
    std::vector<std::shared_ptr<Job>> jobs;
    for (auto& p : prompts) jobs.push_back(scheduler.submit(p, options));
    std::vector<std::vector<TokenId>> out;
    for (auto& job : jobs) {
      std::vector<TokenId> ids;
      for (Job::Update u; !u.finished;) {
        u = job->wait(std::chrono::milliseconds(1000));
        for (auto& t : u.tokens) ids.push_back(t.id);
        EXPECT_TRUE(u.error.empty()) << u.error;
      }
      out.push_back(ids);
    }
    return out;
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
  for (int i = 0; i < 100 && !update.finished; ++i) update = queued->wait(std::chrono::milliseconds(100));
  EXPECT_TRUE(update.finished);
  EXPECT_EQ(update.completion_tokens, 0);
  running->cancel();
}

}  // namespace
}  // namespace qwen3::server
