// The reasoning controller on scripted token streams (thinking budget, grace, loop guard), and
// inside a Generation on the tiny model.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "qwen3/error.h"
#include "qwen3/generation.h"
#include "qwen3/grammar.h"
#include "qwen3/reasoning_control.h"
#include "test_paths.h"

namespace qwen3 {
namespace {

// A made-up vocabulary: the tags and the forced closing "\n", "</think>", "\n\n".
constexpr TokenId kOpen = 1000, kClose = 1001, kNewline = 10, kBlankLine = 11;
const ThinkTokens kTags{kOpen, kClose, {kNewline, kClose, kBlankLine}};

// Feeds a scripted stream: each step emits the forced token when there is one, else the next
// scripted token. Returns what was emitted.
std::vector<TokenId> run(ReasoningController& c, const std::vector<std::string>& script,
                         std::vector<TokenId> ids = {}) {
  if (ids.empty())
    for (size_t i = 0; i < script.size(); ++i) ids.push_back(TokenId(2000 + i));
  std::vector<TokenId> out;
  size_t next = 0;
  while (next < script.size() || c.forced({})) {
    if (auto f = c.forced({})) {
      c.accept(*f, *f == kNewline ? "\n" : *f == kBlankLine ? "\n\n" : "</think>");
      out.push_back(*f);
    } else {
      c.accept(ids[next], script[next]);
      out.push_back(ids[next++]);
    }
  }
  return out;
}

// The position of the forced closing in `out`, or -1.
long closing_at(const std::vector<TokenId>& out) {
  const std::vector<TokenId> closing = kTags.closing;
  auto it = std::search(out.begin(), out.end(), closing.begin(), closing.end());
  return it == out.end() ? -1 : it - out.begin();
}

ReasoningOptions budget(int tokens, int grace) {
  ReasoningOptions o;
  o.thinking_budget = tokens;
  o.grace_tokens = grace;
  o.loop_action = LoopAction::off;
  return o;
}

TEST(ReasoningControl, BudgetClosesAtTheNextSentenceEnd) {
  ReasoningController c(budget(5, 32), kTags, true);
  const std::vector<std::string> script{" We",   " add", " two",  ".", " Then", " three",
                                        " more", " and", " stop", ".", " After"};
  const auto out = run(c, script);
  // The budget is reached at " Then" (5 tokens); the next sentence end is the second ".".
  const long end = std::find(script.begin() + 5, script.end(), ".") - script.begin();
  EXPECT_EQ(closing_at(out), end + 1);
  EXPECT_EQ(c.reasoning_tokens(), end + 2) << "the thinking and the forced line break";
  EXPECT_FALSE(c.thinking());
  ASSERT_EQ(c.events().size(), 1u);
  EXPECT_EQ(c.events()[0].cause, ReasoningEvent::Cause::thinking_budget);
  EXPECT_EQ(c.events()[0].action, ReasoningEvent::Action::closed_thinking);
  EXPECT_EQ(c.events()[0].reasoning_tokens, end + 1);
}

TEST(ReasoningControl, BudgetForcesTheCloseAfterTheGrace) {
  for (int grace : {1, 2, 7}) {
    const int limit = 4;
    ReasoningController c(budget(limit, grace), kTags, true);
    const auto out = run(c, std::vector<std::string>(40, " word"));
    EXPECT_EQ(c.reasoning_tokens(), limit + grace) << grace;
    EXPECT_EQ(closing_at(out), limit + grace - 1) << grace;
    EXPECT_EQ(out.size(), 40u + 3) << "the script goes on as the answer";
  }
}

TEST(ReasoningControl, ZeroBudgetClosesBeforeAnyThought) {
  ReasoningController opened(budget(0, 8), kTags, true);
  EXPECT_EQ(closing_at(run(opened, {" answer"})), 0);
  EXPECT_EQ(opened.reasoning_tokens(), 1);
  // Qwen3 opens the block itself: the close follows its <think>.
  ReasoningController c(budget(0, 8), kTags, false);
  const auto out = run(c, {"<think>", " answer"}, {kOpen, 2000});
  EXPECT_EQ(closing_at(out), 1);
  EXPECT_EQ(out.back(), 2000);
}

TEST(ReasoningControl, ADecimalPointEndsNoSentence) {
  ReasoningController c(budget(1, 32), kTags, true);
  const auto out = run(c, {" x", " =", " 3", ".", "14", " so", " done", ".\n", " more"});
  EXPECT_EQ(closing_at(out), 8) << "after \".\\n\", not after the \".\" of 3.14";
}

TEST(ReasoningControl, NoThinkingNothingToControl) {
  ReasoningController c(budget(0, 1), kTags, false);
  const auto out = run(c, {"Hello", ".", " Bye"});
  EXPECT_EQ(closing_at(out), -1);
  EXPECT_EQ(c.reasoning_tokens(), 0);
  EXPECT_TRUE(c.events().empty());
  ReasoningController no_tags(budget(0, 1), ThinkTokens{}, true);
  EXPECT_EQ(closing_at(run(no_tags, {"a", "."})), -1);
}

TEST(ReasoningControl, TheModelsOwnCloseEndsTheThinking) {
  ReasoningController c(budget(100, 8), kTags, false);
  const auto out =
      run(c, {"<think>", " a", ".", "</think>", " answer"}, {kOpen, 2001, 2002, kClose, 2003});
  EXPECT_EQ(closing_at(out), -1);
  EXPECT_EQ(c.reasoning_tokens(), 2);
  EXPECT_TRUE(c.events().empty());
  EXPECT_FALSE(c.thinking());
}

TEST(ReasoningControl, AGrammarThatRefusesTheBlankLineDropsIt) {
  ReasoningController c(budget(0, 4), kTags, true);
  std::vector<uint64_t> no_blank_line((kClose + 64) / 64, ~0ull);
  no_blank_line[kBlankLine / 64] &= ~(1ull << (kBlankLine % 64));
  ASSERT_EQ(c.forced(no_blank_line), kNewline);
  c.accept(kNewline, "\n");
  ASSERT_EQ(c.forced(no_blank_line), kClose);
  c.accept(kClose, "</think>");
  EXPECT_EQ(c.forced(no_blank_line), std::nullopt);
  EXPECT_EQ(c.forced({}), std::nullopt) << "dropped, not postponed";
}

// A stream of `length` tokens repeating a cycle of `period` distinct tokens.
std::vector<TokenId> cycle(int period, int length) {
  std::vector<TokenId> ids;
  for (int i = 0; i < length; ++i) ids.push_back(3000 + i % period);
  return ids;
}

ReasoningOptions guard(LoopAction action) {
  ReasoningOptions o;
  o.loop_action = action;
  return o;
}

TEST(ReasoningControl, LoopIsClosedWhenARunRepeats) {
  for (int period : {1, 7, 25, 60}) {
    ReasoningController c(guard(LoopAction::close), kTags, true);
    const auto ids = cycle(period, 600);
    const auto out = run(c, std::vector<std::string>(ids.size(), " w"), ids);
    const ReasoningOptions o;
    // The first loop_ngram-token run comes back every `period` tokens.
    const int expected = o.loop_ngram + (o.loop_repeats - 1) * period;
    EXPECT_EQ(closing_at(out), expected) << period;
    ASSERT_EQ(c.events().size(), 1u);
    EXPECT_EQ(c.events()[0].cause, ReasoningEvent::Cause::loop);
    EXPECT_EQ(c.events()[0].reasoning_tokens, expected);
  }
}

TEST(ReasoningControl, ThinkingThatMovesOnIsNotALoop) {
  ReasoningController c(guard(LoopAction::close), kTags, true);
  // Runs repeat, but never loop_repeats times: each 20-token phrase comes back twice.
  std::vector<TokenId> ids;
  for (int phrase = 0; phrase < 50; ++phrase)
    for (int twice = 0; twice < 2; ++twice)
      for (int i = 0; i < 30; ++i) ids.push_back(5000 + phrase * 30 + i);
  const auto out = run(c, std::vector<std::string>(ids.size(), " w"), ids);
  EXPECT_EQ(closing_at(out), -1);
  EXPECT_TRUE(c.events().empty());
}

TEST(ReasoningControl, PenalizeRaisesThePresencePenaltyThenCloses) {
  ReasoningController c(guard(LoopAction::penalize), kTags, true);
  const ReasoningOptions o;
  const int period = 30, first = o.loop_ngram + (o.loop_repeats - 1) * period;
  const auto ids = cycle(period, 1000);
  std::vector<float> penalties;
  size_t next = 0;
  std::vector<TokenId> out;
  while (next < ids.size()) {
    const auto f = c.forced({});
    const TokenId id = f ? *f : ids[next++];
    c.accept(id, " w");
    out.push_back(id);
    penalties.push_back(c.presence_penalty(0.25f));
  }
  ASSERT_EQ(c.events().size(), 2u);
  EXPECT_EQ(c.events()[0].action, ReasoningEvent::Action::raised_presence_penalty);
  EXPECT_EQ(c.events()[0].reasoning_tokens, first);
  EXPECT_EQ(penalties[first - 2], 0.25f);
  EXPECT_EQ(penalties[first - 1], o.loop_presence_penalty);
  // The counts start again: the loop must repeat loop_repeats times more.
  const int second = first + o.loop_ngram + (o.loop_repeats - 1) * period;
  EXPECT_EQ(c.events()[1].action, ReasoningEvent::Action::closed_thinking);
  EXPECT_EQ(c.events()[1].reasoning_tokens, second);
  EXPECT_EQ(closing_at(out), second);
  EXPECT_EQ(penalties.back(), 0.25f) << "the answer is sampled as asked";
}

TEST(ReasoningControl, BadOptionsNameTheField) {
  auto message = [](ReasoningOptions o) {
    try {
      o.validate();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  ReasoningOptions o;
  EXPECT_EQ(message(o), "");
  o.thinking_budget = -1;
  EXPECT_NE(message(o).find("thinking_budget"), std::string::npos);
  o = {};
  o.grace_tokens = 0;
  EXPECT_NE(message(o).find("grace_tokens"), std::string::npos);
  o = {};
  o.loop_repeats = 1;
  EXPECT_NE(message(o).find("loop_repeats"), std::string::npos);
  o = {};
  o.loop_presence_penalty = 3;
  EXPECT_NE(message(o).find("loop_presence_penalty"), std::string::npos);
}

TEST(ReasoningControl, ThinkTokensOfQwen3sVocabulary) {
  const Tokenizer tokenizer = Tokenizer::load(test::tiny_model());
  const ThinkTokens t = ThinkTokens::of(tokenizer);
  EXPECT_EQ(tokenizer.decode(std::vector<TokenId>{t.open}), "<think>");
  EXPECT_EQ(tokenizer.decode(std::vector<TokenId>{t.close}), "</think>");
  EXPECT_EQ(tokenizer.decode(t.closing), "\n</think>\n\n");
}

// A whole generation on the tiny model from a prompt that opened the think block: the budget
// closes it, and the reply goes on after it.
TEST(ReasoningControl, GenerationClosesTheThinkBlockWithinTheBudget) {
  auto model = Model::load(test::tiny_model(), {.threads = 1});
  const Tokenizer tokenizer = Tokenizer::load(test::tiny_model());
  const auto prompt =
      tokenizer.encode("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n");
  const ThinkTokens tags = ThinkTokens::of(tokenizer);
  for (int limit : {0, 3, 10}) {
    GenerationOptions o;
    o.sampling.temperature = 0;
    o.max_tokens = 80;
    o.reasoning = ReasoningOptions{.thinking_budget = limit, .grace_tokens = 6};
    Sequence seq(*model);
    Generation g(seq, tokenizer, prompt, o);
    generate(*model, g, [](const GeneratedToken&) {});
    const auto& out = g.generated();
    auto at = std::search(out.begin(), out.end(), tags.closing.begin(), tags.closing.end());
    ASSERT_NE(at, out.end()) << limit;
    const int reasoning = int(at - out.begin()) + 1;  // with the forced line break
    EXPECT_EQ(g.reasoning()->reasoning_tokens(), reasoning);
    EXPECT_GE(reasoning, limit);
    EXPECT_LE(reasoning, limit + 6);
    EXPECT_FALSE(g.reasoning()->thinking());
    EXPECT_GT(out.end() - at, 3) << "the answer follows";
  }
}

// With a grammar after the reasoning: the forced </think> starts it, the blank line goes where
// the grammar takes leading white space and is dropped where it does not.
TEST(ReasoningControl, ABudgetClosedBlockHandsOverToTheGrammar) {
  auto model = Model::load(test::tiny_model(), {.threads = 1});
  const Tokenizer tokenizer = Tokenizer::load(test::tiny_model());
  auto vocabulary = std::make_shared<const TokenVocabulary>(tokenizer);
  const auto prompt =
      tokenizer.encode("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n");
  const auto schema = nlohmann::ordered_json::parse(
      R"({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
          "additionalProperties": false})");
  for (const std::string& text : {json_schema_grammar(schema), std::string("root ::= \"ok\"")}) {
    GenerationOptions o;
    o.sampling.temperature = 1;
    o.sampling.seed = 5;
    o.max_tokens = 200;
    o.eos = {tokenizer.token_id("<|im_end|>")};
    o.grammar =
        GrammarConstraint{std::make_shared<const TokenGrammar>(Grammar::parse(text), vocabulary),
                          GrammarConstraint::Reasoning::open, tokenizer.token_id("<think>"),
                          tokenizer.token_id("</think>")};
    o.reasoning = ReasoningOptions{.thinking_budget = 4};
    Sequence seq(*model);
    Generation g(seq, tokenizer, prompt, o);
    generate(*model, g, [](const GeneratedToken&) {});
    ASSERT_EQ(g.finish_reason(), FinishReason::eos) << g.text();
    const size_t close = g.text().find("</think>");
    ASSERT_NE(close, std::string::npos) << g.text();
    EXPECT_LE(g.reasoning()->reasoning_tokens(), 4 + ReasoningOptions().grace_tokens);
    const std::string answer = g.text().substr(close + 8);
    if (text.starts_with("root")) {
      EXPECT_EQ(answer, "ok") << "no room for the blank line";
    } else {
      EXPECT_TRUE(answer.starts_with("\n\n")) << answer;
      EXPECT_TRUE(nlohmann::json::parse(answer)["ok"].is_boolean()) << answer;
    }
  }
}

}  // namespace
}  // namespace qwen3
