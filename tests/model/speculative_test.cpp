// Speculative decoding is exact: greedy output is the plain output token for token, for every
// proposer, model kind, thread count and batch; rejected drafts leave the sequence's state as
// plain decoding leaves it, bit for bit.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

#include "qwen3/error.h"
#include "qwen3/generation.h"
#include "qwen3/speculative.h"
#include "qwen3/tokenizer.h"
#include "test_paths.h"

namespace qwen3 {
namespace {

namespace fs = std::filesystem;

fs::path model_dir(const std::string& name) { return test::fixtures() / "models" / name; }

const Tokenizer& tokenizer() {
  static const Tokenizer t = Tokenizer::load(test::tiny_model());
  return t;
}

// A prompt that repeats itself, so that prompt lookup has something to find.
std::vector<TokenId> prompt() {
  std::vector<TokenId> ids;
  for (int r = 0; r < 3; ++r)
    for (int i = 0; i < 12; ++i) ids.push_back((i * 104729 + 17) % 2048);
  return ids;
}

GenerationOptions greedy(int max_tokens) {
  GenerationOptions o;
  o.sampling.temperature = 0;
  o.max_tokens = max_tokens;
  return o;
}

// Proposes the continuation it is given, with every `wrong_every`-th draft token changed: steps
// then keep some drafts and reject others at known places.
class ScriptedProposer : public Proposer {
 public:
  ScriptedProposer(std::vector<TokenId> script, size_t prompt_size, int wrong_every)
      : script_(std::move(script)), prompt_size_(prompt_size), wrong_every_(wrong_every) {}
  std::vector<TokenId> propose(std::span<const TokenId> context, int k) override {
    std::vector<TokenId> out;
    for (size_t i = context.size() - prompt_size_; i < script_.size() && int(out.size()) < k; ++i)
      out.push_back(++count_ % wrong_every_ == 0 ? (script_[i] + 1) % 2048 : script_[i]);
    return out;
  }
  double token_cost() const override { return 0; }
  const char* name() const override { return "scripted"; }

 private:
  std::vector<TokenId> script_;
  size_t prompt_size_;
  int wrong_every_, count_ = 0;
};

struct Outcome {
  std::vector<TokenId> tokens;
  SpeculationStats stats;
};

Outcome decode(Model& model, Sequence& seq, std::unique_ptr<Proposer> proposer, int n,
               int max_draft = 4) {
  Generation g(seq, tokenizer(), prompt(), greedy(n));
  if (proposer) g.speculate(std::move(proposer), max_draft, model.pass_rows());
  Outcome out;
  generate(model, g, [&](const GeneratedToken& t) { out.tokens.push_back(t.id); });
  if (g.speculation()) out.stats = *g.speculation();
  return out;
}

class SpeculationExact : public testing::TestWithParam<std::string> {};

// Each proposer against plain decoding, on one and two threads: the same tokens, and the same
// state in every layer afterwards (the KV caches, and a hybrid model's recurrent states after
// rejected drafts were rewound).
TEST_P(SpeculationExact, GreedyOutputAndStateAreThePlainOnes) {
  const fs::path dir = model_dir(GetParam());
  constexpr int kTokens = 40;
  for (int threads : {1, 2}) {
    auto model = Model::load(dir, {.threads = threads});
    // A q8 copy drafts for the models whose matrices quantize (the MoE fixture's shared expert
    // has 48 columns, not whole blocks of 32).
    auto q8 = GetParam() == "qwen35-tiny-moe"
                  ? nullptr
                  : Model::load(dir, {.threads = threads, .quant = WeightQuant::q8});
    Sequence plain_seq(*model);
    const Outcome plain = decode(*model, plain_seq, nullptr, kTokens);
    ASSERT_EQ(plain.tokens.size(), size_t(kTokens));

    struct Case {
      std::string name;
      std::function<std::unique_ptr<Proposer>(Sequence&)> make;
    };
    std::vector<Case> cases = {
        {"ngram", [](Sequence&) { return ngram_proposer(1, 4); }},
        {"draft (itself)", [&](Sequence&) { return draft_proposer(*model, *model, 4096); }},
        {"scripted", [&](Sequence&) {
           return std::make_unique<ScriptedProposer>(plain.tokens, prompt().size(), 3);
         }}};
    if (q8)
      cases.push_back(
          {"draft (q8 copy)", [&](Sequence&) { return draft_proposer(*q8, *model, 4096); }});
    if (model->config().mtp_num_hidden_layers)
      cases.push_back({"mtp", [&](Sequence& s) { return mtp_proposer(*model, s); }});
    for (const Case& c : cases) {
      SCOPED_TRACE(c.name + ", " + std::to_string(threads) + " threads");
      Sequence seq(*model);
      const Outcome spec = decode(*model, seq, c.make(seq), kTokens);
      EXPECT_EQ(spec.tokens, plain.tokens);
      EXPECT_EQ(seq.length(), plain_seq.length());
      EXPECT_TRUE(seq.same_state(plain_seq));
      if (c.name != "ngram")
        EXPECT_GT(spec.stats.steps, 0);  // a random model's text may not repeat
      if (c.name == "draft (itself)") EXPECT_GT(spec.stats.accepted, 0);
      if (c.name == "scripted") {  // some drafts kept, some rejected and rewound
        EXPECT_GT(spec.stats.accepted, 0);
        EXPECT_LT(spec.stats.accepted, spec.stats.proposed);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, SpeculationExact,
                         testing::Values("qwen3-tiny-untied", "qwen35-tiny", "qwen35-tiny-moe"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::erase(name, '-');
                           return name;
                         });

// A speculating generation stepped in one batch with a plain one and a second speculating one:
// each gives its solo tokens.
TEST(Speculation, BatchedWithOthersGivesTheSoloTokens) {
  auto model = Model::load(model_dir("qwen35-tiny"), {.threads = 2});
  Sequence solo_seq(*model);
  const Outcome solo = decode(*model, solo_seq, nullptr, 30);

  std::vector<std::unique_ptr<Sequence>> seqs;
  std::vector<std::unique_ptr<Generation>> gens;
  for (int i = 0; i < 3; ++i) {
    seqs.push_back(std::make_unique<Sequence>(*model));
    gens.push_back(std::make_unique<Generation>(*seqs[i], tokenizer(), prompt(), greedy(30)));
  }
  gens[0]->speculate(mtp_proposer(*model, *seqs[0]), 3, model->pass_rows());
  gens[2]->speculate(std::make_unique<ScriptedProposer>(solo.tokens, prompt().size(), 2), 5,
                     model->pass_rows());
  std::vector<std::vector<TokenId>> out(3);
  std::vector<std::vector<float>> logits;
  while (!gens[0]->done() || !gens[1]->done() || !gens[2]->done()) {
    std::vector<BatchItem> batch;
    std::vector<int> who;
    for (int i = 0; i < 3; ++i)
      if (!gens[i]->done()) batch.push_back(gens[i]->next_item(7)), who.push_back(i);
    model->step(batch, logits);
    for (size_t b = 0; b < batch.size(); ++b)
      for (auto& t : gens[who[b]]->advance(static_cast<int>(batch[b].tokens.size()), logits[b]))
        out[who[b]].push_back(t.id);
  }
  for (int i = 0; i < 3; ++i) EXPECT_EQ(out[i], solo.tokens) << "generation " << i;
}

// An eos token among accepted drafts ends the generation there, with the sequence holding what
// plain decoding would hold.
TEST(Speculation, EosAmongTheDraftsEndsThere) {
  auto model = Model::load(model_dir("qwen3-tiny-untied"), {.threads = 2});
  Sequence plain_seq(*model);
  const Outcome plain = decode(*model, plain_seq, nullptr, 20);
  GenerationOptions options = greedy(20);
  options.eos = {plain.tokens[6]};
  const auto first_eos =
      std::find(plain.tokens.begin(), plain.tokens.end(), plain.tokens[6]) - plain.tokens.begin();
  Sequence spec_seq(*model), ref_seq(*model);
  for (Sequence* s : {&spec_seq, &ref_seq}) {
    Generation g(*s, tokenizer(), prompt(), options);
    if (s == &spec_seq) g.speculate(draft_proposer(*model, *model, 4096), 8, model->pass_rows());
    std::vector<TokenId> got;
    generate(*model, g, [&](const GeneratedToken& t) { got.push_back(t.id); });
    EXPECT_EQ(got,
              std::vector<TokenId>(plain.tokens.begin(), plain.tokens.begin() + first_eos + 1));
    EXPECT_EQ(g.finish_reason(), FinishReason::eos);
  }
  EXPECT_TRUE(spec_seq.same_state(ref_seq));
}

TEST(Speculation, BadProposersAreRefused) {
  auto dense = Model::load(model_dir("qwen3-tiny-untied"));
  auto other_vocabulary = Model::load(test::tiny_model());
  Sequence s(*dense);
  EXPECT_THROW(mtp_proposer(*dense, s), Error);
  EXPECT_THROW(draft_proposer(*other_vocabulary, *dense, 64), Error);
  for (int k : {0, 17}) EXPECT_THROW((SpeculativeOptions{"ngram", k}.validate()), Error);
  EXPECT_THROW(ngram_proposer(3, 2), Error);
}

TEST(NgramProposer, ProposesWhatFollowedTheLongestEarlierMatch) {
  auto p = ngram_proposer(1, 3);
  const std::vector<TokenId> context = {5, 6, 7, 8, 1, 6, 7, 9, 2, 5, 6, 7};
  // "5 6 7" occurred at the start, followed by 8 1 6; the later "6 7" (followed by 9) is shorter.
  EXPECT_EQ(p->propose(context, 3), (std::vector<TokenId>{8, 1, 6}));
  EXPECT_EQ(p->propose(context, 1), (std::vector<TokenId>{8}));
  EXPECT_TRUE(p->propose(std::vector<TokenId>{1, 2, 3}, 4).empty());
}

// K follows acceptance: all drafts kept drives it to the most allowed, none to plain decoding,
// with probes of K = 1 ever further apart while they fail, and close again once one succeeds.
TEST(DraftLength, FollowsAcceptance) {
  DraftLength good(8, 0.0, 16);
  for (int i = 0; i < 20; ++i) good.observe(good.next(), 8);
  EXPECT_EQ(good.next(), 8);
  // Where 6 rows share a pass, a seventh costs a pass more than it gives.
  DraftLength one_pass(8, 0.0, 6);
  for (int i = 0; i < 20; ++i) one_pass.observe(one_pass.next(), 5);
  EXPECT_EQ(one_pass.next(), 5);
  DraftLength bad(8, 0.1, 16);
  std::vector<int> probes;  // the steps that proposed
  for (int step = 0; step < 1000; ++step) {
    const int k = bad.next();
    if (k > 0) probes.push_back(step);
    bad.observe(k, 0);
  }
  std::vector<int> waits;
  for (size_t i = 1; i < probes.size(); ++i) waits.push_back(probes[i] - probes[i - 1]);
  const std::vector<int> doubling = {16, 32, 64, 128, 256, 256};
  ASSERT_GE(waits.size(), doubling.size());
  EXPECT_EQ(std::vector<int>(waits.end() - doubling.size(), waits.end()), doubling);
  // A successful probe brings K back, and probes to every 16 plain steps.
  int k = 0;
  while ((k = bad.next()) == 0) {}
  bad.observe(k, k);
  EXPECT_GT(bad.acceptance(), 0.0);
}

// The draft cost K is chosen by: the proposer's estimate until a step and a drafting were timed,
// then their ratio (seconds injected here; the generation reads the clock), a moving average.
TEST(DraftLength, WeighsMeasuredCosts) {
  DraftLength d(4, 0.1, 6);
  EXPECT_DOUBLE_EQ(d.token_cost(), 0.1);
  EXPECT_GT(d.next(), 0);       // at the prior p = 0.7 a draft of a tenth of a step pays
  d.observe_drafting(2, 10.0);  // the first proposal (a draft model reads the prompt): not counted
  d.observe_step(3, 0.05 * (1 + 2 * DraftLength::kRowCost));  // 3 rows: 1 + 2 kRowCost steps
  d.observe(2, 1);
  EXPECT_DOUBLE_EQ(d.token_cost(), 0.1);  // no drafting timed yet
  d.observe_drafting(2, 0.1);
  EXPECT_DOUBLE_EQ(d.token_cost(), 1.0);
  EXPECT_EQ(d.next(), 0);  // a draft costing a whole step does not pay
  // A new sample weighs a fifth.
  d.observe_step(1, 0.1);
  EXPECT_NEAR(d.token_cost(), 0.05 / 0.06, 1e-12);
  d.observe_drafting(1, 0);
  EXPECT_NEAR(d.token_cost(), 0.04 / 0.06, 1e-12);
  // A step slowed by something else (a prompt chunk batched with it) counts as twice the average.
  d.observe_step(1, 10.0);
  EXPECT_NEAR(d.token_cost(), 0.04 / 0.072, 1e-12);
}

// A probe that costs two steps (a draft model catching up) is followed by a wait of at least its
// cost over kProbeShare: probes of a proposer that is never right take 2% of the time.
TEST(DraftLength, CostlyProbesWaitLonger) {
  DraftLength d(4, 0.1, 6);
  d.observe_step(1, 0.05);
  std::vector<int> probes;
  for (int step = 0; step < 2000; ++step) {
    const int k = d.next();
    if (k > 0) {
      probes.push_back(step);
      d.observe_drafting(k, 0.1);
    }
    d.observe(k, 0);
  }
  std::vector<int> waits;
  for (size_t i = 1; i < probes.size(); ++i) waits.push_back(probes[i] - probes[i - 1]);
  // 2.05 steps (with the verification's extra row) / 0.02: 103 plain steps, then the doubling.
  const std::vector<int> expected = {16, 103, 103, 128, 256, 256};
  ASSERT_GE(waits.size(), expected.size());
  EXPECT_EQ(std::vector<int>(waits.begin() + 1, waits.begin() + 1 + expected.size()), expected);
}

}  // namespace
}  // namespace qwen3
