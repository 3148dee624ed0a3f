// ModelConfig from a GGUF file's metadata: llama.cpp's `<arch>.*` keys (convert_hf_to_gguf.py's
// TextModel.set_gguf_parameters) mapped onto config.json's fields, each checked as config.cpp
// checks them.
#include <algorithm>
#include <string>

#include "model/gguf_model.h"
#include "qwen3/error.h"

namespace qwen3 {

namespace {

struct Keys {
  const io::GgufFile& f;
  std::string arch;

  std::string key(const char* name) const { return arch + "." + name; }
  [[noreturn]] void bad(const std::string& key, const std::string& what) const {
    throw Error(ErrorKind::format, f.name() + ": key " + key + " " + what);
  }
  int positive(const char* name) const {
    const std::string k = key(name);
    const int64_t v = f.get_int(k);
    if (v <= 0 || v > (1 << 30)) bad(k, "must be a positive integer, got " + std::to_string(v));
    return int(v);
  }
  int positive_or(const char* name, int fallback) const {
    return f.has_key(key(name)) ? positive(name) : fallback;
  }
  double positive_number(const char* name) const {
    const std::string k = key(name);
    const float v = f.get_f32(k);
    if (!(v > 0)) bad(k, "must be a positive number, got " + std::to_string(v));
    return v;
  }
};

// llama.cpp's qwen3moe and qwen35moe graphs route every layer to its experts and always
// renormalise the chosen experts' weights (norm_topk_prob); the converter writes neither.
void read_moe(const Keys& k, ModelConfig& c) {
  c.num_experts = k.positive("expert_count");
  c.num_experts_per_tok = k.positive("expert_used_count");
  c.moe_intermediate_size = k.positive("expert_feed_forward_length");
  if (c.num_experts_per_tok > c.num_experts)
    k.bad(k.key("expert_used_count"), "(" + std::to_string(c.num_experts_per_tok) +
                                          ") must not exceed expert_count (" +
                                          std::to_string(c.num_experts) + ")");
  // The stacked experts say how many there are; a count beyond them is refused before the
  // model sizes a slot for each.
  const std::string exps = "blk.0.ffn_gate_exps.weight";
  const io::GgufTensor* t = k.f.find_tensor(exps);
  if (!t) throw Error(ErrorKind::format, k.f.name() + ": missing tensor " + exps);
  if (t->dims.size() != 3 || t->dims[2] != c.num_experts)
    k.bad(k.key("expert_count"),
          "(" + std::to_string(c.num_experts) + ") does not match " + exps + " " + t->describe());
  c.norm_topk_prob = true;
  if (k.f.has_key(k.key("feed_forward_length")))
    c.intermediate_size = k.positive("feed_forward_length");
}

// Qwen3.5's hybrid layers from the ssm.* keys (convert_hf_to_gguf.py's Qwen3NextModel): every
// full_attention_interval-th layer gated attention with partial RoPE, the others Gated DeltaNet
// (key heads ssm.group_count of ssm.state_size, value heads ssm.time_step_rank sharing
// ssm.inner_size). The converter appends an MTP head as nextn_predict_layers extra blocks, which
// the engine does not read from a GGUF file (run -v lists them).
void read_hybrid(const Keys& k, ModelConfig& c, FeedForward ffn) {
  if (k.f.has_key(k.key("nextn_predict_layers")))
    c.num_hidden_layers -= int(k.f.get_int(k.key("nextn_predict_layers")));
  if (c.num_hidden_layers <= 0) k.bad(k.key("nextn_predict_layers"), "leaves no layer");
  c.weight_prefix = "model.language_model.";
  c.zero_centred_norms = true;
  c.attn_output_gate = true;
  c.rotary_dim = k.positive("rope.dimension_count");
  if (c.rotary_dim > c.head_dim || c.rotary_dim % 2)
    k.bad(k.key("rope.dimension_count"), "must be even and at most the head size");
  c.linear_num_key_heads = k.positive("ssm.group_count");
  c.linear_num_value_heads = k.positive("ssm.time_step_rank");
  c.linear_key_head_dim = k.positive("ssm.state_size");
  c.linear_conv_kernel_dim = k.positive("ssm.conv_kernel");
  const int inner = k.positive("ssm.inner_size");
  if (inner % c.linear_num_value_heads || c.linear_num_value_heads % c.linear_num_key_heads)
    k.bad(k.key("ssm.inner_size"),
          "must split into whole value heads, a multiple of the key heads");
  c.linear_value_head_dim = inner / c.linear_num_value_heads;
  const int interval = k.positive("full_attention_interval");
  for (int i = 0; i < c.num_hidden_layers; ++i)
    c.layers.push_back({(i + 1) % interval == 0 ? Mixer::attention : Mixer::gated_delta_net, ffn});
}

void read_dense(const Keys& k, ModelConfig& c) {
  c.intermediate_size = k.positive("feed_forward_length");
  c.layers.assign(c.num_hidden_layers, {Mixer::attention, FeedForward::mlp});
}

void read_qwen3_moe(const Keys& k, ModelConfig& c) {
  read_moe(k, c);
  c.layers.assign(c.num_hidden_layers, {Mixer::attention, FeedForward::moe});
}

void read_qwen35(const Keys& k, ModelConfig& c) {
  c.intermediate_size = k.positive("feed_forward_length");
  read_hybrid(k, c, FeedForward::mlp);
}

// Every layer routes to experts and adds a shared expert.
void read_qwen35_moe(const Keys& k, ModelConfig& c) {
  read_moe(k, c);
  c.shared_expert_intermediate_size = k.positive("expert_shared_feed_forward_length");
  read_hybrid(k, c, FeedForward::moe);
}

struct GgufArchitecture {
  const char* name;        // general.architecture
  const char* model_type;  // config.json's
  void (*read)(const Keys& k, ModelConfig& c);
};
constexpr GgufArchitecture kArchitectures[] = {{"qwen3", "qwen3", read_dense},
                                               {"qwen3moe", "qwen3_moe", read_qwen3_moe},
                                               {"qwen35", "qwen3_5", read_qwen35},
                                               {"qwen35moe", "qwen3_5_moe", read_qwen35_moe}};

// The id of a token spelled `text` in tokenizer.ggml.tokens, or -1.
int token_spelled(const io::GgufFile& f, std::string_view text) {
  if (!f.has_key("tokenizer.ggml.tokens")) return -1;
  const auto tokens = f.get_string_array("tokenizer.ggml.tokens");
  const auto it = std::find(tokens.begin(), tokens.end(), text);
  return it == tokens.end() ? -1 : int(it - tokens.begin());
}

// eos: the file's eos and eot ids, and, as llama.cpp's vocabulary marks them end-of-generation,
// the tokens spelled <|endoftext|> and <|im_end|> (Qwen3's generation_config.json lists both).
void read_special_tokens(const io::GgufFile& f, ModelConfig& c) {
  if (f.has_key("tokenizer.ggml.bos_token_id"))
    c.bos_token_id = int(f.get_int("tokenizer.ggml.bos_token_id"));
  auto add = [&](int64_t id) {
    if (id >= 0 &&
        std::find(c.eos_token_id.begin(), c.eos_token_id.end(), id) == c.eos_token_id.end())
      c.eos_token_id.push_back(int(id));
  };
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id"})
    if (f.has_key(key)) add(f.get_int(key));
  for (const char* text : {"<|im_end|>", "<|endoftext|>"}) add(token_spelled(f, text));
}

}  // namespace

ModelConfig gguf_model_config(const io::GgufFile& f) {
  const std::string arch(f.get_string("general.architecture"));
  const GgufArchitecture* a = nullptr;
  for (const GgufArchitecture& known : kArchitectures)
    if (arch == known.name) a = &known;
  if (!a)
    throw Error(ErrorKind::unsupported,
                f.name() + ": architecture \"" + arch +
                    "\" is not supported (supported: qwen3, qwen3moe, qwen35, qwen35moe)");
  const Keys k{f, arch};
  ModelConfig c;
  c.model_type = a->model_type;
  c.hidden_size = k.positive("embedding_length");
  c.num_hidden_layers = k.positive("block_count");
  if (size_t(c.num_hidden_layers) > f.tensors().size())  // each layer has tensors of its own
    k.bad(k.key("block_count"), "(" + std::to_string(c.num_hidden_layers) + ") is more than the " +
                                    std::to_string(f.tensors().size()) + " tensors of the file");
  c.num_attention_heads = k.positive("attention.head_count");
  c.num_key_value_heads = k.positive("attention.head_count_kv");
  c.head_dim = k.positive_or("attention.key_length", c.hidden_size / c.num_attention_heads);
  if (k.positive_or("attention.value_length", c.head_dim) != c.head_dim)
    k.bad(k.key("attention.value_length"), "must equal attention.key_length");
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    k.bad(k.key("attention.head_count"), "must be a multiple of attention.head_count_kv");
  if (c.head_dim % 2 != 0) k.bad(k.key("attention.key_length"), "must be even for RoPE");
  c.rotary_dim = c.head_dim;
  c.max_position_embeddings = k.positive("context_length");
  c.rope_theta = k.positive_number("rope.freq_base");
  c.rms_norm_eps = k.positive_number("attention.layer_norm_rms_epsilon");
  if (f.has_key(k.key("rope.scaling.type")) && f.get_string(k.key("rope.scaling.type")) != "none")
    throw Error(ErrorKind::unsupported, f.name() + ": rope scaling \"" +
                                            std::string(f.get_string(k.key("rope.scaling.type"))) +
                                            "\" is not supported");
  const io::GgufTensor* embd = f.find_tensor("token_embd.weight");
  if (!embd || embd->dims.size() != 2)
    throw Error(ErrorKind::format, f.name() + ": missing tensor token_embd.weight (2-D)");
  c.vocab_size = int(embd->dims[1]);
  c.tie_word_embeddings = f.find_tensor("output.weight") == nullptr;  // llama.cpp's fallback
  c.torch_dtype = "unknown";  // a GGUF file mixes types; Weights::notes lists them
  read_special_tokens(f, c);
  a->read(k, c);
  return c;
}

}  // namespace qwen3
