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

// The routed experts every MoE architecture has: how many, how many per token, their size.
void read_experts(const Reader& r, ModelConfig& c) {
  c.num_experts = r.positive_int("num_experts");
  c.num_experts_per_tok = r.positive_int("num_experts_per_tok");
  c.moe_intermediate_size = r.positive_int("moe_intermediate_size");
  if (c.num_experts_per_tok > c.num_experts)
    r.bad("num_experts_per_tok", "(" + std::to_string(c.num_experts_per_tok) +
                                     ") must not exceed num_experts (" +
                                     std::to_string(c.num_experts) + ")");
}

// HF: Qwen3MoeDecoderLayer.__init__: layer i is sparse iff it is not in mlp_only_layers,
// num_experts > 0 and (i + 1) % decoder_sparse_step == 0; else a dense MLP of intermediate_size.
void read_moe(const Reader& r, ModelConfig& c) {
  read_experts(r, c);
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

// HF: Qwen3_5TextConfig: layer i is linear attention (Gated DeltaNet) or full attention, from
// layer_types, or when it is absent, full every full_attention_interval-th layer.
std::vector<Mixer> read_mixers(const Reader& r, int layers) {
  std::vector<Mixer> mixers;
  if (r.j.contains("layer_types")) {
    auto& types = r.j["layer_types"];
    if (!types.is_array() || types.size() != size_t(layers))
      r.bad("layer_types",
            "must list one type per layer (" + std::to_string(layers) + "), got " + types.dump());
    for (auto& t : types) {
      if (t == "full_attention") mixers.push_back(Mixer::attention);
      else if (t == "linear_attention") mixers.push_back(Mixer::gated_delta_net);
      else
        r.bad("layer_types",
              "has " + t.dump() + ", not \"linear_attention\" or \"full_attention\"");
    }
    return mixers;
  }
  const int interval = r.j.contains("full_attention_interval")
                           ? r.positive_int("full_attention_interval")
                           : 4;  // HF's default
  for (int i = 0; i < layers; ++i)
    mixers.push_back((i + 1) % interval == 0 ? Mixer::attention : Mixer::gated_delta_net);
  return mixers;
}

// Qwen3.5's hybrid text model: zero-centred norms, gated attention with partial RoPE, Gated
// DeltaNet layers (HF: Qwen3_5TextConfig, Qwen3_5Attention, Qwen3_5GatedDeltaNet).
void read_hybrid(const Reader& r, ModelConfig& c, FeedForward ffn) {
  c.weight_prefix = "model.language_model.";
  c.zero_centred_norms = true;
  c.attn_output_gate = r.boolean("attn_output_gate", true);
  c.linear_num_key_heads = r.positive_int("linear_num_key_heads");
  c.linear_num_value_heads = r.positive_int("linear_num_value_heads");
  c.linear_key_head_dim = r.positive_int("linear_key_head_dim");
  c.linear_value_head_dim = r.positive_int("linear_value_head_dim");
  c.linear_conv_kernel_dim = r.positive_int("linear_conv_kernel_dim");
  if (c.linear_num_value_heads % c.linear_num_key_heads != 0)
    r.bad("linear_num_value_heads", "(" + std::to_string(c.linear_num_value_heads) +
                                        ") must be a multiple of linear_num_key_heads (" +
                                        std::to_string(c.linear_num_key_heads) + ")");
  for (Mixer m : read_mixers(r, c.num_hidden_layers)) c.layers.push_back({m, ffn});
  // One MTP layer is the published design; a head of more is left unread (run -v lists it).
  const auto& mtp = r.j.value("mtp_num_hidden_layers", nlohmann::json(0));
  c.mtp_num_hidden_layers = mtp.is_number_integer() && mtp.get<int64_t>() == 1 ? 1 : 0;
}

void read_qwen35(const Reader& r, ModelConfig& c) {
  c.intermediate_size = r.positive_int("intermediate_size");
  read_hybrid(r, c, FeedForward::mlp);
}

// HF: Qwen3_5MoeSparseMoeBlock: every layer routes to experts (the chosen probabilities always
// renormalised) and adds a shared expert.
void read_qwen35_moe(const Reader& r, ModelConfig& c) {
  read_experts(r, c);
  c.shared_expert_intermediate_size = r.positive_int("shared_expert_intermediate_size");
  c.norm_topk_prob = true;
  read_hybrid(r, c, FeedForward::moe);
}

struct Architecture {
  const char* model_type;
  const char* class_name;
  void (*read)(const Reader& r, ModelConfig& c);
  bool nested = false;  // the text model's fields under "text_config", RoPE under rope_parameters
};

constexpr Architecture kArchitectures[] = {
    {"qwen3", "Qwen3ForCausalLM", read_dense},
    {"qwen3_moe", "Qwen3MoeForCausalLM", read_moe},
    {"qwen3_5", "Qwen3_5ForConditionalGeneration", read_qwen35, true},
    {"qwen3_5_moe", "Qwen3_5MoeForConditionalGeneration", read_qwen35_moe, true},
};

std::string supported() {
  std::string s;
  for (const Architecture& a : kArchitectures)
    s += (s.empty() ? "" : ", ") + std::string(a.model_type) + " (" + a.class_name + ")";
  return s;
}

// RoPE: rope_theta at the top (Qwen3), or with partial_rotary_factor inside rope_parameters
// (Qwen3.5; its M-RoPE sections turn every dimension by the text position, as plain RoPE does).
void read_rope(const Reader& t, bool nested, ModelConfig& c) {
  double factor = nested ? 0.25 : 1.0;  // HF Qwen3_5TextConfig's default
  if (nested && t.j.contains("partial_rotary_factor"))
    factor = t.positive_number("partial_rotary_factor");
  if (nested && t.j.contains("rope_parameters")) {
    const Reader p{t.j["rope_parameters"], t.file + ": rope_parameters"};
    if (!p.j.is_object()) t.bad("rope_parameters", "must be an object, got " + p.j.dump());
    const std::string type = p.j.value("rope_type", std::string("default"));
    if (type != "default")
      throw Error(ErrorKind::unsupported, p.file + ": rope_type \"" + type + "\" is not supported");
    if (p.j.contains("partial_rotary_factor")) factor = p.positive_number("partial_rotary_factor");
    c.rope_theta = p.positive_number("rope_theta");
  } else {
    c.rope_theta = t.positive_number("rope_theta");
  }
  if (t.j.contains("rope_scaling") && !t.j["rope_scaling"].is_null())
    throw Error(ErrorKind::unsupported,
                t.file + ": rope_scaling " + t.j["rope_scaling"].dump() + " is not supported");
  if (!nested && c.head_dim % 2 != 0) t.bad("head_dim", "must be even for rotary embeddings");
  c.rotary_dim = static_cast<int>(c.head_dim * factor);
  if (factor > 1 || c.rotary_dim < 2 || c.rotary_dim % 2 != 0)
    t.bad("partial_rotary_factor",
          "must give an even number of rotary dimensions in (0, head_dim " +
              std::to_string(c.head_dim) + "], got " + std::to_string(factor));
}

// tie_word_embeddings: a nested config has it at the top and in text_config; they must agree.
bool read_tie(const Reader& top, const Reader& text) {
  bool tied = text.boolean("tie_word_embeddings", false);
  if (&top.j != &text.j && top.j.contains("tie_word_embeddings")) {
    const bool outer = top.boolean("tie_word_embeddings", false);
    if (text.j.contains("tie_word_embeddings") && outer != tied)
      top.bad("tie_word_embeddings", "disagrees with text_config's");
    tied = outer;
  }
  return tied;
}

void read_special_tokens(const nlohmann::json& j, ModelConfig& c) {
  if (j.contains("bos_token_id") && j["bos_token_id"].is_number_integer())
    c.bos_token_id = j["bos_token_id"];
  if (j.contains("eos_token_id")) {
    auto& e = j["eos_token_id"];
    if (e.is_number_integer()) c.eos_token_id.push_back(e.get<int>());
    if (e.is_array())
      for (auto& id : e)
        if (id.is_number_integer()) c.eos_token_id.push_back(id.get<int>());
  }
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
  // A nested config's text model: its own object, read like a flat config.
  if (arch->nested && (!j.contains("text_config") || !j["text_config"].is_object()))
    throw Error(ErrorKind::format, r.file + ": missing object \"text_config\" (the text model)");
  const Reader t{arch->nested ? j["text_config"] : j,
                 arch->nested ? r.file + ": text_config" : r.file};
  c.hidden_size = t.positive_int("hidden_size");
  c.num_hidden_layers = t.positive_int("num_hidden_layers");
  c.num_attention_heads = t.positive_int("num_attention_heads");
  c.num_key_value_heads = t.positive_int("num_key_value_heads");
  c.head_dim = t.positive_int("head_dim");
  c.vocab_size = t.positive_int("vocab_size");
  c.max_position_embeddings = t.positive_int("max_position_embeddings");
  c.rms_norm_eps = t.positive_number("rms_norm_eps");
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    t.bad("num_attention_heads", "must be a multiple of num_key_value_heads");
  read_rope(t, arch->nested, c);
  c.tie_word_embeddings = read_tie(r, t);
  for (const char* key : {"torch_dtype", "dtype"})
    if (c.torch_dtype.empty() && t.j.contains(key) && t.j[key].is_string())
      c.torch_dtype = t.j[key].get<std::string>();
  if (c.torch_dtype.empty()) c.torch_dtype = "unknown";
  if (t.j.value("use_sliding_window", false))
    throw Error(ErrorKind::unsupported, t.file + ": use_sliding_window is not supported");
  read_special_tokens(t.j, c);
  arch->read(t, c);
  return c;
}

std::string ModelConfig::summary(const std::string& name) const {
  std::string s = name + " (" + std::to_string(num_hidden_layers) + " layers, " +
                  std::to_string(hidden_size) + " dim, " + std::to_string(num_attention_heads) +
                  " Q heads, " + std::to_string(num_key_value_heads) + " KV heads";
  const auto linear = std::count_if(layers.begin(), layers.end(), [](const LayerKind& l) {
    return l.mixer == Mixer::gated_delta_net;
  });
  if (linear) s += ", " + std::to_string(linear) + " of them Gated DeltaNet";
  if (num_experts)
    s += ", " + std::to_string(num_experts_per_tok) + " of " + std::to_string(num_experts) +
         " experts";
  return s + ")";
}

}  // namespace qwen3
