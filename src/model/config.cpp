// ModelConfig from config.json: every field the supported architectures use, checked. Each
// architecture is one entry of kArchitectures: its model_type, its class name, and what it reads
// beyond the fields every Qwen3 shares.
#include <algorithm>
#include <set>

#include "io/json_file.h"
#include "qwen3/error.h"
#include "qwen3/model.h"

namespace qwen3 {

namespace {

struct Reader {
  const nlohmann::json& j;
  std::string file;

  const nlohmann::json& field(const char* key) const {
    if (!j.contains(key)) throw Error(ErrorKind::format, file + ": missing field \"" + key + "\"");
    return j[key];
  }
  [[noreturn]] void bad(const char* key, const std::string& what) const {
    throw Error(ErrorKind::format, file + ": field \"" + key + "\" " + what);
  }
  int positive_int(const char* key) const {
    auto& v = field(key);
    if (!v.is_number_integer() || v.get<int64_t>() <= 0 || v.get<int64_t>() > (1 << 30))
      bad(key, "must be a positive integer, got " + v.dump());
    return v.get<int>();
  }
  double positive_number(const char* key) const {
    auto& v = field(key);
    if (!v.is_number() || !(v.get<double>() > 0))
      bad(key, "must be a positive number, got " + v.dump());
    return v.get<double>();
  }
  bool boolean(const char* key, bool fallback) const {
    if (!j.contains(key)) return fallback;
    if (!j[key].is_boolean()) bad(key, "must be true or false, got " + j[key].dump());
    return j[key].get<bool>();
  }
};

void read_dense(const Reader& r, ModelConfig& c) {
  c.intermediate_size = r.positive_int("intermediate_size");
  c.layers.assign(c.num_hidden_layers, {Mixer::attention, FeedForward::mlp});
}

// HF: Qwen3MoeDecoderLayer.__init__: layer i is sparse iff it is not in mlp_only_layers,
// num_experts > 0 and (i + 1) % decoder_sparse_step == 0; else a dense MLP of intermediate_size.
void read_moe(const Reader& r, ModelConfig& c) {
  c.num_experts = r.positive_int("num_experts");
  c.num_experts_per_tok = r.positive_int("num_experts_per_tok");
  c.moe_intermediate_size = r.positive_int("moe_intermediate_size");
  if (c.num_experts_per_tok > c.num_experts)
    r.bad("num_experts_per_tok", "(" + std::to_string(c.num_experts_per_tok) +
                                     ") must not exceed num_experts (" +
                                     std::to_string(c.num_experts) + ")");
  c.norm_topk_prob = r.boolean("norm_topk_prob", false);
  c.decoder_sparse_step =
      r.j.contains("decoder_sparse_step") ? r.positive_int("decoder_sparse_step") : 1;
  if (r.j.contains("mlp_only_layers")) {
    auto& m = r.j["mlp_only_layers"];
    if (!m.is_array()) r.bad("mlp_only_layers", "must be a list of layer indices, got " + m.dump());
    for (auto& i : m) {
      if (!i.is_number_integer() || i.get<int64_t>() < 0 || i.get<int64_t>() >= c.num_hidden_layers)
        r.bad("mlp_only_layers", "has " + i.dump() + ", not a layer index in [0, " +
                                     std::to_string(c.num_hidden_layers) + ")");
      c.mlp_only_layers.push_back(i.get<int>());
    }
  }
  const std::set<int> dense(c.mlp_only_layers.begin(), c.mlp_only_layers.end());
  for (int i = 0; i < c.num_hidden_layers; ++i) {
    const bool sparse = !dense.count(i) && (i + 1) % c.decoder_sparse_step == 0;
    c.layers.push_back({Mixer::attention, sparse ? FeedForward::moe : FeedForward::mlp});
  }
  // intermediate_size sizes the dense layers; it may be absent when there are none
  const bool any_dense = std::any_of(c.layers.begin(), c.layers.end(),
                                     [](const LayerKind& l) { return l.ffn == FeedForward::mlp; });
  if (any_dense || r.j.contains("intermediate_size"))
    c.intermediate_size = r.positive_int("intermediate_size");
}

struct Architecture {
  const char* model_type;
  const char* class_name;
  void (*read)(const Reader& r, ModelConfig& c);
};

constexpr Architecture kArchitectures[] = {
    {"qwen3", "Qwen3ForCausalLM", read_dense},
    {"qwen3_moe", "Qwen3MoeForCausalLM", read_moe},
};

std::string supported() {
  std::string s;
  for (const Architecture& a : kArchitectures)
    s += (s.empty() ? "" : ", ") + std::string(a.model_type) + " (" + a.class_name + ")";
  return s;
}

}  // namespace

ModelConfig ModelConfig::load(const std::filesystem::path& dir) {
  auto path = dir / "config.json";
  auto j = io::read_json(path);
  Reader r{j, path.string()};
  if (!j.is_object()) throw Error(ErrorKind::format, r.file + ": not a JSON object");

  ModelConfig c;
  auto& type = r.field("model_type");
  c.model_type = type.is_string() ? type.get<std::string>() : type.dump();
  const Architecture* arch = nullptr;
  for (const Architecture& a : kArchitectures)
    if (c.model_type == a.model_type) arch = &a;
  if (!arch)
    throw Error(ErrorKind::unsupported, r.file + ": model_type \"" + c.model_type +
                                            "\" is not supported (supported: " + supported() + ")");
  if (j.contains("architectures")) {
    auto& a = j["architectures"];
    if (!a.is_array() || std::find(a.begin(), a.end(), arch->class_name) == a.end())
      throw Error(ErrorKind::unsupported, r.file + ": architectures " + a.dump() +
                                              " is not supported for model_type " + c.model_type +
                                              " (supported: " + arch->class_name + ")");
  }
  c.hidden_size = r.positive_int("hidden_size");
  c.num_hidden_layers = r.positive_int("num_hidden_layers");
  c.num_attention_heads = r.positive_int("num_attention_heads");
  c.num_key_value_heads = r.positive_int("num_key_value_heads");
  c.head_dim = r.positive_int("head_dim");
  c.vocab_size = r.positive_int("vocab_size");
  c.max_position_embeddings = r.positive_int("max_position_embeddings");
  c.rope_theta = r.positive_number("rope_theta");
  c.rms_norm_eps = r.positive_number("rms_norm_eps");
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    r.bad("num_attention_heads", "must be a multiple of num_key_value_heads");
  if (c.head_dim % 2 != 0) r.bad("head_dim", "must be even for rotary embeddings");
  c.tie_word_embeddings = j.value("tie_word_embeddings", false);
  c.torch_dtype = j.contains("torch_dtype") && j["torch_dtype"].is_string()
                      ? j["torch_dtype"].get<std::string>()
                      : std::string("unknown");
  if (j.contains("rope_scaling") && !j["rope_scaling"].is_null())
    throw Error(ErrorKind::unsupported,
                r.file + ": rope_scaling " + j["rope_scaling"].dump() + " is not supported");
  if (j.value("use_sliding_window", false))
    throw Error(ErrorKind::unsupported, r.file + ": use_sliding_window is not supported");
  if (j.contains("bos_token_id") && j["bos_token_id"].is_number_integer())
    c.bos_token_id = j["bos_token_id"];
  if (j.contains("eos_token_id")) {
    auto& e = j["eos_token_id"];
    if (e.is_number_integer()) c.eos_token_id.push_back(e.get<int>());
    if (e.is_array())
      for (auto& id : e)
        if (id.is_number_integer()) c.eos_token_id.push_back(id.get<int>());
  }
  arch->read(r, c);
  return c;
}

std::string ModelConfig::summary(const std::string& name) const {
  std::string s = name + " (" + std::to_string(num_hidden_layers) + " layers, " +
                  std::to_string(hidden_size) + " dim, " + std::to_string(num_attention_heads) +
                  " Q heads, " + std::to_string(num_key_value_heads) + " KV heads";
  if (num_experts)
    s += ", " + std::to_string(num_experts_per_tok) + " of " + std::to_string(num_experts) +
         " experts";
  return s + ")";
}

}  // namespace qwen3
