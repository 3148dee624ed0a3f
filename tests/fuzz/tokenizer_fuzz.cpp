// Fuzz target: random bytes through encode (UTF-8 errors are the only allowed failure), then
// decode and stream-decode of the ids and of ids read from the raw bytes.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "qwen3/error.h"
#include "qwen3/tokenizer.h"

namespace {

const qwen3::Tokenizer& tokenizer() {
  static const qwen3::Tokenizer t = qwen3::Tokenizer::load(".");  // run in tests/fixtures
  return t;
}

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "tokenizer_fuzz: %s\n", what);
    std::abort();
  }
}

void stream_matches_decode(const std::vector<qwen3::TokenId>& ids) {
  qwen3::StreamDecoder stream(tokenizer());
  std::string streamed;
  for (auto id : ids) streamed += stream.push(id);
  streamed += stream.flush();
  check(streamed == tokenizer().decode(ids), "stream decode differs from decode");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  const bool parse_special = size % 2 == 0;
  try {
    std::vector<qwen3::TokenId> ids = tokenizer().encode(text, parse_special);
    // Valid UTF-8 is NFC-normalized, so the round trip is not byte-exact in general; but it
    // must re-encode to a fixed point of decode.
    std::string back = tokenizer().decode(ids);
    check(tokenizer().decode(tokenizer().encode(back, parse_special)) == back,
          "decode(encode(.)) is not stable");
    stream_matches_decode(ids);
  } catch (const qwen3::Error& e) {
    check(e.kind() == qwen3::ErrorKind::invalid_argument, "unexpected error kind from encode");
  }
  // The same bytes read as ids, in and out of range.
  std::vector<qwen3::TokenId> ids(size / 4);
  for (size_t i = 0; i < ids.size(); ++i) {
    uint32_t raw;
    std::memcpy(&raw, data + 4 * i, 4);
    ids[i] = static_cast<qwen3::TokenId>(raw % 160000) - (raw >> 31 ? 100 : 0);
  }
  tokenizer().decode(ids, true);
  stream_matches_decode(ids);
  return 0;
}

std::vector<std::vector<uint8_t>> fuzz_seeds() {
  std::vector<std::vector<uint8_t>> seeds;
  for (const char* s :
       {"The capital of France is", "<|im_start|>user\nhi<|im_end|>\n<think>\n</think>",
        "I'M HERE, you'RE late 'll", "  \r\n\t\n  x   ", "Zażółć 你好 😀👍🏽 é",
        "\xE2\x82"}) {
    seeds.emplace_back(s, s + std::strlen(s));
  }
  return seeds;
}
