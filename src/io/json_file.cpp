// Reading small JSON files with errors that name the file.
#include "io/json_file.h"

#include <fstream>
#include <sstream>

#include "qwen3/error.h"

namespace qwen3::io {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::io, path.string() + ": cannot open file");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

nlohmann::json read_json(const std::filesystem::path& path) {
  std::string text = read_file(path);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(ErrorKind::format, path.string() + ": not valid JSON (" + e.what() + ")");
  }
}

}  // namespace qwen3::io
