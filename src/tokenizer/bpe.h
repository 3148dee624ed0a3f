// Byte-pair encoding of one pre-token: ranked merges applied lowest rank first, as in HF's BPE.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "io/huge_page_buffer.h"

namespace qwen3::detail {

using Id = int32_t;

struct Merge {
  Id left, right, merged;
};

class Bpe {
 public:
  Bpe() = default;
  // byte_ids[b]: the id of the piece for the single byte b. merges: in rank order (rank 0 first).
  Bpe(const std::array<Id, 256>& byte_ids, const std::vector<Merge>& merges);

  // Appends the ids of word (raw bytes of one pre-token) to out. O(n log n) in word length.
  void encode(std::string_view word, std::vector<Id>& out) const;

 private:
  struct Slot {
    uint64_t key;  // left << 32 | right; kEmpty for a free slot
    uint32_t rank;
    Id merged;
  };
  static constexpr uint64_t kEmpty = ~uint64_t{0};

  const Slot* find(Id left, Id right) const {
    uint64_t key = (uint64_t(uint32_t(left)) << 32) | uint32_t(right);
    for (size_t i = slot_of(key);; i = (i + 1) & mask_) {
      if (table_[i].key == key) return &table_[i];
      if (table_[i].key == kEmpty) return nullptr;
    }
  }
  size_t slot_of(uint64_t key) const { return size_t((key * 0x9E3779B97F4A7C15ull) >> shift_); }

  std::array<Id, 256> byte_ids_{};
  io::Buffer<Slot> table_;  // open addressing, linear probing, load factor <= 1/2
  size_t mask_ = 0;
  int shift_ = 64;
};

}  // namespace qwen3::detail
