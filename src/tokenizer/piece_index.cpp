// Piece spelling -> id: an open-addressing hash index, built once at load and then read-only.
#include "tokenizer/piece_index.h"

namespace qwen3::detail {

uint64_t PieceIndex::hash(std::string_view key) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a: pieces are short, so a byte loop is fine
  for (unsigned char c : key) h = (h ^ c) * 0x100000001b3ull;
  return h ^ (h >> 29);
}

size_t PieceIndex::probe(std::string_view key, uint64_t h) const {
  const size_t mask = slots_.size() - 1;
  const uint32_t tag = uint32_t(h >> 32);
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.id < 0 || (s.tag == tag && s.key == key)) return i;
  }
}

void PieceIndex::reserve(size_t keys) {
  size_t capacity = 16;
  while (capacity * 7 < keys * 10) capacity *= 2;
  if (capacity <= slots_.size()) return;
  io::Buffer<Slot> old(capacity);
  old.swap(slots_);
  size_ = 0;
  for (const Slot& s : old) {
    if (s.id >= 0) insert(s.key, s.id);
  }
}

void PieceIndex::insert(std::string_view key, int32_t id) {
  if ((size_ + 1) * 10 > slots_.size() * 7) reserve(2 * size_ + 8);
  uint64_t h = hash(key);
  Slot& s = slots_[probe(key, h)];
  if (s.id < 0) {
    ++size_;
    s.key = key;
    s.tag = uint32_t(h >> 32);
  }
  s.id = id;
}

int32_t PieceIndex::find(std::string_view key) const {
  if (slots_.empty()) return -1;
  return slots_[probe(key, hash(key))].id;
}

}  // namespace qwen3::detail
