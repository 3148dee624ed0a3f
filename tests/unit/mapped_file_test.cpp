// MappedFile with padding: the file's bytes, then zeros readable past its end, whether the end
// falls inside a page, on a page boundary, or the padding spills into the next page.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "io/mapped_file.h"

namespace qwen3::io {
namespace {

TEST(MappedFile, PaddingReadsAsZerosPastTheEnd) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE)), padding = 64;
  const auto path = std::filesystem::path(::testing::TempDir()) / "mapped_file_test.bin";
  for (size_t size : {size_t(1), 2 * page - 10, 2 * page, 3 * page + 100}) {
    std::vector<char> bytes(size);
    for (size_t i = 0; i < size; ++i) bytes[i] = char(1 + i % 251);
    std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(size));
    for (bool into_memory : {false, true}) {
      SCOPED_TRACE(std::to_string(size) + (into_memory ? " read" : " mapped"));
      MappedFile f(path, into_memory, padding);
      ASSERT_EQ(f.size(), size);
      EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), reinterpret_cast<const char*>(f.data())));
      for (size_t i = size; i < size + padding; ++i) ASSERT_EQ(f.data()[i], 0) << "byte " << i;
      MappedFile moved(std::move(f));
      EXPECT_EQ(char(moved.data()[size - 1]), bytes.back());
    }
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace qwen3::io
