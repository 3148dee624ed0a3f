// Rewriting a safetensors file's JSON header in place, for tests that break model folders.
#pragma once

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "io/json_file.h"

namespace qwen3::test {

inline void edit_safetensors_header(const std::filesystem::path& file,
                                    const std::function<void(nlohmann::json&)>& edit) {
  const std::string bytes = io::read_file(file);
  uint64_t len = 0;
  for (int i = 7; i >= 0; --i) len = len << 8 | uint8_t(bytes[i]);
  auto header = nlohmann::json::parse(bytes.substr(8, len));
  edit(header);
  const std::string h = header.dump();
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = char((h.size() >> (8 * i)) & 0xff);
  std::ofstream(file, std::ios::binary | std::ios::trunc) << out + h + bytes.substr(8 + len);
}

}  // namespace qwen3::test
