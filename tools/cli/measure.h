// Wall-clock intervals and peak memory, for the timings front ends print.
#pragma once

#include <sys/resource.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

namespace qwen3::cli {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The process's peak resident set size in bytes.
inline double peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss * 1024.0;
}

// Of the resident pages of this process's maps of the model's weights (the .safetensors files in
// a folder, or a GGUF file), the share
// mapped as 2 MiB pages (from /proc/self/smaps); -1 when none is mapped (weights read into
// memory). Decode is 4-15% faster at 1 than at 0: see drop_from_page_cache in qwen3/model.h.
inline double huge_page_share(const std::filesystem::path& model) {
  std::set<std::string> files;  // as smaps names them: symlinks (a Hub snapshot's) resolved
  if (std::filesystem::is_regular_file(model)) files.insert(std::filesystem::canonical(model));
  else
    for (const auto& e : std::filesystem::directory_iterator(model))
      if (e.path().extension() == ".safetensors")
        files.insert(std::filesystem::canonical(e.path()).string());
  std::ifstream smaps("/proc/self/smaps");
  double rss = 0, pmd = 0;
  bool weights = false;
  for (std::string line; std::getline(smaps, line);) {
    if (line.substr(0, line.find(' ')).ends_with(':')) {  // a field of the current map
      if (weights && line.starts_with("Rss:")) rss += std::stod(line.substr(4));
      if (weights && line.starts_with("FilePmdMapped:")) pmd += std::stod(line.substr(14));
    } else {  // a map's first line: addresses, permissions, offset, device, inode, path
      const size_t path = line.find('/');
      weights = path != std::string::npos && files.count(line.substr(path));
    }
  }
  return rss > 0 ? pmd / rss : -1;
}

}  // namespace qwen3::cli
