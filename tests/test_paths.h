// Where the vendored fixtures and the built executable live, for tests.
#pragma once

#include <filesystem>
#include <string>

namespace qwen3::test {

inline std::filesystem::path fixtures() { return QWEN3_FIXTURES; }
inline std::filesystem::path tiny_model() { return fixtures() / "models" / "qwen3-tiny"; }
inline std::filesystem::path untied_model() { return fixtures() / "models" / "qwen3-tiny-untied"; }
// Qwen3.5's tokenizer files and chat_template.jinja, no weights.
inline std::filesystem::path qwen35_chat() { return fixtures() / "models" / "qwen35-chat"; }
inline std::filesystem::path reference(const std::string& name) {
  return fixtures() / "reference" / name;
}
inline std::string qwen3_binary() { return QWEN3_BINARY; }

}  // namespace qwen3::test
