// What a Sequence holds in each layer: the model layer's side of the opaque public Sequence.
#pragma once

#include <cstdint>
#include <new>
#include <vector>

#include "io/dtype.h"
#include "qwen3/model.h"

namespace qwen3 {

namespace detail {
// Allocates zeroed pages from the kernel, aligned to a page, and leaves elements uninitialized, so
// a KV cache only touches (and holds) the pages its tokens fill; blocks of 2 MiB or more in 2 MiB
// pages.
template <class T>
struct ZeroPagesAllocator {
  using value_type = T;
  ZeroPagesAllocator() = default;
  template <class U>
  ZeroPagesAllocator(const ZeroPagesAllocator<U>&) {}
  T* allocate(size_t n);
  void deallocate(T* p, size_t n);
  template <class U>
  void construct(U* p) {
    ::new (static_cast<void*>(p)) U;
  }
  bool operator==(const ZeroPagesAllocator&) const { return true; }
};
using CacheBlock = std::vector<uint8_t, ZeroPagesAllocator<uint8_t>>;  // f32, f16 or bf16 elements
}  // namespace detail

// An attention layer's keys and values, [kv_heads, capacity, head_dim] each: each head's positions
// together, so attention reads them as one matrix; keys in blocks of 16 positions,
// dimension-major within a block (src/ops/key_layout.h).
struct KvCache {
  detail::CacheBlock k, v;
};

// Per layer, the state of its kind of mixer (attention: a KV cache; a recurrent layer's state
// would sit beside it).
struct LayerState {
  KvCache kv;
};

struct Sequence::State {
  // What the sequence was made for, checked at every step.
  int layers = 0, kv_heads = 0, head_dim = 0;
  DType kv_dtype = DType::f32;
  int length = 0, max_context = 0;
  int capacity = 0;  // positions each KV cache holds room for: a multiple of 16
  std::vector<LayerState> layer;

  // Grows every KV cache to hold `tokens` positions (whole key blocks), keeping what it holds.
  void reserve(int tokens);
};

}  // namespace qwen3
