// A sequence's KV cache: grows with the tokens it holds, up to its maximum context.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "qwen3/error.h"
#include "ops/key_layout.h"
#include "qwen3/model.h"

namespace qwen3 {

namespace {
// Growth step: small enough that a short chat holds little memory, large enough that
// re-allocation is rare.
constexpr int kGrowTokens = 256;

size_t page_rounded(size_t bytes) {
  const size_t page = size_t(::sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}
}  // namespace

// Blocks of 2 MiB or more are mapped from the kernel aligned to 2 MiB and advised to use huge
// pages: a prompt then fills its cache with a page fault per 2 MiB instead of per 4 KiB (in a VM
// a fault costs microseconds: 5% of a 512-token prefill on the 0.6B model). Fresh pages are zero.
constexpr size_t kHugePage = size_t(2) << 20;

template <class T>
T* detail::ZeroPagesAllocator<T>::allocate(size_t n) {
  const size_t bytes = n * sizeof(T);
  if (bytes < kHugePage) {
    if (void* p = std::calloc(n, sizeof(T))) return static_cast<T*>(p);
    throw std::bad_alloc();
  }
  // Mapped 2 MiB over, then trimmed to the aligned block, so that deallocate unmaps exactly it.
  const size_t mapped = bytes + kHugePage;
  void* m = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  const uintptr_t start = reinterpret_cast<uintptr_t>(m), begin = (start + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t end = begin + page_rounded(bytes);
  if (begin > start) ::munmap(m, begin - start);
  if (start + mapped > end) ::munmap(reinterpret_cast<void*>(end), start + mapped - end);
  ::madvise(reinterpret_cast<void*>(begin), bytes, MADV_HUGEPAGE);  // advice: 4 KiB pages where declined
  return reinterpret_cast<T*>(begin);
}

template <class T>
void detail::ZeroPagesAllocator<T>::deallocate(T* p, size_t n) {
  const size_t bytes = n * sizeof(T);
  if (bytes < kHugePage) return std::free(p);
  ::munmap(p, page_rounded(bytes));
}
template struct detail::ZeroPagesAllocator<uint8_t>;

Sequence::Sequence(const Model& model, int max_context) {
  const ModelConfig& c = model.config();
  if (max_context < 0)
    throw Error(ErrorKind::invalid_argument, "context length must be positive, got " + std::to_string(max_context));
  if (max_context > c.max_position_embeddings)
    throw Error(ErrorKind::invalid_argument, "context length " + std::to_string(max_context) +
                                                 " exceeds the model's max_position_embeddings " +
                                                 std::to_string(c.max_position_embeddings));
  max_context_ = max_context ? max_context : c.max_position_embeddings;
  layers_ = c.num_hidden_layers;
  kv_heads_ = c.num_key_value_heads;
  head_dim_ = c.head_dim;
  element_bytes_ = model.kv_element_bytes();
  k_.resize(layers_);
  v_.resize(layers_);
}

void Sequence::truncate(int length) {
  if (length < 0 || length > length_)
    throw Error(ErrorKind::invalid_argument, "cannot truncate a sequence of " + std::to_string(length_) +
                                                 " tokens to " + std::to_string(length));
  length_ = length;
}

void Sequence::reserve(int tokens) {
  if (tokens <= capacity_) return;
  // Whole blocks of keys (ops/key_layout.h): a head's first positions keep their place as it grows.
  const int capacity = ops::whole_key_blocks(std::min(max_context_, std::max(tokens, capacity_ + kGrowTokens)));
  const size_t old_head = size_t(capacity_) * head_dim_ * element_bytes_;
  const size_t new_head = size_t(capacity) * head_dim_ * element_bytes_;
  const size_t used = size_t(ops::whole_key_blocks(length_)) * head_dim_ * element_bytes_;
  for (auto* cache : {&k_, &v_})
    for (auto& layer : *cache) {
      // Zeroed, and each head's cached positions moved to the start of its new, longer part.
      detail::CacheBlock grown(kv_heads_ * new_head);
      for (int g = 0; g < kv_heads_ && !layer.empty(); ++g)
        std::copy_n(layer.begin() + g * old_head, used, grown.begin() + g * new_head);
      layer = std::move(grown);
    }
  capacity_ = capacity;
}

size_t Sequence::bytes() const { return size_t(capacity_) * kv_heads_ * head_dim_ * element_bytes_ * 2 * layers_; }

}  // namespace qwen3
