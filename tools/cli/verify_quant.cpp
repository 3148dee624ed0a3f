// Comparing a quantized model's logits with the float model's: KL, top-1 agreement, max error.
#include "cli/verify_quant.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "qwen3/error.h"
#include "qwen3/sampler.h"

namespace qwen3::cli {

void QuantAccuracy::add(const QuantAccuracy& o) {
  const int n = positions + o.positions;
  if (!n) return;
  mean_kl = (mean_kl * positions + o.mean_kl * o.positions) / n;
  top1_agreement = (top1_agreement * positions + o.top1_agreement * o.positions) / n;
  max_kl = std::max(max_kl, o.max_kl);
  max_logit_error = std::max(max_logit_error, o.max_logit_error);
  positions = n;
}

namespace {

// Logits at every position: the prompt's first n ids as a prompt, the rest as generated tokens.
std::vector<float> all_logits(Model& m, const std::vector<TokenId>& ids, size_t n) {
  Sequence seq(m, static_cast<int>(ids.size()));
  const std::span<const TokenId> all(ids);
  BatchItem prompt{.sequence = &seq, .tokens = all.first(n), .all_logits = true};
  std::vector<float> logits = m.step({&prompt, 1})[0];
  if (n < ids.size()) {
    BatchItem rest{
        .sequence = &seq, .tokens = all.subspan(n), .all_logits = true, .generated = true};
    const std::vector<float> more = m.step({&rest, 1})[0];
    logits.insert(logits.end(), more.begin(), more.end());
  }
  return logits;
}

// Log-probabilities in double: the KL of nearly equal distributions is a small difference.
std::vector<double> log_softmax(const float* row, int n) {
  const double lse = logsumexp({row, size_t(n)});
  std::vector<double> out(n);
  for (int i = 0; i < n; ++i) out[i] = row[i] - lse;
  return out;
}

// The figures of one position.
QuantAccuracy position(const float* pa, const float* pb, int V) {
  const auto la = log_softmax(pa, V), lb = log_softmax(pb, V);
  QuantAccuracy one;
  for (int i = 0; i < V; ++i) {
    one.mean_kl += std::exp(la[i]) * (la[i] - lb[i]);
    one.max_logit_error = std::max(one.max_logit_error, double(std::abs(pa[i] - pb[i])));
  }
  one.max_kl = one.mean_kl;
  one.top1_agreement = argmax({pa, size_t(V)}) == argmax({pb, size_t(V)});
  one.positions = 1;
  return one;
}

void print(std::FILE* out, const std::string& name, const QuantAccuracy& r) {
  std::fprintf(
      out, "%-12s %5d positions  mean KL %.3e  max KL %.3e  top-1 %6.2f%%  max|logit err| %.3e\n",
      name.c_str(), r.positions, r.mean_kl, r.max_kl, 100 * r.top1_agreement, r.max_logit_error);
}

}  // namespace

CaseAccuracy quant_accuracy_case(Model& base, Model& quantized, const nlohmann::json& c) {
  std::vector<TokenId> ids;
  for (const char* key : {"prompt_ids", "greedy_ids"})
    if (c.contains(key))
      for (auto& v : c[key]) ids.push_back(v.get<TokenId>());
  const size_t prompt = c.contains("prompt_ids") ? c["prompt_ids"].size() : 0;
  if (prompt == 0)
    throw Error(ErrorKind::format, "reference case " + c.value("name", "?") + ": no prompt_ids");
  const int V = base.config().vocab_size;
  const auto a = all_logits(base, ids, prompt), b = all_logits(quantized, ids, prompt);
  CaseAccuracy r;
  for (size_t t = 0; t < ids.size(); ++t) {
    const QuantAccuracy one = position(&a[t * V], &b[t * V], V);
    r.all.add(one);
    if (t + 1 >= prompt) r.choosing.add(one);
  }
  return r;
}

CaseAccuracy quant_accuracy_reference(Model& base, Model& quantized,
                                      const nlohmann::json& reference, std::FILE* out) {
  CaseAccuracy pooled;
  for (const auto& c : reference.at("cases")) {
    const CaseAccuracy r = quant_accuracy_case(base, quantized, c);
    print(out, c.value("name", "?"), r.all);
    pooled.all.add(r.all);
    pooled.choosing.add(r.choosing);
  }
  print(out, "all", pooled.all);
  print(out, "choosing", pooled.choosing);
  std::fprintf(out,
               "(choosing: the positions whose logits pick a token in a generation, each "
               "prompt's last and every continuation step)\n");
  return pooled;
}

}  // namespace qwen3::cli
