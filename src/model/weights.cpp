// Finding, checking and viewing every tensor a checkpoint must hold (the list: tensors.cpp).
#include "model/weights.h"

#include <sys/mman.h>
#include <unistd.h>

#include <map>
#include <set>
#include <string>

#include "io/quant_blocks.h"
#include "qwen3/error.h"

namespace qwen3 {

namespace {

const io::TensorView& find(const io::SafetensorsArchive& archive, const TensorSpec& spec) {
  const io::TensorView* t = archive.find(spec.name);
  if (!t) throw Error(ErrorKind::format, "model.safetensors: missing tensor " + spec.name);
  if (t->shape != spec.shape) {
    io::TensorView want = *t;
    want.shape = spec.shape;
    throw Error(ErrorKind::shape, t->file + ": tensor " + spec.name + ": expected " +
                                      want.describe() + ", got " + t->describe());
  }
  return *t;
}

// Binds each tensor's view: matrices in place (packed experts as slices), vectors widened to
// float (a zero-centred norm's w as 1 + w).
void bind_view(const io::TensorView& t, TensorRole role, TensorSlot slot) {
  if (auto* m = std::get_if<ops::Matrix*>(&slot)) {
    **m = ops::Matrix{t.dtype, t.data, int(t.shape[0]), int(t.shape[1])};
    return;
  }
  if (auto* packed = std::get_if<PackedExperts>(&slot)) {
    const int rows = int(t.shape[1] * t.shape[0] / int64_t(packed->slices.size()));
    const size_t bytes = size_t(rows) * row_bytes(t.dtype, int(t.shape[2]));
    for (size_t i = 0; i < packed->slices.size(); ++i)
      *packed->slices[i] = ops::Matrix{t.dtype, static_cast<const uint8_t*>(t.data) + i * bytes,
                                       rows, int(t.shape[2])};
    return;
  }
  if (is_block_quantized(t.dtype))
    throw Error(ErrorKind::format,
                t.file + ": tensor " + t.name + ": expected a float dtype, got " + t.describe());
  int64_t n = 1;
  for (int64_t d : t.shape) n *= d;
  io::Buffer<float>& v = *std::get<io::Buffer<float>*>(slot);
  v.resize(n);
  dequantize_row(t.dtype, t.data, int(n), v.data());
  if (role == TensorRole::centred_norm)
    for (float& x : v) x += 1.0f;
}

// Tensors not in `read`, grouped by the part of the model they belong to ("model.visual.*",
// "mtp.*"); a tied model's stored copy of its embeddings is read (checked) already.
std::vector<std::string> unread_groups(const io::SafetensorsArchive& archive,
                                       const std::set<std::string>& read, const ModelConfig& c) {
  std::map<std::string, int> groups;
  for (const auto& [name, t] : archive.tensors()) {
    if (read.count(name) || (c.tie_word_embeddings && name == "lm_head.weight")) continue;
    const size_t end = name.find('.', name.starts_with("model.") ? 6 : 0);
    ++groups[end == std::string::npos ? name : name.substr(0, end) + ".*"];
  }
  std::vector<std::string> out;
  for (const auto& [group, n] : groups)
    out.push_back(group + " (" + std::to_string(n) + (n == 1 ? " tensor)" : " tensors)"));
  return out;
}

}  // namespace

void prefault(const std::vector<ops::Matrix>& matrices) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  for (const ops::Matrix& m : matrices) {
    const uintptr_t begin = reinterpret_cast<uintptr_t>(m.data) & ~(page - 1);
    const uintptr_t end = reinterpret_cast<uintptr_t>(m.data) + m.bytes();
    madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_READ);
  }
}

void read_checkpoint_layout(const io::SafetensorsArchive& archive, ModelConfig& c) {
  for (int i = 0; i < c.num_hidden_layers; ++i)
    if (c.layers[i].ffn == FeedForward::moe) {
      c.packed_experts = archive.find(c.weight_prefix + "layers." + std::to_string(i) +
                                      ".mlp.experts.gate_up_proj") != nullptr;
      break;
    }
  if (!archive.find("mtp.fc.weight")) c.mtp_num_hidden_layers = 0;
  c.mtp_packed_experts = archive.find("mtp.layers.0.mlp.experts.gate_up_proj") != nullptr;
}

Weights load_weights(const std::filesystem::path& dir, ModelConfig& c, bool in_memory) {
  Weights w{io::SafetensorsArchive::open(dir, in_memory), {}, {}, {}, {}, {}};
  read_checkpoint_layout(w.archive, c);
  size_weights(c, w);
  std::set<std::string> read;
  for_each_tensor(c, w, [&](const TensorSpec& spec, TensorSlot slot) {
    bind_view(find(w.archive, spec), spec.role, slot);
    read.insert(spec.name);
  });
  w.unread = unread_groups(w.archive, read, c);
  // Tied: the LM head is the embedding matrix. Qwen3-0.6B also stores lm_head.weight (an exact
  // copy); it is checked but never read, so its pages are never touched.
  if (c.tie_word_embeddings) {
    if (w.archive.find("lm_head.weight"))
      find(w.archive, {"lm_head.weight", {c.vocab_size, c.hidden_size}, TensorRole::lm_head});
    w.lm_head = w.embed_tokens;
  }
  return w;
}

DType quant_dtype(WeightQuant quant) {
  if (quant == WeightQuant::q8) return DType::q8_0;
  if (quant == WeightQuant::q4) return DType::q4_0;
  throw Error(ErrorKind::invalid_argument, "no quantization type given (q8, q4)");
}

bool quantized_role(TensorRole role, bool keep_head) {
  switch (role) {
    case TensorRole::matrix:
    case TensorRole::expert:
    case TensorRole::mtp_matrix: return true;
    case TensorRole::embedding:
    case TensorRole::lm_head: return !keep_head;
    case TensorRole::router:
    case TensorRole::norm:
    case TensorRole::centred_norm:
    case TensorRole::parameter: return false;
  }
  return false;
}

void quantize_weights(const ModelConfig& c, Weights& w, DType to, bool keep_head,
                      ops::Runtime& rt) {
  auto quantize = [&](const std::string& name, ops::Matrix& m) {
    if (is_block_quantized(m.dtype)) {
      if (m.dtype == to) return;
      throw Error(ErrorKind::invalid_argument, name + " is already " + dtype_name(m.dtype) +
                                                   ", cannot quantize it to " + dtype_name(to));
    }
    if (m.cols % kQuantBlock)
      throw Error(ErrorKind::unsupported,
                  "cannot quantize " + name + " [" + std::to_string(m.rows) + ", " +
                      std::to_string(m.cols) + "]: its columns are not a multiple of " +
                      std::to_string(kQuantBlock));
    auto& bytes = w.quantized.emplace_back(size_t(m.rows) * row_bytes(to, m.cols));
    ops::quantize(rt, m, to, bytes.data());
    m = ops::Matrix{to, bytes.data(), m.rows, m.cols};
  };
  for_each_tensor(c, w, [&](const TensorSpec& spec, TensorSlot slot) {
    if (!quantized_role(spec.role, keep_head)) return;
    if (auto* packed = std::get_if<PackedExperts>(&slot)) {
      for (size_t i = 0; i < packed->slices.size(); ++i)
        quantize(packed->names[i], *packed->slices[i]);
      return;
    }
    quantize(spec.name, *std::get<ops::Matrix*>(slot));
  });
  if (c.tie_word_embeddings) w.lm_head = w.embed_tokens;
}

}  // namespace qwen3
