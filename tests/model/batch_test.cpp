// A sequence's logits are bit-identical alone or batched with others, and for any thread count.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>

#include "ops/kernels.h"
#include "qwen3/error.h"
#include "qwen3/model.h"
#include "test_paths.h"

namespace qwen3 {
namespace {

// Qwen3-MoE's fixture: head_dim 32, as a q8 cache needs (the dense fixtures' is 16).
std::filesystem::path moe_model() { return test::fixtures() / "models" / "qwen3moe-tiny"; }

std::vector<TokenId> prompt(int n, int salt) {
  std::vector<TokenId> ids(n);
  for (int i = 0; i < n; ++i) ids[i] = (i * 131 + salt * 17 + 5) % 2048;
  return ids;
}

// Prefill then three decode steps of one sequence alone; returns every logit produced.
std::vector<float> run_alone(Model& m, const std::vector<TokenId>& p) {
  Sequence s(m);
  std::vector<float> out;
  BatchItem item{&s, p, true};
  auto l = m.step({&item, 1})[0];
  out.insert(out.end(), l.begin(), l.end());
  for (int i = 0; i < 3; ++i) {
    TokenId next = 7 + i;
    BatchItem d{&s, {&next, 1}, false};
    l = m.step({&d, 1})[0];
    out.insert(out.end(), l.begin(), l.end());
  }
  return out;
}

TEST(Batch, SequencesAreBitIdenticalAloneOrTogether) {
  std::vector<std::pair<std::string, std::string>> cases = {
      {"scalar", "f32"}, {"auto", "f32"}, {"auto", "f16"}, {"scalar", "q8"}, {"auto", "q8"}};
  if (ops::cpu_supports("avx512-bf16")) cases.push_back({"auto", "bf16"});  // with bf16 activations
  for (auto [isa, kv_cache] : cases) {
    auto m =
        Model::load(kv_cache == "q8" ? moe_model() : test::untied_model(),  // q8: head_dim 32
                    {.threads = 2,
                     .isa = parse_isa(isa),
                     .kv_cache = parse_kv_cache_type(kv_cache),
                     .activations = kv_cache == "bf16" ? Activations::bf16 : Activations::f32});
    // 100 rows together: prompt products take the packed path, while each alone takes the dot
    // tiles.
    std::vector<std::vector<TokenId>> prompts = {prompt(9, 1), prompt(1, 2), prompt(90, 3)};
    std::vector<std::vector<float>> alone;
    for (auto& p : prompts) alone.push_back(run_alone(*m, p));

    std::vector<Sequence> seqs;
    for (size_t i = 0; i < prompts.size(); ++i) seqs.emplace_back(*m);
    std::vector<std::vector<float>> together(prompts.size());
    std::vector<BatchItem> batch;
    for (size_t i = 0; i < prompts.size(); ++i) batch.push_back({&seqs[i], prompts[i], true});
    std::vector<std::vector<float>> l;  // together: through step's reusing form
    m->step(batch, l);
    for (size_t i = 0; i < prompts.size(); ++i) together[i] = l[i];
    for (int step = 0; step < 3; ++step) {
      std::vector<TokenId> next(prompts.size(), 7 + step);
      batch.clear();
      for (size_t i = 0; i < prompts.size(); ++i) batch.push_back({&seqs[i], {&next[i], 1}, false});
      m->step(batch, l);
      for (size_t i = 0; i < prompts.size(); ++i)
        together[i].insert(together[i].end(), l[i].begin(), l[i].end());
    }
    for (size_t i = 0; i < prompts.size(); ++i)
      EXPECT_EQ(alone[i], together[i]) << isa << " " << kv_cache << " sequence " << i;
  }
}

// Automatic activations choose by the row: prompt tokens' rows take what --activations bf16 takes
// where the CPU has AVX512_BF16 (else f32), generated tokens' rows what f32 takes, and a sequence's
// results stay the same whatever its batch holds and however many threads run it.
TEST(Batch, AutomaticActivationsChooseByTheRowNotTheBatch) {
  const bool rounds = ops::rounding_kernels("auto") != nullptr;
  auto model = [](Activations a, int threads = 2) {  // bf16 weights, an f32 cache for each
    return Model::load(test::tiny_model(),
                       {.threads = threads, .kv_cache = KvCacheType::f32, .activations = a});
  };
  auto automatic = model(Activations::automatic), exact = model(Activations::f32),
       rounded = rounds ? model(Activations::bf16) : model(Activations::f32);
  EXPECT_STREQ(automatic->prompt_isa(), rounded->isa());
  EXPECT_STREQ(automatic->isa(), exact->isa());
  const auto p = prompt(23, 5);
  auto logits = [&](Model& m, bool generated) {
    Sequence s(m);
    BatchItem item{.sequence = &s, .tokens = p, .all_logits = true, .generated = generated};
    return m.step({&item, 1})[0];
  };
  const auto prompt_rows = logits(*automatic, false), generated_rows = logits(*automatic, true);
  EXPECT_EQ(prompt_rows, logits(*rounded, false));
  EXPECT_EQ(generated_rows, logits(*exact, true));
  if (rounds) EXPECT_NE(prompt_rows, generated_rows);

  // A sequence prefilled, then decoding, alone; and again beside others at every step: a prompt
  // beside its decode steps, decode steps beside its prompt.
  auto run = [&](Model& m, bool crowded) {
    std::vector<Sequence> seqs;
    for (int i = 0; i < 3; ++i) seqs.emplace_back(m);
    const auto other = prompt(40, 6);
    std::vector<float> out;
    auto step = [&](std::span<const TokenId> tokens, bool generated) {
      std::vector<BatchItem> batch{
          {.sequence = &seqs[0], .tokens = tokens, .all_logits = true, .generated = generated}};
      const TokenId next = 11;
      if (crowded) {
        seqs[1].truncate(0);
        batch.push_back({.sequence = &seqs[1], .tokens = other});
        if (seqs[2].length() == 0) batch.push_back({.sequence = &seqs[2], .tokens = other});
        else batch.push_back({.sequence = &seqs[2], .tokens = {&next, 1}, .generated = true});
      }
      const auto l = m.step(batch);
      out.insert(out.end(), l[0].begin(), l[0].end());
    };
    step(p, false);
    for (TokenId next : {7, 8, 9}) step({&next, 1}, true);
    return out;
  };
  const auto alone = run(*automatic, false);
  EXPECT_EQ(run(*automatic, true), alone);
  EXPECT_EQ(run(*model(Activations::automatic, 1), true), alone);
  EXPECT_EQ(run(*model(Activations::automatic, 3), false), alone);
}

TEST(Batch, DecodeReusesTheCallersLogits) {
  auto m = Model::load(test::untied_model(), {.threads = 2});
  Sequence a(*m), b(*m);
  const auto p = prompt(5, 4);
  BatchItem prefill{&a, p, false};
  std::vector<std::vector<float>> l;
  m->step({&prefill, 1}, l);
  ASSERT_EQ(l.size(), 1u);
  const float* memory = l[0].data();
  TokenId next = 9;
  BatchItem decode{&a, {&next, 1}, false};
  m->step({&decode, 1}, l);
  EXPECT_EQ(l[0].data(), memory) << "a one-token step writes into the vector it was given";
  BatchItem again{&b, p, false};
  m->step({&again, 1});
  BatchItem decode_b{&b, {&next, 1}, false};
  EXPECT_EQ(m->step({&decode_b, 1})[0], l[0]) << "same logits as the returning form";
}

TEST(Batch, ThreadCountDoesNotChangeResults) {
  std::vector<float> first;
  for (int threads : {1, 2, 3, 5}) {
    auto m = Model::load(test::tiny_model(), {.threads = threads});
    auto got = run_alone(*m, prompt(23, 4));
    if (first.empty()) first = got;
    EXPECT_EQ(got, first) << threads << " threads";
  }
}

TEST(Batch, WeightsReadIntoMemoryGiveTheLogitsOfMappedOnes) {
  for (const auto& dir : {test::tiny_model(), test::untied_model()}) {
    auto mapped = Model::load(dir, {.threads = 2});
    auto read = Model::load(dir, {.threads = 2, .mmap = false});
    EXPECT_EQ(run_alone(*read, prompt(17, 5)), run_alone(*mapped, prompt(17, 5))) << dir;
    auto quantized = Model::load(
        dir, {.threads = 2, .quant = WeightQuant::q8, .mmap = false});  // huge-page buffers too
    EXPECT_EQ(run_alone(*quantized, prompt(17, 5)),
              run_alone(*Model::load(dir, {.threads = 2, .quant = WeightQuant::q8}), prompt(17, 5)))
        << dir;
  }
}

TEST(Batch, ContextOverflowIsAnErrorAndChangesNothing) {
  auto m = Model::load(test::untied_model());
  Sequence s(*m, 8);
  auto p = prompt(6, 0);
  BatchItem item{&s, p, false};
  m->step({&item, 1});
  auto more = prompt(3, 1);
  BatchItem over{&s, more, false};
  try {
    m->step({&over, 1});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::context_overflow);
    EXPECT_NE(std::string(e.what()).find("exceed the context of 8"), std::string::npos) << e.what();
  }
  EXPECT_EQ(s.length(), 6);
  EXPECT_THROW(Sequence(*m, m->config().max_position_embeddings + 1), Error);
}

TEST(Batch, BadBatchesAreRefused) {
  auto m = Model::load(test::untied_model());
  Sequence s(*m);
  std::vector<TokenId> bad = {1, 2048};
  BatchItem item{&s, bad, false};
  EXPECT_THROW(m->step({&item, 1}), Error);
  EXPECT_THROW(m->step({}), Error);
  std::vector<TokenId> ok = {1};
  BatchItem twice[2] = {{&s, ok, false}, {&s, ok, false}};
  EXPECT_THROW(m->step(twice), Error);
  auto other = Model::load(test::tiny_model());
  Sequence foreign(*other);
  BatchItem wrong{&foreign, ok, false};
  EXPECT_THROW(m->step({&wrong, 1}), Error);
  EXPECT_EQ(s.length(), 0);
}

TEST(Batch, AnF16CacheHoldsHalfTheBytesAndStaysWithItsModel) {
  auto f32 = Model::load(test::untied_model());
  auto f16 = Model::load(test::untied_model(), {.kv_cache = KvCacheType::f16});
  EXPECT_STREQ(f32->kv_cache(), "f32");
  EXPECT_STREQ(f16->kv_cache(), "f16");
  auto p = prompt(20, 4);
  Sequence a(*f32), b(*f16);
  BatchItem ia{&a, p, false}, ib{&b, p, false};
  f32->step({&ia, 1});
  f16->step({&ib, 1});
  EXPECT_GT(b.bytes(), 0u);
  EXPECT_EQ(a.bytes(), 2 * b.bytes());
  std::vector<TokenId> one = {1};
  BatchItem wrong{&a, one, false};
  EXPECT_THROW(f16->step({&wrong, 1}), Error)
      << "a sequence of f32 cache stepped by an f16-cache model";
  EXPECT_THROW(parse_kv_cache_type("q4"), Error);
}

// A q8 cache: 34 bytes for 32 values (a quarter of f32's and 1/16 more), logits near the f32
// cache's, and a clear error where head_dim is not a multiple of its 32-value groups.
TEST(Batch, AQ8CacheHoldsAQuarterOfTheBytesNearTheF32Logits) {
  auto f32 = Model::load(moe_model(), {.kv_cache = KvCacheType::f32});
  auto q8 = Model::load(moe_model(), {.kv_cache = KvCacheType::q8});
  EXPECT_STREQ(q8->kv_cache(), "q8");
  auto p = prompt(60, 4);
  Sequence a(*f32), b(*q8);
  BatchItem ia{&a, p, false}, ib{&b, p, false};
  const auto la = f32->step({&ia, 1})[0], lb = q8->step({&ib, 1})[0];
  EXPECT_EQ(a.bytes() * 34, b.bytes() * 128);
  float most = 0;
  for (size_t i = 0; i < la.size(); ++i) most = std::max(most, std::abs(la[i] - lb[i]));
  // The cache rounds, and its scores take the query rounded to int8 too (0.059 measured).
  EXPECT_GT(most, 0.0f);
  EXPECT_LT(most, 0.089f) << "largest logit difference from the f32 cache";
  try {
    Model::load(test::untied_model(), {.kv_cache = KvCacheType::q8});
    ADD_FAILURE() << "a q8 cache with head_dim 16";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("head_dim"), std::string::npos) << e.what();
  }
}

TEST(Batch, TheDefaultCacheIsF16ForQuantizedLayersOnly) {
  EXPECT_STREQ(Model::load(test::untied_model(), {.quant = WeightQuant::q8})->kv_cache(), "f16");
  EXPECT_STREQ(
      Model::load(test::tiny_model(), {.quant = WeightQuant::q4, .keep_head = true})->kv_cache(),
      "f16");
  EXPECT_STREQ(
      Model::load(test::untied_model(), {.quant = WeightQuant::q4, .kv_cache = KvCacheType::f32})
          ->kv_cache(),
      "f32");
  EXPECT_STREQ(Model::load(test::tiny_model(), {.kv_cache = KvCacheType::automatic})->kv_cache(),
               "f32");
}

// A bf16 cache takes bf16 dot products: asked for without them, a clear error; with bf16
// activations it is the default.
TEST(Batch, ABf16CacheComesWithBf16Activations) {
  EXPECT_THROW(Model::load(test::untied_model(), {.kv_cache = KvCacheType::bf16}), Error);
  EXPECT_THROW(Model::load(test::untied_model(), {.isa = Isa::avx2, .kv_cache = KvCacheType::bf16}),
               Error);
  EXPECT_THROW(
      Model::load(test::untied_model(), {.isa = Isa::scalar, .kv_cache = KvCacheType::bf16}),
      Error);
  if (!ops::cpu_supports("avx512-bf16")) GTEST_SKIP() << "no AVX512_BF16 on this CPU";
  auto bf16 = Model::load(test::tiny_model(), {.activations = Activations::bf16});
  auto f32 = Model::load(test::tiny_model(),
                         {.kv_cache = KvCacheType::f32, .activations = Activations::bf16});
  EXPECT_STREQ(bf16->kv_cache(), "bf16");
  EXPECT_STREQ(f32->kv_cache(), "f32");
  auto p = prompt(40, 4);
  Sequence a(*f32), b(*bf16);
  BatchItem ia{&a, p, false}, ib{&b, p, false};
  const auto la = f32->step({&ia, 1})[0], lb = bf16->step({&ib, 1})[0];
  EXPECT_EQ(a.bytes(), 2 * b.bytes());
  // Rounding q, k, v and the weights moves the logits, as much as bf16 activations do (up to 0.19
  // here, docs/precision.md; 0.18 measured): no more.
  float most = 0;
  for (size_t i = 0; i < la.size(); ++i) most = std::max(most, std::abs(la[i] - lb[i]));
  EXPECT_GT(most, 0.0f);
  EXPECT_LT(most, 0.3f);
}

TEST(Batch, TruncateRewindsTheCache) {
  auto m = Model::load(test::untied_model());
  auto p = prompt(12, 9);
  Sequence a(*m), b(*m);
  BatchItem ia{&a, p, false};
  auto full = m->step({&ia, 1})[0];
  a.truncate(5);
  BatchItem rest{&a, std::span<const TokenId>(p).subspan(5), false};
  EXPECT_EQ(m->step({&rest, 1})[0], full) << "re-prefilling after truncate gives the same logits";
  EXPECT_THROW(b.truncate(1), Error);
}

}  // namespace
}  // namespace qwen3
