// Checking the engine's logits against a reference file in the fixture format.
#include "cli/verify_model.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "qwen3/error.h"
#include "qwen3/sampler.h"

namespace qwen3::cli {

namespace {

// Largest |ours - reference| over the listed [id, logit] pairs; -1 id means an id out of range.
double listed_error(const float* row, int vocab, const nlohmann::json& top) {
  double err = 0;
  for (auto& pair : top) {
    int id = pair[0].get<int>();
    if (id < 0 || id >= vocab)
      throw Error(ErrorKind::format,
                  "reference lists token id " + std::to_string(id) + " outside the vocabulary");
    err = std::max(err, std::abs(double(row[id]) - pair[1].get<double>()));
  }
  return err;
}

std::vector<TokenId> ids_of(const nlohmann::json& j, const char* key) {
  std::vector<TokenId> ids;
  if (j.contains(key))
    for (auto& v : j[key]) ids.push_back(v.get<TokenId>());
  return ids;
}

}  // namespace

bool ModelCaseResult::pass(double tol) const {
  return max_logit_error <= tol && max_logsumexp_error <= tol && max_hidden_error <= tol &&
         max_last_logits_error <= tol && max_step_error <= tol && greedy_agree == greedy_steps;
}

ModelCaseResult verify_model_case(Model& model, const nlohmann::json& c, double tol,
                                  int max_chunk) {
  const int V = model.config().vocab_size;
  ModelCaseResult r;
  r.name = c.value("name", "?");
  const std::vector<TokenId> prompt = ids_of(c, "prompt_ids");
  if (prompt.empty())
    throw Error(ErrorKind::format, "reference case " + r.name + ": no prompt_ids");
  const auto& positions = c.at("positions");
  Sequence seq(model, static_cast<int>(prompt.size() +
                                       c.value("greedy_ids", nlohmann::json::array()).size()));

  // Hidden states are only observable in a single full forward.
  std::map<std::string, std::vector<float>> hidden;
  Observer keep = [&](std::string_view name, const float* data, int rows, int cols) {
    hidden[std::string(name)].assign(data, data + size_t(rows) * cols);
  };
  const bool single = static_cast<int>(prompt.size()) <= max_chunk;
  std::vector<float> last;
  for (size_t p0 = 0; p0 < prompt.size(); p0 += max_chunk) {
    const size_t n = std::min(prompt.size() - p0, size_t(max_chunk));
    BatchItem item{&seq, std::span<const TokenId>(prompt).subspan(p0, n), true};
    auto logits =
        model.step({&item, 1}, single && c.contains("hidden_states") ? &keep : nullptr)[0];
    for (size_t t = 0; t < n; ++t) {
      const float* row = &logits[t * V];
      const auto& ref = positions.at(p0 + t);
      r.max_logit_error = std::max(r.max_logit_error, listed_error(row, V, ref.at("top")));
      r.max_logsumexp_error =
          std::max(r.max_logsumexp_error,
                   std::abs(logsumexp({row, size_t(V)}) - ref.at("logsumexp").get<double>()));
      ++r.positions;
    }
    last.assign(logits.end() - V, logits.end());
  }
  if (c.contains("last_logits")) {
    r.max_last_logits_error = 0;
    const auto& ref = c["last_logits"];
    for (int i = 0; i < V; ++i)
      r.max_last_logits_error =
          std::max(r.max_last_logits_error, std::abs(last[i] - ref[i].get<double>()));
  }
  if (single && c.contains("hidden_states")) {
    r.max_hidden_error = 0;
    const auto& hs = c["hidden_states"];
    const int layers = model.config().num_hidden_layers;
    for (int i = 0; i <= layers; ++i) {
      const std::string name = i == 0        ? "embed"
                               : i == layers ? "norm"
                                             : "layers." + std::to_string(i - 1);
      const auto& ours = hidden.at(name);
      const int D = model.config().hidden_size;
      for (size_t t = 0; t < hs[i].size(); ++t)
        for (int d = 0; d < D; ++d)
          r.max_hidden_error =
              std::max(r.max_hidden_error, std::abs(ours[t * D + d] - hs[i][t][d].get<double>()));
    }
  }

  // Teacher forcing: feed the reference's greedy tokens, check each step's distribution, and
  // our argmax wherever the reference's choice is decisive.
  const std::vector<TokenId> greedy = ids_of(c, "greedy_ids");
  const auto& steps = c.value("greedy_steps", nlohmann::json::array());
  auto check_choice = [&](const float* row, double margin, TokenId expected) {
    if (margin <= 2 * tol) return;
    ++r.greedy_steps;
    r.greedy_agree += argmax({row, size_t(V)}) == expected;
  };
  if (!greedy.empty()) check_choice(last.data(), c.value("greedy_first_margin", 1.0), greedy[0]);
  for (size_t i = 0; i < greedy.size() && i < steps.size(); ++i) {
    BatchItem item{&seq, std::span<const TokenId>(&greedy[i], 1), false};
    auto logits = model.step({&item, 1})[0];
    const auto& ref = steps[i];
    r.max_step_error = std::max(r.max_step_error, listed_error(logits.data(), V, ref.at("top")));
    r.max_logsumexp_error = std::max(
        r.max_logsumexp_error, std::abs(logsumexp(logits) - ref.at("logsumexp").get<double>()));
    if (i + 1 < greedy.size()) check_choice(logits.data(), ref.value("margin", 1.0), greedy[i + 1]);
  }
  return r;
}

ModelCaseResult verify_mtp_case(Model& model, const nlohmann::json& c, double tol) {
  const int V = model.config().vocab_size;
  ModelCaseResult r;
  r.name = c.value("name", "?");
  const std::vector<TokenId> prompt = ids_of(c, "prompt_ids");
  if (prompt.size() < 2)
    throw Error(ErrorKind::format, "reference case " + r.name + ": fewer than 2 prompt_ids");
  Sequence seq(model, static_cast<int>(prompt.size()));
  std::vector<float> hidden;  // [T, D] after the final norm: what the LM head reads
  Observer keep = [&](std::string_view name, const float* data, int rows, int cols) {
    if (name == "norm") hidden.assign(data, data + size_t(rows) * cols);
  };
  BatchItem item{&seq, prompt, false};
  model.step({&item, 1}, &keep);
  // Row t pairs h_t with x_{t+1}: rows 0 .. T-2.
  const auto logits = model.mtp_step(
      seq, {.next_tokens = std::span<const TokenId>(prompt).subspan(1), .hidden = hidden.data()});
  for (const auto& p : c.at("positions")) {
    const int t = p.at("t").get<int>();
    if (t < 0 || t + 1 >= static_cast<int>(prompt.size()))
      throw Error(ErrorKind::format, "reference case " + r.name + ": row " + std::to_string(t) +
                                         " outside the prompt");
    const float* row = &logits[size_t(t) * V];
    ++r.positions;
    r.max_logit_error = std::max(r.max_logit_error, listed_error(row, V, p.at("top")));
    r.max_logsumexp_error =
        std::max(r.max_logsumexp_error,
                 std::abs(logsumexp({row, size_t(V)}) - p.at("logsumexp").get<double>()));
    if (p.value("top1_margin", 0.0) > 2 * tol) {
      ++r.greedy_steps;
      r.greedy_agree += argmax({row, size_t(V)}) == p.at("top")[0][0].get<TokenId>();
    }
  }
  return r;
}

int verify_model_reference(Model& model, const nlohmann::json& reference, double tol,
                           std::FILE* out) {
  int passed = 0, total = 0;
  const bool mtp = reference.value("kind", "") == "mtp";
  for (const auto& c : reference.at("cases")) {
    ModelCaseResult r = mtp ? verify_mtp_case(model, c, tol) : verify_model_case(model, c, tol);
    const bool ok = r.pass(tol);
    passed += ok;
    ++total;
    std::fprintf(out,
                 "%-4s %-12s %5d positions  max|logit err| %.2e  max|lse err| %.2e  steps err %.2e",
                 ok ? "ok" : "FAIL", r.name.c_str(), r.positions, r.max_logit_error,
                 r.max_logsumexp_error, r.max_step_error);
    if (r.max_hidden_error >= 0) std::fprintf(out, "  hidden %.2e", r.max_hidden_error);
    if (r.max_last_logits_error >= 0)
      std::fprintf(out, "  last_logits %.2e", r.max_last_logits_error);
    std::fprintf(out, "  greedy %d/%d\n", r.greedy_agree, r.greedy_steps);
  }
  std::fprintf(out, "model: %d/%d cases within %.1e\n", passed, total, tol);
  return passed == total ? 0 : 1;
}

}  // namespace qwen3::cli
