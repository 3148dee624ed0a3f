// The server with --spec: speculating requests batched with each other (and with the prefix cache
// on) give the tokens each gives alone without speculation, and /metrics counts the drafts.
#include <gtest/gtest.h>

#include "qwen3/model.h"
#include "qwen3/tokenizer.h"
#include "server/scheduler.h"
#include "server/scheduler_runner.h"
#include "test_paths.h"

namespace qwen3::server {
namespace {

std::vector<std::vector<TokenId>> run(Scheduler& scheduler,
                                      const std::vector<std::vector<TokenId>>& prompts) {
  GenerationOptions options;
  options.sampling.temperature = 0;
  options.max_tokens = 24;
  return run_jobs(scheduler, prompts, options);
}

TEST(SpecScheduler, BatchedSpeculationEqualsPlainSolo) {
  const auto dir = test::fixtures() / "models" / "qwen35-tiny";
  auto model = Model::load(dir, {.threads = 2});
  const Tokenizer tokenizer = Tokenizer::load(dir);
  std::vector<std::vector<TokenId>> prompts{
      {5, 6, 7, 8, 5, 6, 7}, {9}, std::vector<TokenId>(20, 3), {4, 5, 4, 5, 4}};
  for (const std::string kind : {"ngram", "mtp"}) {
    Metrics metrics;
    SchedulerOptions spec{.max_seqs = 4, .context = 128, .chunk = 8, .cache_bytes = 64 << 20};
    spec.spec = {kind, 3};
    Scheduler batched(*model, tokenizer, spec, metrics);
    const auto together = run(batched, prompts);
    const auto again = run(batched, prompts);  // now from the prefix cache's snapshots
    Metrics plain_metrics;
    Scheduler single(*model, tokenizer, {.max_seqs = 1, .context = 128}, plain_metrics);
    for (size_t i = 0; i < prompts.size(); ++i) {
      const auto solo = run(single, {prompts[i]})[0];
      EXPECT_EQ(together[i], solo) << kind << " " << i;
      EXPECT_EQ(again[i], solo) << kind << " " << i;
    }
    const std::string text = metrics.render();
    EXPECT_NE(text.find("qwen3_spec_draft_tokens_total"), std::string::npos);
    if (kind == "mtp")  // the random model's text need not repeat, for prompt lookup to draft
      EXPECT_EQ(text.find("qwen3_spec_steps_total 0\n"), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace qwen3::server
