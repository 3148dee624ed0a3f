// `qwen3 quantize` (write a q8_0 / q4_0 folder) and `qwen3 quant-eval` (its accuracy against
// float).
#include <unistd.h>

#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "cli/json_input.h"
#include "cli/load_flags.h"
#include "cli/verify_quant.h"
#include "qwen3/error.h"
#include "qwen3/model.h"
#include "qwen3/quantize.h"

namespace qwen3::cli {

void add_quantize_command(CLI::App& app) {
  struct Args {
    std::string model, out;
    WeightQuant type = WeightQuant::q8;
    bool keep_head = false;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      "quantize",
      "Write a copy of a model folder with q8_0 or q4_0 weights (docs/quantization.md)");
  cmd->add_option("model", a->model, "Model folder (bf16, f16 or f32 weights)")->required();
  cmd->add_option("out", a->out, "Output folder, created if needed")->required();
  add_enum_option(*cmd, "--type", a->type, {WeightQuant::q8, WeightQuant::q4},
                  "q8 (8-bit blocks) or q4 (4-bit blocks)")
      ->required();
  cmd->add_flag("--keep-head", a->keep_head,
                "Keep embed_tokens and lm_head in their original dtype");
  cmd->callback([a] {
    const bool bar = isatty(STDERR_FILENO);
    quantize_model(a->model, a->out, {a->type, a->keep_head}, [bar](uint64_t done, uint64_t total) {
      if (!bar) return;
      const int width = 40, filled = total ? int(width * done / total) : width;
      std::fprintf(stderr, "\r[%s%s] %3d%%", std::string(filled, '#').c_str(),
                   std::string(width - filled, ' ').c_str(), total ? int(100 * done / total) : 100);
      if (done == total) std::fprintf(stderr, "\n");
    });
    std::printf("wrote %s (%s%s)\n", a->out.c_str(), to_string(a->type),
                a->keep_head ? ", head kept" : "");
  });
}

void add_quant_eval_command(CLI::App& app) {
  struct Args {
    std::string model, reference;
    WeightQuant type = WeightQuant::none;
    Activations activations = Activations::f32;
    KvCacheType kv_cache = KvCacheType::automatic;
    bool keep_head = false;
    int threads = 0;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("quant-eval",
                                 "KL divergence, top-1 agreement and max logit error of load-time "
                                 "quantization, bf16 activations or a lower-precision KV cache, "
                                 "against the exact float model");
  cmd->add_option("model", a->model, "Model folder (float weights)")->required();
  cmd->add_option("reference", a->reference,
                  "Reference JSON with cases of prompt_ids and greedy_ids")
      ->required();
  add_enum_option(*cmd, "--type", a->type, {WeightQuant::q8, WeightQuant::q4},
                  "q8 or q4 (none: the float weights)")
      ->default_str("");
  add_enum_option(*cmd, "--activations", a->activations,
                  {Activations::automatic, Activations::f32, Activations::bf16},
                  "f32, bf16 or auto: how the evaluated model's bf16 products take x (auto: "
                  "bf16 for the prompt, f32 for the continuation, where the CPU has AVX512_BF16)");
  add_enum_option(*cmd, "--kv-cache", a->kv_cache,
                  {KvCacheType::automatic, KvCacheType::f32, KvCacheType::f16, KvCacheType::bf16,
                   KvCacheType::q8},
                  "The evaluated model's KV cache: auto (as run's), f32, f16, bf16 or q8");
  cmd->add_flag("--keep-head", a->keep_head,
                "Keep embed_tokens and lm_head in their original dtype");
  cmd->add_option("-t,--threads", a->threads, "Threads (0 = one per core)");
  cmd->callback([a] {
    auto ref = read_json_file(a->reference);
    if (!ref.is_object() || !ref.contains("cases"))
      throw Error(ErrorKind::format, a->reference + ": not a reference file (no \"cases\")");
    if (a->type == WeightQuant::none && a->activations == Activations::f32 &&
        (a->kv_cache == KvCacheType::automatic || a->kv_cache == KvCacheType::f32))
      throw Error(ErrorKind::invalid_argument,
                  "nothing to evaluate: give --type q8|q4, --activations bf16|auto or --kv-cache "
                  "f16|bf16|q8");
    auto base = Model::load(a->model, {.threads = a->threads, .activations = Activations::f32});
    auto quant = Model::load(a->model, {.threads = a->threads,
                                        .quant = a->type,
                                        .keep_head = a->keep_head,
                                        .kv_cache = a->kv_cache,
                                        .activations = a->activations});
    const std::string activations = a->activations == Activations::f32
                                        ? ""
                                        : std::string(", ") + to_string(a->activations) +
                                              " activations (prompt: " + quant->prompt_isa() +
                                              ", continuation: " + quant->isa() + ")";
    std::printf("%s: %s%s%s, %s KV cache against float\n",
                base->config().summary(base->name()).c_str(),
                a->type == WeightQuant::none ? "float weights" : to_string(a->type),
                a->keep_head ? " (head kept)" : "", activations.c_str(), quant->kv_cache());
    quant_accuracy_reference(*base, *quant, ref, stdout);
  });
}

}  // namespace qwen3::cli
