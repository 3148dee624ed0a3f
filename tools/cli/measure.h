// Wall-clock intervals and peak memory, for the timings front ends print.
#pragma once

#include <sys/resource.h>

#include <chrono>

namespace qwen3::cli {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The process's peak resident set size in bytes.
inline double peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss * 1024.0;
}

}  // namespace qwen3::cli
