// Finding, checking and viewing every tensor a Qwen3 checkpoint must hold.
#include "model/weights.h"

#include <sys/mman.h>
#include <unistd.h>

#include <string>

#include "io/quant_blocks.h"
#include "qwen3/error.h"

namespace qwen3 {

namespace {

class Loader {
 public:
  explicit Loader(const io::SafetensorsArchive& a) : archive_(a) {}

  const io::TensorView& get(const std::string& name, std::vector<int64_t> shape) const {
    const io::TensorView* t = archive_.find(name);
    if (!t) throw Error(ErrorKind::format, "model.safetensors: missing tensor " + name);
    if (t->shape != shape) {
      io::TensorView want = *t;
      want.shape = shape;
      throw Error(ErrorKind::shape, t->file + ": tensor " + name + ": expected " + want.describe() + ", got " +
                                        t->describe());
    }
    return *t;
  }

  ops::Matrix matrix(const std::string& name, int rows, int cols) const {
    const auto& t = get(name, {rows, cols});
    return ops::Matrix{t.dtype, t.data, rows, cols};
  }

  io::Buffer<float> vector(const std::string& name, int n) const {
    const auto& t = get(name, {n});
    if (is_block_quantized(t.dtype))
      throw Error(ErrorKind::format, t.file + ": tensor " + name + ": expected a float dtype, got " + t.describe());
    io::Buffer<float> v(n);
    dequantize_row(t.dtype, t.data, n, v.data());
    return v;
  }

 private:
  const io::SafetensorsArchive& archive_;
};

}  // namespace

std::vector<ops::Matrix> Weights::per_token_matrices() const {
  std::vector<ops::Matrix> out;
  for (auto& l : layers)
    for (auto* m : {&l.q_proj, &l.k_proj, &l.v_proj, &l.o_proj, &l.gate_proj, &l.up_proj, &l.down_proj}) out.push_back(*m);
  out.push_back(lm_head);
  return out;
}

uint64_t Weights::bytes_per_token() const {
  uint64_t n = 0;
  for (auto& m : per_token_matrices()) n += m.bytes();
  return n;
}

void prefault(const Weights& weights) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  for (auto& m : weights.per_token_matrices()) {
    const uintptr_t begin = reinterpret_cast<uintptr_t>(m.data) & ~(page - 1);
    const uintptr_t end = reinterpret_cast<uintptr_t>(m.data) + m.bytes();
    madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_READ);
  }
}

Weights load_weights(const std::filesystem::path& dir, const ModelConfig& c, bool in_memory) {
  Weights w{io::SafetensorsArchive::open(dir, in_memory), {}, {}, {}, {}, {}};
  Loader in(w.archive);
  const int D = c.hidden_size, F = c.intermediate_size, Dh = c.head_dim;
  const int q_width = c.num_attention_heads * Dh, kv_width = c.num_key_value_heads * Dh;
  w.embed_tokens = in.matrix("model.embed_tokens.weight", c.vocab_size, D);
  for (int i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    LayerWeights l;
    l.input_layernorm = in.vector(p + "input_layernorm.weight", D);
    l.q_proj = in.matrix(p + "self_attn.q_proj.weight", q_width, D);
    l.k_proj = in.matrix(p + "self_attn.k_proj.weight", kv_width, D);
    l.v_proj = in.matrix(p + "self_attn.v_proj.weight", kv_width, D);
    l.q_norm = in.vector(p + "self_attn.q_norm.weight", Dh);
    l.k_norm = in.vector(p + "self_attn.k_norm.weight", Dh);
    l.o_proj = in.matrix(p + "self_attn.o_proj.weight", D, q_width);
    l.post_attention_layernorm = in.vector(p + "post_attention_layernorm.weight", D);
    l.gate_proj = in.matrix(p + "mlp.gate_proj.weight", F, D);
    l.up_proj = in.matrix(p + "mlp.up_proj.weight", F, D);
    l.down_proj = in.matrix(p + "mlp.down_proj.weight", D, F);
    w.layers.push_back(std::move(l));
  }
  w.norm = in.vector("model.norm.weight", D);
  // Tied: the LM head is the embedding matrix. Qwen3-0.6B also stores lm_head.weight (an exact
  // copy); it is checked but never read, so its pages are never touched.
  const bool has_head = w.archive.find("lm_head.weight") != nullptr;
  if (has_head || !c.tie_word_embeddings) {
    ops::Matrix head = in.matrix("lm_head.weight", c.vocab_size, D);
    if (!c.tie_word_embeddings) w.lm_head = head;
  }
  if (c.tie_word_embeddings) w.lm_head = w.embed_tokens;
  return w;
}

DType parse_quant_type(std::string_view type) {
  if (type == "q8") return DType::q8_0;
  if (type == "q4") return DType::q4_0;
  throw Error(ErrorKind::invalid_argument, "unknown quantization type \"" + std::string(type) + "\" (q8, q4)");
}

void quantize_weights(Weights& w, DType to, bool keep_head, ops::Runtime& rt) {
  auto quantize = [&](ops::Matrix& m) {
    if (is_block_quantized(m.dtype)) {
      if (m.dtype == to) return;
      throw Error(ErrorKind::invalid_argument, std::string("weights are already ") + dtype_name(m.dtype) +
                                                   ", cannot quantize them to " + dtype_name(to));
    }
    if (m.cols % kQuantBlock)
      throw Error(ErrorKind::unsupported, "cannot quantize a [" + std::to_string(m.rows) + ", " + std::to_string(m.cols) +
                                              "] matrix: its columns are not a multiple of " + std::to_string(kQuantBlock));
    auto& bytes = w.quantized.emplace_back(size_t(m.rows) * row_bytes(to, m.cols));
    ops::quantize(rt, m, to, bytes.data());
    m = ops::Matrix{to, bytes.data(), m.rows, m.cols};
  };
  for (auto& l : w.layers)
    for (auto* m : {&l.q_proj, &l.k_proj, &l.v_proj, &l.o_proj, &l.gate_proj, &l.up_proj, &l.down_proj}) quantize(*m);
  if (keep_head) return;
  const bool tied = w.lm_head.data == w.embed_tokens.data;
  quantize(w.embed_tokens);
  if (tied) w.lm_head = w.embed_tokens;
  else quantize(w.lm_head);
}

}  // namespace qwen3
