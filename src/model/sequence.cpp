// A sequence's per-layer state: KV caches that grow with the tokens they hold, up to the maximum
// context, and the fixed-size states of recurrent layers with their snapshots.
#include <algorithm>
#include <cstring>
#include <string>

#include "io/huge_page_buffer.h"
#include "model/model_impl.h"
#include "model/sequence_state.h"
#include "ops/key_layout.h"
#include "qwen3/error.h"

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
// fault per 2 MiB instead of per 4 KiB (in a VM a fault costs microseconds).
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

Sequence::Sequence(const Model& model, int max_context) : state_(std::make_unique<State>()) {
  const ModelConfig& c = model.config();
  if (max_context < 0)
    throw Error(ErrorKind::invalid_argument,
                "context length must be positive, got " + std::to_string(max_context));
  if (max_context > c.max_position_embeddings)
    throw Error(ErrorKind::invalid_argument, "context length " + std::to_string(max_context) +
                                                 " exceeds the model's max_position_embeddings " +
                                                 std::to_string(c.max_position_embeddings));
  State& s = *state_;
  s.max_context = max_context ? max_context : c.max_position_embeddings;
  s.layers = c.num_hidden_layers;
  s.kv_heads = c.num_key_value_heads;
  s.head_dim = c.head_dim;
  s.kv_dtype = model.impl_->kv_cache;
  s.layer.resize(s.layers);
  for (int i = 0; i < s.layers; ++i) {
    s.layer[i].mixer = c.layers[i].mixer;
    if (c.layers[i].mixer == Mixer::gated_delta_net) s.layer[i].rec = initial_recurrent_state(c);
  }
}

RecurrentState initial_recurrent_state(const ModelConfig& c) {
  const size_t channels = size_t(2) * c.linear_num_key_heads * c.linear_key_head_dim +
                          size_t(c.linear_num_value_heads) * c.linear_value_head_dim;
  return {std::vector<float>(size_t(c.linear_conv_kernel_dim - 1) * channels),
          std::vector<float>(size_t(c.linear_num_value_heads) * c.linear_key_head_dim *
                             c.linear_value_head_dim)};
}

Sequence::~Sequence() = default;
Sequence::Sequence(Sequence&&) noexcept = default;
Sequence& Sequence::operator=(Sequence&&) noexcept = default;

int Sequence::length() const { return state_->length; }
int Sequence::max_context() const { return state_->max_context; }
bool Sequence::recurrent() const { return state_->recurrent(); }
int Sequence::mtp_length() const { return state_->mtp ? state_->mtp->length : 0; }

namespace {

// Every cached position's key and value, and every recurrent state, the same bits.
bool same_layers(const Sequence::State& a, const Sequence::State& b) {
  if (a.length != b.length || a.layer.size() != b.layer.size() || a.kv_dtype != b.kv_dtype ||
      a.kv_heads != b.kv_heads || a.head_dim != b.head_dim)
    return false;
  const DType kv = a.kv_dtype;
  const auto head = [&](const detail::CacheBlock& c, int capacity, int g) {
    return &c[row_bytes(kv, size_t(g) * capacity * a.head_dim)];
  };
  const auto same = [](float x, float y) { return std::memcmp(&x, &y, sizeof x) == 0; };
  for (size_t i = 0; i < a.layer.size(); ++i) {
    const LayerState &x = a.layer[i], &y = b.layer[i];
    if (x.mixer != y.mixer || x.rec != y.rec) return false;
    if (x.mixer != Mixer::attention) continue;
    for (int g = 0; g < a.kv_heads; ++g)
      for (int p = 0; p < a.length; ++p)
        for (int d = 0; d < a.head_dim; ++d) {
          if (!same(ops::cached_key(kv, head(x.kv.k, a.capacity, g), p, d, a.head_dim),
                    ops::cached_key(kv, head(y.kv.k, b.capacity, g), p, d, a.head_dim)) ||
              !same(ops::cached_value(kv, head(x.kv.v, a.capacity, g), p, d, a.head_dim),
                    ops::cached_value(kv, head(y.kv.v, b.capacity, g), p, d, a.head_dim)))
            return false;
        }
  }
  return true;
}

}  // namespace

bool Sequence::same_state(const Sequence& other) const {
  return same_layers(*state_, *other.state_);
}

int Sequence::truncate(int length) {
  State& s = *state_;
  if (length < 0 || length > s.length)
    throw Error(ErrorKind::invalid_argument, "cannot truncate a sequence of " +
                                                 std::to_string(s.length) + " tokens to " +
                                                 std::to_string(length));
  if (s.mtp) s.mtp->length = std::min(s.mtp->length, length);
  if (!s.recurrent() || length == s.length) return s.length = length;
  // Back to the newest state at or before `length`: of the last step's tokens, a snapshot, or the
  // start.
  while (s.step_states_valid > 0 && s.step_states[s.step_states_valid - 1].length > length)
    --s.step_states_valid;
  while (!s.snapshots.empty() && s.snapshots.back().length > length) s.snapshots.pop_back();
  const StateSnapshot* from = s.step_states_valid > 0 ? &s.step_states[s.step_states_valid - 1]
                              : s.snapshots.empty()   ? nullptr
                                                      : &s.snapshots.back();
  size_t r = 0;
  for (LayerState& l : s.layer) {
    if (l.mixer != Mixer::gated_delta_net) continue;
    if (from) {
      l.rec = from->layers[r++];
    } else {
      std::fill(l.rec.conv.begin(), l.rec.conv.end(), 0.0f);
      std::fill(l.rec.ssm.begin(), l.rec.ssm.end(), 0.0f);
    }
  }
  return s.length = from ? from->length : 0;
}

std::unique_ptr<Sequence::State> Sequence::State::head_state() const {
  auto s = std::make_unique<State>();
  s->layers = 1;
  s->kv_heads = kv_heads;
  s->head_dim = head_dim;
  s->kv_dtype = kv_dtype;
  s->max_context = max_context;
  s->layer.resize(1);
  return s;
}

bool Sequence::State::recurrent() const {
  return std::any_of(layer.begin(), layer.end(),
                     [](const LayerState& l) { return l.mixer == Mixer::gated_delta_net; });
}

void Sequence::State::snapshot_after_step(int tokens_fed, bool rewindable) {
  // A rewindable step is speculative decoding's verification: decode, several tokens at a time.
  const bool prompt = tokens_fed > 1 && !rewindable;
  const bool interval_crossed =
      length / kSnapshotInterval != (length - tokens_fed) / kSnapshotInterval;
  if (!recurrent() || (!prompt && !interval_crossed)) return;
  // Two prompt ends (this turn's and the last) and the latest decode interval are what a next
  // request or chat turn rewinds to; each snapshot is every recurrent layer's state (megabytes).
  constexpr int kKeep[2] = {1, 2};  // [prompt]: how many of each kind are kept
  StateSnapshot snap{length, prompt, {}};
  for (const LayerState& l : layer)
    if (l.mixer == Mixer::gated_delta_net) snap.layers.push_back(l.rec);
  snapshots.push_back(std::move(snap));
  const auto same_kind = [&](const StateSnapshot& x) { return x.prompt == prompt; };
  if (std::count_if(snapshots.begin(), snapshots.end(), same_kind) > kKeep[prompt])
    snapshots.erase(std::find_if(snapshots.begin(), snapshots.end(), same_kind));
}

void Sequence::State::prepare_step_states(int tokens, bool rewindable, const ModelConfig& c) {
  step_states_valid = 0;
  if (!rewindable || !recurrent()) return;
  const int n = tokens - 1;
  if (int(step_states.size()) < n) step_states.resize(n);
  const int recurrent_layers =
      static_cast<int>(std::count_if(layer.begin(), layer.end(), [](const LayerState& l) {
        return l.mixer == Mixer::gated_delta_net;
      }));
  for (int t = 0; t < n; ++t) {
    step_states[t].length = length + t + 1;
    step_states[t].layers.resize(recurrent_layers, initial_recurrent_state(c));
  }
  step_states_valid = n;
}

void Sequence::State::reserve(int tokens) {
  if (tokens <= capacity) return;
  // Whole blocks of keys (ops/key_layout.h): a head's first positions keep their place as it grows.
  const int grown_capacity =
      ops::whole_key_blocks(std::min(max_context, std::max(tokens, capacity + kGrowTokens)));
  const size_t old_head = row_bytes(kv_dtype, size_t(capacity) * head_dim);
  const size_t new_head = row_bytes(kv_dtype, size_t(grown_capacity) * head_dim);
  const size_t used = row_bytes(kv_dtype, size_t(ops::whole_key_blocks(length)) * head_dim);
  for (LayerState& l : layer)
    for (auto* cache : {&l.kv.k, &l.kv.v}) {
      if (l.mixer != Mixer::attention) continue;
      // Zeroed, and each head's cached positions moved to the start of its new, longer part.
      detail::CacheBlock grown(kv_heads * new_head);
      for (int g = 0; g < kv_heads && !cache->empty(); ++g)
        std::copy_n(cache->begin() + g * old_head, used, grown.begin() + g * new_head);
      *cache = std::move(grown);
    }
  capacity = grown_capacity;
}

size_t Sequence::bytes() const {
  const State& s = *state_;
  const auto recurrent_bytes = [](const RecurrentState& r) {
    return sizeof(float) * (r.conv.size() + r.ssm.size());
  };
  // An attention layer's keys and values: room for `capacity` positions, whatever the length.
  const auto kv_bytes = [](const State& state) {
    return row_bytes(state.kv_dtype, size_t(state.capacity) * state.head_dim) * state.kv_heads * 2;
  };
  size_t n = 0;
  for (const LayerState& l : s.layer)
    n += l.mixer == Mixer::attention ? kv_bytes(s) : recurrent_bytes(l.rec);
  for (const auto* kind : {&s.snapshots, &s.step_states})
    for (const StateSnapshot& snap : *kind)
      for (const RecurrentState& r : snap.layers) n += recurrent_bytes(r);
  if (s.mtp) n += kv_bytes(*s.mtp);
  return n;
}

}  // namespace qwen3
