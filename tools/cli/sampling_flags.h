// The sampling and generation flags that `run` and `chat` share.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "qwen3/generation.h"

namespace qwen3::cli {

struct SamplingFlags {
  std::optional<float> temperature, top_p, min_p, repetition_penalty, presence_penalty,
      frequency_penalty;
  std::optional<int> top_k;
  std::optional<uint64_t> seed;
  int max_tokens = 256;
  std::vector<std::string> stop;
  std::optional<int> thinking_budget;
  std::string loop_guard = "close";  // close, penalize or off

  void add_to(CLI::App& cmd);
  // generation_config.json's defaults, overridden by the flags given; eos ids from the model.
  GenerationOptions options(const std::filesystem::path& model_dir,
                            const ModelConfig& config) const;
};

// What the thinking budget and the loop guard did to a reply, for stderr ("" when nothing).
std::string describe_reasoning_events(const std::vector<ReasoningEvent>& events);

}  // namespace qwen3::cli
