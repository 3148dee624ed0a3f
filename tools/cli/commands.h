// Each qwen3 subcommand registers itself on the top-level CLI11 app.
#pragma once

#include <CLI/CLI.hpp>

namespace qwen3::cli {

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
