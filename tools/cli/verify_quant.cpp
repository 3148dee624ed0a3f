// Comparing a quantized model's logits with the float model's: KL, top-1 agreement, max error.
#include "cli/verify_quant.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "qwen3/error.h"
#include "qwen3/sampler.h"

namespace qwen3::cli {

namespace {

std::vector<float> all_logits(Model& m, const std::vector<TokenId>& ids) {
  Sequence seq(m, static_cast<int>(ids.size()));
  BatchItem item{&seq, ids, true};
  return m.step({&item, 1})[0];
}

// Log-probabilities in double: the KL of nearly equal distributions is a small difference.
std::vector<double> log_softmax(const float* row, int n) {
  const double lse = logsumexp({row, size_t(n)});
  std::vector<double> out(n);
  for (int i = 0; i < n; ++i) out[i] = row[i] - lse;
  return out;
}

}  // namespace

void QuantAccuracy::add(const QuantAccuracy& o) {
  const int n = positions + o.positions;
  if (!n) return;
  mean_kl = (mean_kl * positions + o.mean_kl * o.positions) / n;
  top1_agreement = (top1_agreement * positions + o.top1_agreement * o.positions) / n;
  max_kl = std::max(max_kl, o.max_kl);
  max_logit_error = std::max(max_logit_error, o.max_logit_error);
  positions = n;
}

QuantAccuracy quant_accuracy_case(Model& base, Model& quantized, const nlohmann::json& c) {
  std::vector<TokenId> ids;
  for (const char* key : {"prompt_ids", "greedy_ids"})
    if (c.contains(key))
      for (auto& v : c[key]) ids.push_back(v.get<TokenId>());
  if (ids.empty())
    throw Error(ErrorKind::format, "reference case " + c.value("name", "?") + ": no prompt_ids");
  const int V = base.config().vocab_size;
  const auto a = all_logits(base, ids), b = all_logits(quantized, ids);
  QuantAccuracy r;
  int agree = 0;
  for (size_t t = 0; t < ids.size(); ++t) {
    const float *pa = &a[t * V], *pb = &b[t * V];
    const auto la = log_softmax(pa, V), lb = log_softmax(pb, V);
    double kl = 0;
    for (int i = 0; i < V; ++i) {
      kl += std::exp(la[i]) * (la[i] - lb[i]);
      r.max_logit_error = std::max(r.max_logit_error, double(std::abs(pa[i] - pb[i])));
    }
    r.mean_kl += kl;
    r.max_kl = std::max(r.max_kl, kl);
    agree += argmax({pa, size_t(V)}) == argmax({pb, size_t(V)});
  }
  r.positions = static_cast<int>(ids.size());
  r.mean_kl /= r.positions;
  r.top1_agreement = double(agree) / r.positions;
  return r;
}

QuantAccuracy quant_accuracy_reference(Model& base, Model& quantized,
                                       const nlohmann::json& reference, std::FILE* out) {
  QuantAccuracy all;
  for (const auto& c : reference.at("cases")) {
    const QuantAccuracy r = quant_accuracy_case(base, quantized, c);
    std::fprintf(
        out, "%-12s %5d positions  mean KL %.3e  max KL %.3e  top-1 %6.2f%%  max|logit err| %.3e\n",
        c.value("name", "?").c_str(), r.positions, r.mean_kl, r.max_kl, 100 * r.top1_agreement,
        r.max_logit_error);
    all.add(r);
  }
  std::fprintf(
      out, "%-12s %5d positions  mean KL %.3e  max KL %.3e  top-1 %6.2f%%  max|logit err| %.3e\n",
      "all", all.positions, all.mean_kl, all.max_kl, 100 * all.top1_agreement, all.max_logit_error);
  return all;
}

}  // namespace qwen3::cli
