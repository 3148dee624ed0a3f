// Byte-pair encoding of one pre-token: ranked merges applied lowest rank first, as in HF's BPE.
#include "tokenizer/bpe.h"

#include <algorithm>

namespace qwen3::detail {

Bpe::Bpe(const std::array<Id, 256>& byte_ids, const std::vector<Merge>& merges)
    : byte_ids_(byte_ids) {
  size_t capacity = 16;
  shift_ = 60;
  while (capacity < 2 * merges.size() + 2) {
    capacity *= 2;
    --shift_;
  }
  mask_ = capacity - 1;
  table_.assign(capacity, Slot{kEmpty, 0, 0});
  for (uint32_t rank = 0; rank < merges.size(); ++rank) {
    const Merge& m = merges[rank];
    uint64_t key = (uint64_t(uint32_t(m.left)) << 32) | uint32_t(m.right);
    size_t i = slot_of(key);
    while (table_[i].key != kEmpty && table_[i].key != key) i = (i + 1) & mask_;
    // A repeated pair takes its last rank, as HF's merge map (collected into a HashMap) does.
    table_[i] = Slot{key, rank, m.merged};
  }
}

namespace {

// A candidate merge of the symbol at `left` with its right neighbour. Entries go stale when
// either symbol changes; they are checked when popped instead of being removed (lazy deletion).
struct Candidate {
  uint32_t rank;
  uint32_t left;
  // Min-heap on (rank, position): equal ranks merge leftmost first, as in HF's Word::merge_all.
  bool operator<(const Candidate& o) const {
    return rank != o.rank ? rank > o.rank : left > o.left;
  }
};

struct Scratch {
  std::vector<Id> id;
  std::vector<uint32_t> prev, next;  // doubly linked list of live symbols; kNone at the ends
  std::vector<Candidate> heap;
};

constexpr uint32_t kNone = ~uint32_t{0};

}  // namespace

void Bpe::encode(std::string_view word, std::vector<Id>& out) const {
  const size_t n = word.size();
  if (n == 0) return;
  if (n == 1) {
    out.push_back(byte_ids_[static_cast<unsigned char>(word[0])]);
    return;
  }
  thread_local Scratch s;
  s.id.resize(n);
  s.prev.resize(n);
  s.next.resize(n);
  s.heap.clear();
  for (size_t i = 0; i < n; ++i) {
    s.id[i] = byte_ids_[static_cast<unsigned char>(word[i])];
    s.prev[i] = i == 0 ? kNone : uint32_t(i - 1);
    s.next[i] = i + 1 == n ? kNone : uint32_t(i + 1);
  }
  auto push = [&](uint32_t left) {
    if (const Slot* m = find(s.id[left], s.id[s.next[left]])) {
      s.heap.push_back({m->rank, left});
      std::push_heap(s.heap.begin(), s.heap.end());
    }
  };
  for (uint32_t i = 0; i + 1 < n; ++i) push(i);
  while (!s.heap.empty()) {
    std::pop_heap(s.heap.begin(), s.heap.end());
    Candidate c = s.heap.back();
    s.heap.pop_back();
    uint32_t right = s.next[c.left];
    // Stale if the left symbol was merged away (its id is then -1) or the pair changed.
    if (s.id[c.left] < 0 || right == kNone) continue;
    const Slot* m = find(s.id[c.left], s.id[right]);
    if (!m || m->rank != c.rank) continue;
    s.id[c.left] = m->merged;
    s.id[right] = -1;
    s.next[c.left] = s.next[right];
    if (s.next[right] != kNone) s.prev[s.next[right]] = c.left;
    if (s.prev[c.left] != kNone) push(s.prev[c.left]);
    if (s.next[c.left] != kNone) push(c.left);
  }
  for (uint32_t i = 0; i != kNone; i = s.next[i]) out.push_back(s.id[i]);
}

}  // namespace qwen3::detail
