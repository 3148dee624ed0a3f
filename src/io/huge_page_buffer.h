// Anonymous memory backed by 2 MiB huge pages where the kernel allows (MADV_HUGEPAGE): a weight
// stream then crosses a TLB entry every 2 MiB instead of every 4 KiB, which on the machines
// measured reads ~18% faster than 4 KiB pages. (A map of a file gets 2 MiB pages only where the
// page cache holds it in 2 MiB folios: see drop_from_page_cache in qwen3/model.h.)
#pragma once

#include <cstddef>
#include <cstdint>

namespace qwen3::io {

class HugePageBuffer {
 public:
  HugePageBuffer() = default;
  explicit HugePageBuffer(size_t bytes);  // zero-filled; throws io Error when out of memory
  HugePageBuffer(HugePageBuffer&& other) noexcept;
  HugePageBuffer& operator=(HugePageBuffer&& other) noexcept;
  HugePageBuffer(const HugePageBuffer&) = delete;
  HugePageBuffer& operator=(const HugePageBuffer&) = delete;
  ~HugePageBuffer();

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void* mapping_ = nullptr;  // the whole mapping, over-allocated to align data_ to 2 MiB
  size_t mapped_ = 0;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace qwen3::io
