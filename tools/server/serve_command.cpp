// `qwen3 serve MODEL_DIR`: an OpenAI-compatible HTTP server over one model.
#include <charconv>
#include <csignal>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include "cli/commands.h"
#include "cli/load_flags.h"
#include "cli/model_path.h"
#include "cli/spec_flags.h"
#include "qwen3/chat.h"
#include "qwen3/error.h"
#include "qwen3/generation.h"
#include "qwen3/grammar.h"
#include "qwen3/model.h"
#include "qwen3/sampler.h"
#include "qwen3/tokenizer.h"
#include "server/grammar_cache.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/openai_request.h"
#include "server/scheduler.h"

namespace qwen3::cli {

namespace {

// --cache-mb: a whole number of MiB, 0 for no cache; empty for the default.
std::optional<size_t> parse_cache_mb(const std::string& text) {
  if (text.empty()) return std::nullopt;
  long long mb = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), mb);
  if (ec != std::errc() || end != text.data() + text.size())
    throw Error(
        ErrorKind::invalid_argument,
        "--cache-mb: \"" + text + "\" is not a whole number of MiB (0 turns the cache off)");
  if (mb < 0)
    throw Error(ErrorKind::invalid_argument,
                "--cache-mb must be >= 0 (0 turns the cache off), got " + text);
  if (mb > (1LL << 30))  // a petabyte: a typo, not a budget
    throw Error(ErrorKind::invalid_argument, "--cache-mb " + text + " is larger than 2^30 MiB");
  return size_t(mb) << 20;
}

// The default budget: a quarter of the memory the kernel reports available once the model is
// loaded, which leaves the rest to the running sequences (--max-seqs x --ctx) and to the system.
// 0 (no cache) where /proc/meminfo cannot be read.
size_t default_cache_bytes() {
  std::ifstream in("/proc/meminfo");
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string key;
    size_t kb = 0;
    if (fields >> key >> kb && key == "MemAvailable:") return kb * 1024 / 4;
  }
  return 0;
}

}  // namespace

void add_serve_command(CLI::App& app) {
  struct Args {
    std::string model, name, cache_mb;
    int ctx = 4096;
    cli::LoadFlags load;
    cli::SpecFlags spec;
    server::SchedulerOptions scheduler;
    server::HttpOptions http;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("serve",
                                 "OpenAI-compatible HTTP server (chat and completions, streaming)");
  cmd->add_option("model", args->model, kModelArgumentHelp)->required();
  cmd->add_option("--host", args->http.host, "Address to bind (127.0.0.1: this machine only)");
  cmd->add_option("--port", args->http.port, "Port (0 = any free port, printed)")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--api-key", args->http.api_key, "Require 'Authorization: Bearer KEY' on /v1/*");
  cmd->add_option("--name", args->name,
                  "Model name reported to clients (default: the folder name)");
  cmd->add_option("--ctx", args->ctx, "Context tokens per sequence (capped at the model's maximum)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-seqs", args->scheduler.max_seqs, "Requests generated concurrently")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--max-queue", args->scheduler.max_queue,
                  "Requests waiting for a slot before 429");
  cmd->add_option("--cache-mb", args->cache_mb,
                  "Prefix cache: MiB kept for finished requests' sequences, whose prompt prefixes "
                  "later requests reuse (0 = off; default: a quarter of the memory available "
                  "at start)")
      ->type_name("MIB");
  cmd->add_option("--chunk", args->scheduler.chunk, "Prompt tokens per request per step")
      ->check(CLI::Range(1, 65536));
  cmd->add_option("--max-body", args->http.max_body, "Largest request body in bytes (413 above)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--timeout", args->http.timeout_s,
                  "Seconds before a request is ended (finish_reason length)")
      ->check(CLI::PositiveNumber);
  args->load.add_to(*cmd);
  args->spec.add_to(*cmd);
  cmd->callback([args] {
    // A client that hangs up mid-write must fail that write, not kill the server.
    std::signal(SIGPIPE, SIG_IGN);
    const auto cache_bytes = parse_cache_mb(args->cache_mb);  // before the slow load
    const auto dir = cli::resolve_model(args->model);
    auto model = Model::load(dir, args->load.options);
    auto tokenizer = Tokenizer::load(dir);
    args->spec.load(*model, tokenizer, args->load.options);
    auto chat = ChatTemplate::load(dir);
    server::ServedModel served;
    served.name = args->name.empty() ? model->name() : args->name;
    served.tokenizer = &tokenizer;
    served.chat = &chat;
    served.defaults = SamplingParams::from_generation_config(dir);
    served.eos = eos_tokens(dir, model->config());
    served.context = std::min(args->ctx, model->config().max_position_embeddings);
    served.vocab_size = model->config().vocab_size;
    // Each token's bytes once, for the masks of constrained replies (~0.2 s at start).
    server::GrammarCache grammars(std::make_shared<const TokenVocabulary>(tokenizer));
    served.grammars = &grammars;
    served.tool_syntax = server::tool_syntax_of_template(chat.source());
    args->scheduler.context = served.context;
    args->scheduler.cache_bytes = cache_bytes.value_or(default_cache_bytes());
    args->scheduler.spec = args->spec.options;
    args->scheduler.draft = args->spec.draft.get();
    // Each streaming client holds a connection thread; waiting ones and a few spare too.
    args->http.threads =
        args->scheduler.max_seqs + static_cast<int>(args->scheduler.max_queue) + 16;

    server::Metrics metrics;
    server::Scheduler scheduler(*model, tokenizer, args->scheduler, metrics);
    std::fprintf(
        stderr, "qwen3 serve: %s, %d x %d-token sequences, %s kernels, prefix cache %zu MiB%s%s\n",
        served.name.c_str(), args->scheduler.max_seqs, served.context,
        cli::describe_kernels(*model, args->load.options).c_str(),
        args->scheduler.cache_bytes >> 20, args->spec.options.enabled() ? ", speculation: " : "",
        args->spec.describe().c_str());
    server::serve_http(args->http, served, scheduler, metrics);
  });
}

}  // namespace qwen3::cli
