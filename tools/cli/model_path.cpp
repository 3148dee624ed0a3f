// Resolving a model argument: a folder, a GGUF file, or a Hub id in the Hugging Face cache.
#include "cli/model_path.h"

#include <cstdlib>
#include <fstream>

#include "qwen3/error.h"

namespace qwen3::cli {

namespace fs = std::filesystem;

fs::path hub_cache() {
  if (const char* c = std::getenv("HF_HUB_CACHE"); c && *c) return c;
  if (const char* h = std::getenv("HF_HOME"); h && *h) return fs::path(h) / "hub";
  const char* home = std::getenv("HOME");
  return fs::path(home ? home : ".") / ".cache" / "huggingface" / "hub";
}

fs::path hub_repo_dir(const std::string& repo_id) {
  std::string name = "models--" + repo_id;
  for (size_t i = 0; (i = name.find('/', i)) != std::string::npos;) name.replace(i, 1, "--");
  return hub_cache() / name;
}

bool is_hub_id(const std::string& arg) {
  const auto slash = arg.find('/');
  if (slash == std::string::npos || slash != arg.rfind('/')) return false;
  const std::string owner = arg.substr(0, slash), name = arg.substr(slash + 1);
  // Hub names use these characters only; a leading '.' would make the id a relative path (or ".."
  // in a URL).
  auto ok = [](const std::string& part) {
    return !part.empty() && part[0] != '.' &&
           part.find_first_not_of(
               "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") ==
               std::string::npos;
  };
  return ok(owner) && ok(name);
}

fs::path resolve_model(const std::string& arg) {
  if (fs::is_directory(arg) || fs::is_regular_file(arg)) return arg;  // a file: GGUF, checked later
  if (!is_hub_id(arg)) throw Error(ErrorKind::io, arg + ": no such model folder or GGUF file");
  const fs::path repo = hub_repo_dir(arg);
  std::string ref;
  if (std::ifstream in(repo / "refs" / "main"); in) in >> ref;
  if (!ref.empty() && fs::is_directory(repo / "snapshots" / ref)) return repo / "snapshots" / ref;
  fs::path newest;
  if (fs::is_directory(repo / "snapshots"))
    for (auto& e : fs::directory_iterator(repo / "snapshots"))
      if (e.is_directory() && (newest.empty() || e.last_write_time() > fs::last_write_time(newest)))
        newest = e.path();
  if (newest.empty())
    throw Error(ErrorKind::io, arg + ": not a folder, and not in the Hugging Face cache (" +
                                   repo.string() + "); download it with `qwen3 pull " + arg + "`");
  return newest;
}

}  // namespace qwen3::cli
