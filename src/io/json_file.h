// Reading small JSON files (config.json, index files) with errors that name the file.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace qwen3::io {

std::string read_file(const std::filesystem::path& path);     // throws io Error naming the file
nlohmann::json read_json(const std::filesystem::path& path);  // io or format Error naming the file

}  // namespace qwen3::io
