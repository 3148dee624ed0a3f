// Each qwen3 subcommand registers itself on the top-level CLI11 app.
#pragma once

#include <CLI/CLI.hpp>

namespace qwen3::cli {

void add_template_command(CLI::App& app);

}  // namespace qwen3::cli
