// Anonymous memory aligned to 2 MiB and advised to use huge pages.
#include "io/huge_page_buffer.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "qwen3/error.h"

namespace qwen3::io {

namespace {
constexpr size_t kHugePage = size_t(2) << 20;
}

HugePageBuffer::HugePageBuffer(size_t bytes) : size_(bytes) {
  if (bytes == 0) return;
  mapped_ = bytes + kHugePage;
  mapping_ = ::mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping_ == MAP_FAILED) {
    mapping_ = nullptr;
    throw Error(ErrorKind::io, "cannot allocate " + std::to_string(bytes) + " bytes (" + std::strerror(errno) + ")");
  }
  data_ = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(mapping_) + kHugePage - 1) & ~(kHugePage - 1));
  ::madvise(data_, bytes, MADV_HUGEPAGE);  // advice only: 4 KiB pages where the kernel declines
}

HugePageBuffer::HugePageBuffer(HugePageBuffer&& other) noexcept { *this = std::move(other); }

HugePageBuffer& HugePageBuffer::operator=(HugePageBuffer&& other) noexcept {
  std::swap(mapping_, other.mapping_);
  std::swap(mapped_, other.mapped_);
  std::swap(data_, other.data_);
  std::swap(size_, other.size_);
  return *this;
}

HugePageBuffer::~HugePageBuffer() {
  if (mapping_) ::munmap(mapping_, mapped_);
}

}  // namespace qwen3::io
