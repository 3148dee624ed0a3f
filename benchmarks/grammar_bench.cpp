// Token masks on Qwen3's vocabulary (151669 tokens, a 151936-logit row): per grammar state once
// its cache is filled (the steady cost of a constrained step), the first visit that fills it, a
// sampling step with and without the mask, and (with QWEN3_BENCH_MODEL=MODEL_DIR set, e.g. a
// full-size random Qwen3-0.6B; skipped otherwise) whole decode steps with and without it.
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

#include <benchmark/benchmark.h>

#include "qwen3/generation.h"
#include "qwen3/grammar.h"
#include "qwen3/model.h"
#include "qwen3/sampler.h"
#include "qwen3/tokenizer.h"

namespace {

using qwen3::TokenId;
constexpr size_t kLogits = 151936;

const qwen3::Tokenizer& tokenizer() {
  static const auto t = qwen3::Tokenizer::load(QWEN3_FIXTURES "/models/qwen3-tiny");
  return t;
}

std::shared_ptr<const qwen3::TokenVocabulary> vocabulary() {
  static const auto v = std::make_shared<const qwen3::TokenVocabulary>(tokenizer());
  return v;
}

const std::string& schema_grammar() {
  static const std::string g =
      qwen3::json_schema_grammar(nlohmann::ordered_json::parse(R"({"type": "object",
      "properties": {"name": {"type": "string"}, "age": {"type": "integer"}, "tags": {"type": "array",
      "items": {"enum": ["a", "b"]}}, "address": {"type": "object", "properties": {"city": {"type": "string"}},
      "required": ["city"]}}, "required": ["name", "age", "tags", "address"], "additionalProperties": false})"));
  return g;
}

// A matcher of `grammar` after `prefix`, its cache filled by one mask.
qwen3::GrammarMatcher at(const std::string& grammar, const std::string& prefix) {
  auto g =
      std::make_shared<const qwen3::TokenGrammar>(qwen3::Grammar::parse(grammar), vocabulary());
  qwen3::GrammarMatcher m(g, {151645});
  if (!m.accept_bytes(prefix)) throw std::runtime_error("bad prefix " + prefix);
  return m;
}

void run_mask(benchmark::State& state, const std::string& grammar, const std::string& prefix) {
  auto m = at(grammar, prefix);
  std::vector<uint64_t> mask((kLogits + 63) / 64);
  m.fill_mask(mask);
  for (auto _ : state) {
    m.fill_mask(mask);
    benchmark::DoNotOptimize(mask.data());
  }
  size_t allowed = 0;
  for (uint64_t w : mask) allowed += size_t(__builtin_popcountll(w));
  state.counters["allowed"] = double(allowed);
}

// Inside a string value: nearly every token allowed, a few hundred leave the string part-way.
void BM_MaskInString(benchmark::State& state) {
  run_mask(state, schema_grammar(), R"({"name": "Ada Lov)");
}
// After a property: whitespace, the comma and the next key's start.
void BM_MaskAfterValue(benchmark::State& state) {
  run_mask(state, schema_grammar(), R"({"name": "Ada", "age": 36)");
}
// Inside a nested object's string, three rules deep.
void BM_MaskNestedString(benchmark::State& state) {
  run_mask(state, schema_grammar(),
           R"({"name": "A", "age": 3, "tags": ["a"], "address": {"city": "Lon)");
}
// json_object: a value of any type, where objects and arrays are rule references.
void BM_MaskAnyValue(benchmark::State& state) {
  run_mask(state, qwen3::json_object_grammar(), R"({"k": [1, {"x": )");
}

// The first mask in a state: one walk of the vocabulary trie (333009 nodes), then cached.
void BM_MaskFirstVisitInString(benchmark::State& state) {
  std::vector<uint64_t> mask((kLogits + 63) / 64);
  for (auto _ : state) {
    state.PauseTiming();
    auto m = at(schema_grammar(), R"({"name": "Ada Lov)");
    state.ResumeTiming();
    m.fill_mask(mask);
    benchmark::DoNotOptimize(mask.data());
  }
}

// Sampling as the server does with Qwen3's defaults (T 0.6, top_k 20, top_p 0.95), free and
// constrained (mask in a string, then the draw among the allowed, then accepting the token).
std::vector<float> random_logits() {
  std::mt19937_64 rng(1);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  std::vector<float> logits(kLogits);
  for (auto& x : logits) x = dist(rng);
  return logits;
}

qwen3::SamplingParams qwen3_defaults() {
  qwen3::SamplingParams p;
  p.temperature = 0.6f;
  p.top_k = 20;
  p.top_p = 0.95f;
  return p;
}

void BM_SampleFree(benchmark::State& state) {
  const auto logits = random_logits();
  qwen3::Sampler sampler(qwen3_defaults());
  for (auto _ : state) benchmark::DoNotOptimize(sampler.sample(logits, {}));
}

void BM_GreedyFree(benchmark::State& state) {
  const auto logits = random_logits();
  qwen3::SamplingParams p;
  p.temperature = 0;
  qwen3::Sampler sampler(p);
  for (auto _ : state) benchmark::DoNotOptimize(sampler.sample(logits, {}));
}

void run_constrained(benchmark::State& state, const qwen3::SamplingParams& params) {
  const auto logits = random_logits();
  qwen3::Sampler sampler(params);
  // String content that never closes, so every step is in the same (cached) state.
  auto grammar = std::make_shared<const qwen3::TokenGrammar>(
      qwen3::Grammar::parse(R"(root ::= [^"\\]*)"), vocabulary());
  const qwen3::GrammarConstraint c{grammar, qwen3::GrammarConstraint::Reasoning::none, -1, -1};
  auto constraint = std::make_unique<qwen3::TokenConstraint>(c, std::vector<TokenId>{151645});
  for (auto _ : state) {
    const TokenId id = sampler.sample(logits, {}, constraint->mask(kLogits));
    if (id == 151645) {  // ended (never, with these logits): start again
      constraint = std::make_unique<qwen3::TokenConstraint>(c, std::vector<TokenId>{151645});
      continue;
    }
    constraint->accept(id);
  }
}

void BM_SampleConstrained(benchmark::State& state) { run_constrained(state, qwen3_defaults()); }
void BM_GreedyConstrained(benchmark::State& state) {
  qwen3::SamplingParams p;
  p.temperature = 0;
  run_constrained(state, p);
}

// One decode step of a real model (weights read, logits, sampling), free or inside a JSON string.
void run_decode(benchmark::State& state, bool constrained) {
  const char* dir = std::getenv("QWEN3_BENCH_MODEL");
  if (!dir) {
    state.SkipWithError("set QWEN3_BENCH_MODEL=MODEL_DIR to time decode steps");
    return;
  }
  static const auto model = qwen3::Model::load(dir);
  static const auto model_tokenizer = qwen3::Tokenizer::load(dir);
  static const auto model_vocabulary =
      std::make_shared<const qwen3::TokenVocabulary>(model_tokenizer);
  qwen3::GenerationOptions options;
  options.sampling = qwen3_defaults();
  options.max_tokens = 1 << 20;
  options.eos = {151645};
  if (constrained) {
    auto grammar = std::make_shared<const qwen3::TokenGrammar>(
        qwen3::Grammar::parse(R"(root ::= [^"\\]*)"), model_vocabulary);
    options.grammar =
        qwen3::GrammarConstraint{grammar, qwen3::GrammarConstraint::Reasoning::none, -1, -1};
  }
  qwen3::Sequence sequence(*model, 4096);
  qwen3::Generation g(sequence, model_tokenizer, model_tokenizer.encode("The capital of France is"),
                      options);
  std::vector<std::vector<float>> logits;
  auto step = [&] {
    auto input = g.next_input();
    qwen3::BatchItem item{&g.sequence(), input, false};
    model->step({&item, 1}, logits);
    g.advance(static_cast<int>(input.size()), logits[0]);
  };
  step();  // the prompt and the first sampled token
  for (auto _ : state) step();
  state.counters["tok/s"] =
      benchmark::Counter(double(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_DecodeFree(benchmark::State& state) { run_decode(state, false); }
void BM_DecodeConstrained(benchmark::State& state) { run_decode(state, true); }

BENCHMARK(BM_MaskInString)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MaskAfterValue)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MaskNestedString)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MaskAnyValue)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MaskFirstVisitInString)->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK(BM_SampleFree)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SampleConstrained)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_GreedyFree)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_GreedyConstrained)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DecodeFree)->Unit(benchmark::kMillisecond)->Iterations(48)->Repetitions(3);
BENCHMARK(BM_DecodeConstrained)->Unit(benchmark::kMillisecond)->Iterations(48)->Repetitions(3);

}  // namespace
