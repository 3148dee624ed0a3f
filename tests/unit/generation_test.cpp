// Generation: prompt chunks, eos, token limits, stop strings held back and cut, streamed text.
#include <gtest/gtest.h>

#include "io/json_file.h"
#include "qwen3/error.h"
#include "qwen3/generation.h"
#include "test_paths.h"

namespace qwen3 {
namespace {

struct Fixture {
  std::unique_ptr<Model> model =
      Model::load(test::tiny_model(), {.threads = 1, .activations = Activations::f32});
  Tokenizer tokenizer = Tokenizer::load(test::tiny_model());
  nlohmann::json france = io::read_json(test::reference("qwen3-tiny.json"))["cases"][0];
  std::vector<TokenId> prompt = france["prompt_ids"].get<std::vector<TokenId>>();
  std::vector<TokenId> greedy = france["greedy_ids"].get<std::vector<TokenId>>();

  GenerationOptions greedy_options(int max_tokens) {
    GenerationOptions o;
    o.sampling.temperature = 0;
    o.max_tokens = max_tokens;
    return o;
  }
};

Fixture& fx() {
  static Fixture f;
  return f;
}

std::string run(Generation& g, std::string* streamed = nullptr, int chunk = 512) {
  std::string text;
  generate(
      *fx().model, g, [&](const GeneratedToken& t) { text += t.text; }, chunk);
  if (streamed) *streamed = text;
  return g.text();
}

TEST(Generation, GreedyEqualsTheReferenceWhateverThePromptChunk) {
  for (int chunk : {1, 2, 512}) {
    Sequence seq(*fx().model);
    Generation g(seq, fx().tokenizer, fx().prompt, fx().greedy_options(16));
    std::string streamed;
    run(g, &streamed, chunk);
    EXPECT_EQ(g.generated(), std::vector<TokenId>(fx().greedy.begin(), fx().greedy.begin() + 16))
        << chunk;
    EXPECT_EQ(g.finish_reason(), FinishReason::length);
    EXPECT_EQ(streamed, g.text());
    EXPECT_EQ(g.text(), fx().tokenizer.decode(g.generated()));
    EXPECT_EQ(seq.length(), int(fx().prompt.size()) + 15) << "the last sampled token is not fed";
  }
}

TEST(Generation, EosEndsWithoutText) {
  // The "chat" case's greedy run is 5 x 49722 then 60506, which plays eos here.
  const auto chat = io::read_json(test::reference("qwen3-tiny.json"))["cases"][2];
  const auto greedy = chat["greedy_ids"].get<std::vector<TokenId>>();
  ASSERT_EQ(greedy[5], 60506);
  Sequence seq(*fx().model);
  GenerationOptions o = fx().greedy_options(16);
  o.eos = {60506};
  Generation g(seq, fx().tokenizer, chat["prompt_ids"].get<std::vector<TokenId>>(), o);
  run(g);
  EXPECT_EQ(g.finish_reason(), FinishReason::eos);
  EXPECT_EQ(g.completion_tokens(), 6);
  EXPECT_EQ(g.text(),
            fx().tokenizer.decode(std::vector<TokenId>(greedy.begin(), greedy.begin() + 5)));
  EXPECT_STREQ(finish_reason_name(g.finish_reason()), "stop");
}

TEST(Generation, StopStringIsCutAndNeverStreamed) {
  const std::string full = fx().tokenizer.decode(fx().greedy);
  const std::string stop = full.substr(10, 4);
  Sequence seq(*fx().model);
  GenerationOptions o = fx().greedy_options(32);
  o.stop = {"never appears", stop};
  Generation g(seq, fx().tokenizer, fx().prompt, o);
  std::string streamed;
  run(g, &streamed);
  EXPECT_EQ(g.finish_reason(), FinishReason::stop);
  EXPECT_EQ(streamed, full.substr(0, full.find(stop)));
  EXPECT_EQ(g.text(), streamed);
}

TEST(Generation, LogprobsAreOfTheModelDistribution) {
  Sequence seq(*fx().model);
  GenerationOptions o = fx().greedy_options(1);
  o.logprobs = true;
  o.top_logprobs = 3;
  Generation g(seq, fx().tokenizer, fx().prompt, o);
  std::optional<GeneratedToken> first;
  generate(*fx().model, g, [&](const GeneratedToken& t) { first = t; });
  ASSERT_TRUE(first);
  ASSERT_EQ(first->top.size(), 3u);
  EXPECT_EQ(first->top[0].id, first->id);
  EXPECT_NEAR(std::exp(first->logprob), first->top[0].prob, 1e-5);
  const auto& ref = fx().france["positions"].back();
  EXPECT_NEAR(first->logprob, ref["top"][0][1].get<double>() - ref["logsumexp"].get<double>(),
              1e-3);

  Sequence again(*fx().model);
  o.logprobs = false;  // not asked for: not computed
  Generation h(again, fx().tokenizer, fx().prompt, o);
  generate(*fx().model, h, [&](const GeneratedToken& t) {
    EXPECT_EQ(t.logprob, 0.0f);
    EXPECT_EQ(t.top.size(), 3u);
  });
}

TEST(Generation, BadOptionsAndOverlongPromptsAreRefused) {
  Sequence small(*fx().model, 5);
  EXPECT_THROW(Generation(small, fx().tokenizer, fx().prompt, fx().greedy_options(4)), Error)
      << "5 prompt tokens leave no room for one more in a context of 5";
  Sequence seq(*fx().model);
  GenerationOptions o = fx().greedy_options(4);
  o.top_logprobs = 21;
  EXPECT_THROW(Generation(seq, fx().tokenizer, fx().prompt, o), Error);
  o = fx().greedy_options(-1);
  EXPECT_THROW(Generation(seq, fx().tokenizer, fx().prompt, o), Error);
  o = fx().greedy_options(4);
  o.stop = {""};
  EXPECT_THROW(Generation(seq, fx().tokenizer, fx().prompt, o), Error);
  EXPECT_THROW(Generation(seq, fx().tokenizer, {}, fx().greedy_options(4)), Error);
}

TEST(Generation, ContextEndIsALengthFinish) {
  Sequence seq(*fx().model, int(fx().prompt.size()) + 3);
  Generation g(seq, fx().tokenizer, fx().prompt, fx().greedy_options(100));
  run(g);
  EXPECT_EQ(g.finish_reason(), FinishReason::length);
  EXPECT_EQ(g.completion_tokens(), 4);
}

}  // namespace
}  // namespace qwen3
