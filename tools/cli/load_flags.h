// The model-loading flags every command that runs the model shares: threads, kernels, load-time
// quantization, and mapping or reading the weights.
#pragma once

#include <CLI/CLI.hpp>

#include "qwen3/model.h"

namespace qwen3::cli {

struct LoadFlags {
  LoadOptions options;

  // with_threads = false for commands that take their own thread list (bench). The flags write
  // into options, so *this must outlive parsing (the commands keep it in their shared Args).
  void add_to(CLI::App& cmd, bool with_threads = true);
};

}  // namespace qwen3::cli
