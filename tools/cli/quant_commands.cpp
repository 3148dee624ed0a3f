// `qwen3 quantize` (write a q8_0 / q4_0 folder) and `qwen3 quant-eval` (its accuracy against float).
#include <unistd.h>

#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "cli/json_input.h"
#include "cli/verify_quant.h"
#include "qwen3/error.h"
#include "qwen3/model.h"
#include "qwen3/quantize.h"

namespace qwen3::cli {

void add_quantize_command(CLI::App& app) {
  struct Args {
    std::string model, out, type;
    bool keep_head = false;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("quantize", "Write a copy of a model folder with q8_0 or q4_0 weights (docs/quantization.md)");
  cmd->add_option("model", a->model, "Model folder (bf16, f16 or f32 weights)")->required();
  cmd->add_option("out", a->out, "Output folder, created if needed")->required();
  cmd->add_option("--type", a->type, "q8 (8-bit blocks) or q4 (4-bit blocks)")->required()->check(CLI::IsMember({"q8", "q4"}));
  cmd->add_flag("--keep-head", a->keep_head, "Keep embed_tokens and lm_head in their original dtype");
  cmd->callback([a] {
    const bool bar = isatty(STDERR_FILENO);
    quantize_model(a->model, a->out, {a->type, a->keep_head}, [bar](uint64_t done, uint64_t total) {
      if (!bar) return;
      const int width = 40, filled = total ? int(width * done / total) : width;
      std::fprintf(stderr, "\r[%s%s] %3d%%", std::string(filled, '#').c_str(), std::string(width - filled, ' ').c_str(),
                   total ? int(100 * done / total) : 100);
      if (done == total) std::fprintf(stderr, "\n");
    });
    std::printf("wrote %s (%s%s)\n", a->out.c_str(), a->type.c_str(), a->keep_head ? ", head kept" : "");
  });
}

void add_quant_eval_command(CLI::App& app) {
  struct Args {
    std::string model, type, reference, activations = "f32", kv_cache = "auto";
    bool keep_head = false;
    int threads = 0;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("quant-eval", "KL divergence, top-1 agreement and max logit error of load-time "
                                               "quantization, bf16 activations or a lower-precision KV cache, "
                                               "against the exact float model");
  cmd->add_option("model", a->model, "Model folder (float weights)")->required();
  cmd->add_option("reference", a->reference, "Reference JSON with cases of prompt_ids and greedy_ids")->required();
  cmd->add_option("--type", a->type, "q8 or q4 (none: the float weights)")->check(CLI::IsMember({"q8", "q4"}));
  cmd->add_option("--activations", a->activations, "f32 or bf16: how the evaluated model's bf16 products take x")
      ->check(CLI::IsMember({"f32", "bf16"}))
      ->capture_default_str();
  cmd->add_option("--kv-cache", a->kv_cache, "The evaluated model's KV cache: auto (as run's), f32, f16 or bf16")
      ->check(CLI::IsMember({"auto", "f32", "f16", "bf16"}))
      ->capture_default_str();
  cmd->add_flag("--keep-head", a->keep_head, "Keep embed_tokens and lm_head in their original dtype");
  cmd->add_option("-t,--threads", a->threads, "Threads (0 = one per core)");
  cmd->callback([a] {
    auto ref = read_json_file(a->reference);
    if (!ref.is_object() || !ref.contains("cases"))
      throw Error(ErrorKind::format, a->reference + ": not a reference file (no \"cases\")");
    if (a->type.empty() && a->activations == "f32" && (a->kv_cache == "auto" || a->kv_cache == "f32"))
      throw Error(ErrorKind::invalid_argument,
                  "nothing to evaluate: give --type q8|q4, --activations bf16 or --kv-cache f16|bf16");
    auto base = Model::load(a->model, {.threads = a->threads});
    auto quant = Model::load(a->model, {.threads = a->threads, .quant = a->type, .keep_head = a->keep_head,
                                        .kv_cache = a->kv_cache, .activations = a->activations});
    std::printf("%s: %s%s%s, %s KV cache against float\n", base->config().summary(base->name()).c_str(),
                a->type.empty() ? "float weights" : a->type.c_str(), a->keep_head ? " (head kept)" : "",
                a->activations == "bf16" ? ", bf16 activations" : "", quant->kv_cache());
    quant_accuracy_reference(*base, *quant, ref, stdout);
  });
}

}  // namespace qwen3::cli
