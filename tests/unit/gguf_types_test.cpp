// The ggml type table and the dequantizers against ggml itself: tests/fixtures/gguf/ holds ggml's
// own type table and, per type, rows quantized by ggml with ggml's own dequantized floats (see the
// README there). Every float must match bit for bit: each value is a product that is exact or
// rounded once, so there is no tolerance to allow.
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "io/gguf_types.h"
#include "qwen3/error.h"
#include "test_paths.h"

namespace qwen3::io {
namespace {

std::vector<uint8_t> read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << "cannot read " << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

uint32_t u32_at(const std::vector<uint8_t>& b, size_t pos) {
  return uint32_t(b[pos]) | uint32_t(b[pos + 1]) << 8 | uint32_t(b[pos + 2]) << 16 |
         uint32_t(b[pos + 3]) << 24;
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

GgmlType type_named(const std::string& name) {
  for (uint32_t id = 0; id < 64; ++id)
    if (const GgmlTypeInfo* info = ggml_type_info(id); info && name == info->name)
      return GgmlType(id);
  ADD_FAILURE() << "no ggml type named " << name;
  return GgmlType::f32;
}

TEST(GgufTypes, TableMatchesGgml) {
  std::ifstream in(test::fixtures() / "gguf" / "types.txt");
  ASSERT_TRUE(in);
  std::map<uint32_t, bool> listed;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    uint32_t id;
    std::string name;
    int block_size, block_bytes;
    ASSERT_TRUE(fields >> id >> name >> block_size >> block_bytes) << line;
    const GgmlTypeInfo* info = ggml_type_info(id);
    ASSERT_NE(info, nullptr) << "ggml defines type " << id << " (" << name << ")";
    EXPECT_EQ(info->name, name) << "type " << id;
    EXPECT_EQ(info->block_size, block_size) << name;
    EXPECT_EQ(info->block_bytes, block_bytes) << name;
    listed[id] = true;
  }
  EXPECT_EQ(listed.size(), 35u);
  for (uint32_t id = 0; id < 1000; ++id)
    if (!listed.count(id)) {
      EXPECT_EQ(ggml_type_info(id), nullptr) << "ggml has no type " << id;
    }
  EXPECT_EQ(ggml_type_info(0xffffffffu), nullptr);
}

// Each record in dequant/<type>.bin: uint32 n, uint32 nbytes, the blocks, ggml's n floats.
TEST(GgufTypes, DequantizeMatchesGgmlBitForBit) {
  const char* names[] = {"f16",  "bf16", "q4_0", "q4_1", "q5_0", "q5_1",   "q8_0",
                         "q2_K", "q3_K", "q4_K", "q5_K", "q6_K", "iq4_nl", "iq4_xs"};
  int rows = 0;
  for (const char* name : names) {
    const GgmlType type = type_named(name);
    ASSERT_TRUE(ggml_type_info(type).dequantizable) << name;
    const auto file =
        read_bytes(test::fixtures() / "gguf" / "dequant" / (std::string(name) + ".bin"));
    ASSERT_FALSE(file.empty()) << name;
    std::vector<int> sizes;
    for (size_t pos = 0; pos < file.size();) {
      ASSERT_LE(pos + 8, file.size()) << name;
      const uint32_t n = u32_at(file, pos), nbytes = u32_at(file, pos + 4);
      ASSERT_EQ(nbytes, ggml_row_bytes(type, n)) << name << " n=" << n;
      ASSERT_LE(pos + 8 + nbytes + 4 * size_t(n), file.size()) << name;
      const uint8_t* blocks = file.data() + pos + 8;
      std::vector<float> expected(n);
      std::memcpy(expected.data(), blocks + nbytes, 4 * size_t(n));
      pos += 8 + nbytes + 4 * size_t(n);
      sizes.push_back(int(n));

      // Blocks at an odd address, as a GGUF tensor at an odd offset would be; a guard value after
      // the output catches a write past its end.
      std::vector<uint8_t> odd(nbytes + 1);
      std::memcpy(odd.data() + 1, blocks, nbytes);
      std::vector<float> got(n + 1, -7.0f);
      dequantize_row(type, odd.data() + 1, n, got.data());
      EXPECT_EQ(got[n], -7.0f) << name << " n=" << n << ": wrote past the end";
      for (uint32_t i = 0; i < n; ++i)
        ASSERT_EQ(bits(got[i]), bits(expected[i]))
            << name << " n=" << n << " index " << i << ": expected " << expected[i] << ", got "
            << got[i];
      ++rows;
    }
    // Every fixture has the real sizes; the 32-value types also a single block and three.
    std::vector<int> want = {256, 512, 768, 2048};
    const int block = ggml_type_info(type).block_size;
    if (block <= 32) want.insert(want.begin(), {32, 96});
    if (block == 1) want.insert(want.begin(), 7);
    EXPECT_EQ(sizes, want) << name;
  }
  std::printf("checked %d rows of %zu types against ggml\n", rows, std::size(names));
}

TEST(GgufTypes, F32IsCopied) {
  const float in[3] = {1.5f, -0.0f, 3e38f};
  float out[3];
  dequantize_row(GgmlType::f32, in, 3, out);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(bits(out[i]), bits(in[i]));
}

TEST(GgufTypes, RefusesTypesWithoutADequantizer) {
  uint8_t block[292] = {};
  float out[256];
  try {
    dequantize_row(GgmlType::iq2_xxs, block, 256, out);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::unsupported);
    EXPECT_NE(std::string(e.what()).find("iq2_xxs"), std::string::npos) << e.what();
  }
  try {
    dequantize_row(GgmlType::q4_k, block, 100, out);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("not whole blocks of 256"), std::string::npos) << e.what();
  }
}

TEST(GgufTypes, RowBytes) {
  EXPECT_EQ(ggml_row_bytes(GgmlType::q4_k, 1024), 4u * 144);
  EXPECT_EQ(ggml_row_bytes(GgmlType::q8_0, 96), 3u * 34);
  EXPECT_EQ(ggml_row_bytes(GgmlType::bf16, 7), 14u);
}

}  // namespace
}  // namespace qwen3::io
