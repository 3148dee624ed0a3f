// GGUF container: files built byte by byte here (every metadata type, tensors, alignment), then
// one test per malformed input, each checking the one-line Error names the problem.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "expect_error.h"
#include "io/gguf.h"
#include "qwen3/error.h"
#include "test_paths.h"

namespace qwen3::io {
namespace {

using VT = GgufValueType;

// Appends GGUF's little-endian encodings; the tests put them together in any order, valid or not.
struct Writer {
  std::vector<uint8_t> bytes;

  Writer& uint(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) bytes.push_back(uint8_t(v >> (8 * i)));
    return *this;
  }
  Writer& u8(uint8_t v) { return uint(v, 1); }
  Writer& u16(uint16_t v) { return uint(v, 2); }
  Writer& u32(uint32_t v) { return uint(v, 4); }
  Writer& u64(uint64_t v) { return uint(v, 8); }
  Writer& f32(float f) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    return u32(b);
  }
  Writer& f64(double d) {
    uint64_t b;
    std::memcpy(&b, &d, 8);
    return u64(b);
  }
  Writer& str(std::string_view s) {
    u64(s.size());
    bytes.insert(bytes.end(), s.begin(), s.end());
    return *this;
  }
  Writer& header(uint64_t n_tensors, uint64_t n_keys, uint32_t version = 3) {
    bytes.insert(bytes.end(), {'G', 'G', 'U', 'F'});
    return u32(version).u64(n_tensors).u64(n_keys);
  }
  Writer& key(std::string_view k, VT t) { return str(k).u32(uint32_t(t)); }
  Writer& array(std::string_view k, VT element, uint64_t n) {
    return key(k, VT::array).u32(uint32_t(element)).u64(n);
  }
  Writer& tensor(std::string_view name, std::vector<uint64_t> dims, GgmlType type,
                 uint64_t offset) {
    str(name).u32(uint32_t(dims.size()));
    for (uint64_t d : dims) u64(d);
    return u32(uint32_t(type)).u64(offset);
  }
  Writer& align(size_t a) {
    while (bytes.size() % a) u8(0);
    return *this;
  }
  Writer& fill(size_t n, uint8_t v) {
    bytes.insert(bytes.end(), n, v);
    return *this;
  }
};

GgufFile parse(const Writer& w) {
  return GgufFile::parse(w.bytes.data(), w.bytes.size(), "test.gguf");
}

// The bytes must be refused with an Error of `kind` whose one line contains `what`.
void expect_error(const Writer& w, const std::string& what, ErrorKind kind = ErrorKind::format) {
  test::expect_error([&] { parse(w); }, kind, {what, "test.gguf: "});
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// Two tensors: f32 [3, 2] at offset 0 and q8_0 [32] at offset 32, the last bytes of the file.
Writer two_tensors(uint64_t n_keys = 0) {
  Writer w;
  w.header(2, n_keys);
  return w;
}
Writer& two_tensor_infos(Writer& w) {
  w.tensor("a", {3, 2}, GgmlType::f32, 0).tensor("b.weight", {32}, GgmlType::q8_0, 32).align(32);
  for (int i = 0; i < 6; ++i) w.f32(float(i) + 0.5f);
  w.fill(8, 0).u16(0x3c00);  // q8_0: f16 scale 1.0, then 32 quants
  for (int i = 0; i < 32; ++i) w.u8(uint8_t(i - 16));
  return w;
}
Writer valid_file() {
  Writer w = two_tensors(1);
  w.key("general.name", VT::string).str("tiny");
  return two_tensor_infos(w);
}

TEST(Gguf, ParsesEveryMetadataType) {
  Writer w;
  w.header(0, 20);
  w.key("u8", VT::uint8).u8(200).key("i8", VT::int8).u8(0x80).key("u16", VT::uint16).u16(65535);
  w.key("i16", VT::int16)
      .u16(0xfffe)
      .key("u32", VT::uint32)
      .u32(4000000000u)
      .key("i32", VT::int32)
      .u32(uint32_t(-7));
  w.key("f32", VT::float32).f32(1e6f).key("yes", VT::boolean).u8(1).key("no", VT::boolean).u8(0);
  w.key("s", VT::string).str("qwen3").key("u64", VT::uint64).u64(1ull << 40);
  w.key("i64", VT::int64).u64(uint64_t(-(1ll << 40))).key("f64", VT::float64).f64(0.25);
  w.array("a.u8", VT::uint8, 3).u8(1).u8(2).u8(255);
  w.array("a.i32", VT::int32, 2).u32(uint32_t(-1)).u32(7);
  w.array("a.s", VT::string, 3).str("a").str("").str("<|im_end|>");
  w.array("a.f32", VT::float32, 2).f32(0.5f).f32(-2.0f);
  w.array("a.bool", VT::boolean, 2).u8(1).u8(0);
  // An array of arrays: [[1, 2], ["x"]]; the key after it must still parse.
  w.array("a.nested", VT::array, 2).u32(uint32_t(VT::int32)).u64(2).u32(1).u32(2);
  w.u32(uint32_t(VT::string)).u64(1).str("x");
  w.key("after", VT::string).str("ok");
  w.align(32);
  const GgufFile g = parse(w);

  EXPECT_EQ(g.get_int("u8"), 200);
  EXPECT_EQ(g.get_int("i8"), -128);
  EXPECT_EQ(g.get_int("u16"), 65535);
  EXPECT_EQ(g.get_int("i16"), -2);
  EXPECT_EQ(g.get_u32("u32"), 4000000000u);
  EXPECT_EQ(g.get_int("i32"), -7);
  EXPECT_EQ(g.get_u32("u8"), 200u);  // any integer type that fits
  EXPECT_EQ(g.get_f32("f32"), 1e6f);
  EXPECT_TRUE(g.get_bool("yes"));
  EXPECT_FALSE(g.get_bool("no"));
  EXPECT_EQ(g.get_string("s"), "qwen3");
  EXPECT_EQ(g.get_int("u64"), 1ll << 40);
  EXPECT_EQ(g.get_int("i64"), -(1ll << 40));
  EXPECT_EQ(g.get_f32("f64"), 0.25f);
  EXPECT_EQ(g.get_int_array("a.u8"), (std::vector<int64_t>{1, 2, 255}));
  EXPECT_EQ(g.get_int_array("a.i32"), (std::vector<int64_t>{-1, 7}));
  EXPECT_EQ(g.get_string_array("a.s"), (std::vector<std::string_view>{"a", "", "<|im_end|>"}));
  EXPECT_EQ(g.get_f32_array("a.f32"), (std::vector<float>{0.5f, -2.0f}));
  const GgufValue* bools = g.find_key("a.bool");
  ASSERT_NE(bools, nullptr);
  EXPECT_EQ(bools->type_name(), "array of bool");
  EXPECT_EQ(bools->count, 2u);
  const GgufValue* nested = g.find_key("a.nested");
  ASSERT_NE(nested, nullptr);
  EXPECT_EQ(nested->type_name(), "array of array");
  EXPECT_EQ(nested->count, 2u);
  EXPECT_EQ(nested->bytes, 12u + 8 + 12u + 9);
  EXPECT_EQ(g.get_string("after"), "ok");

  ASSERT_EQ(g.metadata().size(), 20u);
  EXPECT_EQ(g.metadata().front().first, "u8");
  EXPECT_EQ(g.metadata().back().first, "after");
  EXPECT_TRUE(g.tensors().empty());
  EXPECT_EQ(g.alignment(), 32u);
}

TEST(Gguf, GettersNameTheKeyWhenMissingOrOfAnotherType) {
  Writer w;
  w.header(0, 5);
  w.key("name", VT::string).str("x").key("neg", VT::int32).u32(uint32_t(-1));
  w.key("big", VT::uint64)
      .u64(~0ull)
      .array("ids", VT::int32, 1)
      .u32(5)
      .key("eps", VT::float32)
      .f32(1e-6f);
  const GgufFile g = parse(w);
  EXPECT_EQ(error_of([&] { g.get_u32("name"); }),
            "test.gguf: key name: expected uint32, got string");
  EXPECT_EQ(error_of([&] { g.get_u32("qwen3.block_count"); }),
            "test.gguf: missing key qwen3.block_count");
  EXPECT_EQ(error_of([&] { g.get_u32("neg"); }),
            "test.gguf: key neg: value -1 does not fit uint32");
  EXPECT_EQ(error_of([&] { g.get_int("big"); }),
            "test.gguf: key big: value 18446744073709551615 does not fit int64");
  EXPECT_EQ(error_of([&] { g.get_string_array("ids"); }),
            "test.gguf: key ids: expected array of string, got array of int32");
  EXPECT_EQ(error_of([&] { g.get_f32("neg"); }), "test.gguf: key neg: expected float32, got int32");
  EXPECT_EQ(error_of([&] { g.get_string("eps"); }),
            "test.gguf: key eps: expected string, got float32");
  EXPECT_EQ(error_of([&] { g.get_bool("ids"); }),
            "test.gguf: key ids: expected bool, got array of int32");
  EXPECT_EQ(error_of([&] { g.get_int_array("name"); }),
            "test.gguf: key name: expected array of integers, got string");
  EXPECT_EQ(error_of([&] { g.get_f32_array("ids"); }),
            "test.gguf: key ids: expected array of float32, got array of int32");
}

TEST(Gguf, FindsTensorsInTheAlignedDataSection) {
  const Writer w = valid_file();
  const GgufFile g = parse(w);
  ASSERT_EQ(g.tensors().size(), 2u);
  EXPECT_EQ(g.data_offset() % 32, 0u);
  const GgufTensor* a = g.find_tensor("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->describe(), "f32 [3, 2]");
  EXPECT_EQ(a->numel(), 6);
  EXPECT_EQ(a->rows(), 2);
  EXPECT_EQ(a->bytes, 24u);
  EXPECT_EQ(static_cast<const uint8_t*>(a->data), w.bytes.data() + g.data_offset());
  float second;
  std::memcpy(&second, static_cast<const uint8_t*>(a->data) + 4, 4);
  EXPECT_EQ(second, 1.5f);
  const GgufTensor* b = g.find_tensor("b.weight");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->type, GgmlType::q8_0);
  EXPECT_EQ(b->describe(), "q8_0 [32]");
  EXPECT_EQ(b->bytes, 34u);
  EXPECT_EQ(static_cast<const uint8_t*>(b->data), w.bytes.data() + g.data_offset() + 32);
  float row[32];
  dequantize_row(b->type, b->data, 32, row);
  EXPECT_EQ(row[0], -16.0f);
  EXPECT_EQ(row[31], 15.0f);
  EXPECT_EQ(g.find_tensor("b"), nullptr);
  EXPECT_EQ(g.get_string("general.name"), "tiny");
}

TEST(Gguf, HonoursGeneralAlignment) {
  Writer w;
  w.header(2, 1).key("general.alignment", VT::uint32).u32(64);
  w.tensor("x", {16}, GgmlType::f32, 0).tensor("y", {4}, GgmlType::f16, 64).align(64).fill(72, 1);
  const GgufFile g = parse(w);
  EXPECT_EQ(g.alignment(), 64u);
  EXPECT_EQ(g.data_offset() % 64, 0u);
  EXPECT_EQ(static_cast<const uint8_t*>(g.find_tensor("y")->data),
            w.bytes.data() + g.data_offset() + 64);
}

TEST(Gguf, OpensAFile) {
  const Writer w = valid_file();
  const auto path = std::filesystem::path(::testing::TempDir()) / "gguf_test.gguf";
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(w.bytes.data()), std::streamsize(w.bytes.size()));
  for (bool into_memory : {false, true}) {
    GgufFile g = GgufFile::open(path, into_memory);
    EXPECT_EQ(g.name(), "gguf_test.gguf");
    const GgufTensor* b = g.find_tensor("b.weight");
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(std::memcmp(b->data, w.bytes.data() + w.bytes.size() - 34, 34), 0);
    const void* data = b->data;
    const GgufFile moved = std::move(g);  // the tensors still point into the same memory
    EXPECT_EQ(moved.find_tensor("b.weight")->data, data);
  }
  std::ofstream(path, std::ios::binary).write("GGUF\x02\0\0\0", 8);
  EXPECT_EQ(error_of([&] { GgufFile::open(path); }),
            "gguf_test.gguf: GGUF version 2 is not supported (only version 3)");
  std::filesystem::remove(path);
  EXPECT_NE(error_of([&] { GgufFile::open(path); }).find("cannot open"), std::string::npos);
}

// tests/fixtures/gguf/ggml_written.gguf was written by ggml's own gguf writer (see the README
// there): values -1 + i / 64 in each tensor, quantized by ggml.
TEST(Gguf, ReadsAFileWrittenByGgml) {
  const GgufFile g = GgufFile::open(test::fixtures() / "gguf" / "ggml_written.gguf");
  EXPECT_EQ(g.get_string("general.architecture"), "qwen3");
  EXPECT_EQ(g.alignment(), 32u);
  EXPECT_EQ(g.get_u32("qwen3.block_count"), 28u);
  EXPECT_EQ(g.get_f32("qwen3.rope.freq_base"), 1e6f);
  EXPECT_EQ(g.get_int("test.u8"), 200);
  EXPECT_EQ(g.get_int("test.i8"), -100);
  EXPECT_EQ(g.get_int("test.u16"), 60000);
  EXPECT_EQ(g.get_int("test.i16"), -30000);
  EXPECT_EQ(g.get_int("test.i32"), -2000000000);
  EXPECT_EQ(g.get_int("test.u64"), 1ll << 40);
  EXPECT_EQ(g.get_int("test.i64"), -(1ll << 40));
  EXPECT_EQ(g.get_f32("test.f64"), 0.125f);
  EXPECT_TRUE(g.get_bool("test.bool"));
  EXPECT_EQ(g.get_string_array("tokenizer.ggml.tokens"),
            (std::vector<std::string_view>{"!", "\"", "\xC4\xA0the", "<|im_start|>", ""}));
  EXPECT_EQ(g.get_int_array("tokenizer.ggml.token_type"), (std::vector<int64_t>{1, 1, 1, 3, 1}));
  EXPECT_EQ(g.get_f32_array("test.f32_array"), (std::vector<float>{0.5f, -1.5f}));

  const char* expected[][2] = {
      {"token_embd.weight", "f32 [4, 2]"},     {"blk.0.attn_norm.weight", "f16 [8]"},
      {"blk.0.attn_q.weight", "q8_0 [32, 2]"}, {"blk.0.ffn_up.weight", "q4_K [256]"},
      {"blk.0.ffn_down.weight", "q6_K [256]"}, {"output_norm.weight", "bf16 [4]"}};
  ASSERT_EQ(g.tensors().size(), std::size(expected));
  for (size_t i = 0; i < std::size(expected); ++i) {
    const GgufTensor& t = g.tensors()[i];
    EXPECT_EQ(t.name, expected[i][0]);
    EXPECT_EQ(t.describe(), expected[i][1]);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data) % 32, 0u) << t.name;
    // Exact for the float types; the others within half a quantization step. q8_0: max|x| / 127
    // (max|x| = 1 here). q6_K: max|x| / 32 per 16 values (max|x| < 3). q4_K: its mins are never
    // positive, so a sub-block of positive values is quantized from 0 in 15 steps (max < 3).
    const double tolerance = t.type == GgmlType::q8_0   ? 0.5 / 127
                             : t.type == GgmlType::q6_k ? 0.5 * 3 / 32
                             : t.type == GgmlType::q4_k ? 0.5 * 3 / 15
                                                        : 0;
    std::vector<float> values(size_t(t.numel()));
    dequantize_row(t.type, t.data, t.numel(), values.data());
    for (size_t j = 0; j < values.size(); ++j)
      ASSERT_NEAR(values[j], -1.0 + double(j) / 64, tolerance) << t.name << " value " << j;
  }
}

TEST(Gguf, EveryTruncationIsRefused) {
  // Where the cut falls decides which check sees it first: a read past the end, a count or
  // length the rest cannot hold, or tensor data past the end.
  const Writer full = valid_file();
  for (size_t n = 0; n < full.bytes.size(); ++n) {
    Writer cut;
    cut.bytes.assign(full.bytes.begin(), full.bytes.begin() + long(n));
    try {
      parse(cut);
      ADD_FAILURE() << "accepted the first " << n << " bytes";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_EQ(e.kind(), ErrorKind::format) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
      EXPECT_TRUE(msg.find("truncated at byte") != std::string::npos ||
                  msg.find("could hold") != std::string::npos ||
                  msg.find("runs past the end of the file") != std::string::npos ||
                  msg.find("past the end of the data section") != std::string::npos)
          << n << " bytes: " << msg;
    }
  }
  expect_error(Writer(), "truncated at byte 0: magic needs 4 bytes, 0 remain");
  Writer header = valid_file();
  header.bytes.resize(20);
  expect_error(header, "truncated at byte 16: metadata count needs 8 bytes, 4 remain");
}

TEST(Gguf, RefusesAnotherMagic) {
  Writer w;
  w.bytes = {'G', 'G', 'M', 'L', 3, 0, 0, 0};
  expect_error(w, "not a GGUF file");
}

TEST(Gguf, RefusesVersions1And2AndUnknownOnes) {
  expect_error(Writer().header(0, 0, 1), "GGUF version 1 is not supported (only version 3)",
               ErrorKind::unsupported);
  expect_error(Writer().header(0, 0, 2), "GGUF version 2 is not supported (only version 3)",
               ErrorKind::unsupported);
  expect_error(Writer().header(0, 0, 4), "unknown GGUF version 4", ErrorKind::unsupported);
  expect_error(Writer().header(0, 0, 0x03000000), "big-endian GGUF files are not supported",
               ErrorKind::unsupported);
}

TEST(Gguf, RefusesAStringLongerThanTheFile) {
  Writer w;
  w.header(0, 1).u64(1ull << 40).fill(20, 'k');
  expect_error(w, "key 0 at byte 24: length 1099511627776 runs past the end of the file");
  Writer v;
  v.header(0, 1).key("s", VT::string).u64(~0ull).fill(4, 's');
  expect_error(
      v, "key s: string at byte 37: length 18446744073709551615 runs past the end of the file");
  Writer a;
  a.header(0, 1).array("a", VT::string, 2).str("x").u64(1000).fill(10, 's');
  expect_error(a, "key a: string at byte 58: length 1000 runs past the end of the file (76 bytes)");
}

TEST(Gguf, RefusesAnArrayLongerThanTheFile) {
  Writer w;
  w.header(0, 1).array("a", VT::uint32, 1000).fill(16, 0);
  expect_error(w, "key a: array of 1000 uint32 runs past the end of the file");
  Writer s;
  s.header(0, 1).array("a", VT::string, 3).str("x").str("y");
  expect_error(s, "key a: array of 3 string runs past the end of the file");
}

TEST(Gguf, RefusesCountsThatOverflow) {
  expect_error(Writer().header(0, ~0ull).fill(64, 0),
               "metadata count 18446744073709551615 is more than the file's");
  expect_error(Writer().header(~0ull, 0).fill(64, 0),
               "tensor count 18446744073709551615 is more than the file's");
  // n * 8 wraps to 8 in 64 bits: the count is compared, never multiplied.
  Writer w;
  w.header(0, 1).array("a", VT::uint64, (1ull << 61) + 1).fill(8, 0);
  expect_error(w, "key a: array of 2305843009213693953 uint64 runs past the end of the file");
}

TEST(Gguf, RefusesUnknownValueTypes) {
  Writer w;
  w.header(0, 1).key("k", VT(13)).u64(0);
  expect_error(w, "key k: value type is 13, not a GGUF value type");
  Writer a;
  a.header(0, 1).array("k", VT(99), 0).u64(0);
  expect_error(a, "key k: array element type is 99, not a GGUF value type");
}

TEST(Gguf, RefusesABoolThatIsNeitherZeroNorOne) {
  Writer w;
  w.header(0, 1).key("flag", VT::boolean).u8(2);
  expect_error(w, "key flag: bool value 2 is neither 0 nor 1");
}

TEST(Gguf, RefusesArraysNestedTooDeep) {
  Writer w;
  w.header(0, 1).array("deep", VT::array, 1);
  for (int i = 0; i < 8; ++i) w.u32(uint32_t(VT::array)).u64(1);
  w.u32(uint32_t(VT::uint8)).u64(0);
  expect_error(w, "key deep[0][0][0][0][0][0][0][0]: arrays nested more than 8 deep");
}

TEST(Gguf, RefusesDuplicateKeys) {
  Writer w;
  w.header(0, 2).key("general.name", VT::string).str("a").key("general.name", VT::string).str("b");
  expect_error(w, "duplicate key general.name");
}

TEST(Gguf, RefusesAnAlignmentThatIsNotAPowerOfTwoOrNotUint32) {
  for (uint32_t a : {0u, 48u}) {
    Writer w;
    w.header(0, 1).key("general.alignment", VT::uint32).u32(a);
    expect_error(w, "general.alignment " + std::to_string(a) + " is not a power of two");
  }
  Writer w;
  w.header(0, 1).key("general.alignment", VT::uint64).u64(32);
  expect_error(w, "key general.alignment: expected uint32, got uint64");
}

TEST(Gguf, RefusesMoreThanFourDimensions) {
  Writer w;
  w.header(1, 0).tensor("t", {1, 1, 1, 1, 1}, GgmlType::f32, 0).align(32).fill(4, 0);
  expect_error(w, "tensor t: 5 dimensions, more than 4");
}

TEST(Gguf, RefusesDimensionsWhoseProductOverflows) {
  Writer w;
  w.header(1, 0).tensor("t", {1ull << 32, 1ull << 31}, GgmlType::f32, 0).align(32);
  expect_error(w, "tensor t: dimensions overflow int64 at dimension 1 (2147483648)");
  Writer n;
  n.header(1, 0).tensor("t", {~0ull}, GgmlType::f32, 0).align(32);
  expect_error(n, "tensor t: dimensions overflow int64 at dimension 0 (18446744073709551615)");
  // The element count fits int64 but its bytes do not fit size_t.
  Writer b;
  b.header(1, 0).tensor("t", {1ull << 62}, GgmlType::i64, 0).align(32);
  expect_error(b, "tensor t: i64 [4611686018427387904] overflows the address space");
}

TEST(Gguf, RefusesUnknownTensorTypes) {
  for (uint32_t type : {4u, 31u, 43u, 99u}) {
    Writer w;
    w.header(1, 0).tensor("t", {32}, GgmlType(type), 0).align(32).fill(64, 0);
    expect_error(w, "tensor t: unknown ggml type " + std::to_string(type), ErrorKind::unsupported);
  }
}

TEST(Gguf, RefusesARowThatIsNotWholeBlocks) {
  Writer w;
  w.header(1, 0).tensor("t", {100, 2}, GgmlType::q4_k, 0).align(32).fill(512, 0);
  expect_error(w,
               "tensor t: q4_K [100, 2]: row length 100 is not a multiple of the block size 256");
}

TEST(Gguf, RefusesDuplicateTensorNames) {
  Writer w;
  w.header(2, 0)
      .tensor("t", {4}, GgmlType::f32, 0)
      .tensor("t", {4}, GgmlType::f32, 32)
      .align(32)
      .fill(64, 0);
  expect_error(w, "duplicate tensor t");
}

TEST(Gguf, RefusesAMisalignedDataOffset) {
  Writer w;
  w.header(1, 0).tensor("t", {4}, GgmlType::f32, 4).align(32).fill(64, 0);
  expect_error(w, "tensor t: data offset 4 is not a multiple of the alignment 32");
}

TEST(Gguf, RefusesDataPastTheEnd) {
  Writer w;
  w.header(1, 0).tensor("t", {8}, GgmlType::f32, 32).align(32).fill(48, 0);
  expect_error(w,
               "tensor t: f32 [8] needs 32 bytes at data offset 32, past the end of the data "
               "section (48 bytes)");
  Writer far;
  far.header(1, 0).tensor("t", {8}, GgmlType::f32, 1ull << 63).align(32).fill(64, 0);
  expect_error(far,
               "needs 32 bytes at data offset 9223372036854775808, past the end of the data "
               "section (64 bytes)");
}

TEST(Gguf, RefusesOverlappingTensors) {
  Writer w;
  w.header(2, 0)
      .tensor("a", {16}, GgmlType::f32, 0)
      .tensor("b", {8}, GgmlType::f32, 32)
      .align(32)
      .fill(64, 0);
  expect_error(w, "tensors a and b overlap at data offset 32");
}

TEST(Gguf, AcceptsEmptyTensorsAndAFileWithoutData) {
  Writer w;
  w.header(1, 0).tensor("empty", {0, 4}, GgmlType::q4_0, 0);
  const GgufFile g = parse(w);
  EXPECT_EQ(g.find_tensor("empty")->bytes, 0u);
  EXPECT_EQ(g.find_tensor("empty")->rows(), 0);
}

}  // namespace
}  // namespace qwen3::io
