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
    case DType::q4_k:
    case DType::q5_k:
    case DType::q6_k:
    case DType::q4_1:
    case DType::q5_0:
    case DType::q5_1:
    case DType::iq4_nl: break;  // only ever loaded from a GGUF file, never written
  }
  return "?";
}

void write_safetensors(const std::filesystem::path& path, const std::vector<TensorToWrite>& tensors,
                       const nlohmann::json& metadata,
                       const std::function<const void*(size_t i)>& data) {
  nlohmann::json header = {{"__metadata__", metadata}};
  std::vector<uint64_t> begin(tensors.size());
  uint64_t offset = 0;
  bool placed = false;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorToWrite& t = tensors[i];
    if (t.place >= 0) {
      const uint64_t place = uint64_t(t.place) % kPlacePeriod;
      offset += (place + kPlacePeriod - offset % kPlacePeriod) % kPlacePeriod;
      placed = true;
    }
    begin[i] = offset;
    header[t.name] = {{"dtype", safetensors_dtype(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.bytes()}}};
    offset += t.bytes();
  }
  std::string text = header.dump();
  // Spaces pad the header so the data starts 8-byte aligned, or where tensors are placed on a
  // multiple of the period, so that a place in the data is the same place in the file.
  const uint64_t align = placed ? kPlacePeriod : 8;
  text.append((align - (8 + text.size()) % align) % align, ' ');
  const auto partial = std::filesystem::path(path.string() + ".partial");
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(ErrorKind::io, partial.string() + ": cannot create");
    uint8_t len[8];
    for (int i = 0; i < 8; ++i) len[i] = uint8_t(uint64_t(text.size()) >> (8 * i));
    out.write(reinterpret_cast<const char*>(len), 8);
    out.write(text.data(), std::streamsize(text.size()));
    const std::vector<char> zeros(kPlacePeriod);
    uint64_t at = 0;  // in the data
    for (size_t i = 0; i < tensors.size(); ++i) {
      out.write(zeros.data(), std::streamsize(begin[i] - at));
      out.write(static_cast<const char*>(data(i)), std::streamsize(tensors[i].bytes()));
      at = begin[i] + tensors[i].bytes();
    }
    if (!out.flush()) throw Error(ErrorKind::io, partial.string() + ": write failed (disk full?)");
  }
  std::filesystem::rename(partial, path);
  drop_from_page_cache(path);
}

}  // namespace qwen3::io
