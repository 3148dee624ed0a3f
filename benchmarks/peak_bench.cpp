// The roofline the products are judged against: one core's peak of multiply-adds, from
// independent chains (more than latency x issue width), nothing loaded. Arg 0: 512-bit
// vfmadd231ps, what the exact default multiplies bf16 weights with once widened; 1: vdpbf16ps
// (--activations bf16); 2: 256-bit vfmadd231ps, the same for the AVX2 kernels.
// GFLOP/s counts 2 per multiply-add, as BM_Matmul does; run it with `taskset -c N` on each core.
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include "ops/kernels.h"

namespace qwen3::ops {
namespace {

constexpr int kChains = 12;

// kChains independent chains of one instruction. Compiled with AVX512_BF16 allowed; the float
// instance executes no such instruction, so it runs on AVX-512 CPUs without it.
template <bool kBf16>
[[gnu::target("avx512f,avx512bf16")]] float peak(int64_t steps) {
  __m512 acc[kChains];
  for (auto& a : acc) a = _mm512_set1_ps(1e-3f);
  const __m512 b = _mm512_set1_ps(0.999f), c = _mm512_set1_ps(1e-6f);
  const __m512bh ones = (__m512bh)_mm512_set1_epi16(0x3f80);  // 32 bf16 1.0s
  for (int64_t s = 0; s < steps; ++s)
#pragma GCC unroll 12
    for (auto& a : acc) a = kBf16 ? _mm512_dpbf16_ps(a, ones, ones) : _mm512_fmadd_ps(a, b, c);
  float lanes[kChains * 16], sum = 0;  // a result the compiler must compute
  for (int i = 0; i < kChains; ++i) _mm512_storeu_ps(lanes + 16 * i, acc[i]);
  for (float v : lanes) sum += v;
  return sum;
}

// The same chains 256 bits wide, for AVX2 + FMA CPUs.
[[gnu::target("avx2,fma")]] float peak_avx2(int64_t steps) {
  __m256 acc[kChains];
  for (auto& a : acc) a = _mm256_set1_ps(1e-3f);
  const __m256 b = _mm256_set1_ps(0.999f), c = _mm256_set1_ps(1e-6f);
  for (int64_t s = 0; s < steps; ++s)
#pragma GCC unroll 12
    for (auto& a : acc) a = _mm256_fmadd_ps(a, b, c);
  float lanes[kChains * 8], sum = 0;
  for (int i = 0; i < kChains; ++i) _mm256_storeu_ps(lanes + 8 * i, acc[i]);
  for (float v : lanes) sum += v;
  return sum;
}

void BM_PeakFlops(benchmark::State& state) {
  const int kind = int(state.range(0));
  if (!cpu_supports(kind == 0 ? "avx512" : kind == 1 ? "avx512-bf16" : "avx2"))
    return state.SkipWithError("isa not on this CPU");
  constexpr int64_t kSteps = 1 << 20;
  for (auto _ : state) {
    int64_t steps = kSteps;
    benchmark::DoNotOptimize(steps);  // else the pure call is hoisted out of the loop
    benchmark::DoNotOptimize(kind == 0   ? peak<false>(steps)
                             : kind == 1 ? peak<true>(steps)
                                         : peak_avx2(steps));
  }
  // multiply-adds of one instruction, x 2
  const double per_instruction = kind == 0 ? 2 * 16 : kind == 1 ? 2 * 32 : 2 * 8;
  state.counters["GFLOP/s"] =
      benchmark::Counter(per_instruction * kChains * kSteps * state.iterations(),
                         benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
  state.SetLabel(kind == 0 ? "vfmadd231ps zmm" : kind == 1 ? "vdpbf16ps" : "vfmadd231ps ymm");
}
BENCHMARK(BM_PeakFlops)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace qwen3::ops
