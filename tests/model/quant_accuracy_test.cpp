// Quantized models, and bf16 activations, against their exact float selves on the fixture prompts:
// bounds set from the measurements in docs/quantization.md and docs/precision.md (about 1.5x the
// measured figures), never loosened.
#include <gtest/gtest.h>

#include "cli/verify_quant.h"
#include "io/json_file.h"
#include "ops/kernels.h"
#include "test_paths.h"

namespace qwen3 {
namespace {

struct Bounds {
  std::string model, quant;  // quant "": the float weights
  double mean_kl, max_kl, min_top1, max_logit_error;
  std::string activations = "f32";
  std::string kv_cache = "auto";
  // Over the positions whose logits choose a token (the prompt's last and the continuation's), not
  // every position: what automatic activations are bounded by.
  bool choosing = false;
};

class QuantAccuracy : public testing::TestWithParam<Bounds> {};

TEST_P(QuantAccuracy, WithinMeasuredBounds) {
  const Bounds& b = GetParam();
  if (b.activations == "bf16" && !ops::cpu_supports("avx512-bf16"))
    GTEST_SKIP() << "no AVX512_BF16 on this CPU";
  auto base = Model::load(test::fixtures() / "models" / b.model,
                          {.threads = 2, .activations = Activations::f32});
  auto quant =
      Model::load(test::fixtures() / "models" / b.model,
                  {.threads = 2,
                   .quant = b.quant.empty() ? WeightQuant::none : parse_weight_quant(b.quant),
                   .kv_cache = parse_kv_cache_type(b.kv_cache),
                   .activations = parse_activations(b.activations)});
  auto ref = io::read_json(test::reference(b.model + ".json"));
  std::FILE* sink = std::fopen("/dev/null", "w");
  const cli::CaseAccuracy pooled = cli::quant_accuracy_reference(*base, *quant, ref, sink);
  std::fclose(sink);
  const cli::QuantAccuracy& r = b.choosing ? pooled.choosing : pooled.all;
  SCOPED_TRACE(b.model + " " + b.quant + " " + b.activations + " " + b.kv_cache);
  EXPECT_GT(r.positions, b.choosing ? 140 : 400);
  EXPECT_LE(r.mean_kl, b.mean_kl);
  EXPECT_LE(r.max_kl, b.max_kl);
  EXPECT_GE(r.top1_agreement, b.min_top1);
  EXPECT_LE(r.max_logit_error, b.max_logit_error);
}

// Measured (avx512, the quantized model's default f16 KV cache): tiny q8 3.0e-3 / 2.2e-2 / 95.4% /
// 0.98; tiny q4 0.43 / 3.7 / 68.7% / 11.6; untied q8 2.0e-4 / 6.3e-4 / 96.4% / 0.14; untied
// q4 2.5e-2 / 9.4e-2 / 63.4% / 1.57 (with an f32 cache 3.2e-3 / 2.8e-2 / 96.1% / 0.94, 0.43 / 3.7
// / 68.2% / 11.5, 1.9e-4 / 6.8e-4 / 96.6% / 0.14, 2.5e-2 / 9.2e-2 / 64.0% / 1.52). bf16 activations
// on qwen3-tiny (bf16 weights; qwen3-tiny-untied's f32 weights do not use them): 1.0e-4 / 1.2e-3
// / 99.5% / 0.19 with an f32 cache; with their default bf16 cache (attention in bf16 too) 1.2e-4
// / 1.7e-3 / 99.1% / 0.23. Automatic activations (bf16 for the prompt, f32 for the continuation)
// over the 149 positions that choose a token: 7.4e-6 / 2.8e-4 / 100% / 0.12 (bf16 activations over
// the same: 2.0e-5). (The fixtures are random, untrained weights: their logits are flat, so top-1
// flips easily.)
INSTANTIATE_TEST_SUITE_P(
    Fixtures, QuantAccuracy,
    testing::Values(Bounds{"qwen3-tiny", "q8", 5e-3, 4e-2, 0.94, 1.4},
                    Bounds{"qwen3-tiny", "q4", 0.65, 5.5, 0.62, 17},
                    Bounds{"qwen3-tiny-untied", "q8", 3e-4, 1e-3, 0.94, 0.22},
                    Bounds{"qwen3-tiny-untied", "q4", 3.8e-2, 0.14, 0.58, 2.3},
                    Bounds{"qwen3-tiny", "", 1.5e-4, 1.9e-3, 0.99, 0.29, "bf16", "f32"},
                    Bounds{"qwen3-tiny", "", 1.8e-4, 2.5e-3, 0.98, 0.34, "bf16"},
                    Bounds{"qwen3-tiny", "", 1.1e-5, 4.2e-4, 0.99, 0.19, "auto", "auto", true}),
    [](const auto& info) {
      std::string n =
          info.param.model + "_" + (info.param.quant.empty() ? "float" : info.param.quant);
      if (info.param.activations != "f32") n += "_" + info.param.activations + "_activations";
      if (info.param.kv_cache != "auto") n += "_" + info.param.kv_cache + "_cache";
      std::replace(n.begin(), n.end(), '-', '_');
      return n;
    });

}  // namespace
}  // namespace qwen3
