// `qwen3 random-model`: writes a random-weight model folder in the Hugging Face layout (default:
// exactly Qwen3-0.6B's shape), for speed and memory work without real weights.
#include <optional>
#include <string>

#include "cli/commands.h"
#include "cli/load_flags.h"
#include "qwen3/error.h"
#include "qwen3/random_model.h"

namespace qwen3::cli {

void add_random_model_command(CLI::App& app) {
  struct Args {
    std::string out, preset = "qwen3-0.6b";
    RandomModelOptions options{.tokenizer_from = "tests/fixtures/models/qwen3-tiny"};
    std::optional<int> hidden, intermediate, layers, heads, kv_heads, head_dim, vocab, experts,
        experts_per_tok, moe_intermediate;
  };
  auto a = std::make_shared<Args>();
  std::string presets;
  for (const std::string& p : random_model_presets()) presets += (presets.empty() ? "" : ", ") + p;
  auto* cmd = app.add_subcommand(
      "random-model",
      "Write a random-weight model folder of a published shape (default: Qwen3-0.6B, bf16, "
      "tied embeddings with lm_head.weight also stored), or directly in q8/q4");
  cmd->add_option("out", a->out, "Output folder")->required();
  cmd->add_option("--preset", a->preset, "Shape: " + presets)->capture_default_str();
  add_enum_option(
      *cmd, "--quant", a->options.quant, {WeightQuant::q8, WeightQuant::q4},
      "Write the matrices as q8_0 or q4_0 (the `qwen3 quantize` format; MoE routers stay bf16)")
      ->default_str("");
  cmd->add_option("--tokenizer-from", a->options.tokenizer_from,
                  "Folder with tokenizer.json and tokenizer_config.json")
      ->capture_default_str();
  cmd->add_option("--seed", a->options.seed)->capture_default_str();
  // Overrides of the preset's shape.
  const auto positive = CLI::PositiveNumber;
  cmd->add_option("--hidden", a->hidden, "hidden_size")->check(positive);
  cmd->add_option("--intermediate", a->intermediate, "intermediate_size (dense MLP layers)")
      ->check(positive);
  cmd->add_option("--layers", a->layers, "num_hidden_layers")->check(positive);
  cmd->add_option("--heads", a->heads, "num_attention_heads")->check(positive);
  cmd->add_option("--kv-heads", a->kv_heads, "num_key_value_heads")->check(positive);
  cmd->add_option("--head-dim", a->head_dim, "head_dim")->check(positive);
  cmd->add_option("--vocab", a->vocab, "vocab_size")->check(positive);
  cmd->add_option("--experts", a->experts, "num_experts (MoE presets)")->check(positive);
  cmd->add_option("--experts-per-tok", a->experts_per_tok, "num_experts_per_tok (MoE presets)")
      ->check(positive);
  cmd->add_option("--moe-intermediate", a->moe_intermediate, "moe_intermediate_size (MoE presets)")
      ->check(positive);
  cmd->callback([a] {
    ModelConfig c = random_model_preset(a->preset);
    const std::pair<std::optional<int>*, int*> overrides[] = {
        {&a->hidden, &c.hidden_size},
        {&a->intermediate, &c.intermediate_size},
        {&a->layers, &c.num_hidden_layers},
        {&a->heads, &c.num_attention_heads},
        {&a->kv_heads, &c.num_key_value_heads},
        {&a->head_dim, &c.head_dim},
        {&a->vocab, &c.vocab_size},
        {&a->experts, &c.num_experts},
        {&a->experts_per_tok, &c.num_experts_per_tok},
        {&a->moe_intermediate, &c.moe_intermediate_size}};
    for (auto [given, field] : overrides)
      if (*given) {
        if (!*field)  // an MoE field on a dense preset
          throw Error(ErrorKind::invalid_argument,
                      "preset " + a->preset + " has no experts to size");
        *field = **given;
      }
    write_random_model(a->out, c, a->options);
  });
}

}  // namespace qwen3::cli
