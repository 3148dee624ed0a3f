// Microbenchmarks of the hot kernels at Qwen3-0.6B's sizes, per instruction set, one thread.
// Matrix-vector results report bytes of weights read per second; matrix-matrix, FLOP/s.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

#include "io/huge_page_buffer.h"
#include "ops/kernels.h"
#include "ops/ops.h"

namespace qwen3::ops {
namespace {

// isa: 0 scalar, 1 avx2, 2 avx512, 3 avx512 with bf16 activations (AVX512_BF16 dot products),
// 4 amx (bf16 weights on AMX tiles), 5 amx with bf16 activations.
const KernelTable* table_for(int isa) {
  const char* names[] = {"scalar", "avx2", "avx512", "avx512-bf16", "amx", "amx"};
  if (!cpu_supports(names[isa])) return nullptr;
  return &select_kernels(isa == 3 ? "avx512" : names[isa], isa == 3 || isa == 5 ? "bf16" : "f32");
}

// args: isa (as table_for), T, N, K; bf16 weights
void BM_Matmul(benchmark::State& state) {
  const KernelTable* kt = table_for(static_cast<int>(state.range(0)));
  if (!kt) return state.SkipWithError("isa not on this CPU");
  const int T = state.range(1), N = state.range(2), K = state.range(3);
  std::mt19937 rng(1);
  std::vector<uint16_t> w(size_t(N) * K);
  for (auto& v : w) v = f32_to_bf16(std::uniform_real_distribution<float>(-1, 1)(rng));
  std::vector<float> x(size_t(T) * K, 0.5f), y(size_t(T) * N);
  io::Buffer<float> xb(kt->prepared_floats(
      T, K));  // aligned as the runtime's: the tiles' x loads split no cache lines
  for (auto _ : state) {
    kt->prepare_x[int(DType::bf16)](x.data(), T, K, 0, T,
                                    xb.data());  // x need not be rotated: all 0.5
    kt->matmul[int(DType::bf16)](xb.data(), T, K, w.data(), kt->lead[int(DType::bf16)](w.data(), K),
                                 0, N, y.data(), N);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetLabel(kt->name);
  state.SetBytesProcessed(int64_t(state.iterations()) * N * K * 2);
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * T * N * K * state.iterations(), benchmark::Counter::kIsRate,
                         benchmark::Counter::kIs1000);
}

void MatmulArgs(benchmark::internal::Benchmark* b) {
  for (int isa : {1, 2, 3, 4, 5}) {
    b->Args({isa, 1, 3072, 1024});    // gate/up projection, decode
    b->Args({isa, 1, 1024, 3072});    // down projection, decode
    b->Args({isa, 1, 151936, 1024});  // LM head, decode
    b->Args({isa, 8, 3072, 1024});    // batched decode
    b->Args({isa, 8, 240, 1024});     // batched decode, W in L2: the 8-row tiles' arithmetic alone
    b->Args({isa, 16, 3072, 1024});   // short prompt
    b->Args({isa, 32, 3072, 1024});
    b->Args({isa, 64, 3072, 1024});
    b->Args({isa, 128, 3072, 1024});  // prefill
    b->Args({isa, 512, 1024, 3072});  // long prompt, down projection
  }
  b->Args({0, 1, 3072, 1024});
}
BENCHMARK(BM_Matmul)->Apply(MatmulArgs)->Unit(benchmark::kMicrosecond);

// The KV cache dtype of an attention benchmark's argument (0 f32, 1 f16, 2 bf16, 3 q8_0), and a
// one-thread runtime whose kernels attend over it (bf16: AVX512_BF16's, with bf16 activations);
// null where the CPU has none.
DType cache_dtype(int64_t arg) {
  return arg == 3 ? DType::q8_0 : arg == 2 ? DType::bf16 : arg == 1 ? DType::f16 : DType::f32;
}
RuntimePtr attention_runtime(DType kv) {
  if (kv == DType::bf16 && !cpu_supports("avx512-bf16")) return nullptr;
  return make_runtime("auto", 1, kv == DType::bf16 ? "bf16" : "f32");
}

// args: positions in the cache, cache dtype (as cache_dtype), shape (0: Qwen3-0.6B's 16 query
// heads over 8 KV heads of 128; 1: Qwen3.5-0.8B's 8 over 2 of 256); one decode token
void BM_Attention(benchmark::State& state) {
  const int P = state.range(0), qwen35 = state.range(2);
  const int H = qwen35 ? 8 : 16, Hkv = qwen35 ? 2 : 8, Dh = qwen35 ? 256 : 128;
  const DType kv = cache_dtype(state.range(1));
  auto rt = attention_runtime(kv);
  if (!rt) return state.SkipWithError("no AVX512_BF16 on this CPU");
  const size_t bytes = row_bytes(kv, size_t(P) * Hkv * Dh);
  std::vector<float> q(H * Dh, 0.1f), out(H * Dh);
  io::Buffer<uint8_t> k(bytes), v(bytes);  // zeros in any dtype; huge pages, as a Sequence's
  std::vector<float> new_k(Hkv * Dh, 0.2f),
      new_v(Hkv * Dh, 0.3f);  // the token's own, appended at P - 1
  for (auto _ : state) {
    attention(*rt,
              std::vector<AttentionItem>{{q.data(), new_k.data(), new_v.data(), 1, P - 1, k.data(),
                                          v.data(), kv, P, out.data()}},
              H, Hkv, Dh);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * bytes * 2);
}
BENCHMARK(BM_Attention)
    ->ArgsProduct({{128, 1024, 4096}, {0, 1, 2}, {0}})
    ->ArgsProduct({{16384}, {0, 1, 3}, {1}})
    ->Unit(benchmark::kMicrosecond);

// A whole prompt's causal attention (its keys and values appended to the cache first), one layer,
// one thread. args: prompt length, cache dtype (as cache_dtype).
void BM_AttentionPrompt(benchmark::State& state) {
  const int n = state.range(0), H = 16, Hkv = 8, Dh = 128;
  const DType kv = cache_dtype(state.range(1));
  auto rt = attention_runtime(kv);
  if (!rt) return state.SkipWithError("no AVX512_BF16 on this CPU");
  std::mt19937 rng(1);
  std::vector<float> q(size_t(n) * H * Dh), k(size_t(n) * Hkv * Dh), v(size_t(n) * Hkv * Dh),
      out(size_t(n) * H * Dh);
  std::vector<float> cache_k(k.size()),
      cache_v(v.size());  // the prompt's keys and values go here (room for f32)
  for (auto* a : {&q, &k, &v})
    for (auto& x : *a) x = std::uniform_real_distribution<float>(-1, 1)(rng);
  for (auto _ : state) {
    attention(*rt,
              std::vector<AttentionItem>{{q.data(), k.data(), v.data(), n, 0, cache_k.data(),
                                          cache_v.data(), kv, n, out.data()}},
              H, Hkv, Dh);
    benchmark::DoNotOptimize(out.data());
  }
  // Causal: about half the n x n scores, each a 128-long dot product, and as many multiply-adds of
  // values.
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * 2 * H * Dh * n * (n + 1) / 2.0 * state.iterations(),
                         benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_AttentionPrompt)->ArgsProduct({{128, 512}, {0, 2}})->Unit(benchmark::kMicrosecond);

void BM_RmsNormRope(benchmark::State& state) {
  auto rt = make_runtime("auto", 1);
  const int D = 1024, H = 16, Dh = 128;
  std::vector<float> x(D, 0.5f), w(D, 1.0f), q(H * Dh, 0.3f), cos(Dh / 2), sin(Dh / 2);
  for (auto _ : state) {
    rms_norm(*rt, x.data(), w.data(), 1e-6f, 1, D, x.data());
    rope_angles(100, Dh, 1e6, cos.data(), sin.data());
    rope(q.data(), H, Dh, Dh, cos.data(), sin.data());
    benchmark::DoNotOptimize(q.data());
  }
}
BENCHMARK(BM_RmsNormRope)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace qwen3::ops

namespace qwen3::ops {
namespace {

struct Shape {
  int N, K;
};

// Constant weights for the matrices `shapes`, one after another: bf16, or q8_0 / q4_0 quantized
// from it. In 2 MiB pages, as a model's mapped file.
io::HugePageBuffer weights_of(Runtime& rt, DType dtype, const std::vector<Shape>& shapes) {
  size_t elements = 0, bytes = 0;
  for (const Shape& s : shapes) {
    elements += size_t(s.N) * s.K;
    bytes += row_bytes(dtype, size_t(s.N) * s.K);
  }
  io::HugePageBuffer bf16(elements * 2);
  std::fill_n(reinterpret_cast<uint16_t*>(bf16.data()), elements, f32_to_bf16(0.01f));
  if (dtype == DType::bf16) return bf16;
  io::HugePageBuffer w(bytes);
  size_t in = 0, out = 0;
  for (const Shape& s : shapes) {
    quantize(rt, {DType::bf16, bf16.data() + in, s.N, s.K}, dtype, w.data() + out);
    in += size_t(s.N) * s.K * 2;
    out += row_bytes(dtype, size_t(s.N) * s.K);
  }
  return w;
}

// The model-level matmul with its thread pool: args threads, T, N, K, weight dtype. With the
// matrix well past the L3 cache, bytes_per_second set against the machine's read bandwidth is the
// product's streaming efficiency.
void BM_MatmulThreaded(benchmark::State& state) {
  const int threads = state.range(0), T = state.range(1), N = state.range(2), K = state.range(3);
  const DType dtype = static_cast<DType>(state.range(4));
  auto rt = make_runtime("auto", threads);
  const io::HugePageBuffer w = weights_of(*rt, dtype, {{N, K}});
  std::vector<float> x(size_t(T) * K, 0.5f), y(size_t(T) * N);
  const Matrix m{dtype, w.data(), N, K};
  for (auto _ : state) {
    matmul(*rt, x.data(), T, m, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  state.SetLabel(dtype_name(dtype));
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(w.size()));
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * T * N * K * state.iterations(), benchmark::Counter::kIsRate,
                         benchmark::Counter::kIs1000);
}
constexpr int kBf16 = int(DType::bf16), kQ8 = int(DType::q8_0), kQ4 = int(DType::q4_0);
BENCHMARK(BM_MatmulThreaded)
    ->Args({1, 1, 151936, 1024, kBf16})
    ->Args({2, 1, 151936, 1024, kBf16})
    ->Args({2, 1, 4 * 151936, 1024, kQ8})  // 4 and 8 LM heads: 620 and 700 MB, past the L3 cache
    ->Args({2, 1, 8 * 151936, 1024, kQ4})
    ->Args({2, 8, 151936, 1024, kBf16})  // batched decode: 8 tokens per weight row
    ->Args({1, 512, 3072, 1024, kBf16})
    ->Args({2, 512, 3072, 1024, kBf16})
    ->Args({2, 512, 1024, 3072, kBf16})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// Every product of one Qwen3-0.6B decode step, in the model's order and shapes (28 layers of
// q/k/v, o, gate/up and down, then the LM head), 2 threads: args T, weight dtype. Set against
// `qwen3 bench`'s tgN it splits a step into products and the rest (attention, norms, hand-offs);
// `% read` is the median step's speed as a share of a plain read of the same weights just before
// it (ops::read, as bench's column), outside the timing.
void BM_DecodeProducts(benchmark::State& state) {
  const int T = state.range(0);
  const DType dtype = static_cast<DType>(state.range(1));
  std::vector<Shape> shapes;
  for (int l = 0; l < 28; ++l)
    shapes.insert(shapes.end(), {{4096, 1024}, {1024, 2048}, {6144, 1024}, {1024, 3072}});
  shapes.push_back({151936, 1024});
  auto rt = make_runtime("auto", 2);
  const io::HugePageBuffer w = weights_of(*rt, dtype, shapes);
  std::vector<Matrix> matrices;
  size_t at = 0;
  for (const Shape& s : shapes) {
    matrices.push_back({dtype, w.data() + at, s.N, s.K});
    at += row_bytes(dtype, size_t(s.N) * s.K);
  }
  std::vector<float> x(size_t(T) * 3072, 0.5f), y(size_t(T) * 151936);
  using Clock = std::chrono::steady_clock;
  std::vector<double> shares;  // each step's speed as a share of a plain read just before it
  for (auto _ : state) {
    state.PauseTiming();
    const auto r0 = Clock::now();
    benchmark::DoNotOptimize(read(*rt, matrices));
    const auto r1 = Clock::now();
    state.ResumeTiming();
    for (const Matrix& m : matrices) matmul(*rt, x.data(), T, m, y.data());
    benchmark::DoNotOptimize(y.data());
    shares.push_back(std::chrono::duration<double>(r1 - r0) /
                     std::chrono::duration<double>(Clock::now() - r1));
  }
  std::nth_element(shares.begin(), shares.begin() + shares.size() / 2, shares.end());
  state.counters["% read"] = 100 * shares[shares.size() / 2];
  state.SetLabel(dtype_name(dtype));
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(w.size()));
  state.counters["steps/s"] =
      benchmark::Counter(double(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_DecodeProducts)
    ->Args({1, kBf16})
    ->Args({8, kBf16})
    ->Args({1, kQ8})
    ->Args({1, kQ4})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace qwen3::ops
