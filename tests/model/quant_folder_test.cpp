// Quantized folders: written by quantize_model, mapped by Model::load with the same logits as
// load-time quantization, and refused with a clear error when corrupted or mismatched.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "io/json_file.h"
#include "io/safetensors.h"
#include "ops/kernels.h"
#include "qwen3/error.h"
#include "qwen3/model.h"
#include "qwen3/quantize.h"
#include "safetensors_edit.h"
#include "test_paths.h"

namespace qwen3 {
namespace {

namespace fs = std::filesystem;

fs::path scratch(const std::string& tag) {
  auto dir = fs::temp_directory_path() / ("qwen3-quant-" + std::to_string(::getpid()) + "-" + tag);
  fs::remove_all(dir);
  return dir;
}

std::vector<float> logits(Model& m) {
  const std::vector<TokenId> ids = {785, 1722, 315, 1024, 374, 11, 42, 7};
  Sequence s(m, 16);
  BatchItem item{&s, ids, true};
  return m.step({&item, 1})[0];
}

struct Case {
  fs::path model;
  std::string quant;
  bool keep_head;
};

TEST(QuantFolder, LoadsWithTheLogitsOfLoadTimeQuantization) {
  for (const Case& c :
       {Case{test::tiny_model(), "q8", false}, Case{test::tiny_model(), "q4", true},
        Case{test::untied_model(), "q8", true}, Case{test::untied_model(), "q4", false},
        Case{test::fixtures() / "models" / "qwen35-tiny", "q4", true}}) {
    SCOPED_TRACE(c.model.filename().string() + " " + c.quant + (c.keep_head ? " keep-head" : ""));
    const fs::path out = scratch(c.quant);
    quantize_model(c.model, out, {parse_weight_quant(c.quant), c.keep_head});
    EXPECT_TRUE(fs::exists(out / "config.json"));
    EXPECT_TRUE(fs::exists(out / "tokenizer.json"));
    // Every kernel set this CPU has: each has its own lead for the kept float matrices.
    for (const char* isa : {"scalar", "avx2", "avx512", "amx"}) {
      if (!ops::cpu_supports(isa)) continue;
      SCOPED_TRACE(isa);
      auto mapped = Model::load(out, {.threads = 2, .isa = parse_isa(isa)});
      auto converted = Model::load(c.model, {.threads = 2,
                                             .isa = parse_isa(isa),
                                             .quant = parse_weight_quant(c.quant),
                                             .keep_head = c.keep_head});
      EXPECT_EQ(mapped->weight_bytes(), converted->weight_bytes());
      EXPECT_EQ(logits(*mapped), logits(*converted));  // bit-identical
    }
    EXPECT_LT(Model::load(out, {.threads = 2})->weight_bytes(),
              Model::load(c.model, {.threads = 2})->weight_bytes());
    fs::remove_all(out);
  }
}

// The property behind the bit-identical logits above, on every kernel set, whatever this CPU's:
// a float tensor copied as it is sits at its source address modulo the kernels' lead period, so
// it gets the same lead. (qwen3-tiny's embeddings start 56 bytes past a line in the source.)
TEST(QuantFolder, KeptTensorsKeepTheirPlaceModuloTheLeadPeriod) {
  for (const Case& c :
       {Case{test::tiny_model(), "q4", true}, Case{test::untied_model(), "q8", true},
        Case{test::untied_model(), "q4", false},
        Case{test::fixtures() / "models" / "qwen35-tiny", "q8", true}}) {
    SCOPED_TRACE(c.model.filename().string() + " " + c.quant + (c.keep_head ? " keep-head" : ""));
    const fs::path out = scratch(c.quant);
    quantize_model(c.model, out, {parse_weight_quant(c.quant), c.keep_head});
    const auto source = io::SafetensorsArchive::open(c.model);
    const auto written = io::SafetensorsArchive::open(out);
    int kept = 0;
    for (const auto& [name, t] : written.tensors()) {
      const io::TensorView* from = source.find(name);  // none for a packed expert's slice
      if (!from || t.dtype != from->dtype) continue;
      ++kept;
      EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data) % ops::kLeadPeriod,
                reinterpret_cast<uintptr_t>(from->data) % ops::kLeadPeriod)
          << name;
    }
    EXPECT_GT(kept, 0);
    fs::remove_all(out);
  }
}

TEST(QuantFolder, RefusesUnknownTypeAndRequantization) {
  EXPECT_THROW(parse_weight_quant("q5"), Error);
  const fs::path out = scratch("requant");
  quantize_model(test::untied_model(), out, {WeightQuant::q8, false});
  try {
    Model::load(out, {.quant = WeightQuant::q4});
    FAIL() << "requantized q8_0 to q4_0";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("already q8_0"), std::string::npos) << e.what();
  }
  EXPECT_THROW(quantize_model(out, scratch("requant2"), {WeightQuant::q4, false}), Error);
  fs::remove_all(out);
}

// A q8_0 copy of the untied fixture that each test breaks in one way.
class BadQuantFolder : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = scratch(testing::UnitTest::GetInstance()->current_test_info()->name());
    quantize_model(test::untied_model(), dir_, {WeightQuant::q8, false});
  }
  void TearDown() override { fs::remove_all(dir_); }

  void edit_header(const std::function<void(nlohmann::json&)>& edit) {
    test::edit_safetensors_header(dir_ / "model.safetensors", edit);
  }

  void expect_error(ErrorKind kind, std::initializer_list<std::string> fragments) {
    try {
      Model::load(dir_);
      FAIL() << "loaded a broken quantized model";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_EQ(e.kind(), kind) << msg;
      for (const auto& f : fragments)
        EXPECT_NE(msg.find(f), std::string::npos) << "missing \"" << f << "\" in: " << msg;
    }
  }
  fs::path dir_;
};

constexpr const char* kProj =
    "model.layers.0.mlp.up_proj.weight";  // q8_0 [160, 64]: 160 rows of 68 bytes

TEST_F(BadQuantFolder, WrongByteCountForAQ8Tensor) {
  edit_header([](nlohmann::json& h) {
    h[kProj]["data_offsets"][1] = h[kProj]["data_offsets"][1].get<uint64_t>() - 34;
  });
  expect_error(ErrorKind::format,
               {"model.safetensors", kProj, "holds 10846 bytes", "q8_0 [160, 64] needs 10880"});
}

TEST_F(BadQuantFolder, ColumnsNotAMultipleOf32) {
  edit_header([](nlohmann::json& h) { h[kProj]["shape"] = {170, 48}; });
  expect_error(ErrorKind::format, {kProj, "q8_0 [170, 48]", "multiple of 32"});
}

TEST_F(BadQuantFolder, UnknownQuantizationDtype) {
  edit_header([](nlohmann::json& h) { h[kProj]["dtype"] = "Q5_K"; });
  expect_error(ErrorKind::unsupported, {kProj, "unsupported dtype Q5_K", "Q8_0, Q4_0"});
}

TEST_F(BadQuantFolder, UnknownQuantizationInMetadata) {
  edit_header([](nlohmann::json& h) { h["__metadata__"]["quantization"] = "q3_k"; });
  expect_error(ErrorKind::unsupported, {"unknown quantization \"q3_k\""});
}

TEST_F(BadQuantFolder, PlainRowLayoutOfOlderFolders) {
  edit_header([](nlohmann::json& h) { h["__metadata__"].erase("layout"); });
  expect_error(ErrorKind::unsupported, {"model.safetensors", "older qwen3 quantize", "rows16"});
}

TEST_F(BadQuantFolder, UnknownLayout) {
  edit_header([](nlohmann::json& h) { h["__metadata__"]["layout"] = "rows32"; });
  expect_error(ErrorKind::unsupported, {"unknown layout \"rows32\"", "rows16"});
}

TEST_F(BadQuantFolder, QuantizedTensorsWithoutMetadata) {
  edit_header([](nlohmann::json& h) { h.erase("__metadata__"); });
  expect_error(ErrorKind::unsupported, {"q8_0", "no quantization layout"});
}

TEST_F(BadQuantFolder, QuantizedNormVector) {
  edit_header([](nlohmann::json& h) {
    auto& n =
        h["model.norm.weight"];  // f32 [64], relabelled as q8_0 [64] with a consistent byte count
    n["dtype"] = "Q8_0";
    n["shape"] = {64};
    n["data_offsets"][1] = n["data_offsets"][0].get<uint64_t>() + 68;
  });
  expect_error(ErrorKind::format, {"model.norm.weight", "expected a float dtype", "q8_0 [64]"});
}

}  // namespace
}  // namespace qwen3
