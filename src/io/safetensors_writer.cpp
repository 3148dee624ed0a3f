// One safetensors file, written in a single pass.
#include "io/safetensors_writer.h"

#include <fstream>

#include "qwen3/error.h"
#include "qwen3/model.h"

namespace qwen3::io {

uint64_t TensorToWrite::bytes() const {
  uint64_t rows = 1;
  for (size_t d = 0; d + 1 < shape.size(); ++d) rows *= shape[d];
  return rows * row_bytes(dtype, shape.empty() ? 1 : shape.back());
}

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

void write_safetensors(const std::filesystem::path& path, const std::vector<TensorToWrite>& tensors,
                       const nlohmann::json& metadata,
                       const std::function<const void*(size_t i)>& data) {
  nlohmann::json header = {{"__metadata__", metadata}};
  uint64_t offset = 0;
  for (const TensorToWrite& t : tensors) {
    header[t.name] = {{"dtype", safetensors_dtype(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.bytes()}}};
    offset += t.bytes();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keeps the data 8-byte aligned
  const auto partial = std::filesystem::path(path.string() + ".partial");
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(ErrorKind::io, partial.string() + ": cannot create");
    uint8_t len[8];
    for (int i = 0; i < 8; ++i) len[i] = uint8_t(uint64_t(text.size()) >> (8 * i));
    out.write(reinterpret_cast<const char*>(len), 8);
    out.write(text.data(), std::streamsize(text.size()));
    for (size_t i = 0; i < tensors.size(); ++i)
      out.write(static_cast<const char*>(data(i)), std::streamsize(tensors[i].bytes()));
    if (!out.flush()) throw Error(ErrorKind::io, partial.string() + ": write failed (disk full?)");
  }
  std::filesystem::rename(partial, path);
  drop_from_page_cache(path);
}

}  // namespace qwen3::io
