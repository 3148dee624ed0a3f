// Anonymous memory aligned to 2 MiB and advised to use huge pages.
#include "io/huge_page_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "qwen3/error.h"

namespace qwen3::io {

size_t page_rounded(size_t bytes) {
  const size_t page = size_t(::sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

void* map_huge_pages(size_t bytes) {
  if (bytes < kHugePage) {  // one system call: a KV cache maps 2 x layers of these per sequence
    void* m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return m == MAP_FAILED ? nullptr : m;
  }
  // Mapped 2 MiB over, then trimmed to the aligned block, so that unmapping takes exactly it.
  const size_t mapped = bytes + kHugePage;
  void* m = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(m),
                  begin = (start + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t end = begin + page_rounded(bytes);
  if (begin > start) ::munmap(m, begin - start);
  if (start + mapped > end) ::munmap(reinterpret_cast<void*>(end), start + mapped - end);
  ::madvise(reinterpret_cast<void*>(begin), bytes,
            MADV_HUGEPAGE);  // advice: 4 KiB pages where declined
  return reinterpret_cast<void*>(begin);
}

void unmap_huge_pages(void* p, size_t bytes) { ::munmap(p, page_rounded(bytes)); }

HugePageBuffer::HugePageBuffer(size_t bytes) : size_(bytes) {
  if (bytes == 0) return;
  data_ = static_cast<uint8_t*>(map_huge_pages(bytes));
  if (!data_)
    throw Error(ErrorKind::io, "cannot allocate " + std::to_string(bytes) + " bytes (" +
                                   std::strerror(errno) + ")");
}

HugePageBuffer::HugePageBuffer(HugePageBuffer&& other) noexcept { *this = std::move(other); }

HugePageBuffer& HugePageBuffer::operator=(HugePageBuffer&& other) noexcept {
  std::swap(data_, other.data_);
  std::swap(size_, other.size_);
  return *this;
}

HugePageBuffer::~HugePageBuffer() {
  if (data_) unmap_huge_pages(data_, size_);
}

}  // namespace qwen3::io
