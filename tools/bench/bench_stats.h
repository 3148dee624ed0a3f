// Mean, standard deviation and median of a benchmark's repetitions.
#pragma once

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace qwen3::cli {

struct Stats {
  double mean = 0, sd = 0, median = 0;
};

inline Stats stats(std::vector<double> v) {
  Stats s;
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / v.size();
  for (double x : v) s.sd += (x - s.mean) * (x - s.mean);
  s.sd = v.size() > 1 ? std::sqrt(s.sd / (v.size() - 1)) : 0;
  std::sort(v.begin(), v.end());
  s.median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  return s;
}

// Deterministic token ids spread over the vocabulary: prompts whose values do not matter.
inline std::vector<int32_t> bench_tokens(int n, int vocab) {
  std::vector<int32_t> ids(n);
  for (int i = 0; i < n; ++i) ids[i] = (i * 7919 + 13) % vocab;
  return ids;
}

}  // namespace qwen3::cli
