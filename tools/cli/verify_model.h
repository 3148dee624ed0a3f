// Checking the engine's logits against a reference file in the fixture format
// (per-position top-10 logits and logsumexp, hidden states, last logits, greedy steps).
#pragma once

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "qwen3/model.h"

namespace qwen3::cli {

struct ModelCaseResult {
  std::string name;
  int positions = 0;
  double max_logit_error = 0;      // over every listed id at every prompt position
  double max_logsumexp_error = 0;  // prompt positions and greedy steps
  double max_hidden_error = -1;    // -1 when the case has no hidden_states
  double max_last_logits_error = -1;
  double max_step_error = 0;  // listed logits of the teacher-forced greedy steps
  int greedy_steps = 0;       // steps whose reference margin is decisive (> 2 tol)
  int greedy_agree = 0;       // of those, steps where our argmax is the reference token
  bool pass(double tol) const;
};

// Runs one case: a full forward of the prompt (chunked through the KV cache when longer than
// `max_chunk`), then the reference greedy tokens fed one at a time.
ModelCaseResult verify_model_case(Model& model, const nlohmann::json& reference_case, double tol,
                                  int max_chunk = 512);

// An MTP reference case ("kind": "mtp"): the prompt through the model, its final-normed hidden
// states and the next tokens through the MTP head, every row's listed logits and logsumexp
// (max_logit_error, max_logsumexp_error) and its argmax where the reference's margin is decisive
// (greedy_steps, greedy_agree).
ModelCaseResult verify_mtp_case(Model& model, const nlohmann::json& reference_case, double tol);

// Every case, one line each, then a summary line; returns 0 when all pass, 1 otherwise.
int verify_model_reference(Model& model, const nlohmann::json& reference, double tol,
                           std::FILE* out);

}  // namespace qwen3::cli
