// `qwen3 serve MODEL_DIR`: an OpenAI-compatible HTTP server over one model.
#include <csignal>
#include <memory>

#include "cli/commands.h"
#include "cli/load_flags.h"
#include "cli/model_path.h"
#include "qwen3/chat.h"
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

void add_serve_command(CLI::App& app) {
  struct Args {
    std::string model, name;
    int ctx = 4096;
    cli::LoadFlags load;
    server::SchedulerOptions scheduler;
    server::HttpOptions http;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("serve",
                                 "OpenAI-compatible HTTP server (chat and completions, streaming)");
  cmd->add_option("model", args->model, "Model folder, or a Hub id in the Hugging Face cache")
      ->required();
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
  cmd->add_option("--chunk", args->scheduler.chunk, "Prompt tokens per request per step")
      ->check(CLI::Range(1, 65536));
  cmd->add_option("--max-body", args->http.max_body, "Largest request body in bytes (413 above)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--timeout", args->http.timeout_s,
                  "Seconds before a request is ended (finish_reason length)")
      ->check(CLI::PositiveNumber);
  args->load.add_to(*cmd);
  cmd->callback([args] {
    // A client that hangs up mid-write must fail that write, not kill the server.
    std::signal(SIGPIPE, SIG_IGN);
    const auto dir = cli::resolve_model(args->model);
    auto model = Model::load(dir, args->load.options);
    auto tokenizer = Tokenizer::load(dir);
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
    // Each streaming client holds a connection thread; waiting ones and a few spare too.
    args->http.threads =
        args->scheduler.max_seqs + static_cast<int>(args->scheduler.max_queue) + 16;

    server::Metrics metrics;
    server::Scheduler scheduler(*model, tokenizer, args->scheduler, metrics);
    std::fprintf(stderr, "qwen3 serve: %s, %d x %d-token sequences, %s kernels\n",
                 served.name.c_str(), args->scheduler.max_seqs, served.context, model->isa());
    server::serve_http(args->http, served, scheduler, metrics);
  });
}

}  // namespace qwen3::cli
