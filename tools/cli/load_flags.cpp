// The shared model-loading flags.
#include "load_flags.h"

namespace qwen3::cli {

void LoadFlags::add_to(CLI::App& cmd, bool with_threads) {
  if (with_threads) cmd.add_option("-t,--threads", options.threads, "Threads (0 = one per core)");
  cmd.add_option("--isa", options.isa,
                 "Kernels: auto, amx, avx512, avx2, scalar. amx: bf16 weights' products on AMX tiles (Intel "
                 "Sapphire Rapids and later; exact with f32 activations): faster prompts, slower decode")
      ->capture_default_str();
  cmd.add_option("--quant", options.quant, "Quantize float weights at load time: q8 or q4")
      ->check(CLI::IsMember({"q8", "q4"}));
  cmd.add_flag("--keep-head", options.keep_head, "With --quant: keep embed_tokens and lm_head in their file dtype");
  cmd.add_option("--kv-cache", options.kv_cache,
                 "KV cache element type: f32 (exact), f16 (half the memory and attention reads: faster decode at "
                 "long contexts; logits move by about 1e-3 to 1e-2), bf16 (the same memory, attention as "
                 "AVX512_BF16 dot products; needs --activations bf16), or auto: bf16 with --activations bf16, "
                 "else f16 for q8/q4 weights (lost in their quantization error), f32 for float ones")
      ->check(CLI::IsMember({"auto", "f32", "f16", "bf16"}))
      ->capture_default_str();
  cmd.add_option("--activations", options.activations,
                 "How bf16 weights' products take their input: f32 (exact), or bf16 (rounded, as llama.cpp "
                 "does, for AVX512_BF16 dot products: prompts 1.3-1.8x faster, logits move by up to about 0.2; "
                 "needs a CPU with AVX512_BF16)")
      ->check(CLI::IsMember({"f32", "bf16"}))
      ->capture_default_str();
  cmd.add_flag_callback(
      "--no-mmap", [this] { options.mmap = false; },
      "Read the weights into huge-page memory instead of mapping the file: slower start; faster decode "
      "where the page cache holds the file in 4 KiB pages (bench prints the share in 2 MiB pages) or "
      "its memory is slower (some VMs: compare bench with and without it)");
}

}  // namespace qwen3::cli
