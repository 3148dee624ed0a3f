// Tokenizer benchmarks: load time of tokenizer.json and encode throughput on several kinds of text.
#include <benchmark/benchmark.h>

#include <string>

#include "qwen3/tokenizer.h"

namespace {

const std::filesystem::path kModelDir = QWEN3_FIXTURES "/models/qwen3-tiny";

const qwen3::Tokenizer& tokenizer() {
  static const qwen3::Tokenizer t = qwen3::Tokenizer::load(kModelDir);
  return t;
}

// Repeats a sample up to about `bytes`, so one iteration is long enough to time well.
std::string repeat(const std::string& sample, size_t bytes) {
  std::string s;
  while (s.size() < bytes) s += sample;
  return s;
}

const std::string kEnglish = repeat(
    "The tokenizer splits text into pre-tokens with a regular expression, then applies byte-pair "
    "merges in rank order. It's fast because common words are single tokens, and we've cached "
    "nothing: every word is merged from its bytes each time. In 2024, 1,234 people asked why.\n",
    1 << 20);
const std::string kMixed = repeat(
    "Zażółć gęślą jaźń. 你好，世界！今天天气很好。Привет, как дела? 한국어 문장입니다. "
    "مرحبا بالعالم नमस्ते दुनिया สวัสดีครับ emoji 😀👍🏽 family 👨‍👩‍👧‍👦 é and "
    "Å.\n",
    1 << 20);
const std::string kCode = repeat(
    "template <typename T>\nstd::vector<T> merge(const std::vector<T>& a, const std::vector<T>& b) "
    "{\n"
    "    std::vector<T> out;\n    out.reserve(a.size() + b.size());\n"
    "    for (size_t i = 0, j = 0; i < a.size() || j < b.size();) {\n"
    "        if (j == b.size() || (i < a.size() && a[i] < b[j])) out.push_back(a[i++]);\n"
    "        else out.push_back(b[j++]);\n    }\n    return out;  // {\"key\": [1, 2, 3]}\n}\n\n",
    1 << 20);

void BM_Load(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(qwen3::Tokenizer::load(kModelDir));
}
BENCHMARK(BM_Load)->Unit(benchmark::kMillisecond);

void encode(benchmark::State& state, const std::string& text) {
  const qwen3::Tokenizer& t = tokenizer();
  size_t tokens = 0;
  for (auto _ : state) {
    auto ids = t.encode(text);
    tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(text.size()));
  state.counters["tokens/s"] =
      benchmark::Counter(double(tokens) * double(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_EncodeEnglish(benchmark::State& state) { encode(state, kEnglish); }
void BM_EncodeMixedScript(benchmark::State& state) { encode(state, kMixed); }
void BM_EncodeCode(benchmark::State& state) { encode(state, kCode); }
void BM_Encode100kLetterRun(benchmark::State& state) { encode(state, std::string(100000, 'a')); }
void BM_Encode100kSpaces(benchmark::State& state) { encode(state, std::string(100000, ' ')); }
BENCHMARK(BM_EncodeEnglish)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EncodeMixedScript)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EncodeCode)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Encode100kLetterRun)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Encode100kSpaces)->Unit(benchmark::kMillisecond);

void BM_Decode(benchmark::State& state) {
  const auto ids = tokenizer().encode(kEnglish);
  for (auto _ : state) benchmark::DoNotOptimize(tokenizer().decode(ids));
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(kEnglish.size()));
}
BENCHMARK(BM_Decode)->Unit(benchmark::kMillisecond);

}  // namespace
