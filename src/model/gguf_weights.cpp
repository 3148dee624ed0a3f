// Binding a GGUF file's tensors to the model's weights: llama.cpp's names for the checkpoint's
// (gguf-py's tensor_mapping.py), its dims reversed (ggml lists the fastest index first), and each
// ggml type turned into what the kernels read.
#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "io/quant_blocks.h"
#include "model/gguf_model.h"
#include "qwen3/error.h"

namespace qwen3 {

namespace {

// A decoder layer's tensors by their name after "model.layers.N." (convert_hf_to_gguf.py maps
// Qwen3 and Qwen3-MoE without changing any value or layout: no permutation, no 1 + w).
constexpr std::pair<const char*, const char*> kLayerNames[] = {
    {"input_layernorm.weight", "attn_norm.weight"},
    {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.k_proj.weight", "attn_k.weight"},
    {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.o_proj.weight", "attn_output.weight"},
    {"self_attn.q_norm.weight", "attn_q_norm.weight"},
    {"self_attn.k_norm.weight", "attn_k_norm.weight"},
    {"post_attention_layernorm.weight", "ffn_norm.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
    {"mlp.gate.weight", "ffn_gate_inp.weight"},
};
// An expert's projections, stacked over the experts into one 3-D tensor each.
constexpr std::pair<const char*, const char*> kExpertNames[] = {
    {"gate_proj.weight", "ffn_gate_exps.weight"},
    {"up_proj.weight", "ffn_up_exps.weight"},
    {"down_proj.weight", "ffn_down_exps.weight"},
};

// "12.rest" -> (12, "rest"); nullopt when `s` does not start with a number and a dot.
std::optional<std::pair<int, std::string>> number_then(const std::string& s) {
  const size_t dot = s.find('.');
  if (dot == 0 || dot == std::string::npos || dot > 6 || s.find_first_not_of("0123456789") != dot)
    return std::nullopt;
  return std::pair{std::stoi(s.substr(0, dot)), s.substr(dot + 1)};
}

// What the kernels read for a ggml type: the same bytes in place, repacked blocks, or bf16.
enum class Conversion { in_place, repacked, dequantized };

Conversion conversion_of(io::GgmlType t) {
  switch (t) {
    case io::GgmlType::f32:
    case io::GgmlType::f16:
    case io::GgmlType::bf16: return Conversion::in_place;
    case io::GgmlType::q8_0:
    case io::GgmlType::q4_0: return Conversion::repacked;
    default: return Conversion::dequantized;
  }
}

DType float_dtype(io::GgmlType t) {
  return t == io::GgmlType::f32 ? DType::f32 : t == io::GgmlType::f16 ? DType::f16 : DType::bf16;
}

class Binder {
 public:
  Binder(Weights& w, int experts) : w_(w), f_(*w.gguf), experts_(experts) {}

  void bind(const TensorSpec& spec, TensorSlot slot) {
    const std::optional<GgufName> where = gguf_tensor_name(spec.name);
    const io::GgufTensor& t = find(spec, where);
    read_.insert(t.name);
    int64_t n = 1;
    for (int64_t d : spec.shape) n *= d;
    const size_t bytes = io::ggml_row_bytes(t.type, n);
    const auto* data =
        static_cast<const uint8_t*>(t.data) + size_t(std::max(where->expert, 0)) * bytes;
    if (auto* m = std::get_if<ops::Matrix*>(&slot))
      return void(**m = matrix(t, data, int(spec.shape[0]), int(spec.shape[1])));
    if (std::holds_alternative<PackedExperts>(slot))
      throw Error(ErrorKind::format, f_.name() + ": packed experts are not a GGUF layout");
    if (t.type != io::GgmlType::f32 && t.type != io::GgmlType::f16 && t.type != io::GgmlType::bf16)
      throw Error(ErrorKind::format, f_.name() + ": tensor " + t.name +
                                         ": expected a float type, got " + t.describe());
    io::Buffer<float>& v = *std::get<io::Buffer<float>*>(slot);
    v.resize(n);
    io::dequantize_row(t.type, data, n, v.data());
    if (spec.role == TensorRole::centred_norm)
      for (float& x : v) x += 1.0f;
  }

  // What was converted at load, by type ("q4_K: 12 matrices dequantized to bf16 ..."), and the
  // tensors no weight reads, grouped over the layers ("blk.*.rope_freqs.weight (28 tensors)").
  void finish() {
    for (const auto& [type, count] : converted_) {
      const bool repacked = conversion_of(type) == Conversion::repacked;
      w_.notes.push_back(std::string(io::ggml_type_name(type)) + ": " + std::to_string(count) +
                         (count == 1 ? " matrix " : " matrices ") +
                         (repacked ? "repacked into the engine's row groups at load"
                                   : "dequantized to bf16 at load (no kernel for the type yet)"));
    }
    std::map<std::string, int> groups;
    for (const io::GgufTensor& t : f_.tensors()) {
      if (read_.count(t.name)) continue;
      const auto layer = t.name.starts_with("blk.") ? number_then(t.name.substr(4)) : std::nullopt;
      ++groups[layer ? "blk.*." + layer->second : t.name];
    }
    for (const auto& [group, n] : groups)
      w_.unread.push_back(group + " (" + std::to_string(n) + (n == 1 ? " tensor)" : " tensors)"));
  }

 private:
  const io::GgufTensor& find(const TensorSpec& spec, const std::optional<GgufName>& where) const {
    if (!where)
      throw Error(ErrorKind::unsupported,
                  f_.name() + ": no GGUF tensor name is known for " + spec.name);
    const io::GgufTensor* t = f_.find_tensor(where->name);
    if (!t) throw Error(ErrorKind::format, f_.name() + ": missing tensor " + where->name);
    // ggml's dims: the checkpoint's shape reversed, then the experts; trailing 1s dropped.
    std::vector<int64_t> want(spec.shape.rbegin(), spec.shape.rend());
    if (where->expert >= 0) want.push_back(experts_);
    std::vector<int64_t> got = t->dims;
    while (got.size() > 1 && got.back() == 1) got.pop_back();
    while (want.size() > 1 && want.back() == 1) want.pop_back();
    if (got != want) {
      std::string dims;
      for (int64_t d : want) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
      throw Error(ErrorKind::shape, f_.name() + ": tensor " + t->name + ": expected [" + dims +
                                        "], got " + t->describe());
    }
    return *t;
  }

  ops::Matrix matrix(const io::GgufTensor& t, const uint8_t* data, int rows, int cols) {
    switch (conversion_of(t.type)) {
      case Conversion::in_place: return {float_dtype(t.type), data, rows, cols};
      case Conversion::repacked: {
        const DType to = t.type == io::GgmlType::q8_0 ? DType::q8_0 : DType::q4_0;
        uint8_t* out = w_.quantized.emplace_back(size_t(rows) * row_bytes(to, cols)).data();
        jobs_.push_back([=] { interleave_rows(to, rows, cols, data, out); });
        ++converted_[t.type];
        return {to, out, rows, cols};
      }
      case Conversion::dequantized: break;
    }
    if (!io::ggml_type_info(t.type).dequantizable)
      throw Error(ErrorKind::unsupported, f_.name() + ": tensor " + t.name + ": type " +
                                              io::ggml_type_name(t.type) + " is not supported");
    uint8_t* out = w_.quantized.emplace_back(size_t(rows) * row_bytes(DType::bf16, cols)).data();
    jobs_.push_back([=, type = t.type] {
      auto* bf16 = reinterpret_cast<uint16_t*>(out);
      std::vector<float> row(cols);
      const size_t in_row = io::ggml_row_bytes(type, cols);
      for (int r = 0; r < rows; ++r) {
        io::dequantize_row(type, data + r * in_row, cols, row.data());
        for (int i = 0; i < cols; ++i) bf16[size_t(r) * cols + i] = f32_to_bf16(row[i]);
      }
    });
    ++converted_[t.type];
    return {DType::bf16, out, rows, cols};
  }

 public:
  // The conversions the binding queued, one matrix per job, on every core: a 0.6B model's
  // repacking took 3.8 s on one.
  void convert() {
    std::atomic<size_t> next = 0;
    auto work = [&] {
      for (size_t i; (i = next++) < jobs_.size();) jobs_[i]();
    };
    const size_t helpers = std::min<size_t>(jobs_.size(), std::thread::hardware_concurrency());
    std::vector<std::thread> threads(helpers > 1 ? helpers - 1 : 0);
    for (std::thread& t : threads) t = std::thread(work);
    work();
    for (std::thread& t : threads) t.join();
  }

 private:
  Weights& w_;
  const io::GgufFile& f_;
  const int64_t experts_;  // the stacked expert tensors' last dim
  std::set<std::string> read_;
  std::map<io::GgmlType, int> converted_;
  std::vector<std::function<void()>> jobs_;  // conversions, run by convert()
};

}  // namespace

std::optional<GgufName> gguf_tensor_name(const std::string& name) {
  if (name == "model.embed_tokens.weight") return GgufName{"token_embd.weight"};
  if (name == "model.norm.weight") return GgufName{"output_norm.weight"};
  if (name == "lm_head.weight") return GgufName{"output.weight"};
  const std::string layers = "model.layers.";
  if (!name.starts_with(layers)) return std::nullopt;
  const auto layer = number_then(name.substr(layers.size()));
  if (!layer) return std::nullopt;
  const std::string blk = "blk." + std::to_string(layer->first) + ".";
  const std::string& rest = layer->second;
  for (const auto& [hf, gguf] : kLayerNames)
    if (rest == hf) return GgufName{blk + gguf};
  const std::string experts = "mlp.experts.";
  const auto expert =
      rest.starts_with(experts) ? number_then(rest.substr(experts.size())) : std::nullopt;
  if (expert)
    for (const auto& [hf, gguf] : kExpertNames)
      if (expert->second == hf) return GgufName{blk + gguf, expert->first};
  return std::nullopt;
}

Weights load_gguf_weights(io::GgufFile file, const ModelConfig& c) {
  Weights w{};
  w.gguf = std::move(file);
  size_weights(c, w);
  Binder binder(w, c.num_experts);
  for_each_tensor(c, w, [&](const TensorSpec& spec, TensorSlot slot) { binder.bind(spec, slot); });
  binder.convert();
  binder.finish();
  if (c.tie_word_embeddings) w.lm_head = w.embed_tokens;  // no output.weight: llama.cpp's fallback
  return w;
}

}  // namespace qwen3
