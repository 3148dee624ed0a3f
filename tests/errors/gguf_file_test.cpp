// Bad GGUF model files: each gets a one-line error naming the file and the problem, from the
// model, the tokenizer and the chat template loaders alike.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "expect_error.h"
#include "io/json_file.h"
#include "qwen3/chat.h"
#include "qwen3/error.h"
#include "qwen3/model.h"
#include "qwen3/quantize.h"
#include "qwen3/tokenizer.h"
#include "test_paths.h"

namespace qwen3 {
namespace {

namespace fs = std::filesystem;

// A scratch copy of a fixture GGUF file that each test breaks in one way.
class BadGguf : public testing::Test {
 protected:
  void SetUp() override {
    path_ = fs::temp_directory_path() /
            ("qwen3-bad-" + std::to_string(::getpid()) + "-" +
             testing::UnitTest::GetInstance()->current_test_info()->name() + ".gguf");
    bytes_ = io::read_file(test::fixtures() / "gguf" / "qwen3-256-q8_0.gguf");
  }
  void TearDown() override { fs::remove(path_); }

  // The first `from` in the file spelled as `to` (same length, so no offset moves).
  void replace(const std::string& from, const std::string& to) {
    ASSERT_EQ(from.size(), to.size());
    const size_t at = bytes_.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    bytes_.replace(at, from.size(), to);
  }

  // `load` of the written file fails with this kind, one line holding every fragment.
  void expect_error(const std::function<void(const fs::path&)>& load, ErrorKind kind,
                    std::initializer_list<std::string> fragments) {
    std::ofstream(path_, std::ios::binary | std::ios::trunc) << bytes_;
    test::expect_error([&] { load(path_); }, kind, fragments);
  }
  static void load_model(const fs::path& p) { Model::load(p, {.threads = 1}); }
  static void load_tokenizer(const fs::path& p) { Tokenizer::load(p); }
  static void load_template(const fs::path& p) { ChatTemplate::load(p); }

  fs::path path_;
  std::string bytes_;
};

TEST_F(BadGguf, TruncatedInTheMetadata) {
  bytes_.resize(bytes_.size() / 50);
  expect_error(load_model, ErrorKind::format,
               {path_.filename().string(), "past the end of the file"});
  expect_error(load_tokenizer, ErrorKind::format,
               {path_.filename().string(), "past the end of the file"});
}

TEST_F(BadGguf, TensorDataPastTheEnd) {
  bytes_.resize(bytes_.size() - 4096);
  expect_error(load_model, ErrorKind::format, {path_.filename().string(), "past the end"});
}

TEST_F(BadGguf, UnknownArchitecture) {
  replace(std::string("\x05\0\0\0\0\0\0\0qwen3", 13), std::string("\x05\0\0\0\0\0\0\0llama", 13));
  expect_error(load_model, ErrorKind::unsupported, {"architecture \"llama\"", "qwen3moe"});
}

TEST_F(BadGguf, MissingTensor) {
  replace("blk.0.attn_q.weight", "blk.0.attn_x.weight");
  expect_error(load_model, ErrorKind::format, {"missing tensor blk.0.attn_q.weight"});
}

TEST_F(BadGguf, TensorOfTheWrongShape) {
  replace("blk.0.attn_q.weight", "blk.0.attn_x.weight");
  replace("blk.0.attn_k.weight", "blk.0.attn_q.weight");  // attn_q [256, 256] is now [256, 128]
  expect_error(load_model, ErrorKind::shape, {"blk.0.attn_q.weight", "expected [256, 256]"});
}

TEST_F(BadGguf, TypeWithoutAKernelOrADequantizer) {
  // attn_q's tensor info: name, n_dims 2, dims 256 and 256, then its type: q8_0 (8) becomes
  // iq2_xxs (16), whose 256-value blocks fit in the q8_0 bytes, so the container stays valid
  const std::string name = "blk.0.attn_q.weight";
  const size_t type_at = bytes_.find(name) + name.size() + 4 + 2 * 8;
  ASSERT_EQ(bytes_[type_at], 8);
  bytes_[type_at] = 16;
  expect_error(load_model, ErrorKind::unsupported,
               {"blk.0.attn_q.weight", "iq2_xxs", "not supported"});
}

TEST_F(BadGguf, MissingConfigKey) {
  replace("qwen3.block_count", "qwen3.block_xxxxx");
  expect_error(load_model, ErrorKind::format, {"missing key qwen3.block_count"});
}

TEST_F(BadGguf, NoTokenizerInTheMetadata) {
  replace("tokenizer.ggml.model", "tokenizer.ggml.xxxxx");
  expect_error(load_tokenizer, ErrorKind::format, {"no tokenizer in the metadata"});
}

TEST_F(BadGguf, NoChatTemplateInTheMetadata) {
  replace("tokenizer.chat_template", "tokenizer.xxxx_template");
  expect_error(load_template, ErrorKind::format, {"no chat template in the metadata"});
}

TEST_F(BadGguf, NotAGgufFileNorAFolder) {
  bytes_.replace(0, 4, "GGUX");
  expect_error(load_model, ErrorKind::io, {"not a model folder", "GGUF file"});
}

// `qwen3 quantize` writes folders from folders; a GGUF file is quantized at load instead.
TEST(GgufQuantize, RefusedWithTheWayThatWorks) {
  const fs::path out =
      fs::temp_directory_path() / ("qwen3-gguf-quantize-" + std::to_string(::getpid()));
  try {
    quantize_model(test::fixtures() / "gguf" / "qwen3-tiny-untied-f32.gguf", out, {});
    FAIL() << "quantized a GGUF file into a folder";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::unsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("--quant q8|q4"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace qwen3
