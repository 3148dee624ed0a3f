// The NFC normalizer of tokenizer.json.
#include "tokenizer/normalize.h"

#include <utf8proc.h>

#include <cstdlib>

#include "qwen3/error.h"

namespace qwen3::detail {

std::string_view nfc(std::string_view text, std::string& storage) {
  // Characters below U+0300 are unchanged by NFC and only compose with a following combining
  // mark (U+0300 or above, lead byte >= 0xCC), so text without such a lead byte is already NFC.
  // This skips utf8proc for ASCII and Latin-script text such as Polish.
  bool maybe_changes = false;
  for (unsigned char b : text) {
    if (b >= 0xCC) {
      maybe_changes = true;
      break;
    }
  }
  if (!maybe_changes) return text;
  utf8proc_uint8_t* out = nullptr;
  // An explicit length (no UTF8PROC_NULLTERM) keeps embedded U+0000 characters.
  utf8proc_ssize_t len = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                      utf8proc_ssize_t(text.size()), &out,
                                      utf8proc_option_t(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (len < 0) {
    throw Error(ErrorKind::invalid_argument,
                std::string("NFC normalization failed: ") + utf8proc_errmsg(len));
  }
  storage.assign(reinterpret_cast<char*>(out), size_t(len));
  std::free(out);
  return storage;
}

}  // namespace qwen3::detail
