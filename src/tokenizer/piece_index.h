// Piece spelling -> id: an open-addressing hash index, built once at load and then read-only.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "io/huge_page_buffer.h"

namespace qwen3::detail {

// std::unordered_map<string_view, id> spent 40% of load time chasing bucket chains on the
// ~450 000 lookups that resolving merges takes; flat slots holding the key view and a hash
// tag cost one cache miss for the slot and one for the key bytes.
class PieceIndex {
 public:
  void reserve(size_t keys);
  // key must outlive the index. Inserting a key again replaces its id.
  void insert(std::string_view key, int32_t id);
  // The id of key, or -1.
  int32_t find(std::string_view key) const;
  size_t size() const { return size_; }  // distinct keys

 private:
  struct Slot {
    std::string_view key;
    uint32_t tag;     // high bits of the key's hash, to skip most key comparisons
    int32_t id = -1;  // -1 when free
  };
  static uint64_t hash(std::string_view key);
  // key's slot, or the free slot it would take.
  size_t probe(std::string_view key, uint64_t h) const;

  io::Buffer<Slot> slots_;  // power-of-two size, at most 70% full
  size_t size_ = 0;
};

}  // namespace qwen3::detail
