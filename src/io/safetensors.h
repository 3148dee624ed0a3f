// safetensors files: header parsing with full validation, memory-mapped tensors, sharded
// checkpoints.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "io/dtype.h"
#include "io/mapped_file.h"

namespace qwen3::io {

struct TensorView {
  std::string name;
  std::string file;  // file name, for error messages
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  const void* data = nullptr;  // points into the memory map
  size_t nbytes = 0;

  int64_t numel() const;
  std::string describe() const;  // "bf16 [1024, 3072]"
};

// Parses and validates a header (the JSON after the 8-byte length) against a data section of
// `data_size` bytes: dtypes, shapes, byte counts, offsets in range and not overlapping.
// Offsets in the result are relative to the data section; `data` stays null.
// Throws qwen3::Error (format / unsupported) naming `file_name` and the tensor.
std::vector<TensorView> parse_safetensors_header(std::string_view header, uint64_t data_size,
                                                 const std::string& file_name);

// All tensors of a checkpoint: model.safetensors, or the shards named by
// model.safetensors.index.json; memory-mapped, or read into memory (MappedFile).
class SafetensorsArchive {
 public:
  static SafetensorsArchive open(const std::filesystem::path& model_dir,
                                 bool read_into_memory = false);

  const TensorView* find(const std::string& name) const;
  const std::map<std::string, TensorView>& tensors() const { return tensors_; }
  uint64_t total_bytes() const;

 private:
  void add_file(const std::filesystem::path& path, bool read_into_memory);
  std::vector<std::unique_ptr<MappedFile>> files_;
  std::map<std::string, TensorView> tensors_;
};

}  // namespace qwen3::io
