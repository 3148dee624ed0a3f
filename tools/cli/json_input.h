// Reading a JSON file given on the command line, with errors that name it.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "qwen3/error.h"

namespace qwen3::cli {

template <class Json = nlohmann::json>
Json read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::io, path + ": cannot open file");
  std::stringstream text;
  text << in.rdbuf();
  try {
    return Json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(ErrorKind::format, path + ": not valid JSON (" + e.what() + ")");
  }
}

// Keeping each object's key order, as Python's json does (for templates' tojson).
inline nlohmann::ordered_json read_ordered_json_file(const std::string& path) {
  return read_json_file<nlohmann::ordered_json>(path);
}

}  // namespace qwen3::cli
