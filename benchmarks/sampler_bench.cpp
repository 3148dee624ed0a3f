// Sampler cost per token on Qwen3's 151936-entry vocabulary, for each truncation the CLI offers.
#include <random>
#include <vector>

#include <benchmark/benchmark.h>

#include "qwen3/sampler.h"

namespace {

std::vector<float> random_logits() {
  std::mt19937_64 rng(1);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  std::vector<float> logits(151936);
  for (auto& x : logits) x = dist(rng);
  return logits;
}

void run(benchmark::State& state, qwen3::SamplingParams params) {
  const auto logits = random_logits();
  std::vector<int32_t> history(static_cast<size_t>(state.range(0)));
  for (size_t i = 0; i < history.size(); ++i)
    history[i] = static_cast<int32_t>((i * 7919) % logits.size());
  qwen3::Sampler sampler(params);
  for (auto _ : state) benchmark::DoNotOptimize(sampler.sample(logits, history));
  state.counters["tok/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_SampleQwen3Defaults(
    benchmark::State& state) {  // generation_config.json: T 0.6, top_k 20, top_p 0.95
  qwen3::SamplingParams p;
  p.temperature = 0.6f;
  p.top_k = 20;
  p.top_p = 0.95f;
  p.repetition_penalty = 1.05f;
  run(state, p);
}

void BM_SampleTopPOnly(benchmark::State& state) {
  qwen3::SamplingParams p;
  p.temperature = 0.8f;
  p.top_p = 0.9f;
  run(state, p);
}

void BM_SamplePlain(benchmark::State& state) {
  qwen3::SamplingParams p;
  p.min_p = 0.05f;
  run(state, p);
}

void BM_Greedy(benchmark::State& state) {
  qwen3::SamplingParams p;
  p.temperature = 0.0f;
  run(state, p);
}

BENCHMARK(BM_SampleQwen3Defaults)->Arg(0)->Arg(4096);
BENCHMARK(BM_SampleTopPOnly)->Arg(0);
BENCHMARK(BM_SamplePlain)->Arg(0);
BENCHMARK(BM_Greedy)->Arg(0);

}  // namespace
