// drop_from_page_cache: the file's pages leave the cache (where the cache is not the file's only
// copy, as on tmpfs) and its bytes stay what they were.
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "qwen3/model.h"

namespace qwen3 {
namespace {

// Pages of the file that the page cache holds.
size_t cached_pages(const std::filesystem::path& path, size_t size) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fileno(f), 0);
  std::fclose(f);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE)), pages = (size + page - 1) / page;
  std::vector<unsigned char> in(pages);
  EXPECT_EQ(::mincore(p, size, in.data()), 0);
  ::munmap(p, size);
  size_t n = 0;
  for (unsigned char c : in) n += c & 1;
  return n;
}

TEST(PageCache, DropsAWrittenFileAndKeepsItsBytes) {
  const auto path = std::filesystem::path(::testing::TempDir()) / "page_cache_test.bin";
  std::vector<char> bytes(size_t(4) << 20);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = char(i * 7 + i / 4096);
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
  ASSERT_GT(cached_pages(path, bytes.size()), 0u) << "a file just written is in the cache";

  drop_from_page_cache(path);
  struct statfs fs {};
  ASSERT_EQ(::statfs(path.c_str(), &fs), 0);
  if (fs.f_type == TMPFS_MAGIC)
    EXPECT_GT(cached_pages(path, bytes.size()), 0u) << "tmpfs: the cache is the only copy";
  else EXPECT_EQ(cached_pages(path, bytes.size()), 0u);

  std::vector<char> back(bytes.size());
  std::ifstream(path, std::ios::binary).read(back.data(), std::streamsize(back.size()));
  EXPECT_EQ(back, bytes);
  std::filesystem::remove(path);
  drop_from_page_cache(path);  // a missing file: nothing to do, no error
}

}  // namespace
}  // namespace qwen3
