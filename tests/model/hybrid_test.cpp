// Qwen3.5's hybrid layers beyond the fixtures' logits: batching, the recurrent state's snapshots
// that truncate rewinds to, the memory a sequence holds, and quantized packed experts.
#include <gtest/gtest.h>

#include <filesystem>
#include <numeric>

#include "io/safetensors.h"
#include "qwen3/error.h"
#include "qwen3/generation.h"
#include "qwen3/quantize.h"
#include "qwen3/random_model.h"
#include "qwen3/tokenizer.h"
#include "test_paths.h"

namespace qwen3 {
namespace {

namespace fs = std::filesystem;

fs::path hybrid_model() { return test::fixtures() / "models" / "qwen35-tiny"; }

std::vector<TokenId> prompt(int n, int seed) {
  std::vector<TokenId> ids(n);
  for (int i = 0; i < n; ++i) ids[i] = (seed * 7919 + i * 104729) % 2048;
  return ids;
}

// Logits of feeding `ids` to s one token at a time after a first step of `prefill` tokens.
std::vector<std::vector<float>> run(Model& m, Sequence& s, const std::vector<TokenId>& ids,
                                    size_t prefill) {
  std::vector<std::vector<float>> out;
  BatchItem first{&s, std::span<const TokenId>(ids).first(prefill), false};
  out.push_back(m.step({&first, 1})[0]);
  for (size_t i = prefill; i < ids.size(); ++i) {
    BatchItem next{&s, std::span<const TokenId>(ids).subspan(i, 1), false};
    out.push_back(m.step({&next, 1})[0]);
  }
  return out;
}

TEST(HybridModel, BatchedStepsAreBitIdenticalToSoloOnes) {
  auto m = Model::load(hybrid_model(), {.threads = 2});
  const std::vector<std::vector<TokenId>> prompts = {prompt(9, 1), prompt(23, 2), prompt(4, 3)};
  std::vector<std::vector<std::vector<float>>> solo;
  for (const auto& p : prompts) {
    Sequence s(*m);
    std::vector<TokenId> ids = p;
    for (int i = 0; i < 6; ++i) ids.push_back(100 + i);
    solo.push_back(run(*m, s, ids, p.size()));
  }
  std::vector<Sequence> seqs;
  for (size_t i = 0; i < prompts.size(); ++i) seqs.emplace_back(*m);
  std::vector<BatchItem> batch;
  for (size_t i = 0; i < prompts.size(); ++i) batch.push_back({&seqs[i], prompts[i], false});
  auto logits = m->step(batch);
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(logits[i], solo[i][0]) << "prefill " << i;
  for (int step = 0; step < 6; ++step) {
    const TokenId next = 100 + step;
    for (auto& item : batch) item.tokens = {&next, 1};
    logits = m->step(batch);
    for (size_t i = 0; i < prompts.size(); ++i)
      EXPECT_EQ(logits[i], solo[i][step + 1]) << "decode step " << step << ", sequence " << i;
  }
}

TEST(HybridModel, TruncateRewindsToTheNewestSnapshotAtOrBefore) {
  auto m = Model::load(hybrid_model(), {.threads = 2});
  const std::vector<TokenId> ids = prompt(70, 4);
  Sequence s(*m);
  const auto straight = run(*m, s, ids, 10);  // snapshots: the prompt's end (10), then 32, 64
  ASSERT_EQ(s.length(), 70);
  // 67 is not a snapshot: back to 64 (the newest decode interval), then the same logits again.
  EXPECT_EQ(s.truncate(67), 64);
  for (int i = 64; i < 70; ++i) {
    BatchItem item{&s, std::span<const TokenId>(ids).subspan(i, 1), false};
    EXPECT_EQ(m->step({&item, 1})[0], straight[i - 10 + 1]) << "position " << i;
  }
  // Only the newest decode snapshot is kept: 40 goes back to the prompt's end.
  EXPECT_EQ(s.truncate(40), 10);
  BatchItem rest{&s, std::span<const TokenId>(ids).subspan(10, 30), false};
  EXPECT_EQ(m->step({&rest, 1})[0], straight[30]);
  EXPECT_EQ(s.truncate(5), 0) << "before every snapshot: the start";
  BatchItem all{&s, std::span<const TokenId>(ids).first(10), false};
  EXPECT_EQ(m->step({&all, 1})[0], straight[0]);
  EXPECT_EQ(s.truncate(10), 10) << "the current length is kept as it is";
  EXPECT_THROW(s.truncate(11), Error);
}

TEST(HybridModel, AttentionModelsTruncateExactly) {
  auto m = Model::load(test::tiny_model());
  Sequence s(*m);
  const auto ids = prompt(12, 5);
  BatchItem item{&s, ids, false};
  m->step({&item, 1});
  EXPECT_EQ(s.truncate(7), 7);
}

TEST(HybridModel, KeyValueCachesOnlyForAttentionLayers) {
  auto m = Model::load(hybrid_model());
  const ModelConfig& c = m->config();
  Sequence s(*m, 64);
  const auto ids = prompt(20, 6);
  BatchItem item{&s, ids, false};
  m->step({&item, 1});
  // 2 attention layers of 8: keys and values for 64 positions (the capacity) in f32.
  const size_t kv = 2 * size_t(64) * c.num_key_value_heads * c.head_dim * sizeof(float) * 2;
  // 6 DeltaNet layers: the last K - 1 = 3 convolution inputs of 256 channels and 4 value heads'
  // [32, 32] states, held live and once more in the prompt's snapshot.
  const size_t recurrent = 6 * (3 * 256 + 4 * 32 * 32) * sizeof(float);
  EXPECT_EQ(s.bytes(), kv + 2 * recurrent);
}

// A small Qwen3.5-MoE with packed experts, as the published checkpoints store them.
ModelConfig small_hybrid_moe() {
  ModelConfig c = random_model_preset("qwen3.5-35b-a3b");
  c.hidden_size = 128;
  c.num_hidden_layers = 4;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 64;
  c.rotary_dim = 16;
  c.vocab_size = 2048;
  c.linear_num_key_heads = 2;
  c.linear_num_value_heads = 4;
  c.linear_key_head_dim = c.linear_value_head_dim = 32;
  c.num_experts = 8;
  c.num_experts_per_tok = 2;
  c.moe_intermediate_size = 64;
  c.shared_expert_intermediate_size = 64;
  return c;
}

TEST(HybridModel, QuantizedPackedExpertsMatchLoadTimeQuantization) {
  const fs::path dir = fs::temp_directory_path() / "qwen3-hybrid-moe-test";
  fs::remove_all(dir);
  write_random_model(dir / "bf16", small_hybrid_moe(),
                     {.tokenizer_from = test::fixtures() / "models" / "qwen35-tiny"});
  const auto packed = io::SafetensorsArchive::open(dir / "bf16");
  EXPECT_NE(packed.find("model.language_model.layers.0.mlp.experts.gate_up_proj"), nullptr);
  quantize_model(dir / "bf16", dir / "q8", {WeightQuant::q8, false});
  const auto split = io::SafetensorsArchive::open(dir / "q8");
  EXPECT_NE(split.find("model.language_model.layers.0.mlp.experts.7.down_proj.weight"), nullptr);
  EXPECT_EQ(split.find("model.language_model.layers.0.mlp.experts.gate_up_proj"), nullptr);

  auto mapped = Model::load(dir / "q8", {.threads = 2});
  auto converted = Model::load(dir / "bf16", {.threads = 2, .quant = WeightQuant::q8});
  EXPECT_TRUE(converted->config().packed_experts);
  EXPECT_FALSE(mapped->config().packed_experts);
  EXPECT_EQ(mapped->weight_bytes(), converted->weight_bytes());
  const auto ids = prompt(9, 7);
  Sequence a(*mapped), b(*converted);
  BatchItem ia{&a, ids, true}, ib{&b, ids, true};
  EXPECT_EQ(mapped->step({&ia, 1})[0], converted->step({&ib, 1})[0]);
  fs::remove_all(dir);
}

TEST(HybridModel, MtpRowsOneAtATimeGiveTheBitsOfAllAtOnce) {
  auto m = Model::load(hybrid_model(), {.threads = 2});
  const int D = m->config().hidden_size, V = m->config().vocab_size;
  const auto ids = prompt(12, 9);
  std::vector<float> hidden;
  Observer keep = [&](std::string_view name, const float* data, int rows, int cols) {
    if (name == "norm") hidden.assign(data, data + size_t(rows) * cols);
  };
  Sequence whole(*m), rows(*m);
  BatchItem item{&whole, ids, false};
  m->step({&item, 1}, &keep);
  const auto next = std::span<const TokenId>(ids).subspan(1);
  const auto all = m->mtp_step(whole, {.next_tokens = next, .hidden = hidden.data()});
  ASSERT_EQ(all.size(), next.size() * V);
  for (size_t t = 0; t < next.size(); ++t)
    EXPECT_EQ(m->mtp_step(rows, {.position = static_cast<int>(t),
                                 .next_tokens = next.subspan(t, 1),
                                 .hidden = &hidden[t * D]}),
              std::vector<float>(all.begin() + t * V, all.begin() + (t + 1) * V))
        << "row " << t;
  auto dense = Model::load(test::tiny_model());
  Sequence s(*dense);
  EXPECT_THROW(dense->mtp_step(s, {.next_tokens = next, .hidden = hidden.data()}), Error);
}

TEST(HybridModel, PromptsKeepASnapshotBeforeTheirLastTokens) {
  auto m = Model::load(hybrid_model(), {.threads = 2});
  const Tokenizer tokenizer = Tokenizer::load(hybrid_model());
  Sequence s(*m);
  EXPECT_TRUE(s.recurrent());
  GenerationOptions options;
  options.max_tokens = 3;
  Generation g(s, tokenizer, prompt(30, 8), options);
  EXPECT_EQ(g.next_input().size(), 22u) << "the last 8 prompt tokens come as a step of their own";
  generate(*m, g, [](const GeneratedToken&) {});
  // A next prompt sharing the first 25 tokens rewinds to the snapshot before the last 8.
  EXPECT_EQ(s.truncate(25), 22);
  Sequence dense(*Model::load(test::tiny_model()));
  EXPECT_FALSE(dense.recurrent());
}

}  // namespace
}  // namespace qwen3
