// GPT-2's ByteLevel map: every byte <-> one printable character, as vocabulary pieces spell bytes.
#pragma once

#include <string>
#include <string_view>

namespace qwen3::detail {

// Appends the byte-level spelling of raw bytes ("\x20cat" -> "Ġcat").
void bytes_to_piece(std::string_view bytes, std::string& out);

// Appends the bytes a byte-level piece (well-formed UTF-8) spells ("Ġcat" -> " cat"). Returns
// false, appending nothing, if some character of the piece is not in the map (the piece is then
// used verbatim by Hugging Face's ByteLevel decoder, e.g. for added tokens).
bool piece_to_bytes(std::string_view piece, std::string& out);

}  // namespace qwen3::detail
