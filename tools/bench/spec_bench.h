// `qwen3 bench --spec`: what speculative decoding costs and gains on this machine.
#pragma once

#include <nlohmann/json.hpp>

#include "cli/spec_flags.h"
#include "qwen3/model.h"
#include "qwen3/tokenizer.h"

namespace qwen3::cli {

struct SpecBench {
  int gen = 128;      // tokens decoded per run
  int reps = 5;       // runs of each kind, interleaved
  bool copy = false;  // the model re-types a 1,000-token prompt (teacher forcing)
};

// Prints (unless json) and adds to report["speculation"]: a verification step of K + 1 tokens
// against a one-token step for K = 1 .. --spec-tokens, then decode with and without speculation,
// run after run, with the acceptance and the median of the runs' speed-ups.
void bench_speculation(Model& model, const Tokenizer& tokenizer, const SpecFlags& spec,
                       const SpecBench& bench, nlohmann::json& report, bool json);

}  // namespace qwen3::cli
