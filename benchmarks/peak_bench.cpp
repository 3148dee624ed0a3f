// The roofline the products are judged against: one core's peak of 512-bit multiply-adds, from
// independent chains (more than latency x issue width), nothing loaded. Arg 0: vfmadd231ps, what
// the exact default multiplies bf16 weights with once widened; 1: vdpbf16ps (--activations bf16).
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

void BM_PeakFlops(benchmark::State& state) {
  const bool bf16 = state.range(0) == 1;
  if (!cpu_supports(bf16 ? "avx512-bf16" : "avx512"))
    return state.SkipWithError("isa not on this CPU");
  constexpr int64_t kSteps = 1 << 20;
  for (auto _ : state) {
    int64_t steps = kSteps;
    benchmark::DoNotOptimize(steps);  // else the pure call is hoisted out of the loop
    benchmark::DoNotOptimize(bf16 ? peak<true>(steps) : peak<false>(steps));
  }
  const double per_instruction =
      bf16 ? 2 * 32 : 2 * 16;  // multiply-adds of one zmm instruction, x 2
  state.counters["GFLOP/s"] =
      benchmark::Counter(per_instruction * kChains * kSteps * state.iterations(),
                         benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
  state.SetLabel(bf16 ? "vdpbf16ps" : "vfmadd231ps");
}
BENCHMARK(BM_PeakFlops)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace qwen3::ops
