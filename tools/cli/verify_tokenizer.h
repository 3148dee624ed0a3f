// Checks a tokenizer against a Hugging Face reference file (tests/fixtures/reference/tokenizer.json
// format).
#pragma once

#include <cstdio>

#include <nlohmann/json.hpp>

#include "qwen3/tokenizer.h"

// Runs every encode[] case (ids, tokens, decoded, decoded_skip_special) and decode[] case of
// reference; prints the first differing position of each failing case and a summary line
// "tokenizer: N/M cases match" to out. Returns 0 when all match, else 1.
// Throws qwen3::Error (format) when reference is not in the fixture format.
int verify_tokenizer_reference(const qwen3::Tokenizer& tokenizer, const nlohmann::json& reference,
                               std::FILE* out);
