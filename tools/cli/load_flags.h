// The model-loading flags every command that runs the model shares: threads, kernels, load-time
// quantization, and mapping or reading the weights.
#pragma once

#include <CLI/CLI.hpp>
#include <initializer_list>
#include <string>
#include <vector>

#include "qwen3/model.h"

namespace qwen3::cli {

// An option taking one of an enum's names (as qwen3::to_string writes them): any other value is
// refused with the list of accepted ones.
template <class E>
CLI::Option* add_enum_option(CLI::App& cmd, const std::string& name, E& value,
                             std::initializer_list<E> choices, const std::string& help) {
  std::vector<std::string> names;
  for (E e : choices) names.push_back(to_string(e));
  auto set = [&value, choices = std::vector<E>(choices)](const std::string& given) {
    for (E e : choices)
      if (given == to_string(e)) value = e;
  };
  return cmd.add_option_function<std::string>(name, set, help)
      ->check(CLI::IsMember(names))
      ->default_str(to_string(value));
}

// The kernels a model runs, and why: "avx512" or, with automatic activations on a CPU with
// AVX512_BF16, "avx512-bf16 for prompt tokens, avx512 for generated ones (...)".
std::string describe_kernels(const Model& model, const LoadOptions& options);

struct LoadFlags {
  LoadOptions options;

  // with_threads = false for commands that take their own thread list (bench). The flags write
  // into options, so *this must outlive parsing (the commands keep it in their shared Args).
  void add_to(CLI::App& cmd, bool with_threads = true);
};

}  // namespace qwen3::cli
