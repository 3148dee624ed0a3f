// The sampling and generation flags that `run` and `chat` share.
#include "cli/sampling_flags.h"

#include <limits>
#include <random>

namespace qwen3::cli {

void SamplingFlags::add_to(CLI::App& cmd) {
  cmd.add_option("-n,--max-tokens", max_tokens, "New tokens at most")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--temp,--temperature", temperature,
                 "Temperature; 0 = greedy (default: generation_config.json)");
  cmd.add_option("--top-k", top_k, "Keep the k most likely tokens; 0 = off");
  cmd.add_option("--top-p", top_p, "Nucleus: smallest set reaching probability p, in (0, 1]");
  cmd.add_option("--min-p", min_p, "Drop tokens below min_p x the best token's probability");
  cmd.add_option("--repeat-penalty", repetition_penalty,
                 "Repetition penalty (Hugging Face), 1 = off");
  cmd.add_option("--presence-penalty", presence_penalty, "Presence penalty (OpenAI), in [-2, 2]");
  cmd.add_option("--frequency-penalty", frequency_penalty,
                 "Frequency penalty (OpenAI), in [-2, 2]");
  cmd.add_option("--seed", seed, "Random seed (default: random); the same seed repeats a run");
  cmd.add_option("--stop", stop, "Stop string (repeatable); generation ends before it");
  cmd.add_option("--thinking-budget", thinking_budget,
                 "Close the <think> block after N thinking tokens, at the next sentence end "
                 "(forced within 32 more)")
      ->check(CLI::Range(0, std::numeric_limits<int>::max()));
  cmd.add_option("--loop-guard", loop_guard,
                 "When the thinking repeats itself: close the <think> block, penalize (raise the "
                 "presence penalty, close if it loops again) or off")
      ->check(CLI::IsMember({"close", "penalize", "off"}))
      ->capture_default_str();
}

GenerationOptions SamplingFlags::options(const std::filesystem::path& dir,
                                         const ModelConfig& config) const {
  GenerationOptions o;
  o.sampling = SamplingParams::from_generation_config(dir);
  if (temperature) o.sampling.temperature = *temperature;
  if (top_k) o.sampling.top_k = *top_k;
  if (top_p) o.sampling.top_p = *top_p;
  if (min_p) o.sampling.min_p = *min_p;
  if (repetition_penalty) o.sampling.repetition_penalty = *repetition_penalty;
  if (presence_penalty) o.sampling.presence_penalty = *presence_penalty;
  if (frequency_penalty) o.sampling.frequency_penalty = *frequency_penalty;
  o.sampling.seed = seed ? *seed : std::random_device{}();
  o.max_tokens = max_tokens;
  o.stop = stop;
  o.eos = eos_tokens(dir, config);
  o.reasoning = ReasoningOptions{.thinking_budget = thinking_budget,
                                 .loop_action = loop_guard == "off"        ? LoopAction::off
                                                : loop_guard == "penalize" ? LoopAction::penalize
                                                                           : LoopAction::close};
  o.validate();
  return o;
}

std::string describe_reasoning_events(const std::vector<ReasoningEvent>& events) {
  std::string out;
  for (const auto& e : events) {
    if (!out.empty()) out += "; ";
    out += e.cause == ReasoningEvent::Cause::thinking_budget ? "thinking budget reached"
                                                             : "thinking loop detected";
    out += e.action == ReasoningEvent::Action::closed_thinking ? ", think block closed"
                                                               : ", presence penalty raised";
    out += " after " + std::to_string(e.reasoning_tokens) + " thinking tokens";
  }
  return out;
}

}  // namespace qwen3::cli
