// A whole file, read-only: memory-mapped (weights used in place, never copied), or read into
// huge-page memory (slower to open, faster to stream; see huge_page_buffer.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>

#include "io/huge_page_buffer.h"

namespace qwen3::io {

class MappedFile {
 public:
  // Throws io Error naming the file.
  // `padding` zero bytes are readable past the file's last byte (parsers that read in whole
  // vectors); an empty file has no bytes and data() is null.
  explicit MappedFile(const std::filesystem::path& path, bool read_into_memory = false,
                      size_t padding = 0);
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&&) = delete;
  MappedFile(const MappedFile&) = delete;
  ~MappedFile();

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t mapped_ = 0;    // bytes mapped: size_ and the padding, in whole pages
  HugePageBuffer copy_;  // holds the bytes when read into memory; data_ is then a map otherwise
};

}  // namespace qwen3::io
