// `qwen3 run MODEL "prompt"`: one completion, streamed, with the model summary and timings.
// The generated text goes to stdout; the summary, timings and --show-probs tables to stderr.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <iostream>
#include <iterator>

#include "cli/commands.h"
#include "cli/json_input.h"
#include "cli/load_flags.h"
#include "cli/measure.h"
#include "cli/model_path.h"
#include "cli/sampling_flags.h"
#include "cli/spec_flags.h"
#include "qwen3/chat.h"
#include "qwen3/error.h"
#include "qwen3/generation.h"
#include "qwen3/grammar.h"
#include "qwen3/reasoning.h"

namespace qwen3::cli {

namespace {

// A token as a reader sees it: its text with whitespace made visible.
std::string show_token(const Tokenizer& tok, TokenId id) {
  TokenId ids[] = {id};
  std::string s = tok.decode(ids), out;
  for (char c : s) out += c == '\n' ? "\\n" : c == '\t' ? "\\t" : std::string(1, c);
  return out.empty() ? "''" : out;
}

const char* stop_description(FinishReason r) {
  switch (r) {
    case FinishReason::eos: return "end-of-sequence token";
    case FinishReason::stop: return "stop string";
    case FinishReason::length: return "token limit";
    case FinishReason::none: return "-";
  }
  return "-";
}

// The constraint of --grammar (grammar text) or --json-schema (a schema file): every token keeps
// the output inside it, after the reasoning when the chat template lets the model think first.
GrammarConstraint output_constraint(const std::string& grammar_file, const std::string& schema_file,
                                    const Tokenizer& tokenizer,
                                    GrammarConstraint::Reasoning reasoning,
                                    const std::vector<TokenId>& eos) {
  std::string text;
  if (!grammar_file.empty()) {
    std::ifstream in(grammar_file, std::ios::binary);
    if (!in) throw Error(ErrorKind::io, grammar_file + ": cannot open file");
    text.assign(std::istreambuf_iterator<char>(in), {});
  } else {
    text = json_schema_grammar(read_ordered_json_file(schema_file));
  }
  auto vocabulary = std::make_shared<const TokenVocabulary>(tokenizer);
  GrammarConstraint c;
  c.grammar = std::make_shared<const TokenGrammar>(Grammar::parse(text), vocabulary);
  c.think_start = vocabulary->added_token("<think>");
  c.think_end = vocabulary->added_token("</think>");
  c.reasoning = reasoning;
  // A complete output ends its turn: <|im_end|> alone where it is an eos token.
  const TokenId im_end = vocabulary->added_token("<|im_end|>");
  if (std::find(eos.begin(), eos.end(), im_end) != eos.end()) c.end_tokens = {im_end};
  return c;
}

}  // namespace

void add_run_command(CLI::App& app) {
  struct Args {
    std::string model, prompt, grammar_file, schema_file;
    SamplingFlags sampling;
    SpecFlags spec;
    int show_probs = 0, ctx = 4096;
    LoadFlags load;
    bool chat = false, no_think = false, verbose = false;
  };
  auto a = std::make_shared<Args>();
  auto* cmd =
      app.add_subcommand("run", "Complete a prompt, streaming the output, then print timings");
  cmd->add_option("model", a->model, kModelArgumentHelp)->required();
  cmd->add_option("prompt", a->prompt, "Prompt text; - reads it from stdin")->required();
  a->sampling.add_to(*cmd);
  cmd->add_option("--show-probs", a->show_probs,
                  "Show the K most likely next tokens at each step (1..20)")
      ->check(CLI::Range(0, 20));
  cmd->add_flag("--chat", a->chat,
                "Wrap the prompt as a user message with the model's chat template");
  cmd->add_flag("--no-think", a->no_think, "With --chat: turn Qwen3's thinking mode off");
  cmd->add_option("-c,--ctx", a->ctx, "Context length (prompt + output), capped by the model")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  auto* grammar =
      cmd->add_option("--grammar", a->grammar_file,
                      "Constrain the output to a grammar file (GBNF-like, docs/grammar.md)")
          ->check(CLI::ExistingFile);
  cmd->add_option("--json-schema", a->schema_file,
                  "Constrain the output to one JSON value matching this JSON Schema file")
      ->check(CLI::ExistingFile)
      ->excludes(grammar);
  a->load.add_to(*cmd);
  a->spec.add_to(*cmd);
  cmd->add_flag("-v,--verbose", a->verbose, "Print the sampling settings and prompt token ids");
  cmd->callback([a] {
    if (a->prompt == "-") a->prompt.assign(std::istreambuf_iterator<char>(std::cin), {});
    const auto dir = resolve_model(a->model);
    const auto t_load = Clock::now();
    // The tokenizer (11 MB of JSON) loads while the weights are mapped.
    auto tokenizer_loading = std::async(std::launch::async, [&] { return Tokenizer::load(dir); });
    auto model = Model::load(dir, a->load.options);
    auto tokenizer = tokenizer_loading.get();
    a->spec.load(*model, tokenizer, a->load.options);
    const double load_s = seconds_since(t_load);
    GenerationOptions options = a->sampling.options(dir, model->config());
    options.top_logprobs = a->show_probs;

    std::vector<TokenId> ids;
    using Reasoning = GrammarConstraint::Reasoning;
    Reasoning reasoning = Reasoning::none;
    if (a->chat) {
      ChatOptions chat;
      chat.enable_thinking = !a->no_think;
      auto messages = nlohmann::ordered_json::array({{{"role", "user"}, {"content", a->prompt}}});
      ids = encode_chat(ChatTemplate::load(dir), tokenizer, messages, chat);
      // Qwen3's reply may open with <think>; Qwen3.5's template opened it in the prompt.
      if (chat.enable_thinking)
        reasoning =
            prompt_opens_think(tokenizer.decode(ids)) ? Reasoning::open : Reasoning::optional;
    } else {
      ids = tokenizer.encode(a->prompt);
    }
    if (!a->grammar_file.empty() || !a->schema_file.empty())
      options.grammar =
          output_constraint(a->grammar_file, a->schema_file, tokenizer, reasoning, options.eos);
    Sequence seq(*model, std::min(a->ctx, model->config().max_position_embeddings));
    Generation g(seq, tokenizer, ids,
                 options);  // checks the prompt fits before anything is printed
    a->spec.attach(g, *model, seq);
    std::fprintf(stderr, "Model:  %s\n", model->config().summary(model->name()).c_str());
    if (a->spec.options.enabled())
      std::fprintf(stderr, "Speculative decoding: %s\n", a->spec.describe().c_str());
    std::fprintf(stderr, "Prompt: %s\n", a->prompt.c_str());
    if (a->verbose) {
      std::fprintf(stderr, "        %zu tokens:", ids.size());
      for (TokenId id : ids) std::fprintf(stderr, " %d", id);
      const auto& s = options.sampling;
      std::fprintf(
          stderr,
          "\nSampling: temperature %g, top_k %d, top_p %g, min_p %g, repetition_penalty %g, "
          "presence_penalty %g, frequency_penalty %g, seed %llu, max_tokens %d\n",
          s.temperature, s.top_k, s.top_p, s.min_p, s.repetition_penalty, s.presence_penalty,
          s.frequency_penalty, static_cast<unsigned long long>(s.seed), options.max_tokens);
      std::fprintf(stderr, "Kernels: %s, %d threads\n",
                   describe_kernels(*model, a->load.options).c_str(), model->threads());
      for (const std::string& note : model->load_notes())
        std::fprintf(stderr, "Converted: %s\n", note.c_str());
      for (const std::string& group : model->unread_tensors())
        std::fprintf(stderr, "Not used: %s, outside the text model\n", group.c_str());
    }
    std::fprintf(stderr, "------------------------------------------------------------\n");
    std::fflush(stderr);
    if (!a->chat) std::fputs(a->prompt.c_str(), stdout);

    const auto t0 = Clock::now();
    double first_s = 0;
    int step = 0;
    generate(*model, g, [&](const GeneratedToken& t) {
      if (step++ == 0) first_s = seconds_since(t0);
      std::fputs(t.text.c_str(), stdout);
      std::fflush(stdout);
      if (a->show_probs) {
        std::string row =
            "  step " + std::to_string(step) + ": " + show_token(tokenizer, t.id) + " <- ";
        for (size_t i = 0; i < t.top.size(); ++i) {
          char prob[32];
          std::snprintf(prob, sizeof prob, " %.4f", t.top[i].prob);
          row += (i ? " / " : "") + show_token(tokenizer, t.top[i].id) + prob;
        }
        std::fprintf(stderr, "\n%s\n", row.c_str());
      }
    });
    const double total_s = seconds_since(t0);
    std::fputs("\n", stdout);
    std::fflush(stdout);
    const int n = g.completion_tokens(), p = g.prompt_tokens();
    const double decode_s = total_s - first_s;
    std::fprintf(stderr, "------------------------------------------------------------\n");
    std::fprintf(stderr, "Stopped: %s after %d tokens\n", stop_description(g.finish_reason()), n);
    if (const auto events = describe_reasoning_events(g.reasoning()->events()); !events.empty())
      std::fprintf(stderr, "Thinking: %s\n", events.c_str());
    std::fprintf(stderr,
                 "Time:    load %.3f s | prefill %d tokens, first token %.0f ms (%.1f tok/s) | "
                 "decode %d tokens %.3f s (%.1f tok/s) | total %.3f s\n",
                 load_s, p, first_s * 1e3, p / first_s, n > 1 ? n - 1 : 0, decode_s,
                 n > 1 ? (n - 1) / decode_s : 0.0, load_s + total_s);
    if (const SpeculationStats* spec = g.speculation())
      std::fprintf(stderr, "%s\n", speculation_summary(*spec).c_str());
    std::fprintf(stderr, "Memory:  peak RSS %.2f GB, %s %.1f MB\n", peak_rss_bytes() / 1e9,
                 seq.recurrent() ? "KV caches, recurrent states and snapshots" : "KV cache",
                 seq.bytes() / 1e6);
  });
}

}  // namespace qwen3::cli
