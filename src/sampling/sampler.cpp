// Sampler: penalties -> temperature -> top_k -> top_p -> min_p -> seeded draw, in Hugging Face's
// order.
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <string>

#include "qwen3/error.h"
#include "qwen3/sampler.h"

namespace qwen3 {
namespace {

// Best first; equal logits keep the lower id first so every run orders ties the same way.
struct ByLogit {
  const float* logits;
  bool operator()(int32_t a, int32_t b) const {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  }
};

void check_logits(std::span<const float> logits) {
  if (logits.empty()) throw Error(ErrorKind::invalid_argument, "sampler: logits are empty");
}

// Uniform in [0, 1) from the top 53 bits: unlike std::uniform_real_distribution, the same on every
// standard library, so a seed reproduces a generation everywhere.
double uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

}  // namespace

int32_t argmax(std::span<const float> logits) {
  // The largest value block by block, each block's maximum in independent lanes (which compilers
  // vectorize; a running index does not), then its first position: 151936 logits in ~35 us, not
  // ~200.
  constexpr size_t kBlock = 1024, kLanes = 16;
  float best = -std::numeric_limits<float>::infinity();
  size_t best_block = 0;
  for (size_t b = 0; b < logits.size(); b += kBlock) {
    const size_t end = std::min(logits.size(), b + kBlock);
    float lane[kLanes];
    std::fill_n(lane, kLanes, -std::numeric_limits<float>::infinity());
    size_t i = b;
    for (; i + kLanes <= end; i += kLanes)
      for (size_t j = 0; j < kLanes; ++j)
        lane[j] = lane[j] < logits[i + j] ? logits[i + j] : lane[j];
    for (; i < end; ++i) lane[0] = lane[0] < logits[i] ? logits[i] : lane[0];
    const float m = *std::max_element(lane, lane + kLanes);
    if (m > best) {  // strictly: the first block holding the maximum
      best = m;
      best_block = b;
    }
  }
  for (size_t i = best_block; i < logits.size(); ++i)
    if (logits[i] == best) return static_cast<int32_t>(i);
  return 0;  // no number above -inf (all -inf or NaN)
}

// The best allowed logit, the lowest id among equals; the first allowed id when none is above -inf.
int32_t allowed_argmax(std::span<const float> logits, std::span<const uint64_t> allowed) {
  float best = -std::numeric_limits<float>::infinity();
  int32_t best_id = -1;
  for (size_t w = 0; w < allowed.size() && w * 64 < logits.size(); ++w) {
    const uint64_t all = allowed[w];
    if (all == ~0ull && w * 64 + 64 <= logits.size()) {
      // A whole word allowed: its maximum in independent lanes (vectorized), then its position.
      const float* x = logits.data() + w * 64;
      float lane[16];
      std::copy_n(x, 16, lane);
      for (size_t i = 16; i < 64; i += 16)
        for (size_t j = 0; j < 16; ++j) lane[j] = lane[j] < x[i + j] ? x[i + j] : lane[j];
      const float m = *std::max_element(lane, lane + 16);
      if (best_id < 0 || m > best) {
        best = m;
        best_id = static_cast<int32_t>(w * 64 + size_t(std::find(x, x + 64, m) - x));
      }
      continue;
    }
    for (uint64_t bits = all; bits; bits &= bits - 1) {
      const size_t i = w * 64 + size_t(std::countr_zero(bits));
      if (i >= logits.size()) break;
      if (best_id < 0 || logits[i] > best) {
        best = logits[i];
        best_id = static_cast<int32_t>(i);
      }
    }
  }
  return best_id < 0 ? 0 : best_id;
}

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {
  params_.validate();
}

void Sampler::set_presence_penalty(float penalty) {
  SamplingParams changed = params_;
  changed.presence_penalty = penalty;
  changed.validate();
  params_ = changed;
}

bool Sampler::penalizes() const {
  return params_.repetition_penalty != 1.0f || params_.presence_penalty != 0.0f ||
         params_.frequency_penalty != 0.0f;
}

void Sampler::apply_penalties(std::span<const int32_t> history) {
  const auto& p = params_;
  if (!penalizes()) return;
  const auto vocab = static_cast<int32_t>(work_.size());
  counts_.resize(work_.size(), 0);
  for (int32_t id : history) {
    if (id < 0 || id >= vocab) {
      for (int32_t seen : history) {
        if (seen >= 0 && seen < vocab)
          counts_[seen] = 0;  // keep counts_ all zero for the next call
      }
      throw Error(ErrorKind::invalid_argument, "sampler: history token " + std::to_string(id) +
                                                   " outside the vocabulary of " +
                                                   std::to_string(vocab));
    }
    ++counts_[id];
  }
  // Each distinct token once: the first visit applies the penalty and zeroes its count.
  for (int32_t id : history) {
    const int32_t count = counts_[id];
    if (count == 0) continue;
    counts_[id] = 0;
    float& logit = work_[id];
    // CTRL / Hugging Face: shrink positive logits, push negative ones further down.
    logit = logit > 0 ? logit / p.repetition_penalty : logit * p.repetition_penalty;
    // OpenAI: a flat presence term plus a term growing with the count.
    logit -= p.presence_penalty + p.frequency_penalty * static_cast<float>(count);
  }
}

void Sampler::filter(std::span<const float> logits, std::span<const int32_t> history,
                     bool best_first, std::span<const uint64_t> allowed) {
  check_logits(logits);
  work_.assign(logits.begin(), logits.end());
  if (!allowed.empty()) {  // only the disallowed bits are visited: masks are mostly all-0 or all-1
                           // words
    constexpr float kNone = -std::numeric_limits<float>::infinity();
    for (size_t w = 0; w * 64 < work_.size(); ++w) {
      const size_t base = w * 64, end = std::min(work_.size(), base + 64);
      const uint64_t bits = w < allowed.size() ? allowed[w] : 0;
      if (bits == 0) {
        std::fill(work_.begin() + long(base), work_.begin() + long(end), kNone);
        continue;
      }
      for (uint64_t off = ~bits; off; off &= off - 1) {
        const size_t i = base + size_t(std::countr_zero(off));
        if (i < end) work_[i] = kNone;
      }
    }
  }
  apply_penalties(history);
  kept_.clear();
  if (params_.temperature == 0.0f) {
    const int32_t best = argmax(work_);
    kept_.push_back(best);
    work_[best] = 1.0f;
    return;
  }
  const auto vocab = static_cast<int32_t>(work_.size());
  const ByLogit by_logit{work_.data()};
  kept_.clear();
  size_t n = work_.size();
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < n) {
    // Temperature > 0 keeps the order of logits, so select the k best before tempering. A heap of
    // k (front = worst kept) costs one comparison for most of the vocab, far less than nth_element.
    n = static_cast<size_t>(params_.top_k);
    for (int32_t i = 0; i < vocab; ++i) {
      if (kept_.size() < n) {
        kept_.push_back(i);
        std::push_heap(kept_.begin(), kept_.end(), by_logit);
      } else if (by_logit(i, kept_.front())) {
        std::pop_heap(kept_.begin(), kept_.end(), by_logit);
        kept_.back() = i;
        std::push_heap(kept_.begin(), kept_.end(), by_logit);
      }
    }
  } else {
    kept_.resize(n);
    for (int32_t i = 0; i < vocab; ++i) kept_[static_cast<size_t>(i)] = i;
  }
  float max_logit = work_[kept_[0]];
  for (int32_t id : kept_) max_logit = std::max(max_logit, work_[id]);
  if (max_logit == -std::numeric_limits<float>::infinity()) {
    throw Error(ErrorKind::invalid_argument, "sampler: every logit is -inf");
  }
  // Softmax over the survivors (all tokens when top_k is off), as Hugging Face masks then
  // normalises. work_ now holds exp((logit - max) / T): unnormalised, 1 for the best token.
  const float inv_t = 1.0f / params_.temperature;
  double total = 0;
  for (int32_t id : kept_) {
    work_[id] = std::exp((work_[id] - max_logit) * inv_t);
    total += work_[id];
  }
  // Equal logits give equal weights, so ordering by weight (ties by id) is ordering by logit.
  const ByLogit by_weight{work_.data()};

  size_t sorted = 0;
  size_t keep = n;
  if (params_.top_p < 1.0f) {
    // Only the head of the distribution is ever needed in order: sort a window that grows until
    // it holds top_p of the mass.
    const double target = params_.top_p * total;
    double cumulative = 0;
    keep = 0;
    for (size_t window = std::min<size_t>(n, 256);; window = std::min(n, window * 8)) {
      std::partial_sort(kept_.begin() + static_cast<long>(sorted),
                        kept_.begin() + static_cast<long>(window),
                        kept_.begin() + static_cast<long>(n), by_weight);
      sorted = window;
      for (; keep < sorted && cumulative < target; ++keep) cumulative += work_[kept_[keep]];
      if (cumulative >= target || sorted == n) break;
    }
    keep = std::max<size_t>(keep, 1);
  }
  // A plain draw needs no order: sorting all 151936 tokens when nothing truncates would dominate.
  if (best_first && sorted < keep) {
    std::partial_sort(kept_.begin() + static_cast<long>(sorted),
                      kept_.begin() + static_cast<long>(keep), kept_.begin() + static_cast<long>(n),
                      by_weight);
  }
  kept_.resize(keep);

  // min_p compares with the most likely token, whose weight is 1; renormalising after top_k/top_p
  // scales both sides alike.
  if (params_.min_p > 0.0f) {
    std::erase_if(kept_, [&](int32_t id) { return work_[id] < params_.min_p; });
  }
  double kept_total = 0;
  for (int32_t id : kept_) kept_total += work_[id];
  for (int32_t id : kept_) work_[id] = static_cast<float>(work_[id] / kept_total);
}

std::vector<TokenProb> Sampler::candidates(std::span<const float> logits,
                                           std::span<const int32_t> history) {
  filter(logits, history, true);
  std::vector<TokenProb> out;
  out.reserve(kept_.size());
  for (int32_t id : kept_) out.push_back({id, work_[id]});
  return out;
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> history) {
  return sample(logits, history, {});
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> history,
                        std::span<const uint64_t> allowed) {
  if (params_.temperature == 0.0f && !penalizes()) {  // plain greedy: nothing to copy or change
    check_logits(logits);
    return allowed.empty() ? argmax(logits) : allowed_argmax(logits, allowed);
  }
  filter(logits, history, false, allowed);
  if (kept_.size() == 1) return kept_[0];
  // Walk the kept tokens (best first when truncated, else by id); rounding leftovers fall to the
  // last one with a weight (a masked token weighs 0 and is never drawn).
  double r = uniform(rng_);
  int32_t last = kept_.back();
  for (int32_t id : kept_) {
    if (work_[id] <= 0) continue;
    r -= work_[id];
    last = id;
    if (r < 0) return id;
  }
  return last;
}

int32_t Sampler::verify(std::span<const float> logits, std::span<const int32_t> history,
                        std::span<const uint64_t> allowed, int32_t draft) {
  if (params_.temperature == 0.0f) return sample(logits, history, allowed);
  filter(logits, history, false, allowed);
  if (kept_.size() == 1) return kept_[0];
  const bool kept = std::find(kept_.begin(), kept_.end(), draft) != kept_.end();
  const double p = kept ? work_[draft] : 0.0;
  if (p > 0 && uniform(rng_) < p) return draft;
  // The residual max(0, p - q) with q one-hot on the draft: p without it. Rounding leftovers fall
  // to the last token with a weight, as in sample().
  double r = uniform(rng_) * (1.0 - p);
  int32_t last = -1;
  for (int32_t id : kept_) {
    if (id == draft || work_[id] <= 0) continue;
    r -= work_[id];
    last = id;
    if (r < 0) return id;
  }
  return last >= 0 ? last : draft;
}

std::vector<TokenProb> top_probs(std::span<const float> logits, int k) {
  check_logits(logits);
  if (k <= 0) return {};
  const auto n = std::min(logits.size(), static_cast<size_t>(k));
  std::vector<int32_t> ids(logits.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
  std::partial_sort(ids.begin(), ids.begin() + static_cast<long>(n), ids.end(),
                    ByLogit{logits.data()});
  const double lse = logsumexp(logits);
  std::vector<TokenProb> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i)
    out.push_back({ids[i], static_cast<float>(std::exp(logits[ids[i]] - lse))});
  return out;
}

double logsumexp(std::span<const float> logits) {
  const double m = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float x : logits) sum += std::exp(x - m);
  return m + std::log(sum);
}

}  // namespace qwen3
