// The speculative-decoding flags.
#include "cli/spec_flags.h"

#include <cstdio>

#include "cli/model_path.h"
#include "qwen3/error.h"

namespace qwen3::cli {

void SpecFlags::add_to(CLI::App& cmd) {
  cmd.add_option(
      "--spec", options.kind,
      "Speculative decoding (exact: the same output as without): ngram (copy what followed the "
      "same tokens earlier in the text), mtp (Qwen3.5's multi-token-prediction head), or a draft "
      "model's folder or Hub id with the same tokenizer");
  tokens = cmd.add_option("--spec-tokens", options.tokens,
                          "With --spec: the most tokens proposed a step (1..16; fewer while "
                          "acceptance is low)")
               ->capture_default_str();
}

void SpecFlags::load(const Model& model, const Tokenizer& tokenizer,
                     const LoadOptions& load_options) {
  if (!options.enabled() && tokens->count())
    throw Error(ErrorKind::invalid_argument, "--spec-tokens needs --spec");
  if (!options.enabled()) return;
  options.validate();
  if (options.kind == "mtp" && !model.config().mtp_num_hidden_layers)
    throw Error(ErrorKind::unsupported, "--spec mtp: " + model.name() +
                                            " has no multi-token-prediction head (no mtp.* "
                                            "tensors)");
  if (options.kind != "ngram" && options.kind != "mtp")
    draft = load_draft_model(resolve_model(options.kind), model, tokenizer, load_options);
}

void SpecFlags::attach(Generation& g, Model& model, Sequence& sequence) {
  if (options.enabled())
    g.speculate(make_proposer(options, model, sequence, draft.get()), options.tokens,
                model.pass_rows());
}

std::string SpecFlags::describe() const {
  if (!options.enabled()) return "";
  const std::string kind = draft ? "draft " + draft->name() : options.kind;
  return kind + ", up to " + std::to_string(options.tokens) + " tokens a step";
}

std::string speculation_summary(const SpeculationStats& s) {
  char line[160];
  std::snprintf(line, sizeof line,
                "Speculation: %d steps, %.0f%% of %d drafts accepted, %.2f tokens a step", s.steps,
                s.proposed ? 100.0 * s.accepted / s.proposed : 0.0, s.proposed,
                s.steps ? double(s.emitted) / s.steps : 0.0);
  return line;
}

}  // namespace qwen3::cli
