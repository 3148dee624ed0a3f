// `qwen3 quantize`: a model folder rewritten with q8_0 / q4_0 matrices, in safetensors form.
//
// model.safetensors keeps the safetensors framing (8-byte header length, JSON header padded with
// spaces to 8 bytes, tensor bytes back to back) with two custom dtypes, "Q8_0" and "Q4_0": the
// shape is the logical [rows, cols] matrix and the bytes are its row groups (io/quant_blocks.h).
// __metadata__ holds {"quantization": "q8_0" | "q4_0", "layout": kQuantLayout}.
#include "qwen3/quantize.h"

#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/gguf.h"
#include "io/quant_blocks.h"
#include "io/safetensors.h"
#include "io/safetensors_writer.h"
#include "model/weights.h"
#include "ops/kernels.h"
#include "ops/ops.h"
#include "qwen3/error.h"
#include "qwen3/model.h"

namespace qwen3 {

static_assert(io::kPlacePeriod % ops::kLeadPeriod == 0, "a kept place keeps the lead");

namespace {

struct Planned {
  const io::TensorView* source;
  DType dtype;   // as written
  size_t slice;  // of a packed tensor: which [rows, cols] matrix, at slice * its bytes
};

}  // namespace

void quantize_model(const std::filesystem::path& dir, const std::filesystem::path& out_dir,
                    const QuantizeOptions& options, const QuantizeProgress& progress) {
  const DType to = quant_dtype(options.type);
  if (io::is_gguf_file(dir))
    throw Error(ErrorKind::unsupported,
                dir.string() +
                    ": a GGUF file is not written into a quantized folder; load it with "
                    "--quant q8|q4 instead");
  const ModelConfig config = ModelConfig::load(dir);
  const io::SafetensorsArchive archive = io::SafetensorsArchive::open(dir);
  std::filesystem::create_directories(out_dir);
  if (std::filesystem::equivalent(dir, out_dir))
    throw Error(ErrorKind::invalid_argument,
                out_dir.string() + ": the output folder must differ from the model folder");

  // The model's own list of tensors, with the same choice of matrices as quantize_weights at load
  // time, so both give identical logits. Packed experts are written one matrix per expert, a
  // layout the loader reads as well. Tensors the model does not read (a vision tower, an MTP head)
  // are copied as they are; a tied lm_head.weight copy is left out.
  ModelConfig c = config;
  read_checkpoint_layout(archive, c);
  std::map<std::string, TensorRole> roles;
  std::map<std::string, std::vector<std::string>> slice_names;  // packed experts
  Weights sized{};
  size_weights(c, sized);
  for_each_tensor(c, sized, [&](const TensorSpec& spec, TensorSlot slot) {
    if (!archive.find(spec.name))
      throw Error(ErrorKind::format, "model.safetensors: missing tensor " + spec.name);
    roles[spec.name] = spec.role;
    if (auto* packed = std::get_if<PackedExperts>(&slot)) slice_names[spec.name] = packed->names;
  });
  std::vector<Planned> plan;
  std::vector<io::TensorToWrite> tensors;
  uint64_t total = 0;
  for (const auto& [name, t] : archive.tensors()) {
    if (c.tie_word_embeddings && name == "lm_head.weight") continue;
    const bool quantize = roles.count(name) && quantized_role(roles[name], options.keep_head);
    if (!quantize) {
      plan.push_back({&t, t.dtype, 0});
      tensors.push_back({name, t.dtype, t.shape});
      // A tensor kept as it is keeps its address modulo the kernels' lead period (mapped files
      // start on a page): the lead, and so the order of each sum, is then the one load-time
      // quantization reads the source with. Order alone keeps no place: the quantized matrices
      // before it change size, and the header its length.
      tensors.back().place = int(reinterpret_cast<uintptr_t>(t.data) % io::kPlacePeriod);
      total += t.nbytes;
      continue;
    }
    if (is_block_quantized(t.dtype))
      throw Error(ErrorKind::invalid_argument,
                  t.file + ": tensor " + name + " is already " + t.describe());
    if (t.shape.back() % kQuantBlock)
      throw Error(ErrorKind::unsupported,
                  t.file + ": tensor " + name + ": " + t.describe() +
                      ": cannot quantize, columns are not a multiple of 32");
    const std::vector<std::string> names =
        slice_names.count(name) ? slice_names[name] : std::vector<std::string>{name};
    const int64_t rows =
        t.shape.size() == 3 ? t.shape[0] * t.shape[1] / int64_t(names.size()) : t.shape[0];
    for (size_t i = 0; i < names.size(); ++i) {
      plan.push_back({&t, to, i});
      tensors.push_back({names[i], to, {rows, t.shape.back()}});
      total += t.nbytes / names.size();
    }
  }

  ops::RuntimePtr rt = ops::make_runtime("auto", 0);
  std::vector<uint8_t> buffer;
  uint64_t done = 0;
  io::write_safetensors(
      out_dir / "model.safetensors", tensors,
      {{"format", "pt"}, {"quantization", dtype_name(to)}, {"layout", kQuantLayout}},
      [&](size_t i) -> const void* {
        const io::TensorView& t = *plan[i].source;
        if (plan[i].dtype == t.dtype) {
          if (progress) progress(done += t.nbytes, total);
          return t.data;
        }
        const auto& shape = tensors[i].shape;
        const size_t source_bytes = size_t(shape[0]) * row_bytes(t.dtype, int(shape[1]));
        if (progress) progress(done += source_bytes, total);
        buffer.resize(tensors[i].bytes());
        const auto* slice = static_cast<const uint8_t*>(t.data) + plan[i].slice * source_bytes;
        ops::quantize(*rt, ops::Matrix{t.dtype, slice, int(shape[0]), int(shape[1])}, plan[i].dtype,
                      buffer.data());
        return buffer.data();
      });

  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const auto name = entry.path().filename().string();
    if (!entry.is_regular_file() || name.ends_with(".safetensors") ||
        name == "model.safetensors.index.json")
      continue;
    std::filesystem::copy_file(entry.path(), out_dir / name,
                               std::filesystem::copy_options::overwrite_existing);
  }
}

}  // namespace qwen3
