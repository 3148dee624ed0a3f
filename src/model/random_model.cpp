// Random-weight model folders, from the model's own tensor list.
#include "qwen3/random_model.h"

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/quant_blocks.h"
#include "io/safetensors_writer.h"
#include "model/weights.h"
#include "ops/ops.h"
#include "qwen3/error.h"

namespace qwen3 {

namespace fs = std::filesystem;

namespace {

ModelConfig dense(int hidden, int intermediate, int layers, int heads, int kv_heads, bool tied) {
  ModelConfig c;
  c.model_type = "qwen3";
  c.hidden_size = hidden;
  c.intermediate_size = intermediate;
  c.num_hidden_layers = layers;
  c.num_attention_heads = heads;
  c.num_key_value_heads = kv_heads;
  c.head_dim = 128;
  c.vocab_size = 151936;
  c.max_position_embeddings = 40960;
  c.rope_theta = 1000000.0;
  c.rms_norm_eps = 1e-6;
  c.tie_word_embeddings = tied;
  c.torch_dtype = "bfloat16";
  c.bos_token_id = 151643;
  c.eos_token_id = {151645};
  return c;
}

ModelConfig moe(ModelConfig c, int experts, int per_token, int expert_intermediate) {
  c.model_type = "qwen3_moe";
  c.num_experts = experts;
  c.num_experts_per_tok = per_token;
  c.moe_intermediate_size = expert_intermediate;
  c.norm_topk_prob = true;
  return c;
}

// Qwen3.5's published text shapes: head_dim 256 with a quarter of it rotary, rope_theta 1e7,
// DeltaNet heads of 128, a 4-tap convolution, every fourth layer full attention.
ModelConfig hybrid(int hidden, int intermediate, int layers, int heads, int kv_heads,
                   int linear_value_heads, bool tied) {
  ModelConfig c = dense(hidden, intermediate, layers, heads, kv_heads, tied);
  c.model_type = "qwen3_5";
  c.head_dim = 256;
  c.rotary_dim = 64;
  c.rope_theta = 1e7;
  c.vocab_size = 248320;
  c.max_position_embeddings = 262144;
  c.linear_num_key_heads = 16;
  c.linear_num_value_heads = linear_value_heads;
  c.linear_key_head_dim = c.linear_value_head_dim = 128;
  c.linear_conv_kernel_dim = 4;
  c.attn_output_gate = true;
  c.mtp_num_hidden_layers = 1;  // the checkpoints carry a multi-token-prediction head
  return c;
}

ModelConfig hybrid_moe(ModelConfig c, int experts, int per_token, int expert_intermediate,
                       int shared_intermediate) {
  c = moe(c, experts, per_token, expert_intermediate);
  c.model_type = "qwen3_5_moe";
  c.shared_expert_intermediate_size = shared_intermediate;
  return c;
}

// config.json of a Qwen3.5 checkpoint: the text model nested under text_config.
nlohmann::json hybrid_config_json(const ModelConfig& c) {
  const bool is_moe = c.model_type == "qwen3_5_moe";
  nlohmann::json layer_types = nlohmann::json::array();
  for (int i = 0; i < c.num_hidden_layers; ++i)
    layer_types.push_back((i + 1) % 4 == 0 ? "full_attention" : "linear_attention");
  nlohmann::json text = {{"model_type", is_moe ? "qwen3_5_moe_text" : "qwen3_5_text"},
                         {"attn_output_gate", c.attn_output_gate},
                         {"bos_token_id", c.bos_token_id},
                         {"eos_token_id", c.eos_token_id.front()},
                         {"dtype", "bfloat16"},
                         {"full_attention_interval", 4},
                         {"head_dim", c.head_dim},
                         {"hidden_act", "silu"},
                         {"hidden_size", c.hidden_size},
                         {"layer_types", layer_types},
                         {"linear_conv_kernel_dim", c.linear_conv_kernel_dim},
                         {"linear_key_head_dim", c.linear_key_head_dim},
                         {"linear_num_key_heads", c.linear_num_key_heads},
                         {"linear_num_value_heads", c.linear_num_value_heads},
                         {"linear_value_head_dim", c.linear_value_head_dim},
                         {"max_position_embeddings", c.max_position_embeddings},
                         {"mtp_num_hidden_layers", c.mtp_num_hidden_layers},
                         {"num_attention_heads", c.num_attention_heads},
                         {"num_hidden_layers", c.num_hidden_layers},
                         {"num_key_value_heads", c.num_key_value_heads},
                         {"rms_norm_eps", c.rms_norm_eps},
                         {"rope_parameters",
                          {{"rope_type", "default"},
                           {"rope_theta", c.rope_theta},
                           {"partial_rotary_factor", double(c.rotary_dim) / c.head_dim},
                           {"mrope_interleaved", true},
                           {"mrope_section", {11, 11, 10}}}},
                         {"tie_word_embeddings", c.tie_word_embeddings},
                         {"vocab_size", c.vocab_size}};
  if (is_moe) {
    text["num_experts"] = c.num_experts;
    text["num_experts_per_tok"] = c.num_experts_per_tok;
    text["moe_intermediate_size"] = c.moe_intermediate_size;
    text["shared_expert_intermediate_size"] = c.shared_expert_intermediate_size;
  } else {
    text["intermediate_size"] = c.intermediate_size;
  }
  return {{"architectures",
           {is_moe ? "Qwen3_5MoeForConditionalGeneration" : "Qwen3_5ForConditionalGeneration"}},
          {"model_type", c.model_type},
          {"text_config", text},
          {"tie_word_embeddings", c.tie_word_embeddings},
          {"random_weights", true}};
}

nlohmann::json config_json(const ModelConfig& c) {
  if (c.model_type == "qwen3_5" || c.model_type == "qwen3_5_moe") return hybrid_config_json(c);
  const bool is_moe = c.model_type == "qwen3_moe";
  nlohmann::json j = {{"architectures", {is_moe ? "Qwen3MoeForCausalLM" : "Qwen3ForCausalLM"}},
                      {"attention_bias", false},
                      {"attention_dropout", 0.0},
                      {"bos_token_id", c.bos_token_id},
                      {"eos_token_id", c.eos_token_id.front()},
                      {"head_dim", c.head_dim},
                      {"hidden_act", "silu"},
                      {"hidden_size", c.hidden_size},
                      {"initializer_range", 0.02},
                      {"intermediate_size", c.intermediate_size},
                      {"max_position_embeddings", c.max_position_embeddings},
                      {"max_window_layers", c.num_hidden_layers},
                      {"model_type", c.model_type},
                      {"num_attention_heads", c.num_attention_heads},
                      {"num_hidden_layers", c.num_hidden_layers},
                      {"num_key_value_heads", c.num_key_value_heads},
                      {"rms_norm_eps", c.rms_norm_eps},
                      {"rope_scaling", nullptr},
                      {"rope_theta", c.rope_theta},
                      {"sliding_window", nullptr},
                      {"tie_word_embeddings", c.tie_word_embeddings},
                      {"torch_dtype", "bfloat16"},
                      {"use_cache", true},
                      {"use_sliding_window", false},
                      {"vocab_size", c.vocab_size},
                      {"random_weights", true}};
  if (is_moe) {
    j["num_experts"] = c.num_experts;
    j["num_experts_per_tok"] = c.num_experts_per_tok;
    j["moe_intermediate_size"] = c.moe_intermediate_size;
    j["norm_topk_prob"] = c.norm_topk_prob;
    j["decoder_sparse_step"] = c.decoder_sparse_step;
    j["mlp_only_layers"] = c.mlp_only_layers;
    j["output_router_logits"] = false;
    j["router_aux_loss_coef"] = 0.001;
  }
  return j;
}

// bf16 values of a rough normal distribution with standard deviation ~0.02 (as Qwen3's
// initializer_range), from a xorshift generator: fast, reproducible, no denormals.
void fill_random(std::vector<uint16_t>& out, uint64_t& state) {
  for (auto& v : out) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    const float u = (int(state & 0xffff) + int((state >> 16) & 0xffff) +
                     int((state >> 32) & 0xffff) - 98302.5f) /
                    65536.0f;
    const float f = u * 0.04f;  // sum of three uniforms: sd 0.5 -> 0.02
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    v = static_cast<uint16_t>((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
  }
}

}  // namespace

ModelConfig random_model_preset(const std::string& name) {
  if (name == "qwen3-0.6b") return dense(1024, 3072, 28, 16, 8, true);
  if (name == "qwen3-30b-a3b") return moe(dense(2048, 6144, 48, 32, 4, false), 128, 8, 768);
  if (name == "qwen3-moe-small") return moe(dense(512, 1536, 8, 8, 4, false), 32, 4, 256);
  if (name == "qwen3.5-0.8b") return hybrid(1024, 3584, 24, 8, 2, 16, true);
  if (name == "qwen3.5-2b") return hybrid(2048, 6144, 24, 8, 2, 16, true);
  if (name == "qwen3.5-4b") return hybrid(2560, 9216, 32, 16, 4, 32, true);
  if (name == "qwen3.5-9b") return hybrid(4096, 12288, 32, 16, 4, 32, false);
  if (name == "qwen3.5-35b-a3b")
    return hybrid_moe(hybrid(2048, 0, 40, 16, 2, 32, false), 256, 8, 512, 512);
  std::string known;
  for (const std::string& p : random_model_presets()) known += (known.empty() ? "" : ", ") + p;
  throw Error(ErrorKind::invalid_argument, "unknown preset \"" + name + "\" (" + known + ")");
}

std::vector<std::string> random_model_presets() {
  return {"qwen3-0.6b", "qwen3-30b-a3b", "qwen3-moe-small", "qwen3.5-0.8b",
          "qwen3.5-2b", "qwen3.5-4b",    "qwen3.5-9b",      "qwen3.5-35b-a3b"};
}

void write_random_model(const fs::path& out, const ModelConfig& shape,
                        const RandomModelOptions& options) {
  fs::create_directories(out);
  const auto config_path = out / "config.json";
  std::ofstream(config_path) << config_json(shape).dump(2) << "\n";
  ModelConfig c = ModelConfig::load(out);  // checks the shape, derives the layer kinds
  nlohmann::json gen = {
      {"bos_token_id", 151643}, {"do_sample", true},  {"eos_token_id", {151645, 151643}},
      {"pad_token_id", 151643}, {"temperature", 0.6}, {"top_k", 20},
      {"top_p", 0.95}};
  std::ofstream(out / "generation_config.json") << gen.dump(2) << "\n";
  for (auto f : {"tokenizer.json", "tokenizer_config.json"}) {
    if (!fs::exists(options.tokenizer_from / f))
      throw Error(ErrorKind::io, (options.tokenizer_from / f).string() +
                                     ": no such file (pass --tokenizer-from DIR)");
    fs::copy_file(options.tokenizer_from / f, out / f, fs::copy_options::overwrite_existing);
  }

  const bool quantized = options.quant != WeightQuant::none;
  const DType to = quantized ? quant_dtype(options.quant) : DType::bf16;
  // Qwen3.5-MoE's checkpoints pack their experts; quantized folders hold one matrix per expert,
  // as `qwen3 quantize` writes them.
  c.packed_experts = c.mtp_packed_experts = c.model_type == "qwen3_5_moe" && !quantized;
  std::vector<TensorSpec> specs = tensor_specs(c);
  if (c.tie_word_embeddings && !quantized && c.model_type == "qwen3")  // Qwen3-0.6B's copy
    specs.insert(specs.begin(),
                 {"lm_head.weight", {c.vocab_size, c.hidden_size}, TensorRole::lm_head});
  std::vector<io::TensorToWrite> tensors;
  for (const TensorSpec& s : specs) {
    const bool quantize = quantized && quantized_role(s.role, false);
    if (quantize && s.shape.back() % kQuantBlock)
      throw Error(ErrorKind::unsupported,
                  s.name + ": cannot quantize, columns are not a multiple of 32");
    tensors.push_back({s.name, quantize ? to : DType::bf16, s.shape});
  }
  ops::RuntimePtr rt = ops::make_runtime("auto", 0);
  uint64_t state = options.seed * 0x9e3779b97f4a7c15ull + 1;
  std::vector<uint16_t> values, embeddings;
  std::vector<uint8_t> blocks;
  nlohmann::json metadata = {{"format", "pt"}};
  if (quantized) metadata.update({{"quantization", dtype_name(to)}, {"layout", kQuantLayout}});
  io::write_safetensors(out / "model.safetensors", tensors, metadata, [&](size_t i) -> const void* {
    const TensorSpec& s = specs[i];
    uint64_t n = 1;
    for (int64_t d : s.shape) n *= d;
    // Norms of 1 (zero-centred ones store 0); everything else random.
    values.assign(n, s.role == TensorRole::centred_norm ? 0 : 0x3f80);
    if (s.role == TensorRole::embedding && !embeddings.empty()) values.swap(embeddings);
    else if (s.role != TensorRole::norm && s.role != TensorRole::centred_norm)
      fill_random(values, state);
    if (s.role == TensorRole::lm_head && c.tie_word_embeddings) embeddings = values;
    if (tensors[i].dtype == DType::bf16) return values.data();
    blocks.resize(tensors[i].bytes());
    ops::quantize(*rt, ops::Matrix{DType::bf16, values.data(), int(s.shape[0]), int(s.shape[1])},
                  to, blocks.data());
    return blocks.data();
  });
}

}  // namespace qwen3
