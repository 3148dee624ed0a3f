// `qwen3 bench`: prompt-processing and generation speed in the spirit of llama-bench, with the
// achieved weight-read bandwidth, time to first token, load time and peak RSS.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "bench/bench_stats.h"
#include "bench/spec_bench.h"
#include "cli/commands.h"
#include "cli/load_flags.h"
#include "cli/measure.h"
#include "cli/model_path.h"
#include "qwen3/error.h"
#include "qwen3/model.h"
#include "qwen3/sampler.h"

namespace qwen3::cli {

namespace {

// A sequence with room for `room` more tokens after `depth` already prefilled (untimed): the
// context a test starts from, as llama-bench's -d.
Sequence at_depth(Model& m, int depth, int room) {
  Sequence s(m, depth + room);
  if (depth > 0) {
    auto ids = bench_tokens(depth, m.config().vocab_size);
    BatchItem item{&s, ids, false};
    m.step({&item, 1});
  }
  return s;
}

// Seconds to prefill n tokens (the LM head included) into s after its first `depth` tokens, the
// rest cut off first: a test's repetitions reuse its sequence's cache, as llama-bench reuses its
// context, so the cache's first-touch page faults (slow in a VM) fall in the warm-up run.
double prefill_seconds(Model& m, Sequence& s, int n, int depth) {
  auto ids = bench_tokens(n, m.config().vocab_size);
  s.truncate(depth);
  BatchItem item{&s, ids, false};
  auto t0 = Clock::now();
  m.step({&item, 1});
  return seconds_since(t0);
}

// Tokens per second of n one-token decode steps of seqs stepped together, each cut back to its
// first `depth` tokens first.
double generation_speed(Model& m, std::vector<Sequence>& seqs, int n, int depth) {
  const int batch = static_cast<int>(seqs.size());
  std::vector<TokenId> next(batch, 1);
  std::vector<BatchItem> items;
  for (int b = 0; b < batch; ++b) {
    seqs[b].truncate(depth);
    items.push_back({.sequence = &seqs[b], .tokens = {&next[b], 1}, .generated = true});
  }
  std::vector<std::vector<float>> logits;
  auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) {
    m.step(items, logits);
    for (int b = 0; b < batch; ++b) next[b] = argmax(logits[b]);
  }
  return double(n) * batch / seconds_since(t0);
}

}  // namespace

void add_bench_command(CLI::App& app) {
  struct Args {
    std::string model;
    cli::LoadFlags load;
    std::vector<int> prompts = {16, 128, 512};
    std::vector<int> threads = {0}, batches = {1};
    int gen = 128, reps = 5, depth = 0;
    bool json = false, spec_copy = false;
    SpecFlags spec;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      "bench", "Measure prefill (ppN) and decode (tgN) speed, bandwidth, TTFT, RSS");
  cmd->add_option("model", a->model, kModelArgumentHelp)->required();
  cmd->add_option("-p,--prompt", a->prompts, "Prompt lengths for ppN tests (0 = skip)")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("-n,--gen", a->gen, "Tokens for the tgN test (0 = skip)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option(
         "-r,--reps", a->reps,
         "Repetitions of each test (each ppN after one untimed run; a test reuses one sequence, as "
         "llama-bench reuses its context)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("-t,--threads", a->threads, "Thread counts to test (0 = one per core)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option(
         "-b,--batch", a->batches,
         "Sequences decoded together in tgN; a list (1,8) runs each size's repetitions in turn and "
         "gives each larger size's speed over size 1's (the median of adjacent repetitions' "
         "ratios)")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("-d,--depth", a->depth,
                  "Tokens already in the context (prefilled, untimed) before each test")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  a->load.add_to(*cmd, false);
  a->spec.add_to(*cmd);
  cmd->add_flag("--spec-copy", a->spec_copy,
                "With --spec: the model re-types a 1,000-token prompt (its choice forced to the "
                "text, as a model that copies would choose), the workload prompt lookup is for")
      ->needs("--spec");
  cmd->add_flag("--json", a->json, "Print one JSON object instead of a table");
  cmd->callback([a] {
    nlohmann::json report = {{"tests", nlohmann::json::array()}};
    const auto dir = resolve_model(a->model);
    if (a->spec.options.enabled() && a->gen == 0)
      throw Error(ErrorKind::invalid_argument, "--spec needs tokens to decode (-n > 0)");
    std::optional<Tokenizer> tokenizer;  // speculation's runs decode through Generation
    if (a->spec.options.enabled()) tokenizer.emplace(Tokenizer::load(dir));
    for (int threads : a->threads) {
      auto t0 = Clock::now();
      LoadOptions options = a->load.options;
      options.threads = threads;
      auto model = Model::load(dir, options);
      const double load_s = seconds_since(t0);
      const double gb_per_token = model->weight_bytes() / 1e9;
      // Time to first token: a 5-token prompt's prefill including the LM head, page cache warm.
      // Each from a new sequence, as a user's first prompt, its cache allocated.
      auto first_token_seconds = [&] {
        Sequence s(*model, 5);
        return prefill_seconds(*model, s, 5, 0);
      };
      first_token_seconds();  // warm-up: touch every weight once
      const double huge = huge_page_share(dir);
      std::vector<double> ttft;
      for (int r = 0; r < a->reps; ++r) ttft.push_back(first_token_seconds());
      if (!a->json) {
        const std::string where =
            huge < 0 ? "in memory"
                     : "mapped (" + std::to_string(int(huge * 100 + 0.5)) + "% in 2 MiB pages)";
        std::printf(
            "%s | %s kernels | %d threads | weights %s | %s KV cache | load %.3f s | TTFT (5-token "
            "prompt) "
            "%.1f ms | %.3f GB weights/token\n",
            model->config().summary(model->name()).c_str(),
            describe_kernels(*model, options).c_str(), model->threads(), where.c_str(),
            model->kv_cache(), load_s, stats(ttft).median * 1e3, gb_per_token);
        std::printf("%-16s %10s %10s %10s %10s %10s %7s\n", "test", "tok/s", "sd", "median", "GB/s",
                    "read GB/s", "% read");
      }
      // reads: for a decode test, the GB/s of a plain read of the weights just before each
      // repetition, so that each repetition's share of it is taken in the same moment of a
      // shared machine; none for prefill.
      auto add = [&](const std::string& name, const std::vector<double>& v,
                     const std::vector<double>& reads, int batch) {
        const Stats s = stats(v);
        const bool decode = !reads.empty();
        const double gbs = decode ? s.median * gb_per_token / batch : 0;
        std::vector<double> shares;
        for (size_t r = 0; r < reads.size(); ++r)
          shares.push_back(v[r] * gb_per_token / batch / reads[r]);
        const double read = decode ? stats(reads).median : 0,
                     share = decode ? stats(shares).median : 0;
        if (!a->json) {
          std::printf("%-16s %10.2f %10.2f %10.2f", name.c_str(), s.mean, s.sd, s.median);
          decode ? std::printf(" %10.2f %10.2f %6.0f%%\n", gbs, read, 100 * share)
                 : std::printf(" %10s %10s %7s\n", "-", "-", "-");
        }
        report["tests"].push_back({{"test", name},
                                   {"threads", model->threads()},
                                   {"isa", model->isa()},
                                   {"prompt_isa", model->prompt_isa()},
                                   {"tok_s_mean", s.mean},
                                   {"tok_s_sd", s.sd},
                                   {"tok_s_median", s.median},
                                   {"gb_s", gbs},
                                   {"read_gb_s", read},
                                   {"read_share", share},
                                   {"load_s", load_s},
                                   {"ttft_ms", stats(ttft).median * 1e3},
                                   {"mmap", options.mmap},
                                   {"huge_page_share", huge},
                                   {"depth", a->depth},
                                   {"kv_cache", model->kv_cache()},
                                   {"batch", batch}});
      };
      const std::string at = a->depth ? " @ d" + std::to_string(a->depth) : "";
      size_t sequence_bytes = 0;  // one sequence's state after the last test
      for (int p : a->prompts) {
        if (p == 0) continue;
        Sequence s = at_depth(*model, a->depth, p);
        prefill_seconds(*model, s, p, a->depth);  // warm-up, as llama-bench's
        std::vector<double> v;
        for (int r = 0; r < a->reps; ++r) v.push_back(p / prefill_seconds(*model, s, p, a->depth));
        add("pp" + std::to_string(p) + at, v, {}, 1);
        sequence_bytes = s.bytes();
      }
      if (a->gen > 0) {
        // Each batch size's repetition r runs next to the others' r: a drift of a shared machine
        // then moves a pair alike, and the ratio of the two stays.
        const size_t sizes = a->batches.size();
        std::vector<std::vector<Sequence>> seqs(sizes);
        std::vector<std::vector<double>> v(sizes), reads(sizes);
        for (size_t i = 0; i < sizes; ++i)
          for (int b = 0; b < a->batches[i]; ++b)
            seqs[i].push_back(at_depth(*model, a->depth, a->gen + 1));
        for (int r = 0; r < a->reps; ++r)
          for (size_t i = 0; i < sizes; ++i) {
            std::vector<double> read;
            for (int k = 0; k < 3; ++k) read.push_back(model->read_speed());
            reads[i].push_back(stats(read).median);
            v[i].push_back(generation_speed(*model, seqs[i], a->gen, a->depth));
          }
        auto name = [&](int batch) {
          return "tg" + std::to_string(a->gen) + (batch > 1 ? "x" + std::to_string(batch) : "") +
                 at;
        };
        const auto one = std::find(a->batches.begin(), a->batches.end(), 1) - a->batches.begin();
        std::string speedups;
        for (size_t i = 0; i < sizes; ++i) {
          add(name(a->batches[i]), v[i], reads[i], a->batches[i]);
          if (a->batches[i] == 1 || one == std::ssize(a->batches)) continue;
          std::vector<double> ratios;
          for (int r = 0; r < a->reps; ++r) ratios.push_back(v[i][r] / v[one][r]);
          const double speedup = stats(ratios).median;
          report["tests"].back()["speedup_vs_batch_1"] = speedup;
          char line[160];
          std::snprintf(line, sizeof line, "%s / %s: %.2fx\n", name(a->batches[i]).c_str(),
                        name(1).c_str(), speedup);
          speedups += line;
        }
        if (!a->json) std::printf("%s", speedups.c_str());
        sequence_bytes = seqs.front().front().bytes();
      }
      if (tokenizer) {
        a->spec.load(*model, *tokenizer, options);
        bench_speculation(*model, *tokenizer, a->spec, {a->gen, a->reps, a->spec_copy}, report,
                          a->json);
      }
      // KV caches of the attention layers only, and a hybrid model's fixed recurrent states.
      report["sequence_state_mb"] = sequence_bytes / 1e6;
      if (!a->json && sequence_bytes)
        std::printf("sequence state %.1f MB (KV caches%s)\n", sequence_bytes / 1e6,
                    model->config().linear_num_value_heads
                        ? " of the attention layers, recurrent states and their snapshots"
                        : "");
      report["model"] = model->config().summary(model->name());
      report["gb_per_token"] = gb_per_token;
    }
    const double rss_mb = peak_rss_bytes() / 1e6;
    report["peak_rss_mb"] = rss_mb;
    if (a->json) std::printf("%s\n", report.dump(2).c_str());
    else std::printf("peak RSS %.0f MB\n", rss_mb);
  });
}

}  // namespace qwen3::cli
