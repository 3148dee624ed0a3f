// ModelConfig from config.json: every field Qwen3 dense models use, checked.
#include <algorithm>

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
    if (!v.is_number() || !(v.get<double>() > 0)) bad(key, "must be a positive number, got " + v.dump());
    return v.get<double>();
  }
};

}  // namespace

ModelConfig ModelConfig::load(const std::filesystem::path& dir) {
  auto path = dir / "config.json";
  auto j = io::read_json(path);
  Reader r{j, path.string()};
  if (!j.is_object()) throw Error(ErrorKind::format, r.file + ": not a JSON object");

  ModelConfig c;
  auto& type = r.field("model_type");
  c.model_type = type.is_string() ? type.get<std::string>() : type.dump();
  if (c.model_type != "qwen3")
    throw Error(ErrorKind::unsupported, r.file + ": model_type \"" + c.model_type +
                                            "\" is not supported (supported: qwen3, architecture Qwen3ForCausalLM)");
  if (j.contains("architectures")) {
    auto& a = j["architectures"];
    if (!a.is_array() || std::find(a.begin(), a.end(), "Qwen3ForCausalLM") == a.end())
      throw Error(ErrorKind::unsupported,
                  r.file + ": architectures " + a.dump() + " is not supported (supported: Qwen3ForCausalLM)");
  }
  c.hidden_size = r.positive_int("hidden_size");
  c.intermediate_size = r.positive_int("intermediate_size");
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
  c.torch_dtype = j.contains("torch_dtype") && j["torch_dtype"].is_string() ? j["torch_dtype"].get<std::string>()
                                                                             : std::string("unknown");
  if (j.contains("rope_scaling") && !j["rope_scaling"].is_null())
    throw Error(ErrorKind::unsupported, r.file + ": rope_scaling " + j["rope_scaling"].dump() + " is not supported");
  if (j.value("use_sliding_window", false))
    throw Error(ErrorKind::unsupported, r.file + ": use_sliding_window is not supported");
  if (j.contains("bos_token_id") && j["bos_token_id"].is_number_integer()) c.bos_token_id = j["bos_token_id"];
  if (j.contains("eos_token_id")) {
    auto& e = j["eos_token_id"];
    if (e.is_number_integer()) c.eos_token_id.push_back(e.get<int>());
    if (e.is_array())
      for (auto& id : e)
        if (id.is_number_integer()) c.eos_token_id.push_back(id.get<int>());
  }
  return c;
}

std::string ModelConfig::summary(const std::string& name) const {
  return name + " (" + std::to_string(num_hidden_layers) + " layers, " + std::to_string(hidden_size) + " dim, " +
         std::to_string(num_attention_heads) + " Q heads, " + std::to_string(num_key_value_heads) + " KV heads)";
}

}  // namespace qwen3
