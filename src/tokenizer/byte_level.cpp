// GPT-2's ByteLevel map: every byte <-> one printable character, as vocabulary pieces spell bytes.
#include "tokenizer/byte_level.h"

#include <array>
#include <cstdint>

#include "tokenizer/utf8.h"

namespace qwen3::detail {
namespace {

// Printable Latin-1 bytes ('!'..'~', '¡'..'¬', '®'..'ÿ') stand for themselves; the other 68
// bytes (controls, space, DEL, NBSP, soft hyphen) get U+0100.. in byte order, as in GPT-2's
// bytes_to_unicode().
struct Tables {
  std::array<uint32_t, 256> byte_to_char{};
  std::array<int16_t, 0x144> char_to_byte{};  // the largest character used is U+0143
  Tables() {
    char_to_byte.fill(-1);
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      byte_to_char[b] = printable ? uint32_t(b) : next++;
      char_to_byte[byte_to_char[b]] = int16_t(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

void bytes_to_piece(std::string_view bytes, std::string& out) {
  const Tables& t = tables();
  for (unsigned char b : bytes) append_utf8(t.byte_to_char[b], out);
}

bool piece_to_bytes(std::string_view piece, std::string& out) {
  const Tables& t = tables();
  size_t start = out.size();
  auto p = reinterpret_cast<const unsigned char*>(piece.data());
  for (size_t i = 0; i < piece.size();) {
    int len;
    uint32_t cp = decode_utf8(p + i, &len);
    if (cp >= t.char_to_byte.size() || t.char_to_byte[cp] < 0) {
      out.resize(start);
      return false;
    }
    out += char(t.char_to_byte[cp]);
    i += len;
  }
  return true;
}

}  // namespace qwen3::detail
