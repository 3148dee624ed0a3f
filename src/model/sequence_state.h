// What a Sequence holds in each layer: the model layer's side of the opaque public Sequence.
#pragma once

#include <cstdint>
#include <memory>
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

// A Gated DeltaNet layer's state: fixed-size, whatever the sequence's length.
struct RecurrentState {
  std::vector<float> conv;  // [K - 1, C] the convolution's last inputs, oldest first
  std::vector<float> ssm;   // [nv, dk, dv] the delta rule's state, float32
  bool operator==(const RecurrentState&) const = default;
};

// Per layer, the state of its kind of mixer.
struct LayerState {
  Mixer mixer = Mixer::attention;
  KvCache kv;          // Mixer::attention
  RecurrentState rec;  // Mixer::gated_delta_net
};

// Every recurrent layer's state as it was after the first `length` tokens: what truncate rewinds
// to, since a recurrent state cannot be cut back.
struct StateSnapshot {
  int length = 0;
  bool prompt = false;  // taken at the end of a prompt step (else at a decode interval)
  std::vector<RecurrentState> layers;  // [recurrent layers]
};

// A recurrent layer's state at the start of a sequence: zeros of c's shapes.
RecurrentState initial_recurrent_state(const ModelConfig& c);

struct Sequence::State {
  // What the sequence was made for, checked at every step.
  int layers = 0, kv_heads = 0, head_dim = 0;
  DType kv_dtype = DType::f32;
  int length = 0, max_context = 0;
  int capacity = 0;  // positions each KV cache holds room for: a multiple of 16
  std::vector<LayerState> layer;
  std::vector<StateSnapshot> snapshots;  // oldest first; only for models with recurrent layers
  // After a rewindable step (BatchItem::rewindable): the recurrent states after each of its tokens
  // but the last, oldest first, so that truncate rewinds exactly within the step. The first
  // `step_states_valid` are the latest step's; the memory stays for the next one.
  std::vector<StateSnapshot> step_states;
  int step_states_valid = 0;
  // The MTP head's KV cache (one attention layer, its own length), made at its first use.
  std::unique_ptr<State> mtp;
  std::unique_ptr<State> head_state() const;

  bool recurrent() const;  // any Gated DeltaNet layer
  // Grows every KV cache to hold `tokens` positions (whole key blocks), keeping what it holds.
  void reserve(int tokens);
  // After a step: keeps a snapshot of the recurrent states at the end of a prompt step (the end
  // of a chat turn's prompt, a prefix the next request shares) and every kSnapshotInterval
  // tokens of decode, within a fixed number of each (oldest dropped).
  void snapshot_after_step(int tokens_fed, bool rewindable);
  // Before a step of `tokens`: drops the last step's per-token states, and when `rewindable` makes
  // room for this one's (lengths length + 1 ... length + tokens - 1).
  void prepare_step_states(int tokens, bool rewindable, const ModelConfig& c);
  static constexpr int kSnapshotInterval = 32;
};

}  // namespace qwen3
