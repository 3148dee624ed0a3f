// Binding a GGUF file's tensors to the model's weights: llama.cpp's names for the checkpoint's
// (gguf-py's tensor_mapping.py), its dims reversed (ggml lists the fastest index first), and each
// ggml type turned into what the kernels read.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "io/quant_blocks.h"
#include "model/gguf_model.h"
#include "model/gguf_value_heads.h"
#include "qwen3/error.h"

namespace qwen3 {

namespace {

// A decoder layer's tensors by their name after "<weight_prefix>layers.N." (gguf-py's
// tensor_mapping.py). Qwen3 and Qwen3-MoE are converted without changing any value or layout (no
// q/k permutation: Qwen uses NeoX RoPE); Qwen3.5's values change (gguf_value_heads.h, and A_log
// and the norms in Binder::bind).
constexpr std::pair<const char*, const char*> kLayerNames[] = {
    {"input_layernorm.weight", "attn_norm.weight"},
    {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.k_proj.weight", "attn_k.weight"},
    {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.o_proj.weight", "attn_output.weight"},
    {"self_attn.q_norm.weight", "attn_q_norm.weight"},
    {"self_attn.k_norm.weight", "attn_k_norm.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
    {"mlp.gate.weight", "ffn_gate_inp.weight"},
    {"mlp.shared_expert.gate_proj.weight", "ffn_gate_shexp.weight"},
    {"mlp.shared_expert.up_proj.weight", "ffn_up_shexp.weight"},
    {"mlp.shared_expert.down_proj.weight", "ffn_down_shexp.weight"},
    {"mlp.shared_expert_gate.weight", "ffn_gate_inp_shexp.weight"},
    {"linear_attn.in_proj_qkv.weight", "attn_qkv.weight"},
    {"linear_attn.in_proj_z.weight", "attn_gate.weight"},
    {"linear_attn.in_proj_b.weight", "ssm_beta.weight"},
    {"linear_attn.in_proj_a.weight", "ssm_alpha.weight"},
    {"linear_attn.conv1d.weight", "ssm_conv1d.weight"},
    {"linear_attn.A_log", "ssm_a"},
    {"linear_attn.dt_bias", "ssm_dt.bias"},
    {"linear_attn.norm.weight", "ssm_norm.weight"},
    {"linear_attn.out_proj.weight", "ssm_out.weight"},
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

// What the kernels read for a ggml type: the same bytes in place, repacked blocks, or a
// dequantization (bf16, or --quant's type). requantize: --quant asks for this matrix in its type,
// which q8_0 and q4_0 files keep (the engine's blocks already) and the other repacked types
// (q4_1, q5_0, q5_1, iq4_nl and the K-quants) take instead.
enum class Conversion { in_place, repacked, dequantized };

Conversion conversion_of(io::GgmlType t, bool requantize) {
  switch (t) {
    case io::GgmlType::f32:
    case io::GgmlType::f16:
    case io::GgmlType::bf16: return Conversion::in_place;
    case io::GgmlType::q8_0:
    case io::GgmlType::q4_0: return Conversion::repacked;
    case io::GgmlType::q4_1:
    case io::GgmlType::q5_0:
    case io::GgmlType::q5_1:
    case io::GgmlType::iq4_nl:
    case io::GgmlType::q4_k:
    case io::GgmlType::q5_k:
    case io::GgmlType::q6_k: return requantize ? Conversion::dequantized : Conversion::repacked;
    default: return Conversion::dequantized;
  }
}

// The engine's type holding a repacked ggml type's values unchanged.
DType repacked_dtype(io::GgmlType t) {
  switch (t) {
    case io::GgmlType::q8_0: return DType::q8_0;
    case io::GgmlType::q4_0: return DType::q4_0;
    case io::GgmlType::q4_1: return DType::q4_1;
    case io::GgmlType::q5_0: return DType::q5_0;
    case io::GgmlType::q5_1: return DType::q5_1;
    case io::GgmlType::iq4_nl: return DType::iq4_nl;
    case io::GgmlType::q4_k: return DType::q4_k;
    case io::GgmlType::q5_k: return DType::q5_k;
    default: return DType::q6_k;
  }
}

DType float_dtype(io::GgmlType t) {
  return t == io::GgmlType::f32 ? DType::f32 : t == io::GgmlType::f16 ? DType::f16 : DType::bf16;
}

// Gives back the whole pages of a file's tensor once it is converted into owned memory and no
// longer read: a mapped file's (the kernel would read them back from the file) or those of a file
// read into memory. Without it a Q8_0 model held both its file and its repacked copy, twice its
// size in RSS. Pages shared with a neighbouring tensor are kept. Only for bytes the GgufFile owns.
void give_back(const void* data, size_t bytes) {
  const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE)), begin = uintptr_t(data);
  const uintptr_t first = (begin + page - 1) & ~(page - 1), last = (begin + bytes) & ~(page - 1);
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

class Binder {
 public:
  Binder(Weights& w, const ModelConfig& c, WeightQuant quant, bool keep_head)
      : w_(w),
        f_(*w.gguf),
        owns_bytes_(w.gguf->owns_bytes()),
        c_(c),
        requantize_to_(quant == WeightQuant::none ? DType::bf16 : quant_dtype(quant)),
        keep_head_(keep_head) {}

  void bind(const TensorSpec& spec, TensorSlot slot) {
    const std::optional<GgufName> where = gguf_tensor_name(spec.name, c_);
    const io::GgufTensor& t = find(spec, where);
    read_.insert(t.name);
    int64_t n = 1;
    for (int64_t d : spec.shape) n *= d;
    const size_t bytes = io::ggml_row_bytes(t.type, n);
    const uint8_t* data =
        static_cast<const uint8_t*>(t.data) + size_t(std::max(where->expert, 0)) * bytes;
    const int64_t rows = spec.shape[0], cols = n / std::max<int64_t>(rows, 1);
    const std::optional<HeadOrder> heads = value_heads(c_, spec.name, rows, cols);
    if (auto* m = std::get_if<ops::Matrix*>(&slot)) {
      if (heads) {
        const io::GgmlTypeInfo& type = io::ggml_type_info(t.type);
        const std::optional<HeadOrder> moved = heads->in_bytes(type.block_size, type.block_bytes);
        if (!moved) return void(**m = reordered(t, data, int(rows), int(cols), *heads));
        // whole blocks move: reorder a copy of the bytes, then treat it as the file's tensor
        uint8_t* copy = w_.quantized.emplace_back(bytes).data();
        std::copy_n(data, bytes, copy);
        untile_value_heads(copy, *moved, c_.linear_num_key_heads, c_.linear_num_value_heads);
        if (owns_bytes_) give_back(data, bytes);
        data = copy;
        ++reordered_;
      }
      return void(**m =
                      matrix(t, data, int(rows), int(cols), quantized_role(spec.role, keep_head_)));
    }
    if (std::holds_alternative<PackedExperts>(slot))
      throw Error(ErrorKind::format, f_.name() + ": packed experts are not a GGUF layout");
    if (t.type != io::GgmlType::f32 && t.type != io::GgmlType::f16 && t.type != io::GgmlType::bf16)
      throw Error(ErrorKind::format, f_.name() + ": tensor " + t.name +
                                         ": expected a float type, got " + t.describe());
    io::Buffer<float>& v = *std::get<io::Buffer<float>*>(slot);
    v.resize(n);
    io::dequantize_row(t.type, data, n, v.data());
    if (heads)
      untile_value_heads(v.data(), *heads, c_.linear_num_key_heads, c_.linear_num_value_heads);
    // Qwen3.5: A_log is stored as A = -exp(A_log), and log(-A) gives it back to a rounding of
    // the exp; zero-centred norm gains are stored as 1 + w, so unlike a folder's they are read
    // as they are (TensorRole::centred_norm adds nothing here).
    if (spec.name.ends_with(".A_log"))
      for (float& x : v) x = std::log(-x);
  }

  // What was converted at load, by type ("q4_K: 12 matrices dequantized to bf16 ..."), and the
  // tensors no weight reads, grouped over the layers ("blk.*.rope_freqs.weight (28 tensors)").
  void finish() {
    if (reordered_)
      w_.notes.push_back(
          std::to_string(reordered_) +
          " Gated DeltaNet matrices with their value heads put back in Hugging Face's order at "
          "load" +
          (dequantized_to_f32_ ? " (" + std::to_string(dequantized_to_f32_) +
                                     " dequantized to f32: their heads split the type's blocks)"
                               : std::string()));
    for (const auto& [types, count] : converted_) {
      const auto [from, to] = types;
      const bool has_kernel = conversion_of(from, false) == Conversion::repacked;
      const std::string what =
          has_kernel && to == repacked_dtype(from) ? "repacked into the engine's row groups at load"
          : to == DType::bf16
              ? "dequantized to bf16 at load (no kernel for the type yet)"
              : std::string("requantized to ") + dtype_name(to) + " at load (--quant" +
                    (has_kernel ? ")" : "; no kernel for the type yet)");
      w_.notes.push_back(std::string(io::ggml_type_name(from)) + ": " + std::to_string(count) +
                         (count == 1 ? " matrix " : " matrices ") + what);
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
    // ggml's dims: the checkpoint's shape reversed, then the experts. Dims of 1 are dropped:
    // the converter squeezes them (Qwen3.5's conv1d [C, 1, K], shared_expert_gate [1, D]).
    std::vector<int64_t> want(spec.shape.rbegin(), spec.shape.rend());
    if (where->expert >= 0) want.push_back(c_.num_experts);
    std::vector<int64_t> got = t->dims;
    std::erase(got, 1);
    std::erase(want, 1);
    if (got != want) {
      std::string dims;
      for (int64_t d : want) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
      throw Error(ErrorKind::shape, f_.name() + ": tensor " + t->name + ": expected [" + dims +
                                        "], got " + t->describe());
    }
    return *t;
  }

  // quantized: whether --quant may turn this matrix into q8_0 / q4_0 (its role, --keep-head).
  ops::Matrix matrix(const io::GgufTensor& t, const uint8_t* data, int rows, int cols,
                     bool quantized) {
    switch (conversion_of(t.type, quantized && requantize_to_ != DType::bf16)) {
      case Conversion::in_place: return {float_dtype(t.type), data, rows, cols};
      case Conversion::repacked: {
        const DType to = repacked_dtype(t.type);
        uint8_t* out = w_.quantized.emplace_back(size_t(rows) * row_bytes(to, cols)).data();
        jobs_.push_back([=, type = t.type, release = owns_bytes_] {
          const size_t in_row = io::ggml_row_bytes(type, cols);
          if (!same_bytes_as_ggml(to)) {  // rewritten first, a group of rows at a time
            const size_t out_row = row_bytes(to, cols);
            std::vector<uint8_t> plain(kQuantRows * out_row);
            for (int r0 = 0; r0 < rows; r0 += kQuantRows) {
              const int n = std::min(kQuantRows, rows - r0);
              for (int r = 0; r < n; ++r)
                from_ggml(to, data + (r0 + r) * in_row, cols, &plain[r * out_row]);
              interleave_rows(to, n, cols, plain.data(), out + r0 * out_row);
            }
          } else {
            interleave_rows(to, rows, cols, data, out);
          }
          if (release) give_back(data, rows * in_row);
        });
        ++converted_[{t.type, to}];
        return {to, out, rows, cols};
      }
      case Conversion::dequantized: break;
    }
    if (!io::ggml_type_info(t.type).dequantizable)
      throw Error(ErrorKind::unsupported, f_.name() + ": tensor " + t.name + ": type " +
                                              io::ggml_type_name(t.type) + " is not supported");
    // bf16, or with --quant the engine's q8_0 / q4_0 straight away: a 30B model's K-quants in
    // bf16 would need about four times the file's memory
    const DType to = quantized ? requantize_to_ : DType::bf16;
    uint8_t* out = w_.quantized.emplace_back(size_t(rows) * row_bytes(to, cols)).data();
    jobs_.push_back([=, type = t.type, release = owns_bytes_] {
      std::vector<float> row(cols);
      const size_t in_row = io::ggml_row_bytes(type, cols), out_row = row_bytes(to, cols);
      std::vector<uint8_t> plain(is_block_quantized(to) ? size_t(rows) * out_row : 0);
      for (int r = 0; r < rows; ++r) {
        io::dequantize_row(type, data + r * in_row, cols, row.data());
        if (is_block_quantized(to)) {
          quantize_row(to, row.data(), cols, &plain[size_t(r) * out_row]);
          continue;
        }
        auto* bf16 = reinterpret_cast<uint16_t*>(out + size_t(r) * out_row);
        for (int i = 0; i < cols; ++i) bf16[i] = f32_to_bf16(row[i]);
      }
      if (is_block_quantized(to)) interleave_rows(to, rows, cols, plain.data(), out);
      if (release) give_back(data, rows * in_row);
    });
    ++converted_[{t.type, to}];
    return {to, out, rows, cols};
  }

  // A matrix whose value heads split its type's blocks: dequantized whole, reordered, kept in
  // f32 (exactly the file's values).
  ops::Matrix reordered(const io::GgufTensor& t, const uint8_t* data, int rows, int cols,
                        const HeadOrder& heads) {
    if (!io::ggml_type_info(t.type).dequantizable)
      throw Error(ErrorKind::unsupported, f_.name() + ": tensor " + t.name + ": type " +
                                              io::ggml_type_name(t.type) + " is not supported");
    auto* out = reinterpret_cast<float*>(
        w_.quantized.emplace_back(size_t(rows) * row_bytes(DType::f32, cols)).data());
    jobs_.push_back([=, type = t.type, nk = c_.linear_num_key_heads, nv = c_.linear_num_value_heads,
                     release = owns_bytes_] {
      io::dequantize_row(type, data, int64_t(rows) * cols, out);
      untile_value_heads(out, heads, nk, nv);
      if (release) give_back(data, io::ggml_row_bytes(type, int64_t(rows) * cols));
    });
    ++reordered_;
    ++dequantized_to_f32_;
    return {DType::f32, out, rows, cols};
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
  const bool owns_bytes_;  // whether converted tensors' pages may be given back (give_back)
  const ModelConfig& c_;
  const DType requantize_to_;  // what types without a kernel become: bf16, or --quant's type
  const bool keep_head_;
  std::set<std::string> read_;
  int reordered_ = 0;           // matrices whose value heads were put back in order
  int dequantized_to_f32_ = 0;  // of those, the ones whose heads split the type's blocks
  std::map<std::pair<io::GgmlType, DType>, int> converted_;  // matrices, by file and kernel type
  std::vector<std::function<void()>> jobs_;                  // conversions, run by convert()
};

}  // namespace

std::optional<GgufName> gguf_tensor_name(const std::string& name, const ModelConfig& c) {
  if (name == c.weight_prefix + "embed_tokens.weight") return GgufName{"token_embd.weight"};
  if (name == c.weight_prefix + "norm.weight") return GgufName{"output_norm.weight"};
  if (name == "lm_head.weight") return GgufName{"output.weight"};
  const std::string layers = c.weight_prefix + "layers.";
  if (!name.starts_with(layers)) return std::nullopt;
  const auto layer = number_then(name.substr(layers.size()));
  if (!layer) return std::nullopt;
  const std::string blk = "blk." + std::to_string(layer->first) + ".";
  const std::string& rest = layer->second;
  if (rest == "post_attention_layernorm.weight")  // Qwen3.5's has a name of its own
    return GgufName{blk +
                    (c.zero_centred_norms ? "post_attention_norm.weight" : "ffn_norm.weight")};
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

Weights load_gguf_weights(io::GgufFile file, const ModelConfig& c, WeightQuant quant,
                          bool keep_head) {
  Weights w{};
  w.gguf = std::move(file);
  size_weights(c, w);
  Binder binder(w, c, quant, keep_head);
  for_each_tensor(c, w, [&](const TensorSpec& spec, TensorSlot slot) { binder.bind(spec, slot); });
  binder.convert();
  binder.finish();
  if (c.tie_word_embeddings) w.lm_head = w.embed_tokens;  // no output.weight: llama.cpp's fallback
  return w;
}

}  // namespace qwen3
