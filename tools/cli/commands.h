// Each qwen3 subcommand registers itself on the top-level CLI11 app.
#pragma once

#include <CLI/CLI.hpp>

namespace qwen3::cli {

// The help of every command's MODEL argument (model_path.h resolves it).
inline constexpr const char* kModelArgumentHelp =
    "Model folder, GGUF file (Qwen3, Qwen3-MoE, Qwen3.5; F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, "
    "Q5_1, Q2_K-Q6_K, IQ4_NL, IQ4_XS), or a Hub id in the Hugging Face cache (Qwen/Qwen3-0.6B)";

void add_generate_command(CLI::App& app);
void add_verify_command(CLI::App& app);
void add_random_model_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_chat_command(CLI::App& app);
void add_tokenize_command(CLI::App& app);
void add_template_command(CLI::App& app);
void add_serve_command(CLI::App& app);  // tools/server
void add_quantize_command(CLI::App& app);
void add_quant_eval_command(CLI::App& app);
void add_pull_command(CLI::App& app);

}  // namespace qwen3::cli
