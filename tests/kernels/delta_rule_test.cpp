// The gated delta rule kernel of each instruction set against the plain reference, at the sizes
// models use and at odd ones that leave partial vectors.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "ops/kernels.h"

namespace qwen3::ops {
namespace {

TEST(DeltaRuleKernel, MatchesTheReferenceAtOddAndRealSizes) {
  std::vector<const KernelTable*> tables;
  if (cpu_supports("avx2")) tables.push_back(&avx2_kernels());
  if (cpu_supports("avx512")) tables.push_back(&avx512_kernels());
  if (tables.empty()) GTEST_SKIP() << "no SIMD kernels on this CPU";
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto random = [&](size_t n, float scale) {
    std::vector<float> v(n);
    for (auto& x : v) x = normal(rng) * scale;
    return v;
  };
  for (const KernelTable* kt : tables)
    for (int dk : {1, 5, 32, 128})
      for (int dv : {1, 7, 8, 24, 32, 40, 64, 128}) {
        SCOPED_TRACE(std::string(kt->name) + " dk " + std::to_string(dk) + " dv " +
                     std::to_string(dv));
        std::vector<float> want = random(size_t(dk) * dv, 1.0f), got = want;
        std::vector<float> out_want(dv), out_got(dv);
        // Several tokens in a row, as a prompt feeds them: errors would compound in the state.
        for (int t = 0; t < 5; ++t) {
          const auto q = random(dk, 0.3f), k = random(dk, 0.3f), v = random(dv, 1.0f);
          const float decay = std::exp(-0.1f * (t + 1)), beta = 0.3f + 0.1f * t;
          reference_kernels().delta_rule(want.data(), dk, dv, q.data(), k.data(), v.data(), decay,
                                         beta, out_want.data());
          kt->delta_rule(got.data(), dk, dv, q.data(), k.data(), v.data(), decay, beta,
                         out_got.data());
          for (int d = 0; d < dv; ++d) ASSERT_NEAR(out_got[d], out_want[d], 1e-5f) << "t " << t;
        }
        for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5f) << i;
      }
}

}  // namespace
}  // namespace qwen3::ops
