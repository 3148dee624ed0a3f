// GGUF v3 files (llama.cpp's format): metadata and tensors, fully validated, tensors in place.
//
// A file is, little-endian: "GGUF", uint32 version, uint64 tensor count, uint64 metadata count;
// the metadata (string key, uint32 value type, value); the tensor infos (string name, uint32
// n_dims, uint64 dims[n_dims] in ggml order, uint32 ggml type, uint64 offset); padding to
// `general.alignment` (default 32); then the data section, which the offsets index.
// A string is a uint64 length and that many bytes, no terminator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "io/gguf_types.h"
#include "io/mapped_file.h"

namespace qwen3::io {

// The value types of GGUF metadata, numbered as in the file.
enum class GgufValueType : uint32_t {
  uint8 = 0,
  int8 = 1,
  uint16 = 2,
  int16 = 3,
  uint32 = 4,
  int32 = 5,
  float32 = 6,
  boolean = 7,
  string = 8,
  array = 9,
  uint64 = 10,
  int64 = 11,
  float64 = 12,
};

const char* gguf_value_type_name(GgufValueType type);  // "uint32", "array", ...

// One metadata value, still encoded in the file's bytes (checked when the file was opened).
struct GgufValue {
  GgufValueType type = GgufValueType::uint8;
  GgufValueType element_type = GgufValueType::uint8;  // arrays only
  uint64_t count = 0;                                 // arrays only: elements
  // The encoded value in the file: a scalar's bytes; a string's uint64 length, then its bytes; an
  // array's first element (after its element type and length).
  const uint8_t* data = nullptr;
  size_t bytes = 0;  // from `data` to the end of the value

  std::string type_name() const;  // "uint32", "array of string", "array of array"
};

struct GgufTensor {
  std::string name;
  GgmlType type = GgmlType::f32;
  std::vector<int64_t> dims;   // ggml order: dims[0] is the row length, the fastest-varying index
  const void* data = nullptr;  // in the file's memory, at a multiple of alignment() from the file's
                               // start; null when the tensor has no elements
  size_t bytes = 0;

  int64_t numel() const;
  int64_t rows() const { return dims.empty() || dims[0] == 0 ? 0 : numel() / dims[0]; }
  std::string describe() const;  // "q4_K [1024, 3072]" (ggml order)
};

// Whether `path` is a regular file that starts with GGUF's magic "GGUF" (what a model argument
// that is not a folder is checked for).
bool is_gguf_file(const std::filesystem::path& path);

class GgufFile {
 public:
  // Maps (or reads, see MappedFile) and validates the whole file. Throws qwen3::Error naming the
  // file and the first problem: io when unreadable, format when malformed, unsupported for other
  // GGUF versions, big-endian files and unknown tensor types.
  static GgufFile open(const std::filesystem::path& path, bool read_into_memory = false);
  // The same from bytes in memory, which must outlive the result; `name` stands in for the file.
  static GgufFile parse(const uint8_t* data, size_t size, const std::string& name);

  const std::string& name() const { return name_; }
  // Whether the bytes are the file's own map or copy (open), rather than the caller's (parse).
  bool owns_bytes() const { return file_ != nullptr; }
  uint32_t version() const { return 3; }
  size_t alignment() const { return alignment_; }
  size_t data_offset() const { return data_offset_; }  // where the data section starts in the file

  const std::vector<GgufTensor>& tensors() const { return tensors_; }  // in file order
  const GgufTensor* find_tensor(std::string_view name) const;          // null when absent

  // Metadata in file order; find_key is null when absent.
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return metadata_; }
  const GgufValue* find_key(std::string_view key) const;
  bool has_key(std::string_view key) const { return find_key(key) != nullptr; }

  // Typed getters. Each throws a format Error naming the file and the key when the key is
  // missing or holds another type: "model.gguf: key qwen3.block_count: expected uint32, got
  // string". Integer getters take any integer type whose value fits. Strings and the views of a
  // string array point into the file's memory.
  std::string_view get_string(std::string_view key) const;
  uint32_t get_u32(std::string_view key) const;
  int64_t get_int(std::string_view key) const;
  float get_f32(std::string_view key) const;  // float32, or float64 rounded
  bool get_bool(std::string_view key) const;
  std::vector<std::string_view> get_string_array(std::string_view key) const;
  std::vector<int64_t> get_int_array(std::string_view key) const;
  std::vector<float> get_f32_array(std::string_view key) const;

 private:
  GgufFile() = default;
  [[noreturn]] void key_error(std::string_view key, const std::string& what) const;
  const GgufValue& require(std::string_view key) const;

  std::unique_ptr<MappedFile> file_;  // null when parsed from memory
  std::string name_;
  size_t alignment_ = 32;
  size_t data_offset_ = 0;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::map<std::string, size_t, std::less<>> key_index_;
};

}  // namespace qwen3::io
