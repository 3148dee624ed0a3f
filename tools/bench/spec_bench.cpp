// Speculative decoding's benchmark: the verification step's cost by K, and decode speed with and
// without speculation on the same prompt, interleaved.
#include "bench/spec_bench.h"

#include <cstdio>
#include <optional>
#include <span>

#include "bench/bench_stats.h"
#include "cli/measure.h"
#include "qwen3/generation.h"

namespace qwen3::cli {

namespace {

// Seconds of a step of `tokens` (rewindable, every row's logits, as a verification is) after the
// sequence's `base` tokens, which it is cut back to afterwards.
double verify_seconds(Model& model, Sequence& seq, std::span<const TokenId> tokens, int base) {
  constexpr int kSteps = 4;  // a few steps a sample: one decode step is tens of milliseconds
  std::vector<std::vector<float>> logits;
  const auto t0 = Clock::now();
  for (int i = 0; i < kSteps; ++i) {
    const BatchItem item{&seq, tokens, true, true};
    model.step({&item, 1}, logits);
    seq.truncate(base);
  }
  return seconds_since(t0) / kSteps;
}

struct DecodeRun {
  double tok_s = 0;
  SpeculationStats stats;
};

// Greedy decode of `n` tokens after `prompt` (fed untimed), speculating when `spec` is on. With
// `forced`, the model's choice at each row is forced to the text's next token (teacher forcing):
// a model that re-types its input, which random weights are not.
DecodeRun decode(Model& model, const Tokenizer& tokenizer, const SpecFlags* spec,
                 const std::vector<TokenId>& prompt, int n, const std::vector<TokenId>* forced) {
  Sequence seq(model, static_cast<int>(prompt.size()) + n + 32);
  GenerationOptions options;
  options.sampling.temperature = 0;
  options.max_tokens = n;
  Generation g(seq, tokenizer, prompt, options);
  if (spec)
    g.speculate(make_proposer(spec->options, model, seq, spec->draft.get()), spec->options.tokens,
                model.pass_rows());
  const size_t vocab = model.config().vocab_size;
  std::vector<std::vector<float>> logits;
  auto step = [&] {
    const BatchItem item = g.next_item(512);
    model.step({&item, 1}, logits);
    const size_t done = g.completion_tokens();
    if (forced)
      for (size_t row = 0; row < logits[0].size() / vocab && done + row < forced->size(); ++row)
        logits[0][row * vocab + (*forced)[done + row]] = 1e30f;
    g.advance(static_cast<int>(item.tokens.size()), logits[0]);
  };
  while (g.completion_tokens() == 0) step();  // the prompt and the first token
  const auto t0 = Clock::now();
  while (!g.done()) step();
  DecodeRun run{(g.completion_tokens() - 1) / seconds_since(t0), {}};
  if (g.speculation()) run.stats = *g.speculation();
  return run;
}

}  // namespace

void bench_speculation(Model& model, const Tokenizer& tokenizer, const SpecFlags& spec,
                       const SpecBench& bench, nlohmann::json& report, bool json) {
  const int vocab = model.config().vocab_size, K = spec.options.tokens;
  nlohmann::json out = {{"proposer", spec.describe()}, {"copy", bench.copy}};

  // Verification cost: K + 1 rows against one, each repetition's ratios taken side by side.
  {
    const auto context = bench_tokens(64, vocab);
    Sequence seq(model, 64 + K + 1);
    const BatchItem item{&seq, context};
    model.step({&item, 1});
    const auto rows = bench_tokens(K + 1, vocab);
    std::vector<std::vector<double>> ratios(K + 1);
    verify_seconds(model, seq, std::span(rows).first(1), 64);  // warm-up
    for (int r = 0; r < bench.reps; ++r) {
      const double one = verify_seconds(model, seq, std::span(rows).first(1), 64);
      for (int k = 1; k <= K; ++k)
        ratios[k].push_back(verify_seconds(model, seq, std::span(rows).first(k + 1), 64) / one);
    }
    if (!json) std::printf("verification step of K+1 tokens / one decode step:");
    for (int k = 1; k <= K; ++k) {
      const double ratio = stats(ratios[k]).median;
      out["verify_cost"].push_back({{"k", k}, {"ratio", ratio}});
      if (!json) std::printf(" K=%d %.2f", k, ratio);
    }
    if (!json) std::printf("\n");
  }

  // Decode with and without speculation, each repetition's pair side by side.
  const std::vector<TokenId> prompt = bench_tokens(bench.copy ? 1000 : 16, vocab);
  const std::vector<TokenId>* forced = bench.copy ? &prompt : nullptr;
  std::vector<double> plain, fast, speedups;
  SpeculationStats total;
  decode(model, tokenizer, &spec, prompt, 8, forced);  // warm-up: the draft's pages too
  for (int r = 0; r < bench.reps; ++r) {
    plain.push_back(decode(model, tokenizer, nullptr, prompt, bench.gen, forced).tok_s);
    const DecodeRun s = decode(model, tokenizer, &spec, prompt, bench.gen, forced);
    fast.push_back(s.tok_s);
    speedups.push_back(s.tok_s / plain.back());
    total.steps += s.stats.steps;
    total.proposed += s.stats.proposed;
    total.accepted += s.stats.accepted;
    total.emitted += s.stats.emitted;
  }
  const double speedup = stats(speedups).median;
  out["plain_tok_s"] = stats(plain).median;
  out["spec_tok_s"] = stats(fast).median;
  out["speedup"] = speedup;
  out["acceptance"] = total.proposed ? double(total.accepted) / total.proposed : 0.0;
  out["tokens_per_step"] = total.steps ? double(total.emitted) / total.steps : 0.0;
  report["speculation"] = out;
  if (json) return;
  const std::string test = "tg" + std::to_string(bench.gen) + (bench.copy ? " copy" : "");
  std::printf("%-16s %10.2f tok/s plain, %.2f tok/s with --spec %s: %.2fx\n", test.c_str(),
              stats(plain).median, stats(fast).median, spec.describe().c_str(), speedup);
  std::printf("%s\n", speculation_summary(total).c_str());
}

}  // namespace qwen3::cli
