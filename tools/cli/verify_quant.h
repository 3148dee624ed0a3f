// How far a quantized model's next-token distributions are from the float model's.
#pragma once

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "qwen3/model.h"

namespace qwen3::cli {

struct QuantAccuracy {
  int positions = 0;   // every prompt position and teacher-forced continuation step
  double mean_kl = 0;  // KL(float || quantized) of the next-token distribution, nats
  double max_kl = 0;
  double top1_agreement = 0;             // share of positions where both argmaxes agree
  double max_logit_error = 0;            // max |logit difference| over the whole vocabulary
  void add(const QuantAccuracy& other);  // pools positions
};

// Over every position, and over those whose logits choose a token in a generation: the prompt's
// last and the continuation's (the only ones automatic activations compute exactly, apart from
// the last prompt one).
struct CaseAccuracy {
  QuantAccuracy all, choosing;
};

// One reference case: its prompt_ids, as a prompt, then its greedy_ids as generated tokens
// (teacher forcing), run through both models with logits at every position.
CaseAccuracy quant_accuracy_case(Model& base, Model& quantized,
                                 const nlohmann::json& reference_case);

// Every case, one line each, then the pooled figures, over all positions and over the choosing
// ones; returns them.
CaseAccuracy quant_accuracy_reference(Model& base, Model& quantized,
                                      const nlohmann::json& reference, std::FILE* out);

}  // namespace qwen3::cli
