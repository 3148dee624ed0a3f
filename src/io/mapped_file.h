// A read-only memory map of a whole file: weights are used in place, never copied.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>

namespace qwen3::io {

class MappedFile {
 public:
  explicit MappedFile(const std::filesystem::path& path);  // throws io Error naming the file
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
};

}  // namespace qwen3::io
