// Renders every reference chat case and reports where the first byte differs.
#include "cli/verify_chat.h"

#include <algorithm>
#include <string>

#include "qwen3/error.h"

namespace qwen3::cli {
namespace {

// A window of `s` around `offset`, control characters escaped so the line stays one line.
std::string context(const std::string& s, size_t offset) {
  const size_t begin = offset > 24 ? offset - 24 : 0;
  const std::string window = s.substr(std::min(begin, s.size()), 48);
  std::string out;
  for (unsigned char c : window) {
    if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return "\"" + out + "\"";
}

ChatOptions options_of(const nlohmann::ordered_json& c) {
  ChatOptions options;
  if (c.contains("enable_thinking")) options.enable_thinking = c.at("enable_thinking").get<bool>();
  if (c.contains("add_generation_prompt"))
    options.add_generation_prompt = c.at("add_generation_prompt").get<bool>();
  if (c.contains("tools")) options.tools = c.at("tools");
  if (c.contains("kwargs")) options.variables = c.at("kwargs");
  return options;
}

// A case whose template raises: rendering must fail with a message that contains `want`.
bool refuses_as_expected(const ChatTemplate& tmpl, const nlohmann::ordered_json& c,
                         const std::string& name, const std::string& want, std::FILE* out) {
  try {
    const std::string got = tmpl.render(c["messages"], options_of(c));
    std::fprintf(out, "case %s: rendered %zu bytes; expected the error \"%s\"\n", name.c_str(),
                 got.size(), want.c_str());
    return false;
  } catch (const Error& e) {
    if (std::string(e.what()).find(want) != std::string::npos) return true;
    std::fprintf(out, "case %s: error: %s; expected the error \"%s\"\n", name.c_str(), e.what(),
                 want.c_str());
    return false;
  }
}

}  // namespace

int verify_chat_reference(const ChatTemplate& tmpl, const nlohmann::ordered_json& reference,
                          std::FILE* out, const Tokenizer* tokenizer) {
  if (!reference.is_object() || !reference.contains("cases") || !reference["cases"].is_array()) {
    throw Error(ErrorKind::format, "chat reference: expected an object with a \"cases\" array");
  }
  const auto& cases = reference["cases"];
  size_t matched = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    const std::string name = c.contains("name") && c["name"].is_string()
                                 ? c["name"].get<std::string>()
                                 : std::to_string(i);
    const bool refused = c.contains("rendered") && c["rendered"].is_null() && c.contains("error") &&
                         c["error"].is_string();
    if (!c.contains("messages") ||
        !(refused || (c.contains("rendered") && c["rendered"].is_string()))) {
      throw Error(ErrorKind::format,
                  "chat reference: case " + name +
                      ": needs \"messages\" and a string \"rendered\" (or null and an \"error\")");
    }
    if (refused) {
      matched += refuses_as_expected(tmpl, c, name, c["error"].get<std::string>(), out);
      continue;
    }
    const std::string& want = c["rendered"].get_ref<const std::string&>();
    std::string got;
    try {
      got = tmpl.render(c["messages"], options_of(c));
    } catch (const Error& e) {
      std::fprintf(out, "case %s: error: %s\n", name.c_str(), e.what());
      continue;
    }
    if (got == want) {
      if (tokenizer && c.contains("ids")) {
        const auto ids = encode_chat(tmpl, *tokenizer, c["messages"], options_of(c));
        const auto want_ids = c["ids"].get<std::vector<TokenId>>();
        if (ids != want_ids) {
          const size_t at = static_cast<size_t>(
              std::mismatch(ids.begin(),
                            ids.begin() + static_cast<long>(std::min(ids.size(), want_ids.size())),
                            want_ids.begin())
                  .first -
              ids.begin());
          std::fprintf(out,
                       "case %s: rendering matches, token ids differ at position %zu (expected %zu "
                       "ids, got %zu)\n",
                       name.c_str(), at, want_ids.size(), ids.size());
          continue;
        }
      }
      ++matched;
      continue;
    }
    const size_t offset = static_cast<size_t>(
        std::mismatch(want.begin(),
                      want.begin() + static_cast<long>(std::min(want.size(), got.size())),
                      got.begin())
            .first -
        want.begin());
    std::fprintf(out,
                 "case %s: first difference at byte %zu (expected %zu bytes, got %zu)\n  expected: "
                 "%s\n  got:      %s\n",
                 name.c_str(), offset, want.size(), got.size(), context(want, offset).c_str(),
                 context(got, offset).c_str());
  }
  std::fprintf(out, "chat template: %zu/%zu cases match\n", matched, cases.size());
  return matched == cases.size() ? 0 : 1;
}

}  // namespace qwen3::cli
