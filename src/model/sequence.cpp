// A sequence's KV cache: grows with the tokens it holds, up to its maximum context.
#include <algorithm>
#include <string>

#include "io/huge_page_buffer.h"
#include "qwen3/error.h"
#include "ops/key_layout.h"
#include "qwen3/model.h"

namespace qwen3 {

namespace {
// Growth step: small enough that a short chat holds little memory, large enough that
// re-allocation is rare.
constexpr int kGrowTokens = 256;
}  // namespace

// Every block is mapped on its own: zero pages from the kernel, faulted in only as tokens fill
// them, aligned to a page, so no vector load straddles two cache lines (calloc's blocks sat 16
// bytes past a page, and once one was freed glibc may serve the next from its heap, cleared).
// From 2 MiB up they are advised to use huge pages: a prompt then fills its cache with a page
// fault per 2 MiB instead of per 4 KiB (in a VM a fault costs microseconds: 5% of a 512-token
// prefill on the 0.6B model).
template <class T>
T* detail::ZeroPagesAllocator<T>::allocate(size_t n) {
  void* p = io::map_huge_pages(n * sizeof(T));
  if (!p) throw std::bad_alloc();
  return static_cast<T*>(p);
}

template <class T>
void detail::ZeroPagesAllocator<T>::deallocate(T* p, size_t n) {
  io::unmap_huge_pages(p, n * sizeof(T));
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
