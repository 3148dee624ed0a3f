// Microbenchmarks of the integer q8_0 / q4_0 matmul kernels at Qwen3-0.6B's sizes, one thread.
// Matrix-vector results report bytes of weights read per second; matrix-matrix, int8 GOP/s.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "io/quant_blocks.h"
#include "ops/kernels.h"

namespace qwen3::ops {
namespace {

// args: isa (1 avx2, 2 avx512), dtype (3 q8_0, 4 q4_0), T, N, K
void BM_QuantMatmul(benchmark::State& state) {
  const char* names[] = {"scalar", "avx2", "avx512"};
  if (!cpu_supports(names[state.range(0)])) return state.SkipWithError("isa not on this CPU");
  const KernelTable& kt = select_kernels(names[state.range(0)]);
  const DType dtype = static_cast<DType>(state.range(1));
  const int T = state.range(2), N = state.range(3), K = state.range(4);
  std::mt19937 rng(1);
  std::normal_distribution<float> g(0, 1);
  std::vector<float> row(K);
  std::vector<uint8_t> plain(size_t(N) * row_bytes(dtype, K)), w(plain.size());
  for (int n = 0; n < N; ++n) {
    for (auto& v : row) v = g(rng);
    quantize_row(dtype, row.data(), K, &plain[n * row_bytes(dtype, K)]);
  }
  interleave_rows(dtype, N, K, plain.data(), w.data());
  std::vector<int8_t> xq(size_t(T) * K);
  std::vector<float> xd(size_t(T) * K / kQuantBlock), y(size_t(T) * N);
  std::vector<int32_t> xs(xd.size());
  for (int t = 0; t < T; ++t) {
    for (auto& v : row) v = g(rng);
    quantize_activations(row.data(), K, &xq[size_t(t) * K], &xd[size_t(t) * K / kQuantBlock],
                         &xs[size_t(t) * K / kQuantBlock]);
  }
  const QuantMatmulKernel kernel = dtype == DType::q8_0 ? kt.matmul_q8_0 : kt.matmul_q4_0;
  for (auto _ : state) {
    kernel(xq.data(), xd.data(), xs.data(), T, K, w.data(), N, 0, N, y.data(), N);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetLabel(std::string(kt.name) + " " + dtype_name(dtype));
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(w.size()));
  state.counters["GOP/s"] =
      benchmark::Counter(2.0 * T * N * K * state.iterations(), benchmark::Counter::kIsRate,
                         benchmark::Counter::kIs1000);
}

void QuantMatmulArgs(benchmark::internal::Benchmark* b) {
  for (int isa : {1, 2})
    for (int dtype : {int(DType::q8_0), int(DType::q4_0)}) {
      b->Args({isa, dtype, 1, 3072, 1024});  // gate/up projection, decode
      b->Args({isa, dtype, 1, 1024, 3072});  // down projection, decode
      b->Args({isa, dtype, 1, 256, 1024});   // decode with the weights in L2: the arithmetic alone
      b->Args({isa, dtype, 128, 3072, 1024});  // prefill
    }
}
BENCHMARK(BM_QuantMatmul)->Apply(QuantMatmulArgs)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace qwen3::ops
