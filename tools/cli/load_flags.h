// The model-loading flags every command that runs the model shares: threads, kernels, load-time
// quantization, and mapping or reading the weights.
#pragma once

#include <CLI/CLI.hpp>

#include "qwen3/model.h"

namespace qwen3::cli {

struct LoadFlags {
  LoadOptions options;
  bool no_mmap = false;

  // with_threads = false for commands that take their own thread list (bench).
  void add_to(CLI::App& cmd, bool with_threads = true);
  LoadOptions load_options() const;  // options with mmap = !no_mmap
};

}  // namespace qwen3::cli
