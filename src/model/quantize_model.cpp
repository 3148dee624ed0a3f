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

#include "io/quant_blocks.h"
#include "io/safetensors.h"
#include "io/safetensors_writer.h"
#include "model/weights.h"
#include "ops/ops.h"
#include "qwen3/error.h"
#include "qwen3/model.h"

namespace qwen3 {

namespace {

struct Planned {
  const io::TensorView* source;
  DType dtype;  // as written
};

}  // namespace

void quantize_model(const std::filesystem::path& dir, const std::filesystem::path& out_dir,
                    const QuantizeOptions& options, const QuantizeProgress& progress) {
  const DType to = quant_dtype(options.type);
  const ModelConfig config = ModelConfig::load(dir);
  const io::SafetensorsArchive archive = io::SafetensorsArchive::open(dir);
  std::filesystem::create_directories(out_dir);
  if (std::filesystem::equivalent(dir, out_dir))
    throw Error(ErrorKind::invalid_argument,
                out_dir.string() + ": the output folder must differ from the model folder");

  // The model's own list of tensors, with the same choice of matrices as quantize_weights at load
  // time, so both give identical logits; written in the source's order, so float tensors kept as
  // they are keep their alignment too (the kernels' lead: ops/kernels.h). A tied lm_head.weight
  // copy, never read, is left out.
  std::map<std::string, TensorRole> roles;
  for (const TensorSpec& spec : tensor_specs(config)) {
    if (!archive.find(spec.name))
      throw Error(ErrorKind::format, "model.safetensors: missing tensor " + spec.name);
    roles[spec.name] = spec.role;
  }
  std::vector<Planned> plan;
  std::vector<io::TensorToWrite> tensors;
  uint64_t total = 0;
  for (const auto& [name, t] : archive.tensors()) {
    if (!roles.count(name)) continue;
    DType dtype = t.dtype;
    if (quantized_role(roles[name], options.keep_head)) {
      if (is_block_quantized(t.dtype))
        throw Error(ErrorKind::invalid_argument,
                    t.file + ": tensor " + name + " is already " + t.describe());
      if (t.shape.size() != 2 || t.shape[1] % kQuantBlock)
        throw Error(ErrorKind::unsupported,
                    t.file + ": tensor " + name + ": " + t.describe() +
                        ": cannot quantize, columns are not a multiple of 32");
      dtype = to;
    }
    plan.push_back({&t, dtype});
    tensors.push_back({name, dtype, t.shape});
    total += t.nbytes;
  }

  ops::RuntimePtr rt = ops::make_runtime("auto", 0);
  std::vector<uint8_t> buffer;
  uint64_t done = 0;
  io::write_safetensors(
      out_dir / "model.safetensors", tensors,
      {{"format", "pt"}, {"quantization", dtype_name(to)}, {"layout", kQuantLayout}},
      [&](size_t i) -> const void* {
        const io::TensorView& t = *plan[i].source;
        if (progress) progress(done += t.nbytes, total);
        if (plan[i].dtype == t.dtype) return t.data;
        buffer.resize(tensors[i].bytes());
        ops::quantize(*rt, ops::Matrix{t.dtype, t.data, int(t.shape[0]), int(t.shape[1])},
                      plan[i].dtype, buffer.data());
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
