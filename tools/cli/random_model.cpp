// `qwen3 random-model`: writes a Qwen3 model folder with random weights in the Hugging Face
// layout (default: exactly Qwen3-0.6B's shape), for speed and memory work without real weights.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "qwen3/error.h"
#include "qwen3/model.h"

namespace qwen3::cli {

namespace {

namespace fs = std::filesystem;

struct Shape {
  int hidden = 1024, intermediate = 3072, layers = 28, heads = 16, kv_heads = 8, head_dim = 128, vocab = 151936;
};

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
  bool norm;  // norms are ones, matrices small random values
};

std::vector<Tensor> tensors_of(const Shape& s) {
  std::vector<Tensor> t;
  const int64_t q = int64_t(s.heads) * s.head_dim, kv = int64_t(s.kv_heads) * s.head_dim;
  t.push_back({"lm_head.weight", {s.vocab, s.hidden}, false});
  t.push_back({"model.embed_tokens.weight", {s.vocab, s.hidden}, false});
  for (int i = 0; i < s.layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    t.push_back({p + "input_layernorm.weight", {s.hidden}, true});
    t.push_back({p + "mlp.down_proj.weight", {s.hidden, s.intermediate}, false});
    t.push_back({p + "mlp.gate_proj.weight", {s.intermediate, s.hidden}, false});
    t.push_back({p + "mlp.up_proj.weight", {s.intermediate, s.hidden}, false});
    t.push_back({p + "post_attention_layernorm.weight", {s.hidden}, true});
    t.push_back({p + "self_attn.k_norm.weight", {s.head_dim}, true});
    t.push_back({p + "self_attn.k_proj.weight", {kv, s.hidden}, false});
    t.push_back({p + "self_attn.o_proj.weight", {s.hidden, q}, false});
    t.push_back({p + "self_attn.q_norm.weight", {s.head_dim}, true});
    t.push_back({p + "self_attn.q_proj.weight", {q, s.hidden}, false});
    t.push_back({p + "self_attn.v_proj.weight", {kv, s.hidden}, false});
  }
  t.push_back({"model.norm.weight", {s.hidden}, true});
  return t;
}

// bf16 values of a rough normal distribution with standard deviation ~0.02 (as Qwen3's
// initializer_range), from a xorshift generator: fast, reproducible, no denormals.
void fill_random(std::vector<uint16_t>& out, uint64_t& state) {
  for (auto& v : out) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    const float u = (int(state & 0xffff) + int((state >> 16) & 0xffff) + int((state >> 32) & 0xffff) - 98302.5f) / 65536.0f;
    const float f = u * 0.04f;  // sum of three uniforms: sd 0.5 -> 0.02
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    v = static_cast<uint16_t>((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
  }
}

void write_model(const fs::path& out, const Shape& s, const fs::path& tokenizer_from, uint64_t seed) {
  fs::create_directories(out);
  nlohmann::json config = {
      {"architectures", {"Qwen3ForCausalLM"}}, {"attention_bias", false}, {"attention_dropout", 0.0},
      {"bos_token_id", 151643}, {"eos_token_id", 151645}, {"head_dim", s.head_dim}, {"hidden_act", "silu"},
      {"hidden_size", s.hidden}, {"initializer_range", 0.02}, {"intermediate_size", s.intermediate},
      {"max_position_embeddings", 40960}, {"max_window_layers", 28}, {"model_type", "qwen3"},
      {"num_attention_heads", s.heads}, {"num_hidden_layers", s.layers}, {"num_key_value_heads", s.kv_heads},
      {"rms_norm_eps", 1e-06}, {"rope_scaling", nullptr}, {"rope_theta", 1000000.0}, {"sliding_window", nullptr},
      {"tie_word_embeddings", true}, {"torch_dtype", "bfloat16"}, {"use_cache", true}, {"use_sliding_window", false},
      {"vocab_size", s.vocab}, {"random_weights", true}};
  std::ofstream(out / "config.json") << config.dump(2) << "\n";
  nlohmann::json gen = {{"bos_token_id", 151643}, {"do_sample", true}, {"eos_token_id", {151645, 151643}},
                        {"pad_token_id", 151643}, {"temperature", 0.6}, {"top_k", 20}, {"top_p", 0.95}};
  std::ofstream(out / "generation_config.json") << gen.dump(2) << "\n";
  for (auto f : {"tokenizer.json", "tokenizer_config.json"}) {
    if (!fs::exists(tokenizer_from / f))
      throw Error(ErrorKind::io, (tokenizer_from / f).string() + ": no such file (pass --tokenizer-from DIR)");
    fs::copy_file(tokenizer_from / f, out / f, fs::copy_options::overwrite_existing);
  }

  auto tensors = tensors_of(s);
  nlohmann::json header = {{"__metadata__", {{"format", "pt"}}}};
  uint64_t offset = 0;
  for (auto& t : tensors) {
    uint64_t n = 2;
    for (auto d : t.shape) n *= d;
    header[t.name] = {{"dtype", "BF16"}, {"shape", t.shape}, {"data_offsets", {offset, offset + n}}};
    offset += n;
  }
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');  // keep the data 8-byte aligned
  std::ofstream f(out / "model.safetensors", std::ios::binary);
  uint64_t len = h.size();
  f.write(reinterpret_cast<const char*>(&len), 8).write(h.data(), h.size());
  uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1;
  std::vector<uint16_t> embed;  // lm_head.weight is stored as an exact copy of the embeddings
  uint64_t written = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    auto& t = tensors[i];
    uint64_t n = 1;
    for (auto d : t.shape) n *= d;
    std::vector<uint16_t> data(n, 0x3f80);  // 1.0 in bf16
    if (t.name == "model.embed_tokens.weight") data = embed;
    else if (!t.norm) fill_random(data, state);
    if (t.name == "lm_head.weight") embed = data;
    f.write(reinterpret_cast<const char*>(data.data()), std::streamsize(n * 2));
    const int before = int(100 * written / offset);
    written += n * 2;
    if (int(100 * written / offset) != before && isatty(2))
      std::fprintf(stderr, "\rwriting %s: %3d%%", (out / "model.safetensors").c_str(), int(100 * written / offset));
  }
  if (isatty(2)) std::fprintf(stderr, "\n");
  if (!f.flush()) throw Error(ErrorKind::io, (out / "model.safetensors").string() + ": write failed");
  f.close();
  drop_from_page_cache(out / "model.safetensors");
}

}  // namespace

void add_random_model_command(CLI::App& app) {
  struct Args {
    std::string out, tokenizer_from = "tests/fixtures/models/qwen3-tiny";
    Shape shape;
    uint64_t seed = 1;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("random-model",
                                 "Write a random-weight Qwen3 model folder (default: the exact Qwen3-0.6B shape, bf16, "
                                 "tied embeddings with lm_head.weight also stored)");
  cmd->add_option("out", a->out, "Output folder")->required();
  cmd->add_option("--tokenizer-from", a->tokenizer_from, "Folder with tokenizer.json and tokenizer_config.json")
      ->capture_default_str();
  cmd->add_option("--hidden", a->shape.hidden)->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--intermediate", a->shape.intermediate)->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--layers", a->shape.layers)->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--heads", a->shape.heads)->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--kv-heads", a->shape.kv_heads)->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--head-dim", a->shape.head_dim)->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--vocab", a->shape.vocab)->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--seed", a->seed)->capture_default_str();
  cmd->callback([a] { write_model(a->out, a->shape, a->tokenizer_from, a->seed); });
}

}  // namespace qwen3::cli
