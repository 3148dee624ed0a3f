// Qwen3.5 shapes the fixtures do not cover (issue 48): tied embeddings, nv / nk = 3, conv kernels
// 2 and 3, partial rotary 0.5, layer patterns given or derived, per-expert MoE tensors. Each is a
// small random model folder, run by the engine and by an independent float64 forward
// (qwen35_oracle.h), which also runs the delta rule in HF's chunked prompt form.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <utility>

#include "io/dtype.h"
#include "io/json_file.h"
#include "io/safetensors_writer.h"
#include "qwen3/model.h"
#include "qwen35_oracle.h"
#include "test_paths.h"

namespace qwen3 {
namespace {

namespace fs = std::filesystem;
using namespace qwen35_oracle;

// The fixtures' tiny Qwen3.5 (hidden 64, head_dim 32) with one thing changed per variant.
std::vector<Shape> variants() {
  std::vector<Shape> v;
  auto add = [&](std::string name, auto edit) {
    Shape s;
    s.name = std::move(name);
    edit(s);
    v.push_back(s);
  };
  add("base", [](Shape&) {});
  add("tied", [](Shape& s) { s.tied = true; });
  add("value_heads_3x_key_heads", [](Shape& s) { s.nv = 6, s.bf16 = false; });
  add("one_key_head_3_value_heads_dk16_dv24",
      [](Shape& s) { s.nk = 1, s.nv = 3, s.dk = 16, s.dv = 24; });
  add("conv_kernel_2", [](Shape& s) { s.conv_kernel = 2; });
  add("conv_kernel_3", [](Shape& s) { s.conv_kernel = 3; });
  add("partial_rotary_half", [](Shape& s) { s.partial_rotary = 0.5; });
  add("full_rotary", [](Shape& s) { s.partial_rotary = 1.0; });
  add("layer_types_FLLFL", [](Shape& s) { s.layers = "FLLFL"; });
  // HF: layer i is full attention iff (i + 1) % full_attention_interval == 0
  add("full_attention_interval_2", [](Shape& s) {
    s.layers = "LFLFL", s.write_layer_types = false, s.full_attention_interval = 2;
  });
  add("moe_packed", [](Shape& s) { s.moe = true, s.layers = "LLF"; });
  add("moe_per_expert", [](Shape& s) { s.moe = true, s.layers = "LLF", s.packed = false; });
  return v;
}

const Shape& shape(const std::string& name) {
  static const std::vector<Shape> all = variants();
  for (const Shape& s : all)
    if (s.name == name) return s;
  throw std::runtime_error("no shape " + name);
}

// ---------------------------------------------------------------------------------------------
// Seeded weights of the fixtures' scales. std::normal_distribution differs between standard
// libraries, so the draws are Box-Muller over mt19937_64, whose output the standard fixes.

class Rng {
 public:
  explicit Rng(uint64_t seed) : g_(seed) {}
  double uniform() { return (double(g_() >> 11) + 0.5) * 0x1p-53; }  // in (0, 1)
  double normal() {  // Box-Muller, both of its values
    if (spare_) return std::exchange(spare_, std::nullopt).value();
    const double r = std::sqrt(-2 * std::log(uniform())), a = 2 * M_PI * uniform();
    spare_ = r * std::sin(a);
    return r * std::cos(a);
  }
  int below(int n) { return int(g_() % uint64_t(n)); }

 private:
  std::mt19937_64 g_;
  std::optional<double> spare_;
};

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Each tensor draws from a stream seeded by its name, so a variant shares every tensor of the
// base shape that it does not change: the difference in logits is the feature's.
Tensors make_weights(const Shape& s) {
  Tensors w;
  auto add = [&](const std::string& name, std::vector<int64_t> shape, auto draw, bool f32 = false) {
    Rng rng(fnv1a(name));
    const int64_t n = std::accumulate(shape.begin(), shape.end(), int64_t(1), std::multiplies<>());
    Tensor t{std::move(shape), std::vector<float>(n), f32 || !s.bf16};
    for (float& x : t.v) {
      x = float(draw(rng));
      if (!t.f32) x = bf16_to_f32(f32_to_bf16(x));
    }
    w[name] = std::move(t);
  };
  auto normal = [](double std) { return [std](Rng& r) { return std * r.normal(); }; };
  auto uniform = [](double a, double b) {
    return [a, b](Rng& r) { return a + (b - a) * r.uniform(); };
  };
  // projections [out, in]: std gain / sqrt(in)
  auto proj = [&](const std::string& name, int64_t out, int64_t in, double gain = 1.0) {
    add(name, {out, in}, normal(gain / std::sqrt(double(in))));
  };
  auto centred_norm = [&](const std::string& name, int64_t n) { add(name, {n}, normal(0.15)); };
  auto mlp = [&](const std::string& p, int64_t inter) {
    proj(p + "gate_proj.weight", inter, s.hidden);
    proj(p + "up_proj.weight", inter, s.hidden);
    proj(p + "down_proj.weight", s.hidden, inter);
  };
  const int64_t H = s.hidden, key = s.nk * s.dk, value = s.nv * s.dv, C = 2 * key + value;
  add(kPrefix + "embed_tokens.weight", {s.vocab, H}, normal(1.0));
  for (int l = 0; l < int(s.layers.size()); ++l) {
    centred_norm(layer_name(l, "input_layernorm.weight"), H);
    centred_norm(layer_name(l, "post_attention_layernorm.weight"), H);
    if (s.layers[l] == 'L') {
      const std::string p = layer_name(l, "linear_attn.");
      proj(p + "in_proj_qkv.weight", C, H);
      proj(p + "in_proj_z.weight", value, H);
      proj(p + "in_proj_b.weight", s.nv, H);
      proj(p + "in_proj_a.weight", s.nv, H);
      add(p + "conv1d.weight", {C, 1, s.conv_kernel}, normal(0.5));
      // A = exp(A_log) log-uniform in [0.02, 8]: long- and short-memory heads
      add(p + "A_log", {s.nv}, uniform(std::log(0.02), std::log(8.0)), /*f32=*/true);
      add(p + "dt_bias", {s.nv}, uniform(-1.5, 1.5));
      add(p + "norm.weight", {s.dv}, [](Rng& r) { return 1 + 0.15 * r.normal(); });  // plain w
      proj(p + "out_proj.weight", H, value);
    } else {
      const std::string p = layer_name(l, "self_attn.");
      const int64_t q = s.heads * s.head_dim, kv = s.kv_heads * s.head_dim;
      proj(p + "q_proj.weight", 2 * q, H);  // per head [query | gate]
      proj(p + "k_proj.weight", kv, H);
      proj(p + "v_proj.weight", kv, H);
      centred_norm(p + "q_norm.weight", s.head_dim);
      centred_norm(p + "k_norm.weight", s.head_dim);
      proj(p + "o_proj.weight", H, q);
    }
    if (!s.moe) {
      mlp(layer_name(l, "mlp."), s.intermediate);
      continue;
    }
    const std::string p = layer_name(l, "mlp.");
    const int64_t E = s.experts, I = s.moe_intermediate;
    proj(p + "gate.weight", E, H, 3.0);  // gain 3: decisive routing, as in the fixtures
    add(p + "experts.gate_up_proj", {E, 2 * I, H}, normal(1 / std::sqrt(double(H))));
    add(p + "experts.down_proj", {E, H, I}, normal(2 / std::sqrt(double(I))));
    mlp(p + "shared_expert.", s.shared_intermediate);
    proj(p + "shared_expert_gate.weight", 1, H);
  }
  centred_norm(kPrefix + "norm.weight", H);
  if (!s.tied) proj("lm_head.weight", s.vocab, H, 2.0);
  return w;
}

// ---------------------------------------------------------------------------------------------
// The model folder: config.json in the nested Qwen3.5 layout (the fixture's, fields changed),
// model.safetensors through the library's writer, the fixtures' tokenizer files.

nlohmann::json make_config(const Shape& s) {
  const fs::path base = test::fixtures() / "models" / (s.moe ? "qwen35-tiny-moe" : "qwen35-tiny");
  nlohmann::json j = io::read_json(base / "config.json");
  nlohmann::json& t = j["text_config"];
  t["hidden_size"] = s.hidden;
  t["num_hidden_layers"] = s.layers.size();
  t["num_attention_heads"] = s.heads;
  t["num_key_value_heads"] = s.kv_heads;
  t["head_dim"] = s.head_dim;
  t["vocab_size"] = s.vocab;
  t["rms_norm_eps"] = s.eps;
  t["linear_num_key_heads"] = s.nk;
  t["linear_num_value_heads"] = s.nv;
  t["linear_key_head_dim"] = s.dk;
  t["linear_value_head_dim"] = s.dv;
  t["linear_conv_kernel_dim"] = s.conv_kernel;
  t["full_attention_interval"] = s.full_attention_interval;
  t.erase("layer_types");
  if (s.write_layer_types)
    for (char c : s.layers)
      t["layer_types"].push_back(c == 'L' ? "linear_attention" : "full_attention");
  // HF reads partial_rotary_factor from rope_parameters; the real files have it in both places.
  // mrope_section splits the rotary pairs into T / H / W sections, all equal for text.
  const int pairs = s.rotary_dim() / 2;
  t["partial_rotary_factor"] = s.partial_rotary;
  t["rope_parameters"]["partial_rotary_factor"] = s.partial_rotary;
  t["rope_parameters"]["rope_theta"] = s.rope_theta;
  t["rope_parameters"]["mrope_section"] = {pairs / 3 + (pairs % 3 > 0), pairs / 3 + (pairs % 3 > 1),
                                           pairs / 3};
  t["tie_word_embeddings"] = j["tie_word_embeddings"] = s.tied;
  t["dtype"] = j["dtype"] = s.bf16 ? "bfloat16" : "float32";
  if (s.moe) {
    t["num_experts"] = s.experts;
    t["num_experts_per_tok"] = s.top_k;
    t["moe_intermediate_size"] = s.moe_intermediate;
    t["shared_expert_intermediate_size"] = s.shared_intermediate;
  } else {
    t["intermediate_size"] = s.intermediate;
  }
  return j;
}

// A temporary model folder, removed with the object.
struct ModelFolder {
  fs::path dir;

  ModelFolder(const Shape& s, const Tensors& w)
      : dir(fs::temp_directory_path() /
            ("qwen35-shapes-" + std::to_string(::getpid()) + "-" + s.name)) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir / "config.json") << make_config(s).dump(2);
    fs::copy_file(test::fixtures() / "tokenizer.json", dir / "tokenizer.json");
    fs::copy_file(test::fixtures() / "models" / "qwen35-tiny" / "tokenizer_config.json",
                  dir / "tokenizer_config.json");
    // Per-expert: experts.{e}.gate_proj / up_proj / down_proj.weight cut from the packed tensors.
    std::vector<std::pair<std::string, Tensor>> file;
    for (const auto& [name, t] : w) {
      const auto packed = name.find("mlp.experts.");
      if (s.packed || packed == std::string::npos) {
        file.emplace_back(name, t);
        continue;
      }
      const std::string p = name.substr(0, packed) + "mlp.experts.";
      const int64_t E = t.shape[0], rows = t.shape[1], cols = t.shape[2];
      const bool gate_up = name.ends_with("gate_up_proj");
      for (int64_t e = 0; e < E; ++e) {
        const float* first = t.v.data() + e * rows * cols;
        const int64_t part = gate_up ? rows / 2 : rows;
        auto cut = [&](const char* proj, const float* from) {
          file.emplace_back(
              p + std::to_string(e) + "." + proj + ".weight",
              Tensor{{part, cols}, std::vector<float>(from, from + part * cols), t.f32});
        };
        if (gate_up) {
          cut("gate_proj", first);  // rows [0, I) of expert e, then [I, 2I) up
          cut("up_proj", first + part * cols);
        } else {
          cut("down_proj", first);
        }
      }
    }
    std::vector<io::TensorToWrite> list;
    for (const auto& [name, t] : file)
      list.push_back({name, t.f32 ? DType::f32 : DType::bf16, t.shape});
    std::vector<uint16_t> bf16;
    io::write_safetensors(dir / "model.safetensors", list, {{"format", "pt"}}, [&](size_t i) {
      const Tensor& t = file[i].second;
      if (t.f32) return static_cast<const void*>(t.v.data());
      bf16.resize(t.v.size());
      for (size_t k = 0; k < t.v.size(); ++k) bf16[k] = f32_to_bf16(t.v[k]);
      return static_cast<const void*>(bf16.data());
    });
  }
  ~ModelFolder() {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  }
};

// ---------------------------------------------------------------------------------------------
// The runs compared: a 70-token prompt (two delta-rule chunks of HF's 64) with every row's
// logits, then 5 tokens decoded one at a time (teacher-forced: fixed ids, no greedy margins).

constexpr int kPromptTokens = 70, kDecodeTokens = 5;

std::vector<TokenId> random_ids(uint64_t seed, int n) {
  Rng rng(seed);
  std::vector<TokenId> ids(n);
  for (TokenId& id : ids) id = rng.below(2048);
  return ids;
}
const std::vector<TokenId> kPrompt = random_ids(11, kPromptTokens);
const std::vector<TokenId> kDecode = random_ids(12, kDecodeTokens);

// logits [positions][vocab], prompt rows then decoded ones
std::vector<std::vector<float>> run_engine(Model& model, const std::vector<int>& pieces) {
  Sequence seq(model);
  std::vector<std::vector<float>> rows;
  const int V = model.config().vocab_size;
  auto take = [&](std::span<const TokenId> tokens) {
    const BatchItem item{&seq, tokens, /*all_logits=*/true};
    const std::vector<float> logits = model.step({&item, 1})[0];
    for (size_t r = 0; r < tokens.size(); ++r)
      rows.emplace_back(logits.begin() + r * V, logits.begin() + (r + 1) * V);
  };
  size_t begin = 0;
  for (int n : pieces) {
    take(std::span(kPrompt).subspan(begin, n));
    begin += n;
  }
  EXPECT_EQ(begin, kPrompt.size());
  for (const TokenId& id : kDecode) take({&id, 1});
  return rows;
}

struct Result {
  ModelConfig config;
  std::vector<std::vector<float>> whole;   // one prefill step, the best kernels, 2 threads
  std::vector<std::vector<float>> pieces;  // the prompt in 3 steps, 1 thread
  std::vector<std::vector<float>> scalar;  // MoE: one prefill step, the scalar kernels
  std::vector<Vec> oracle;
  double min_router_gap = INFINITY;
  Tensors weights;
};

// Each shape's runs, once per test binary.
const Result& result(const std::string& name) {
  static std::map<std::string, Result> done;
  if (auto it = done.find(name); it != done.end()) return it->second;
  const Shape& s = shape(name);
  Result r;
  r.weights = make_weights(s);
  {
    const ModelFolder folder(s, r.weights);
    auto model = Model::load(folder.dir, {.threads = 2, .activations = Activations::f32});
    r.config = model->config();
    r.whole = run_engine(*model, {kPromptTokens});
    // One thread: the engine promises the same bits on any thread count, and on a busy machine
    // a second thread's spin-waits made every step of these tiny models slower (6 s, not 2 s).
    r.pieces = run_engine(*Model::load(folder.dir, {.threads = 1, .activations = Activations::f32}),
                          {23, 30, kPromptTokens - 53});
    // The scalar kernels are the slow reference: only where a test needs their bits.
    if (s.moe)
      r.scalar =
          run_engine(*Model::load(folder.dir, {.threads = 1, .isa = Isa::scalar}), {kPromptTokens});
  }
  Oracle oracle(s, r.weights);
  r.oracle = oracle.step(kPrompt, /*chunked=*/true);
  for (const TokenId& id : kDecode) r.oracle.push_back(oracle.step({id}, /*chunked=*/false)[0]);
  r.min_router_gap = oracle.min_router_gap();
  return done.emplace(name, std::move(r)).first->second;
}

// The tolerance, relative to each row's logit scale (its largest |logit|, at least 1). The
// engine runs float32 with float32 accumulators: every dot product (32 to 192 terms), norm, the
// recurrent state over 75 tokens (decayed, so its errors do not grow) and each of the 3 to 5
// layers add relative errors of a few float32 ulps (6e-8) times sqrt(terms); summed, ~1e-6 to
// 1e-5 of the scale. Measured: at most 6e-6 here, and 2.4e-5 / 6.8e-5 absolute on the fixtures'
// logits (qwen3 verify). 1e-4 leaves 10x above the worst, and is 1e-2 of what the subtlest
// feature here moves (DiffersFromTheBaseShape, WrongOraclesDisagreeWithTheEngine).
constexpr double kRelTol = 1e-4;

// The largest |engine - oracle| over every row, each row's error over its scale.
double max_relative_error(const std::vector<std::vector<float>>& got, const std::vector<Vec>& want,
                          std::string* where = nullptr) {
  double worst = 0;
  EXPECT_EQ(got.size(), want.size());
  for (size_t r = 0; r < std::min(got.size(), want.size()); ++r) {
    double scale = 1;
    for (double x : want[r]) scale = std::max(scale, std::abs(x));
    for (size_t i = 0; i < want[r].size(); ++i) {
      const double e = std::abs(double(got[r][i]) - want[r][i]) / scale;
      if (e > worst) {
        worst = e;
        if (where)
          *where = "position " + std::to_string(r) + " token " + std::to_string(i) + ": engine " +
                   std::to_string(got[r][i]) + ", oracle " + std::to_string(want[r][i]);
      }
    }
  }
  return worst;
}

class Qwen35ShapesVariant : public testing::TestWithParam<std::string> {};

TEST_P(Qwen35ShapesVariant, ConfigReadsTheShape) {
  const Shape& s = shape(GetParam());
  const ModelConfig& c = result(s.name).config;
  ASSERT_EQ(c.layers.size(), s.layers.size());
  for (size_t l = 0; l < s.layers.size(); ++l)
    EXPECT_EQ(c.layers[l].mixer, s.layers[l] == 'L' ? Mixer::gated_delta_net : Mixer::attention)
        << "layer " << l;
  EXPECT_EQ(c.rotary_dim, s.rotary_dim());
  EXPECT_EQ(c.tie_word_embeddings, s.tied);
  EXPECT_EQ(c.linear_num_value_heads, s.nv);
  EXPECT_EQ(c.linear_conv_kernel_dim, s.conv_kernel);
  EXPECT_EQ(c.packed_experts, s.moe && s.packed);
}

TEST_P(Qwen35ShapesVariant, MatchesFloat64Oracle) {
  const Result& r = result(GetParam());
  std::string where;
  const double err = max_relative_error(r.whole, r.oracle, &where);
  EXPECT_LE(err, kRelTol) << where;
  std::printf("[ shapes   ] %-38s max |engine - oracle| / logit scale %.2e\n", GetParam().c_str(),
              err);
  if (!shape(GetParam()).moe) return;
  EXPECT_LE(max_relative_error(r.scalar, r.oracle, &where), kRelTol) << "scalar kernels, " << where;
  // The engine's router probabilities carry its float32 error (~1e-6, the logits' measured
  // relative error); a top-k gap of 1e-5 or more leaves it no room to choose another expert.
  EXPECT_GT(r.min_router_gap, 1e-5) << "routing too close to call: change the seed";
}

// The prompt in steps of 23, 30 and 17 tokens carries the conv and delta-rule states and the KV
// cache across steps: every prompt row and the 5 decoded ones are the same bits as after one
// step. Also on another thread count (pieces: 1 thread, whole: 2), which must not change a bit.
TEST_P(Qwen35ShapesVariant, PrefillInPiecesIsBitIdentical) {
  const Result& r = result(GetParam());
  ASSERT_EQ(r.pieces.size(), r.whole.size());
  for (size_t p = 0; p < r.whole.size(); ++p)
    ASSERT_EQ(0, std::memcmp(r.pieces[p].data(), r.whole[p].data(), r.whole[p].size() * 4))
        << "position " << p;
}

// The comparison can fail: each shape's own feature moves the logits 100 times the tolerance and
// more. (Partial rotary 0.5 moves them least: at rope_theta 1e7 all but two of its 8 frequencies
// turn by under 0.02 rad per position, and one layer of four attends; still 9e-2 of the scale.)
TEST_P(Qwen35ShapesVariant, DiffersFromTheBaseShape) {
  if (GetParam() == "base") GTEST_SKIP() << "the base itself";
  const Result& r = result(GetParam());
  const Result& base = result("base");
  std::vector<Vec> base_rows;
  for (const auto& row : base.whole) base_rows.emplace_back(row.begin(), row.end());
  EXPECT_GT(max_relative_error(r.whole, base_rows), 100 * kRelTol);
}

INSTANTIATE_TEST_SUITE_P(Qwen35Shapes, Qwen35ShapesVariant, testing::ValuesIn([] {
                           std::vector<std::string> names;
                           for (const Shape& s : variants()) names.push_back(s.name);
                           return names;
                         }()),
                         [](const auto& info) { return info.param; });

// One tensor per expert and projection, or mlp.experts.gate_up_proj / down_proj packed: the same
// matrices, so the scalar kernels give the same bits. The SIMD kernels may not: where a row
// starts relative to a vector (lead_for in src/cpu/simd_kernels.h) sets the order of its sums,
// and the two files place each expert's rows differently, so they agree to rounding (measured
// 2e-6 of the logit scale with AVX2; swapped gate and up rows would move them by far more).
TEST(Qwen35Shapes, PerExpertTensorsGiveThePackedLogits) {
  const Result& packed = result("moe_packed");
  const Result& per_expert = result("moe_per_expert");
  ASSERT_EQ(packed.scalar.size(), per_expert.scalar.size());
  for (size_t p = 0; p < packed.scalar.size(); ++p)
    ASSERT_EQ(0, std::memcmp(packed.scalar[p].data(), per_expert.scalar[p].data(),
                             packed.scalar[p].size() * 4))
        << "scalar kernels, position " << p;
  std::vector<Vec> rows;
  for (const auto& row : packed.whole) rows.emplace_back(row.begin(), row.end());
  EXPECT_LE(max_relative_error(per_expert.whole, rows), kRelTol / 10);
}

// The oracle's two delta-rule forms agree to float64 rounding, over 3 chunks and from a nonzero
// state, so a disagreement with the engine is the engine's.
TEST(Qwen35Shapes, OracleChunkedDeltaRuleEqualsItsRecurrence) {
  const int T = 150, dk = 16, dv = 24;
  Rng rng(5);
  std::vector<Vec> q(T, Vec(dk)), k(T, Vec(dk)), v(T, Vec(dv));
  Vec g(T), beta(T), S0(dk * dv);
  for (int t = 0; t < T; ++t) {
    for (auto* x : {&q[t], &k[t]}) {
      for (double& e : *x) e = rng.normal();
      const double n = std::sqrt(dot(x->data(), x->data(), dk));
      for (double& e : *x) e /= n;
    }
    for (double& e : v[t]) e = rng.normal();
    g[t] = -std::exp(2 * rng.uniform() - 3) * 2;
    beta[t] = rng.uniform();
  }
  for (double& e : S0) e = rng.normal();
  Vec S1 = S0, S2 = S0;
  const auto a = recurrent_delta_rule(q, k, v, g, beta, S1);
  const auto b = chunked_delta_rule(q, k, v, g, beta, S2);
  double worst = 0;
  for (int t = 0; t < T; ++t)
    for (int d = 0; d < dv; ++d) worst = std::max(worst, std::abs(a[t][d] - b[t][d]));
  for (int i = 0; i < dk * dv; ++i) worst = std::max(worst, std::abs(S1[i] - S2[i]));
  EXPECT_LT(worst, 1e-10);
}

// A wrong reading of a feature (the tiled value-head order of llama.cpp's converted files, the
// base shape's rotary width) is told apart from the engine's by far more than the tolerance.
TEST(Qwen35Shapes, WrongOraclesDisagreeWithTheEngine) {
  struct Case {
    const char* shape;
    Mutation mutation;
  };
  for (const Case& c : {Case{"value_heads_3x_key_heads", {.tiled_value_heads = true}},
                        Case{"partial_rotary_half", {.rotary_dim = 8}}}) {
    const Result& r = result(c.shape);
    Oracle wrong(shape(c.shape), r.weights, c.mutation);
    std::vector<Vec> rows = wrong.step(kPrompt, true);
    for (const TokenId& id : kDecode) rows.push_back(wrong.step({id}, false)[0]);
    EXPECT_GT(max_relative_error(r.whole, rows), 100 * kRelTol) << c.shape;
  }
}

}  // namespace
}  // namespace qwen3
