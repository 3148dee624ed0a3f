// Bad model folders: each gets a clear one-line error naming the file and the problem.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "expect_error.h"
#include "io/json_file.h"
#include "qwen3/error.h"
#include "qwen3/model.h"
#include "safetensors_edit.h"
#include "test_paths.h"

namespace qwen3 {
namespace {

namespace fs = std::filesystem;

// A scratch copy of the untied fixture model that each test breaks in one way.
class BadFolder : public testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        fs::temp_directory_path() / ("qwen3-bad-" + std::to_string(::getpid()) + "-" +
                                     testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    for (auto f : {"config.json", "model.safetensors"}) fs::copy_file(source() / f, dir_ / f);
  }
  virtual fs::path source() const { return test::untied_model(); }
  void TearDown() override { fs::remove_all(dir_); }

  void write(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ / name, std::ios::binary | std::ios::trunc) << bytes;
  }
  std::string read(const std::string& name) { return io::read_file(dir_ / name); }

  // Rewrites model.safetensors with `edit` applied to its header.
  void edit_header(const std::function<void(nlohmann::json&)>& edit) {
    test::edit_safetensors_header(dir_ / "model.safetensors", edit);
  }
  void edit_config(const std::function<void(nlohmann::json&)>& edit) {
    auto j = nlohmann::json::parse(read("config.json"));
    edit(j);
    write("config.json", j.dump());
  }

  // Loading fails with this kind, and the message contains every fragment, whether the weights
  // are mapped or read into memory.
  void expect_error(ErrorKind kind, std::initializer_list<std::string> fragments) {
    for (bool mmap : {true, false}) {
      SCOPED_TRACE(mmap ? "mapped" : "read");
      test::expect_error([&] { Model::load(dir_, {.mmap = mmap}); }, kind, fragments);
    }
  }

  fs::path dir_;
};

TEST_F(BadFolder, MissingFolder) {
  fs::remove_all(dir_);
  expect_error(ErrorKind::io, {"no such directory"});
}

TEST_F(BadFolder, MissingConfig) {
  fs::remove(dir_ / "config.json");
  expect_error(ErrorKind::io, {"config.json", "cannot open"});
}

TEST_F(BadFolder, ConfigNotJson) {
  write("config.json", "{\"hidden_size\": 64,");
  expect_error(ErrorKind::format, {"config.json", "not valid JSON"});
}

TEST_F(BadFolder, ConfigMissingField) {
  edit_config([](nlohmann::json& j) { j.erase("head_dim"); });
  expect_error(ErrorKind::format, {"config.json", "missing field \"head_dim\""});
}

TEST_F(BadFolder, ConfigBadValue) {
  edit_config([](nlohmann::json& j) { j["num_key_value_heads"] = -2; });
  expect_error(ErrorKind::format, {"config.json", "num_key_value_heads", "positive integer"});
}

TEST_F(BadFolder, UnknownModelType) {
  edit_config([](nlohmann::json& j) { j["model_type"] = "llama"; });
  expect_error(ErrorKind::unsupported, {"config.json", "llama", "supported: qwen3"});
}

TEST_F(BadFolder, UnknownArchitecture) {
  edit_config([](nlohmann::json& j) { j["architectures"] = {"Qwen3MoeForCausalLM"}; });
  expect_error(ErrorKind::unsupported, {"Qwen3MoeForCausalLM", "Qwen3ForCausalLM"});
}

TEST_F(BadFolder, MissingWeights) {
  fs::remove(dir_ / "model.safetensors");
  expect_error(ErrorKind::io, {"model.safetensors", "no such file"});
}

TEST_F(BadFolder, TruncatedWeights) {
  std::string f = read("model.safetensors");
  write("model.safetensors", f.substr(0, f.size() - 100));
  expect_error(ErrorKind::format, {"model.safetensors", "outside the data section"});
}

TEST_F(BadFolder, TooShortForHeader) {
  write("model.safetensors", "abc");
  expect_error(ErrorKind::format, {"model.safetensors", "too short"});
}

TEST_F(BadFolder, HeaderLengthBeyondFile) {
  std::string f = read("model.safetensors");
  f[6] = 1;  // header length += 2^48
  write("model.safetensors", f);
  expect_error(ErrorKind::format, {"model.safetensors", "runs past the end"});
}

TEST_F(BadFolder, HeaderNotJson) {
  std::string f = read("model.safetensors");
  f[8] = '[';
  f[9] = '?';
  write("model.safetensors", f);
  expect_error(ErrorKind::format, {"model.safetensors", "not valid JSON"});
}

TEST_F(BadFolder, OffsetsOutOfRange) {
  edit_header([](nlohmann::json& h) {
    h["model.norm.weight"]["data_offsets"] = {1u << 30, (1u << 30) + 256};
  });
  expect_error(ErrorKind::format,
               {"model.safetensors", "model.norm.weight", "outside the data section"});
}

TEST_F(BadFolder, OffsetsOverlap) {
  edit_header([](nlohmann::json& h) {
    const uint64_t begin = h["lm_head.weight"]["data_offsets"][0];
    h["model.norm.weight"]["data_offsets"] = {begin, begin + 64 * 4};  // inside lm_head's bytes
  });
  expect_error(ErrorKind::format, {"model.safetensors", "overlap"});
}

TEST_F(BadFolder, UnsupportedDtype) {
  edit_header([](nlohmann::json& h) { h["model.norm.weight"]["dtype"] = "I64"; });
  expect_error(ErrorKind::unsupported, {"model.safetensors", "model.norm.weight", "I64"});
}

TEST_F(BadFolder, ByteCountDoesNotMatchShape) {
  edit_header([](nlohmann::json& h) { h["model.norm.weight"]["shape"] = {65}; });
  expect_error(ErrorKind::format, {"model.norm.weight", "bytes"});
}

TEST_F(BadFolder, MissingTensor) {
  edit_header([](nlohmann::json& h) { h.erase("model.layers.2.self_attn.k_norm.weight"); });
  expect_error(ErrorKind::format, {"missing tensor model.layers.2.self_attn.k_norm.weight"});
}

TEST_F(BadFolder, WrongShape) {
  // Same byte count, other shape: only the shape check can catch it.
  edit_header([](nlohmann::json& h) {
    h["model.layers.1.mlp.up_proj.weight"]["shape"] = {64, 160};
  });
  expect_error(ErrorKind::shape,
               {"model.layers.1.mlp.up_proj.weight", "expected f32 [160, 64], got f32 [64, 160]"});
}

TEST_F(BadFolder, UntiedWithoutLmHead) {
  edit_header([](nlohmann::json& h) { h.erase("lm_head.weight"); });
  expect_error(ErrorKind::format, {"missing tensor lm_head.weight"});
}

TEST(ModelLoad, ShardedCheckpointLoadsLikeOneFile) {
  // Split the untied model's tensors over two shards with an index, as Qwen3-4B/8B ship.
  namespace fs = std::filesystem;
  auto dir = fs::temp_directory_path() / ("qwen3-sharded-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(test::untied_model() / "config.json", dir / "config.json");
  std::string file = io::read_file(test::untied_model() / "model.safetensors");
  uint64_t len = 0;
  for (int i = 7; i >= 0; --i) len = len << 8 | uint8_t(file[i]);
  auto header = nlohmann::json::parse(file.substr(8, len));
  const std::string data = file.substr(8 + len);
  nlohmann::json shard_headers[2] = {nlohmann::json::object(), nlohmann::json::object()};
  std::string shard_data[2];
  nlohmann::json index = {{"metadata", {}}, {"weight_map", nlohmann::json::object()}};
  int i = 0;
  for (auto& [name, t] : header.items()) {
    if (name == "__metadata__") continue;
    const int s = i++ % 2;
    uint64_t b = t["data_offsets"][0], e = t["data_offsets"][1];
    nlohmann::json nt = t;
    nt["data_offsets"] = {shard_data[s].size(), shard_data[s].size() + (e - b)};
    shard_data[s] += data.substr(b, e - b);
    shard_headers[s][name] = nt;
    index["weight_map"][name] = "model-0000" + std::to_string(s + 1) + "-of-00002.safetensors";
  }
  for (int s = 0; s < 2; ++s) {
    std::string h = shard_headers[s].dump(), out(8, '\0');
    for (int b = 0; b < 8; ++b) out[b] = char((h.size() >> (8 * b)) & 0xff);
    std::ofstream(dir / ("model-0000" + std::to_string(s + 1) + "-of-00002.safetensors"),
                  std::ios::binary)
        << out << h << shard_data[s];
  }
  std::ofstream(dir / "model.safetensors.index.json") << index.dump();
  auto sharded = Model::load(dir), single = Model::load(test::untied_model());
  std::vector<TokenId> p = {1, 2, 3, 4};
  Sequence a(*sharded), b(*single);
  BatchItem ia{&a, p, false}, ib{&b, p, false};
  // The kernels read each matrix where its file put it, rotated to the cache lines there
  // (ops/kernels.h): tensors moved to other offsets give the same logits up to rounding.
  const auto got = sharded->step({&ia, 1}), want = single->step({&ib, 1});
  ASSERT_EQ(got.size(), want.size());
  ASSERT_EQ(got[0].size(), want[0].size());
  for (size_t i = 0; i < want[0].size(); ++i)
    EXPECT_NEAR(got[0][i], want[0][i], 1e-4f) << "logit " << i;
  fs::remove_all(dir);
}

// The same, from the Qwen3-MoE fixture (8 experts, 2 per token, 3 layers).
class BadMoeFolder : public BadFolder {
 protected:
  fs::path source() const override { return test::fixtures() / "models" / "qwen3moe-tiny"; }
};

TEST_F(BadMoeFolder, MoreExpertsPerTokenThanExperts) {
  edit_config([](nlohmann::json& j) { j["num_experts_per_tok"] = 9; });
  expect_error(ErrorKind::format,
               {"config.json", "num_experts_per_tok", "(9) must not exceed num_experts (8)"});
}

TEST_F(BadMoeFolder, MissingExpertCount) {
  edit_config([](nlohmann::json& j) { j.erase("num_experts"); });
  expect_error(ErrorKind::format, {"config.json", "missing field \"num_experts\""});
}

TEST_F(BadMoeFolder, ExpertSizeNotAnInteger) {
  edit_config([](nlohmann::json& j) { j["moe_intermediate_size"] = "48"; });
  expect_error(ErrorKind::format, {"moe_intermediate_size", "must be a positive integer"});
}

TEST_F(BadMoeFolder, DenseLayerOutOfRange) {
  edit_config([](nlohmann::json& j) { j["mlp_only_layers"] = {0, 3}; });
  expect_error(ErrorKind::format, {"mlp_only_layers", "has 3, not a layer index in [0, 3)"});
}

TEST_F(BadMoeFolder, NormTopkProbNotABoolean) {
  edit_config([](nlohmann::json& j) { j["norm_topk_prob"] = 1; });
  expect_error(ErrorKind::format, {"norm_topk_prob", "must be true or false"});
}

TEST_F(BadMoeFolder, ArchitectureOfAnotherModelType) {
  edit_config([](nlohmann::json& j) { j["architectures"] = {"Qwen3ForCausalLM"}; });
  expect_error(ErrorKind::unsupported,
               {"architectures", "model_type qwen3_moe", "Qwen3MoeForCausalLM"});
}

TEST_F(BadMoeFolder, MissingExpertTensor) {
  edit_header([](nlohmann::json& h) { h.erase("model.layers.1.mlp.experts.5.up_proj.weight"); });
  expect_error(ErrorKind::format, {"missing tensor model.layers.1.mlp.experts.5.up_proj.weight"});
}

TEST_F(BadMoeFolder, ExpertOfTheWrongShape) {
  // Every expert matrix is [48, 64] or [64, 48]: claiming [64, 48] for a gate_proj keeps its bytes.
  edit_header([](nlohmann::json& h) {
    h["model.layers.2.mlp.experts.0.gate_proj.weight"]["shape"] = {64, 48};
  });
  expect_error(ErrorKind::shape, {"model.layers.2.mlp.experts.0.gate_proj.weight", "expected",
                                  "[48, 64]", "got", "[64, 48]"});
}

TEST_F(BadMoeFolder, RouterOfTheWrongSize) {
  // A router of 8 experts read as 4: the config says 4 experts (2 per token), the file holds 8.
  edit_config([](nlohmann::json& j) { j["num_experts"] = 4; });
  expect_error(ErrorKind::shape,
               {"model.layers.0.mlp.gate.weight", "expected", "[4, 64]", "got", "[8, 64]"});
}

TEST_F(BadMoeFolder, DenseLayerWithoutItsMlp) {
  // Layer 1 dense by config, but the file holds experts there, not mlp.gate_proj.
  edit_config([](nlohmann::json& j) { j["mlp_only_layers"] = {1}; });
  expect_error(ErrorKind::format, {"missing tensor model.layers.1.mlp.gate_proj.weight"});
}

class BadHybridFolder : public BadFolder {
 protected:
  fs::path source() const override { return test::fixtures() / "models" / "qwen35-tiny"; }
  void edit_text_config(const std::function<void(nlohmann::json&)>& edit) {
    edit_config([&](nlohmann::json& j) { edit(j["text_config"]); });
  }
};

TEST_F(BadHybridFolder, LayerTypesOfTheWrongLength) {
  edit_text_config([](nlohmann::json& t) { t["layer_types"].erase(0); });
  expect_error(ErrorKind::format,
               {"config.json: text_config", "layer_types", "one type per layer (8)"});
}

TEST_F(BadHybridFolder, UnknownLayerType) {
  edit_text_config([](nlohmann::json& t) { t["layer_types"][2] = "sliding_attention"; });
  expect_error(ErrorKind::format, {"layer_types", "\"sliding_attention\"", "linear_attention"});
}

TEST_F(BadHybridFolder, ValueHeadsNotAMultipleOfKeyHeads) {
  edit_text_config([](nlohmann::json& t) { t["linear_num_value_heads"] = 3; });
  expect_error(ErrorKind::format, {"linear_num_value_heads",
                                   "(3) must be a multiple of "
                                   "linear_num_key_heads (2)"});
}

TEST_F(BadHybridFolder, MissingTextConfig) {
  edit_config([](nlohmann::json& j) { j.erase("text_config"); });
  expect_error(ErrorKind::format, {"config.json", "missing object \"text_config\""});
}

TEST_F(BadHybridFolder, MissingDeltaNetField) {
  edit_text_config([](nlohmann::json& t) { t.erase("linear_conv_kernel_dim"); });
  expect_error(ErrorKind::format, {"text_config", "missing field \"linear_conv_kernel_dim\""});
}

TEST_F(BadHybridFolder, UnsupportedRopeType) {
  edit_text_config([](nlohmann::json& t) { t["rope_parameters"]["rope_type"] = "yarn"; });
  expect_error(ErrorKind::unsupported, {"rope_parameters", "rope_type \"yarn\""});
}

TEST_F(BadHybridFolder, TiedEmbeddingsDisagree) {
  edit_config([](nlohmann::json& j) { j["tie_word_embeddings"] = true; });
  expect_error(ErrorKind::format, {"tie_word_embeddings", "disagrees with text_config"});
}

TEST_F(BadHybridFolder, MissingALog) {
  edit_header(
      [](nlohmann::json& h) { h.erase("model.language_model.layers.4.linear_attn.A_log"); });
  expect_error(ErrorKind::format,
               {"missing tensor model.language_model.layers.4.linear_attn.A_log"});
}

TEST_F(BadHybridFolder, MissingDtBias) {
  edit_header(
      [](nlohmann::json& h) { h.erase("model.language_model.layers.0.linear_attn.dt_bias"); });
  expect_error(ErrorKind::format,
               {"missing tensor model.language_model.layers.0.linear_attn.dt_bias"});
}

TEST_F(BadHybridFolder, MissingConvolution) {
  edit_header([](nlohmann::json& h) {
    h.erase("model.language_model.layers.1.linear_attn.conv1d.weight");
  });
  expect_error(ErrorKind::format,
               {"missing tensor model.language_model.layers.1.linear_attn.conv1d.weight"});
}

TEST_F(BadHybridFolder, ConvolutionOfTheWrongKernel) {
  // The file's taps are [256, 1, 4]; a config of 3 taps expects [256, 1, 3].
  edit_text_config([](nlohmann::json& t) { t["linear_conv_kernel_dim"] = 3; });
  expect_error(ErrorKind::shape, {"model.language_model.layers.0.linear_attn.conv1d.weight",
                                  "expected", "[256, 1, 3]", "got", "[256, 1, 4]"});
}

TEST_F(BadHybridFolder, LayerTypeThatTheWeightsDoNotHave) {
  // Layer 0 full attention by config; the file holds a DeltaNet there.
  edit_text_config([](nlohmann::json& t) { t["layer_types"][0] = "full_attention"; });
  expect_error(ErrorKind::format,
               {"missing tensor model.language_model.layers.0.self_attn.q_proj.weight"});
}

class BadHybridMoeFolder : public BadFolder {
 protected:
  fs::path source() const override { return test::fixtures() / "models" / "qwen35-tiny-moe"; }
};

TEST_F(BadHybridMoeFolder, PackedExpertsOfTheWrongShape) {
  edit_header([](nlohmann::json& h) {
    h["model.language_model.layers.1.mlp.experts.gate_up_proj"]["shape"] = {16, 32, 128};
  });
  expect_error(ErrorKind::shape, {"model.language_model.layers.1.mlp.experts.gate_up_proj",
                                  "expected", "[16, 64, 64]", "got", "[16, 32, 128]"});
}

TEST_F(BadHybridMoeFolder, MissingSharedExpertGate) {
  edit_header([](nlohmann::json& h) {
    h.erase("model.language_model.layers.3.mlp.shared_expert_gate.weight");
  });
  expect_error(ErrorKind::format,
               {"missing tensor model.language_model.layers.3.mlp.shared_expert_gate.weight"});
}

TEST(ModelLoad, ConfigSummaryAndEos) {
  auto m = Model::load(test::tiny_model());
  EXPECT_EQ(m->config().summary("Qwen3-0.6B"),
            "Qwen3-0.6B (3 layers, 32 dim, 4 Q heads, 2 KV heads)");
  EXPECT_EQ(m->config().head_dim, 16);
  EXPECT_EQ(m->config().eos_token_id, std::vector<int>{151645});
  EXPECT_EQ(m->name(), "qwen3-tiny");
}

}  // namespace
}  // namespace qwen3
