// Qwen3-MoE beyond the fixture: the sparse block against plain loops for every routing option,
// layer kinds from config.json, quantized experts, and the bytes a token reads.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>

#include "io/json_file.h"
#include "model/layers.h"
#include "ops/kernels.h"
#include "qwen3/error.h"
#include "qwen3/quantize.h"
#include "qwen3/random_model.h"
#include "test_paths.h"

namespace qwen3 {
namespace {

namespace fs = std::filesystem;

// HF Qwen3MoeSparseMoeBlock in double: softmax, top-k, optional renormalisation, weighted SwiGLU.
std::vector<double> moe_reference(const std::vector<float>& x, int T, int D, int E, int k, int I,
                                  bool normalize, const std::vector<float>& router,
                                  const std::vector<std::vector<float>>& gate,
                                  const std::vector<std::vector<float>>& up,
                                  const std::vector<std::vector<float>>& down) {
  std::vector<double> out(size_t(T) * D, 0.0);
  for (int t = 0; t < T; ++t) {
    const float* xt = &x[size_t(t) * D];
    std::vector<double> p(E);
    double top = -INFINITY, sum = 0;
    for (int e = 0; e < E; ++e) {
      for (int d = 0; d < D; ++d) p[e] += double(router[size_t(e) * D + d]) * xt[d];
      top = std::max(top, p[e]);
    }
    for (auto& v : p) sum += v = std::exp(v - top);
    for (auto& v : p) v /= sum;
    std::vector<int> order(E);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return p[a] > p[b]; });
    double chosen = 0;
    for (int j = 0; j < k; ++j) chosen += p[order[j]];
    for (int j = 0; j < k; ++j) {
      const int e = order[j];
      const double w = normalize ? p[e] / chosen : p[e];
      std::vector<double> hidden(I);
      for (int i = 0; i < I; ++i) {
        double g = 0, u = 0;
        for (int d = 0; d < D; ++d)
          g += double(gate[e][size_t(i) * D + d]) * xt[d],
              u += double(up[e][size_t(i) * D + d]) * xt[d];
        hidden[i] = g / (1 + std::exp(-g)) * u;
      }
      for (int d = 0; d < D; ++d) {
        double y = 0;
        for (int i = 0; i < I; ++i) y += double(down[e][size_t(d) * I + i]) * hidden[i];
        out[size_t(t) * D + d] += w * y;
      }
    }
  }
  return out;
}

std::vector<float> random_values(size_t n, std::mt19937& rng, float scale) {
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = normal(rng);
  return v;
}

TEST(MoeBlock, MatchesPlainLoopsForEveryRoutingOption) {
  const int D = 64, E = 6, I = 32, T = 19;
  std::mt19937 rng(7);
  const auto x = random_values(size_t(T) * D, rng, 1.0f);
  const auto router = random_values(size_t(E) * D, rng, 0.4f);
  std::vector<std::vector<float>> gate, up, down;
  for (int e = 0; e < E; ++e) {
    gate.push_back(random_values(size_t(I) * D, rng, 0.125f));
    up.push_back(random_values(size_t(I) * D, rng, 0.125f));
    down.push_back(random_values(size_t(D) * I, rng, 0.18f));
  }
  MoeWeights w{{DType::f32, router.data(), E, D}, {}};
  for (int e = 0; e < E; ++e)
    w.experts.push_back({{DType::f32, gate[e].data(), I, D},
                         {DType::f32, up[e].data(), I, D},
                         {DType::f32, down[e].data(), D, I}});
  for (const char* isa : {"scalar", "auto"})
    for (int k : {1, 2, E})
      for (bool normalize : {true, false}) {
        ModelConfig c;
        c.hidden_size = D;
        c.num_experts = E;
        c.num_experts_per_tok = k;
        c.moe_intermediate_size = I;
        c.norm_topk_prob = normalize;
        auto rt = ops::make_runtime(isa, 2);
        StepRows rows;
        rows.T = T;
        Scratch scratch;
        Step step{c, *rt, {}, rows, scratch};
        std::vector<float> out(size_t(T) * D);
        moe(step, w, x.data(), out.data());
        const auto want = moe_reference(x, T, D, E, k, I, normalize, router, gate, up, down);
        for (size_t i = 0; i < out.size(); ++i)
          ASSERT_NEAR(out[i], want[i], 1e-5 * (1 + std::abs(want[i])))
              << isa << " k " << k << " normalize " << normalize << " element " << i;
      }
}

TEST(MoeBlock, RoutesToTheMostProbableExpertsInExpertOrder) {
  const float logits[] = {0.5f, 2.0f, -1.0f, 2.0f,
                          1.0f};  // experts 1 and 3 tie: both chosen at k = 2
  int32_t experts[3];
  float weights[3];
  ops::route(logits, 1, 5, 3, true, experts, weights);
  EXPECT_EQ(std::vector<int32_t>(experts, experts + 3), (std::vector<int32_t>{1, 3, 4}));
  EXPECT_FLOAT_EQ(weights[0] + weights[1] + weights[2], 1.0f);
  EXPECT_FLOAT_EQ(weights[0], weights[1]);
  ops::route(logits, 1, 5, 1, false, experts, weights);
  EXPECT_EQ(experts[0], 1) << "of equal probabilities, the lower expert";
  double sum = 0;
  for (float l : logits) sum += std::exp(double(l) - 2.0);
  EXPECT_NEAR(weights[0], 1.0 / sum, 1e-7) << "not renormalised: softmax over all experts";
}

// A small random MoE folder (vocab 2048, as the untied fixture), written once per test.
class MoeFolder : public testing::Test {
 protected:
  static fs::path write(const std::string& name, const std::function<void(ModelConfig&)>& edit,
                        WeightQuant quant = WeightQuant::none) {
    ModelConfig c = random_model_preset("qwen3-moe-small");
    c.hidden_size = 64;
    c.intermediate_size = 96;
    c.num_hidden_layers = 4;
    c.num_attention_heads = 4;
    c.num_key_value_heads = 2;
    c.head_dim = 32;
    c.vocab_size = 2048;
    c.num_experts = 8;
    c.num_experts_per_tok = 2;
    c.moe_intermediate_size = 32;
    edit(c);
    const fs::path dir =
        fs::temp_directory_path() / ("qwen3-moe-" + std::to_string(::getpid()) + "-" + name);
    fs::remove_all(dir);
    write_random_model(dir, c, {.quant = quant, .seed = 3, .tokenizer_from = test::untied_model()});
    return dir;
  }
  static std::vector<float> logits(Model& m) {
    Sequence s(m);
    std::vector<TokenId> p = {3, 1000, 27, 5, 2047, 64, 64, 9};
    BatchItem item{&s, p, true};
    auto out = m.step({&item, 1})[0];
    TokenId next = 11;
    BatchItem d{&s, {&next, 1}, false};
    auto more = m.step({&d, 1})[0];
    out.insert(out.end(), more.begin(), more.end());
    return out;
  }
};

TEST_F(MoeFolder, LayerKindsFollowSparseStepAndDenseLayers) {
  const fs::path dir = write("kinds", [](ModelConfig& c) {
    c.decoder_sparse_step = 2;
    c.mlp_only_layers = {3};
  });
  auto m = Model::load(dir);
  const auto& layers = m->config().layers;
  ASSERT_EQ(layers.size(), 4u);
  // (i + 1) % 2 == 0: layers 1 and 3 sparse, but 3 is listed dense
  EXPECT_EQ(layers[0].ffn, FeedForward::mlp);
  EXPECT_EQ(layers[1].ffn, FeedForward::moe);
  EXPECT_EQ(layers[2].ffn, FeedForward::mlp);
  EXPECT_EQ(layers[3].ffn, FeedForward::mlp);
  for (float l : logits(*m)) ASSERT_TRUE(std::isfinite(l));
  fs::remove_all(dir);
}

TEST_F(MoeFolder, WithEveryLayerDenseItIsTheDenseModel) {
  // mlp_only_layers covering every layer: the same tensors as a dense Qwen3, so the same bits.
  const fs::path dir = write("all-dense", [](ModelConfig& c) { c.mlp_only_layers = {0, 1, 2, 3}; });
  const auto moe_logits = logits(*Model::load(dir));
  auto config = io::read_json(dir / "config.json");
  config["model_type"] = "qwen3";
  config["architectures"] = {"Qwen3ForCausalLM"};
  std::ofstream(dir / "config.json") << config.dump();
  auto dense = Model::load(dir);
  EXPECT_EQ(dense->config().num_experts, 0);
  EXPECT_EQ(logits(*dense), moe_logits);
  fs::remove_all(dir);
}

TEST_F(MoeFolder, BytesPerTokenCountTheActiveExperts) {
  const fs::path dir = write("bytes", [](ModelConfig&) {});
  auto m = Model::load(dir);
  const ModelConfig& c = m->config();
  const uint64_t attention =
      2 * (uint64_t(c.num_attention_heads) + c.num_key_value_heads) * c.head_dim * c.hidden_size;
  const uint64_t expert = 3 * uint64_t(c.moe_intermediate_size) * c.hidden_size;
  const uint64_t router = uint64_t(c.num_experts) * c.hidden_size;
  const uint64_t head = uint64_t(c.vocab_size) * c.hidden_size;
  EXPECT_EQ(
      m->weight_bytes(),
      2 * (c.num_hidden_layers * (attention + router + c.num_experts_per_tok * expert) + head))
      << "bf16: 2 bytes per weight";
  fs::remove_all(dir);
}

TEST_F(MoeFolder, QuantizedExpertsAgreeAcrossTheThreeWaysToGetThem) {
  // Load-time quantization, `qwen3 quantize` and a random model written directly in q4: the same
  // values, so the same logits; the routers stay in bf16 in all three.
  const fs::path bf16 = write("q4-source", [](ModelConfig&) {}),
                 direct = write(
                     "q4-direct", [](ModelConfig&) {}, WeightQuant::q4);
  const fs::path converted =
      fs::temp_directory_path() / ("qwen3-moe-" + std::to_string(::getpid()) + "-q4-converted");
  quantize_model(bf16, converted, {WeightQuant::q4, false});
  const auto at_load = logits(*Model::load(bf16, {.quant = WeightQuant::q4}));
  EXPECT_EQ(logits(*Model::load(converted)), at_load);
  EXPECT_EQ(logits(*Model::load(direct)), at_load);
  auto quantized = Model::load(converted);
  const auto header = io::read_file(converted / "model.safetensors");
  auto router = header.substr(header.find("\"model.layers.0.mlp.gate.weight\""), 120);
  EXPECT_NE(router.find("BF16"), std::string::npos) << router;
  auto expert =
      header.substr(header.find("\"model.layers.0.mlp.experts.3.down_proj.weight\""), 120);
  EXPECT_NE(expert.find("Q4_0"), std::string::npos) << expert;
  EXPECT_LT(quantized->weight_bytes(), Model::load(bf16)->weight_bytes() / 3);
  for (const auto& d : {bf16, direct, converted}) fs::remove_all(d);
}

TEST_F(MoeFolder, BatchedAndThreadedResultsAreBitIdentical) {
  const fs::path dir = write("batch", [](ModelConfig&) {});
  std::vector<float> first;
  for (int threads : {1, 2, 3}) {
    auto m = Model::load(dir, {.threads = threads});
    // One sequence alone, then beside two others in every step.
    const auto alone = logits(*m);
    if (first.empty()) first = alone;
    EXPECT_EQ(alone, first) << threads << " threads";
    std::vector<TokenId> p = {3, 1000, 27, 5, 2047, 64, 64, 9}, q = {8, 8, 8}, r(40, 77);
    Sequence a(*m), b(*m), c(*m);
    std::vector<BatchItem> batch = {{&b, q, false}, {&a, p, true}, {&c, r, false}};
    auto together = m->step(batch)[1];
    TokenId next = 11, other = 5;
    batch = {{&a, {&next, 1}, false}, {&b, {&other, 1}, false}, {&c, {&other, 1}, false}};
    auto more = m->step(batch)[0];
    together.insert(together.end(), more.begin(), more.end());
    EXPECT_EQ(together, alone) << threads << " threads";
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace qwen3
