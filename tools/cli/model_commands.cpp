// `qwen3 generate` (greedy ids in, ids out) and `qwen3 verify` (parity against a reference file).
#include <cstdio>
#include <sstream>
#include <string>

#include "cli/commands.h"
#include "cli/json_input.h"
#include "cli/load_flags.h"
#include "cli/model_path.h"
#include "cli/spec_flags.h"
#include "cli/verify_chat.h"
#include "cli/verify_model.h"
#include "cli/verify_tokenizer.h"
#include "qwen3/chat.h"
#include "qwen3/error.h"
#include "qwen3/generation.h"
#include "qwen3/model.h"
#include "qwen3/tokenizer.h"

namespace qwen3::cli {

namespace {

std::vector<TokenId> parse_ids(const std::string& text) {
  std::vector<TokenId> ids;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    long v = -1;
    try {
      v = std::stol(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || v < 0 || v > INT32_MAX)
      throw Error(ErrorKind::invalid_argument, "--ids: \"" + item + "\" is not a token id");
    ids.push_back(static_cast<TokenId>(v));
  }
  if (ids.empty()) throw Error(ErrorKind::invalid_argument, "--ids: no token ids given");
  return ids;
}

}  // namespace

void add_generate_command(CLI::App& app) {
  struct Args {
    std::string model, ids;
    int n = 20;
    LoadFlags load;
    SpecFlags spec;
  };
  auto args = std::make_shared<Args>();
  auto* cmd =
      app.add_subcommand("generate", "Greedy generation from token ids; prints the new ids");
  cmd->add_option("model", args->model, kModelArgumentHelp)->required();
  cmd->add_option("--ids", args->ids,
                  "Prompt token ids, comma-separated (e.g. 785,6722,315,9625,374)")
      ->required();
  cmd->add_option("-n,--max-tokens", args->n, "Tokens to generate")->check(CLI::NonNegativeNumber);
  args->load.add_to(*cmd);
  args->spec.add_to(*cmd);
  cmd->callback([args] {
    auto prompt = parse_ids(args->ids);
    const auto dir = resolve_model(args->model);
    auto model = Model::load(dir, args->load.options);
    const auto tokenizer = Tokenizer::load(dir);
    args->spec.load(*model, tokenizer, args->load.options);
    // Every one of the n tokens, eos or not: greedy ids out, nothing decoded or stopped.
    GenerationOptions options;
    options.sampling.temperature = 0;
    options.max_tokens = args->n;
    Sequence seq(*model, std::min<int>(model->config().max_position_embeddings,
                                       prompt.size() + args->n + 1));
    Generation g(seq, tokenizer, prompt, options);
    args->spec.attach(g, *model, seq);
    bool first = true;
    generate(*model, g, [&](const GeneratedToken& t) {
      std::printf(first ? "%d" : ",%d", t.id);
      std::fflush(stdout);
      first = false;
    });
    std::printf("\n");
  });
}

void add_verify_command(CLI::App& app) {
  struct Args {
    std::string model, reference;
    double tol = 1e-3;
    LoadFlags load;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      "verify",
      "Check the engine against a reference file (fixture format); exit 1 on any mismatch");
  cmd->add_option("model", args->model, kModelArgumentHelp)->required();
  cmd->add_option("reference", args->reference,
                  "Reference JSON (model logits, tokenizer or chat-template cases)")
      ->required();
  cmd->add_option("--tol", args->tol, "Largest allowed |logit error|")->check(CLI::PositiveNumber);
  args->load.add_to(*cmd);
  cmd->callback([args] {
    // The kind of reference is told by its fields: tokenizer cases, chat renderings, or logits.
    auto ref = read_json_file(args->reference);
    const auto dir = resolve_model(args->model);
    int rc = 0;
    if (ref.is_object() && (ref.contains("encode") || ref.contains("decode"))) {
      rc = verify_tokenizer_reference(Tokenizer::load(dir), ref, stdout);
    } else if (ref.is_object() && ref.contains("cases") && ref["cases"].is_array() &&
               !ref["cases"].empty() && ref["cases"][0].contains("rendered")) {
      auto ordered = read_ordered_json_file(args->reference);  // keep key order for tojson
      auto tokenizer = Tokenizer::load(dir);
      rc = verify_chat_reference(ChatTemplate::load(dir), ordered, stdout, &tokenizer);
    } else if (ref.is_object() && ref.contains("cases")) {
      // Held to Hugging Face's float32 logits: the exact path unless asked otherwise.
      LoadOptions options = args->load.options;
      if (options.activations == Activations::automatic) options.activations = Activations::f32;
      auto model = Model::load(dir, options);
      std::printf("%s, %s kernels, %d threads\n", model->config().summary(model->name()).c_str(),
                  describe_kernels(*model, options).c_str(), model->threads());
      rc = verify_model_reference(*model, ref, args->tol, stdout);
    } else {
      throw Error(
          ErrorKind::format,
          args->reference + ": not a reference file (no \"cases\", \"encode\" or \"decode\")");
    }
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace qwen3::cli
