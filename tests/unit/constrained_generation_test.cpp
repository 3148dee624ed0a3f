// The sampler's mask hook and a whole constrained Generation on the tiny model.
#include <gtest/gtest.h>

#include <random>

#include "qwen3/error.h"
#include "qwen3/generation.h"
#include "qwen3/grammar.h"
#include "qwen3/sampler.h"
#include "test_paths.h"

namespace qwen3 {
namespace {

std::vector<uint64_t> mask_of(size_t vocab, std::initializer_list<int32_t> ids) {
  std::vector<uint64_t> m((vocab + 63) / 64, 0);
  for (int32_t id : ids) m[size_t(id) / 64] |= 1ull << (id % 64);
  return m;
}

TEST(SamplerMask, OnlyAllowedTokensAreDrawnWhateverTheSettings) {
  const std::vector<float> logits{5, 1, 4, 3, 0.5f, 2, -1, 6, 0, 1.5f};
  const auto allowed = mask_of(logits.size(), {1, 4, 8});
  for (float temperature : {0.0f, 0.7f, 1.5f}) {
    for (int top_k : {0, 1, 2, 5}) {
      for (float top_p : {1.0f, 0.5f}) {
        SamplingParams p;
        p.temperature = temperature;
        p.top_k = top_k;
        p.top_p = top_p;
        p.repetition_penalty = 1.3f;
        p.seed = 11;
        Sampler sampler(p);
        const std::vector<int32_t> history{1, 7};
        for (int draw = 0; draw < 200; ++draw) {
          const int32_t id = sampler.sample(logits, history, allowed);
          ASSERT_TRUE(id == 1 || id == 4 || id == 8)
              << "T " << temperature << " top_k " << top_k << ": " << id;
        }
      }
    }
  }
  // Greedy takes the best allowed token, not the best token; an empty mask allows all.
  SamplingParams greedy;
  greedy.temperature = 0;
  Sampler g(greedy);
  EXPECT_EQ(g.sample(logits, {}, allowed), 1);
  EXPECT_EQ(g.sample(logits, {}, {}), 7);
  // Ids past the bitset are not allowed.
  std::vector<float> wide(130, 0.0f);
  wide[129] = 9;
  wide[3] = 1;
  EXPECT_EQ(g.sample(wide, {}, std::vector<uint64_t>{~0ull}), 3);
}

TEST(SamplerMask, AllowedArgmaxEqualsAScanOfTheAllowed) {
  std::mt19937 rng(4);
  for (size_t n : {1u, 63u, 64u, 65u, 1000u, 4097u}) {
    std::vector<float> logits(n);
    for (auto& x : logits) x = float(rng() % 50);  // many ties: the lowest id must win
    for (int round = 0; round < 20; ++round) {
      std::vector<uint64_t> mask((n + 63) / 64);
      for (auto& w : mask)
        w = rng() % 3 == 0 ? ~0ull : rng() % 2 ? 0 : (uint64_t(rng()) << 32 | rng());
      int32_t expected = -1;
      for (size_t i = 0; i < n; ++i)
        if (mask[i / 64] >> (i % 64) & 1 && (expected < 0 || logits[i] > logits[size_t(expected)]))
          expected = int32_t(i);
      EXPECT_EQ(allowed_argmax(logits, mask), expected < 0 ? 0 : expected) << n << " " << round;
    }
  }
}

TEST(SamplerMask, DrawsInProportionAmongTheAllowed) {
  // Allowed 0 and 2 with logits log 1 and log 3: drawn 1:3 after renormalising.
  const std::vector<float> logits{0.0f, 10.0f, std::log(3.0f)};
  SamplingParams p;
  p.seed = 3;
  Sampler sampler(p);
  const auto allowed = mask_of(3, {0, 2});
  int twos = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) twos += sampler.sample(logits, {}, allowed) == 2;
  EXPECT_NEAR(double(twos) / n, 0.75, 0.015);
}

// The tiny random model, constrained: every reply is the schema's JSON and ends with the eos token.
TEST(ConstrainedGeneration, TinyModelWritesTheSchemasJson) {
  LoadOptions load;
  load.threads = 1;
  auto model = Model::load(test::tiny_model(), load);
  const auto tokenizer = Tokenizer::load(test::tiny_model());
  auto vocabulary = std::make_shared<const TokenVocabulary>(tokenizer);
  const auto schema = nlohmann::ordered_json::parse(
      R"({"type": "object", "properties": {"ok": {"type": "boolean"}, "n": {"enum": [1, 2, 3]}}, "required": ["ok", "n"],
          "additionalProperties": false})");
  auto grammar =
      std::make_shared<const TokenGrammar>(Grammar::parse(json_schema_grammar(schema)), vocabulary);
  for (uint64_t seed : {1, 2, 3}) {
    GenerationOptions options;
    options.sampling.temperature = 1.0f;
    options.sampling.seed = seed;
    options.max_tokens = 200;
    options.eos = {151645};
    options.grammar = GrammarConstraint{grammar, GrammarConstraint::Reasoning::none, -1, -1};
    Sequence sequence(*model, 512);
    Generation g(sequence, tokenizer, tokenizer.encode("JSON please:"), options);
    generate(*model, g, [](const GeneratedToken&) {});
    ASSERT_EQ(g.finish_reason(), FinishReason::eos) << g.text();
    const auto parsed = nlohmann::json::parse(g.text());
    EXPECT_TRUE(parsed["ok"].is_boolean()) << g.text();
    EXPECT_TRUE(parsed["n"] == 1 || parsed["n"] == 2 || parsed["n"] == 3) << g.text();
    EXPECT_EQ(parsed.size(), 2u);
  }
  GenerationOptions no_eos;
  no_eos.grammar = GrammarConstraint{grammar, GrammarConstraint::Reasoning::none, -1, -1};
  EXPECT_THROW(no_eos.validate(), Error);
  GenerationOptions other_end;
  other_end.eos = {151645};
  other_end.grammar =
      GrammarConstraint{grammar, GrammarConstraint::Reasoning::none, -1, -1, {151643}};
  EXPECT_THROW(other_end.validate(), Error);
}

}  // namespace
}  // namespace qwen3
