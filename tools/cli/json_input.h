// Reading a JSON file given on the command line, with errors that name it.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "qwen3/error.h"

namespace qwen3::cli {

inline nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::io, path + ": cannot open file");
  std::stringstream text;
  text << in.rdbuf();
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(ErrorKind::format, path + ": not valid JSON (" + e.what() + ")");
  }
}

}  // namespace qwen3::cli
