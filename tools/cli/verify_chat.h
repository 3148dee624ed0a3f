// `qwen3 verify`: compares the chat template's renderings with Hugging Face's reference cases.
#pragma once

#include <cstdio>

#include <nlohmann/json.hpp>

#include "qwen3/chat.h"

namespace qwen3::cli {

// `reference` is reference/chat_template.json or chat_template_qwen35.json ({"cases": [...]},
// each with its "kwargs" as template variables); ordered, because tool schemas must keep their key
// order to render as Hugging Face did. A case with "rendered": null and an "error" matches when
// rendering fails with that message. Prints the first differing byte of each mismatch with
// context, then "chat template: N/M cases match". Returns 0 when all match, else 1. With a
// tokenizer, each case's "ids" are checked too (encode_chat of the same conversation).
int verify_chat_reference(const ChatTemplate& tmpl, const nlohmann::ordered_json& reference,
                          std::FILE* out, const Tokenizer* tokenizer = nullptr);

}  // namespace qwen3::cli
