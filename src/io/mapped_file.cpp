// A whole file, read-only: mapped, or read into huge-page memory.
#include "io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "qwen3/error.h"

namespace qwen3::io {

MappedFile::MappedFile(const std::filesystem::path& path, bool read_into_memory, size_t padding)
    : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0)
    throw Error(ErrorKind::io, path.string() + ": cannot open (" + std::strerror(errno) + ")");
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(ErrorKind::io, path.string() + ": not a regular file");
  }
  size_ = static_cast<size_t>(st.st_size);
  if (read_into_memory && size_ > 0) {
    try {
      copy_ = HugePageBuffer(size_ + padding);
    } catch (...) {
      ::close(fd);
      throw;
    }
    for (size_t done = 0; done < size_;) {
      const ssize_t n = ::pread(fd, copy_.data() + done, size_ - done, static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ::close(fd);
        throw Error(ErrorKind::io,
                    path.string() + ": read failed after " + std::to_string(done) + " of " +
                        std::to_string(size_) + " bytes" +
                        (n < 0 ? std::string(" (") + std::strerror(errno) + ")" : ""));
      }
      done += static_cast<size_t>(n);
    }
    data_ = copy_.data();
  } else if (size_ > 0) {
    // With padding, zero pages are reserved first and the file is mapped over their start.
    mapped_ = page_rounded(size_ + padding);
    void* reserved =
        padding ? ::mmap(nullptr, mapped_, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) : nullptr;
    void* p = reserved == MAP_FAILED ? MAP_FAILED
                                     : ::mmap(reserved, size_, PROT_READ,
                                              MAP_PRIVATE | (reserved ? MAP_FIXED : 0), fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      if (reserved && reserved != MAP_FAILED) ::munmap(reserved, mapped_);
      ::close(fd);
      throw Error(ErrorKind::io, path.string() + ": cannot map (" + std::strerror(err) + ")");
    }
    data_ = static_cast<const uint8_t*>(p);
    // Pages read from disk into this map come in 2 MiB folios, mapped as 2 MiB pages (see
    // drop_from_page_cache); a hint only, and no help for pages the cache already holds.
    ::madvise(p, size_, MADV_HUGEPAGE);
  }
  ::close(fd);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)),
      data_(other.data_),
      size_(other.size_),
      mapped_(other.mapped_),
      copy_(std::move(other.copy_)) {
  other.data_ = nullptr;
  other.size_ = 0;
}

MappedFile::~MappedFile() {
  if (data_ && !copy_.data()) ::munmap(const_cast<uint8_t*>(data_), mapped_);
}

}  // namespace qwen3::io
