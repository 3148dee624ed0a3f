// GGUF files (tests/fixtures/gguf/README.md says how each was made) against the same weights in
// safetensors, against Hugging Face's tokenizer and template, and against llama.cpp's logits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "cli/verify_chat.h"
#include "cli/verify_model.h"
#include "cli/verify_tokenizer.h"
#include "io/json_file.h"
#include "qwen3/chat.h"
#include "qwen3/model.h"
#include "qwen3/tokenizer.h"
#include "test_paths.h"

namespace qwen3 {
namespace {

std::filesystem::path gguf(const std::string& name) { return test::fixtures() / "gguf" / name; }

// Every position's logits of a prompt, fed whole.
std::vector<float> prompt_logits(Model& model, const std::vector<TokenId>& ids) {
  Sequence seq(model);
  const BatchItem item{&seq, ids, true};
  return model.step({&item, 1})[0];
}

struct SameWeights {
  std::string name, folder, file;
  double scalar_tol = 1e-5;  // on the scalar kernels, whose order of summation is fixed
};

class GgufSameWeights : public testing::TestWithParam<SameWeights> {};

// Every logit of every reference prompt, the folder's against the file's.
double max_logit_difference(Model& folder, Model& file, const nlohmann::json& ref,
                            size_t& compared) {
  double max_error = 0;
  for (const auto& c : ref["cases"]) {
    const auto ids = c["prompt_ids"].get<std::vector<TokenId>>();
    const std::vector<float> a = prompt_logits(folder, ids), b = prompt_logits(file, ids);
    EXPECT_EQ(a.size(), b.size());
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
      max_error = std::max(max_error, double(std::fabs(a[i] - b[i])));
    compared += a.size();
  }
  return max_error;
}

// The converter keeps every value of Qwen3 and Qwen3-MoE (f32 as f32, bf16 as bf16; the MoE
// router widened to f32 exactly). The scalar kernels sum in one fixed order whatever the dtype or
// address, so there the file gives the folder's logits (measured: identical). The SIMD kernels'
// order depends on a matrix's place within a cache line (simd_kernels.h's lead_for) and the router
// is now an f32 product, so there the two differ by float32 rounding only: measured 2.0e-6 (dense
// f32) and 2.1e-5 (MoE, whose logits both sit within 7.3e-6 of the float64 reference at the listed
// ids). Qwen3.5's file holds A = -exp(A_log), and log(-A) gives back A_log only to its last bit (4
// of the 12 values of qwen35-tiny-moe move by one ulp): the recurrent decay then differs by a
// rounding, which 300 tokens of recurrence carry to 1.5e-5 (scalar) and 3.8e-5 (AVX2) in the
// logits, both within 4.1e-5 of the float64 reference.
TEST_P(GgufSameWeights, LogitsMatchTheSafetensorsFolder) {
  const SameWeights& p = GetParam();
  const auto ref = io::read_json(test::reference(p.folder + ".json"));
  for (const Isa isa : {Isa::scalar, Isa::automatic}) {
    const LoadOptions exact{.threads = 2, .isa = isa, .activations = Activations::f32};
    auto folder = Model::load(test::fixtures() / "models" / p.folder, exact);
    auto file = Model::load(gguf(p.file), exact);
    EXPECT_EQ(file->config().num_hidden_layers, folder->config().num_hidden_layers);
    EXPECT_EQ(file->config().vocab_size, folder->config().vocab_size);
    EXPECT_EQ(file->config().tie_word_embeddings, folder->config().tie_word_embeddings);
    EXPECT_EQ(file->config().num_experts, folder->config().num_experts);
    EXPECT_EQ(file->config().rope_theta, folder->config().rope_theta);
    EXPECT_TRUE(file->unread_tensors().empty());
    size_t compared = 0;
    const double max_error = max_logit_difference(*folder, *file, ref, compared);
    std::printf("%s vs %s, %s kernels: max |logit difference| %.3g over %zu logits\n",
                p.file.c_str(), p.folder.c_str(), file->isa(), max_error, compared);
    EXPECT_GT(compared, 10000u);
    EXPECT_LE(max_error, isa == Isa::scalar ? p.scalar_tol : 5e-5) << file->isa();
    // and the Hugging Face reference itself, through the same checker as `qwen3 verify`
    for (const auto& c : ref["cases"]) {
      const auto r = cli::verify_model_case(*file, c, 1e-3);
      EXPECT_TRUE(r.pass(1e-3)) << r.name << " " << file->isa();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, GgufSameWeights,
    testing::Values(SameWeights{"dense_f32", "qwen3-tiny-untied", "qwen3-tiny-untied-f32.gguf"},
                    SameWeights{"moe_bf16", "qwen3moe-tiny", "qwen3moe-tiny-bf16.gguf"},
                    SameWeights{"hybrid_moe_bf16", "qwen35-tiny-moe", "qwen35-tiny-moe-bf16.gguf",
                                3e-5}),
    [](const auto& info) { return info.param.name; });

TEST(GgufTokenizer, SameIdsAsHuggingFace) {
  const Tokenizer t = Tokenizer::load(gguf("qwen3-vocab.gguf"));
  EXPECT_EQ(t.vocab_size(), Tokenizer::load(test::tiny_model()).vocab_size());
  std::FILE* sink = std::fopen("/dev/null", "w");
  EXPECT_EQ(verify_tokenizer_reference(t, io::read_json(test::reference("tokenizer.json")), sink),
            0);
  std::fclose(sink);
}

TEST(GgufChatTemplate, RendersAsHuggingFace) {
  const Tokenizer t = Tokenizer::load(gguf("qwen3-vocab.gguf"));
  const auto ref =
      nlohmann::ordered_json::parse(std::ifstream(test::reference("chat_template.json")));
  std::FILE* sink = std::fopen("/dev/null", "w");
  EXPECT_EQ(cli::verify_chat_reference(ChatTemplate::load(gguf("qwen3-vocab.gguf")), ref, sink, &t),
            0);
  std::fclose(sink);
}

// llama.cpp's logits for a file: qwen3-256-<type>.llama-logits.bin (format in the README).
struct LlamaPrompt {
  std::vector<TokenId> ids;
  std::vector<float> logits;  // [ids.size(), vocab]
};

std::vector<LlamaPrompt> read_llama_logits(const std::filesystem::path& path, uint32_t& vocab) {
  std::ifstream in(path, std::ios::binary);
  uint32_t prompts = 0;
  in.read(reinterpret_cast<char*>(&prompts), 4).read(reinterpret_cast<char*>(&vocab), 4);
  std::vector<LlamaPrompt> out(prompts);
  for (LlamaPrompt& p : out) {
    uint32_t n = 0;
    in.read(reinterpret_cast<char*>(&n), 4);
    p.ids.resize(n);
    p.logits.resize(size_t(n) * vocab);
    in.read(reinterpret_cast<char*>(p.ids.data()), 4 * n);
    in.read(reinterpret_cast<char*>(p.logits.data()), 4 * p.logits.size());
  }
  if (!in) ADD_FAILURE() << path << ": truncated";
  return out;
}

// KL(p || q) of the softmaxes of two logit rows, in double.
double kl(const float* p_logits, const float* q_logits, size_t n) {
  auto log_softmax = [n](const float* x) {
    const double m = *std::max_element(x, x + n);
    double s = 0;
    for (size_t i = 0; i < n; ++i) s += std::exp(x[i] - m);
    std::vector<double> out(n);
    for (size_t i = 0; i < n; ++i) out[i] = x[i] - m - std::log(s);
    return out;
  };
  const auto lp = log_softmax(p_logits), lq = log_softmax(q_logits);
  double d = 0;
  for (size_t i = 0; i < n; ++i) d += std::exp(lp[i]) * (lp[i] - lq[i]);
  return d;
}

struct LlamaCase {
  std::string type;            // the file: qwen3-256-<type>.gguf
  std::string quant = "none";  // --quant at load: K-quants straight to the engine's q8_0
};

class GgufLlamaCpp : public testing::TestWithParam<LlamaCase> {};

// The same quantized file in both engines. llama.cpp multiplies q8_0 / q4_0 / q4_1 / q5_0 / q5_1 /
// iq4_nl / K-quant weights with activations rounded to 8 bits (q8_0 / q8_1 / q8_K blocks); the
// engine rounds activations for its integer kernels too: so the logits agree closely but not bit
// for bit. Greedy tokens must agree wherever llama.cpp's own margin between its two best tokens
// exceeds 0.01.
TEST_P(GgufLlamaCpp, MatchesLlamaCppLogits) {
  const std::string type = GetParam().type;
  auto model = Model::load(gguf("qwen3-256-" + type + ".gguf"),
                           {.threads = 2, .quant = parse_weight_quant(GetParam().quant)});
  uint32_t vocab = 0;
  const auto prompts = read_llama_logits(gguf("qwen3-256-" + type + ".llama-logits.bin"), vocab);
  ASSERT_EQ(vocab, uint32_t(model->config().vocab_size));
  ASSERT_FALSE(prompts.empty());
  double sum_kl = 0, max_kl = 0;
  int rows = 0, decisive = 0, agree = 0;
  for (const LlamaPrompt& p : prompts) {
    const std::vector<float> ours = prompt_logits(*model, p.ids);
    for (size_t t = 0; t < p.ids.size(); ++t) {
      const float* ref = &p.logits[t * vocab];
      const float* got = &ours[t * vocab];
      const double d = kl(ref, got, vocab);
      sum_kl += d;
      max_kl = std::max(max_kl, d);
      ++rows;
      std::vector<float> sorted(ref, ref + vocab);
      std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<>());
      if (sorted[0] - sorted[1] > 0.01f) {
        ++decisive;
        agree +=
            std::max_element(ref, ref + vocab) - ref == std::max_element(got, got + vocab) - got;
      }
    }
  }
  std::printf(
      "%s (--quant %s) vs llama.cpp: mean KL %.3g, max KL %.3g over %d positions; "
      "greedy %d/%d\n",
      type.c_str(), GetParam().quant.c_str(), sum_kl / rows, max_kl, rows, agree, decisive);
  EXPECT_LE(sum_kl / rows, 1e-4);
  EXPECT_GT(decisive, rows / 2);
  EXPECT_EQ(agree, decisive);
}

INSTANTIATE_TEST_SUITE_P(Types, GgufLlamaCpp,
                         testing::Values(LlamaCase{"q8_0"}, LlamaCase{"q4_0"}, LlamaCase{"q4_k_m"},
                                         LlamaCase{"q4_k_m", "q8"}, LlamaCase{"q5_1_mix"},
                                         LlamaCase{"q5_1_mix", "q8"}, LlamaCase{"iq4_nl"}),
                         [](const auto& info) {
                           return info.param.type +
                                  (info.param.quant == "none" ? "" : "_as_" + info.param.quant);
                         });

// Read into memory, the file's converted tensors are given back after conversion (their pages
// zeroed): nothing may read them again, so the logits are the mapped file's, bit for bit.
TEST(GgufModel, ReadIntoMemoryGivesTheMappedFilesLogits) {
  const std::vector<TokenId> ids = {1, 13, 100, 200, 300, 400, 500, 7};
  for (const char* file : {"qwen3-256-q8_0.gguf", "qwen3-256-q4_k_m.gguf",
                           "qwen3-256-q5_1_mix.gguf", "qwen35-tiny-moe-bf16.gguf"}) {
    auto mapped = Model::load(gguf(file), {.threads = 2});
    auto read = Model::load(gguf(file), {.threads = 2, .mmap = false});
    EXPECT_EQ(prompt_logits(*read, ids), prompt_logits(*mapped, ids)) << file;
  }
}

TEST(GgufModel, NotesWhatItConverted) {
  EXPECT_TRUE(Model::load(gguf("qwen3-tiny-untied-f32.gguf"))->load_notes().empty());
  const auto q4_k = Model::load(gguf("qwen3-256-q4_k_m.gguf"));
  std::string notes;
  for (const std::string& n : q4_k->load_notes()) notes += n + "\n";
  // q4_K and q6_K run on kernels of their own
  EXPECT_NE(notes.find("q4_K: 5 matrices repacked into the engine's row groups"), std::string::npos)
      << notes;
  EXPECT_NE(notes.find("q6_K: "), std::string::npos) << notes;
  EXPECT_EQ(notes.find("dequantized"), std::string::npos) << notes;
  // with --quant q8 the K-quants become the engine's q8_0, whose kernels the model then runs
  const auto as_q8 = Model::load(gguf("qwen3-256-q4_k_m.gguf"), {.quant = WeightQuant::q8});
  ASSERT_FALSE(as_q8->load_notes().empty());
  EXPECT_NE(as_q8->load_notes()[0].find("q4_K: 5 matrices requantized to q8_0"), std::string::npos)
      << as_q8->load_notes()[0];
  EXPECT_STREQ(as_q8->kv_cache(), "f16");
  // q4_1, q5_0 and q5_1 likewise; --quant q8 requantizes them as it does the K-quants
  const auto legacy = Model::load(gguf("qwen3-256-q5_1_mix.gguf"));
  notes.clear();
  for (const std::string& n : legacy->load_notes()) notes += n + "\n";
  for (const char* type : {"q4_1: 2 matrices", "q5_0: 2 matrices", "q5_1: 3 matrices"})
    EXPECT_NE(notes.find(std::string(type) + " repacked into the engine's row groups"),
              std::string::npos)
        << notes;
  EXPECT_EQ(notes.find("dequantized"), std::string::npos) << notes;
  const auto legacy_q8 = Model::load(gguf("qwen3-256-q5_1_mix.gguf"), {.quant = WeightQuant::q8});
  notes.clear();
  for (const std::string& n : legacy_q8->load_notes()) notes += n + "\n";
  EXPECT_NE(notes.find("q5_1: 3 matrices requantized to q8_0 at load (--quant)\n"),
            std::string::npos)
      << notes;
  const auto iq4_nl = Model::load(gguf("qwen3-256-iq4_nl.gguf"));
  notes.clear();
  for (const std::string& n : iq4_nl->load_notes()) notes += n + "\n";
  EXPECT_NE(notes.find("iq4_nl: 7 matrices repacked into the engine's row groups"),
            std::string::npos)
      << notes;
  const auto q8 = Model::load(gguf("qwen3-256-q8_0.gguf"));
  ASSERT_FALSE(q8->load_notes().empty());
  EXPECT_NE(q8->load_notes()[0].find("q8_0: "), std::string::npos) << q8->load_notes()[0];
  EXPECT_STREQ(q8->kv_cache(), "f16");  // quantized weights: the cache their accuracy allows
}

}  // namespace
}  // namespace qwen3
