// verify_tokenizer_reference: passes on the real reference, reports a corrupted one.
#include "cli/verify_tokenizer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "qwen3/error.h"
#include "test_paths.h"

namespace {

const qwen3::Tokenizer& tokenizer() {
  static const qwen3::Tokenizer t = qwen3::Tokenizer::load(qwen3::test::tiny_model());
  return t;
}

nlohmann::json reference() {
  std::ifstream in(qwen3::test::reference("tokenizer.json"));
  return nlohmann::json::parse(in);
}

// Runs the verifier and returns {exit code, what it printed}.
std::pair<int, std::string> verify(const nlohmann::json& ref) {
  std::FILE* out = std::tmpfile();
  int rc = verify_tokenizer_reference(tokenizer(), ref, out);
  std::rewind(out);
  std::string text;
  for (int c; (c = std::fgetc(out)) != EOF;) text += char(c);
  std::fclose(out);
  return {rc, text};
}

TEST(VerifyTokenizer, RealReferenceMatches) {
  nlohmann::json ref = reference();
  size_t total = ref["encode"].size() + ref["decode"].size();
  auto [rc, text] = verify(ref);
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(text,
            "tokenizer: " + std::to_string(total) + "/" + std::to_string(total) + " cases match\n");
}

TEST(VerifyTokenizer, CorruptedReferenceFails) {
  nlohmann::json ref = reference();
  size_t total = ref["encode"].size() + ref["decode"].size();
  ref["encode"][0]["ids"][2] = 316;                // "The capital of" -> a different third id
  ref["decode"][1]["decoded"] = "something else";  // a decode case
  auto [rc, text] = verify(ref);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(text.find("encode[0]: ids differ at position 2: expected 316, got 315"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("decode[1]: decoded bytes differ at position 0"), std::string::npos) << text;
  EXPECT_NE(text.find("tokenizer: " + std::to_string(total - 2) + "/" + std::to_string(total) +
                      " cases match"),
            std::string::npos)
      << text;
}

TEST(VerifyTokenizer, ReferenceOfAnotherFormatIsAnError) {
  EXPECT_THROW(verify(nlohmann::json{{"cases", nlohmann::json::array()}}), qwen3::Error);
}

}  // namespace
