// The shared model-loading flags.
#include "load_flags.h"

namespace qwen3::cli {

std::string describe_kernels(const Model& model, const LoadOptions& options) {
  const std::string isa = model.isa(), prompt = model.prompt_isa();
  if (options.activations != Activations::automatic)
    return isa + " (--activations " + to_string(options.activations) + ")";
  if (prompt == isa)
    return isa + " (--activations auto: exact f32 for every row, as " + model.prompt_note() + ")";
  return prompt + " for prompt tokens, " + isa +
         " for generated ones (--activations auto: prompts bounded by multiply-adds take bf16 dot "
         "products, within mean KL 1e-5 of exact; decode, bounded by memory, stays exact f32; "
         "--exact for f32 everywhere)";
}

void LoadFlags::add_to(CLI::App& cmd, bool with_threads) {
  if (with_threads) cmd.add_option("-t,--threads", options.threads, "Threads (0 = one per core)");
  add_enum_option(
      cmd, "--isa", options.isa, {Isa::automatic, Isa::amx, Isa::avx512, Isa::avx2, Isa::scalar},
      "Kernels: auto, amx, avx512, avx2, scalar. amx: bf16 weights' products on AMX tiles (Intel "
      "Sapphire Rapids and later; exact with f32 activations): faster prompts, slower decode");
  add_enum_option(cmd, "--quant", options.quant, {WeightQuant::q8, WeightQuant::q4},
                  "Quantize float weights at load time: q8 or q4 (MoE routers stay in float)")
      ->default_str("");
  cmd.add_flag("--keep-head", options.keep_head,
               "With --quant: keep embed_tokens and lm_head in their file dtype");
  add_enum_option(
      cmd, "--kv-cache", options.kv_cache,
      {KvCacheType::automatic, KvCacheType::f32, KvCacheType::f16, KvCacheType::bf16,
       KvCacheType::q8},
      "KV cache element type: f32 (exact), f16 (half the memory and attention reads: faster decode "
      "at long contexts; logits move by about 1e-3 to 1e-2), bf16 (the same memory, attention as "
      "AVX512_BF16 dot products; needs --activations bf16), q8 (int8 with a scale per 32 values: "
      "about a quarter of f32's memory and reads), or auto: bf16 with --activations bf16, else f16 "
      "for q8/q4 weights (lost in their quantization error), f32 for float ones");
  auto* activations = add_enum_option(
      cmd, "--activations", options.activations,
      {Activations::automatic, Activations::f32, Activations::bf16},
      "How bf16 weights' products take their input: f32 (exact), bf16 (rounded, as llama.cpp "
      "does, for AVX512_BF16 dot products: faster prompts, logits move by up to about 0.2; "
      "needs a CPU with AVX512_BF16), or auto: bf16 for prompt tokens where bf16 dot products "
      "outrun float ones (AMD CPUs with AVX512_BF16, --isa amx), f32 for generated tokens and "
      "everywhere else (docs/precision.md)");
  cmd.add_flag_callback(
         "--exact", [this] { options.activations = Activations::f32; },
         "The exact float32 path (--activations f32): within 1e-5 of Hugging Face's float32 "
         "logits on every CPU")
      ->excludes(activations);
  cmd.add_flag_callback(
      "--no-mmap", [this] { options.mmap = false; },
      "Read the weights into huge-page memory instead of mapping the file: slower start; faster "
      "decode "
      "where the page cache holds the file in 4 KiB pages (bench prints the share in 2 MiB pages) "
      "or "
      "its memory is slower (some VMs: compare bench with and without it)");
}

}  // namespace qwen3::cli
