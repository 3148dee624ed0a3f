// A map of a file uses 2 MiB pages where the page cache holds the file in 2 MiB folios (ext4 on
// Linux >= 6.16, for one): a weight stream then crosses a TLB entry every 2 MiB, and the hardware
// prefetchers do not stop at every 4 KiB page end. Reads from disk fill the cache in large folios;
// writes leave it in the pieces they came in (a download's 16 KiB chunks), until it is dropped.
// Against the same file cached in 4 KiB pieces (bf16 0.6B model, 2 threads): decode ~6% faster, 8
// sequences batched ~14%.
#include <fcntl.h>
#include <unistd.h>

#include "qwen3/model.h"

namespace qwen3 {

void drop_from_page_cache(const std::filesystem::path& weights_file) {
  const int fd = ::open(weights_file.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::fdatasync(fd);  // dirty pages cannot be dropped
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

}  // namespace qwen3
