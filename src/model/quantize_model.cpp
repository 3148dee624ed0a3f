// `qwen3 quantize`: a model folder rewritten with q8_0 / q4_0 matrices, in safetensors form.
//
// model.safetensors keeps the safetensors framing (8-byte header length, JSON header padded with
// spaces to 8 bytes, tensor bytes back to back) with two custom dtypes, "Q8_0" and "Q4_0": the
// shape is the logical [rows, cols] matrix and the bytes are its row groups (io/quant_blocks.h).
// __metadata__ holds {"quantization": "q8_0" | "q4_0", "layout": kQuantLayout}.
#include "qwen3/quantize.h"

#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/quant_blocks.h"
#include "io/safetensors.h"
#include "model/weights.h"
#include "ops/ops.h"
#include "qwen3/error.h"
#include "qwen3/model.h"

namespace qwen3 {

namespace {

const char* safetensors_dtype(DType t) {
  switch (t) {
    case DType::f32: return "F32";
    case DType::f16: return "F16";
    case DType::bf16: return "BF16";
    case DType::q8_0: return "Q8_0";
    case DType::q4_0: return "Q4_0";
  }
  return "?";
}

struct Planned {
  const io::TensorView* source;
  DType dtype;  // as written
  uint64_t begin, end;
};

}  // namespace

void quantize_model(const std::filesystem::path& dir, const std::filesystem::path& out_dir,
                    const QuantizeOptions& options, const QuantizeProgress& progress) {
  const DType to = parse_quant_type(options.type);
  const ModelConfig config = ModelConfig::load(dir);
  const io::SafetensorsArchive archive = io::SafetensorsArchive::open(dir);
  std::filesystem::create_directories(out_dir);
  if (std::filesystem::equivalent(dir, out_dir))
    throw Error(ErrorKind::invalid_argument, out_dir.string() + ": the output folder must differ from the model folder");

  // The same choice of matrices as quantize_weights at load time, so both give identical logits.
  std::vector<Planned> plan;
  uint64_t offset = 0, total = 0;
  for (const auto& [name, t] : archive.tensors()) {
    if (name == "lm_head.weight" && config.tie_word_embeddings) continue;  // the loader uses embed_tokens
    const bool head = name == "lm_head.weight" || name == "model.embed_tokens.weight";
    DType dtype = t.dtype;
    if (t.shape.size() == 2 && !(options.keep_head && head)) {
      if (is_block_quantized(t.dtype))
        throw Error(ErrorKind::invalid_argument, t.file + ": tensor " + name + " is already " + t.describe());
      if (t.shape[1] % kQuantBlock)
        throw Error(ErrorKind::unsupported, t.file + ": tensor " + name + ": " + t.describe() +
                                                ": cannot quantize, columns are not a multiple of 32");
      dtype = to;
    }
    const uint64_t bytes = t.shape.size() == 2 ? uint64_t(t.shape[0]) * row_bytes(dtype, t.shape[1]) : t.nbytes;
    plan.push_back({&t, dtype, offset, offset + bytes});
    offset += bytes;
    total += t.nbytes;
  }

  nlohmann::json header = {{"__metadata__", {{"format", "pt"}, {"quantization", dtype_name(to)}, {"layout", kQuantLayout}}}};
  for (const auto& p : plan)
    header[p.source->name] = {{"dtype", safetensors_dtype(p.dtype)}, {"shape", p.source->shape}, {"data_offsets", {p.begin, p.end}}};
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');

  const auto out_path = out_dir / "model.safetensors", tmp_path = out_dir / "model.safetensors.partial";
  {
    std::ofstream out(tmp_path, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(ErrorKind::io, tmp_path.string() + ": cannot create");
    uint8_t len[8];
    for (int i = 0; i < 8; ++i) len[i] = uint8_t(uint64_t(text.size()) >> (8 * i));
    out.write(reinterpret_cast<const char*>(len), 8);
    out.write(text.data(), std::streamsize(text.size()));
    ops::RuntimePtr rt = ops::make_runtime("auto", 0);
    std::vector<uint8_t> buffer;
    uint64_t done = 0;
    for (const auto& p : plan) {
      const io::TensorView& t = *p.source;
      const char* bytes = static_cast<const char*>(t.data);
      if (p.dtype != t.dtype) {
        buffer.resize(p.end - p.begin);
        ops::quantize(*rt, ops::Matrix{t.dtype, t.data, int(t.shape[0]), int(t.shape[1])}, p.dtype, buffer.data());
        bytes = reinterpret_cast<const char*>(buffer.data());
      }
      out.write(bytes, std::streamsize(p.end - p.begin));
      if (progress) progress(done += t.nbytes, total);
    }
    if (!out.flush()) throw Error(ErrorKind::io, tmp_path.string() + ": write failed (disk full?)");
  }
  std::filesystem::rename(tmp_path, out_path);
  drop_from_page_cache(out_path);

  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const auto name = entry.path().filename().string();
    if (!entry.is_regular_file() || name.ends_with(".safetensors") || name == "model.safetensors.index.json") continue;
    std::filesystem::copy_file(entry.path(), out_dir / name, std::filesystem::copy_options::overwrite_existing);
  }
}

}  // namespace qwen3
