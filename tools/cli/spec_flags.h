// The speculative-decoding flags of run, generate, chat, serve and bench: --spec and --spec-tokens.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "qwen3/generation.h"
#include "qwen3/speculative.h"

namespace qwen3::cli {

struct SpecFlags {
  SpeculativeOptions options;
  std::unique_ptr<Model> draft;   // --spec DIR's model, once loaded
  CLI::Option* tokens = nullptr;  // --spec-tokens, to refuse it without --spec

  void add_to(CLI::App& cmd);
  // Loads --spec DIR's model with the model's kernels and threads, checking its tokenizer; and
  // --spec mtp's head is checked to exist; --spec-tokens without --spec is refused. Call once the
  // model is loaded.
  void load(const Model& model, const Tokenizer& tokenizer, const LoadOptions& load_options);
  // Puts g on speculation when --spec was given.
  void attach(Generation& g, Model& model, Sequence& sequence);
  // "mtp, up to 4 tokens a step" for the header; "" when off.
  std::string describe() const;
};

// "Speculation: 40 steps, 61% of 160 drafts accepted, 3.4 tokens a step" (run's and chat's
// summary).
std::string speculation_summary(const SpeculationStats& stats);

}  // namespace qwen3::cli
