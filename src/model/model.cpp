// The Qwen3 forward pass: one function per step of the math, calling ops only.
// Names follow transformers' modeling_qwen3.py.
#include <algorithm>
#include <chrono>
#include <set>
#include <string>
#include <thread>

#include "io/huge_page_buffer.h"
#include "model/weights.h"
#include "ops/ops.h"
#include "qwen3/error.h"
#include "qwen3/model.h"

namespace qwen3 {

namespace {

using io::Buffer;

// A step's buffers, reused across layers and kept from step to step: allocated anew, a long
// prompt's would fault in 4 KiB at a time every step (in a VM, 4% of a 512-token prefill).
struct Scratch {
  Buffer<float> x;      // [T, D]      the residual stream
  Buffer<float> h;      // [T, D]      normalised input of a sub-block
  Buffer<float> q;      // [T, H * Dh]
  Buffer<float> k, v;   // [T, Hkv * Dh]
  Buffer<float> ctx;    // [T, H * Dh] attention output before o_proj
  Buffer<float> out;    // [T, D]      a sub-block's output, added to the residual
  Buffer<float> gate;   // [T, F]
  Buffer<float> up;     // [T, F]

  size_t bytes() const {
    return sizeof(float) * (x.size() + h.size() + q.size() + k.size() + v.size() + ctx.size() + out.size() +
                            gate.size() + up.size());
  }
};

}  // namespace

struct Model::Impl {
  Impl(Weights weights, ops::RuntimePtr runtime, DType kv)
      : w(std::move(weights)), rt(std::move(runtime)), kv_cache(kv) {
    prefaulting = std::thread([this] { prefault(w); });
  }
  ~Impl() { prefaulting.join(); }

  Weights w;
  ops::RuntimePtr rt;
  DType kv_cache;  // f32, f16 or bf16
  std::vector<float> batch_logits;  // a batch's LM-head product, kept for the next decode step
  Scratch scratch;
  std::thread prefaulting;  // maps the weights' pages while the caller loads the tokenizer
};

namespace {

// The tokens of one step, flattened over the batch.
struct StepRows {
  int T = 0;
  std::vector<int32_t> ids;        // [T]
  std::vector<int> item_begin;     // first row of each item
  std::vector<float> cos, sin;     // [T, Dh / 2] rotary angles of each row's position
  struct Cache {
    std::vector<detail::CacheBlock>* k;  // per layer [Hkv, capacity, Dh], keys blocked (ops/key_layout.h)
    std::vector<detail::CacheBlock>* v;
    int p0;        // tokens already cached
    int capacity;  // positions per head
  };
  std::vector<Cache> caches;  // per item
};

class Forward {
 public:
  Forward(const ModelConfig& c, Model::Impl& m, std::span<const BatchItem> batch, const StepRows& rows)
      : c_(c),
        w_(m.w),
        rt_(*m.rt),
        kv_cache_(m.kv_cache),
        batch_logits_(m.batch_logits),
        batch_(batch),
        rows_(rows),
        s_(m.scratch) {}

  // HF: Qwen3Model.forward, then lm_head on the rows that need logits.
  void run(const Observer* observer, std::vector<std::vector<float>>& logits) {
    const int T = rows_.T, D = c_.hidden_size;
    alloc_scratch();
    Buffer<float>& x = s_.x;
    embed(x);
    if (observer) (*observer)("embed", x.data(), T, D);
    for (int l = 0; l < c_.num_hidden_layers; ++l) {
      block(l, x);
      if (observer && l + 1 < c_.num_hidden_layers) (*observer)("layers." + std::to_string(l), x.data(), T, D);
    }
    final_norm(x);
    if (observer) (*observer)("norm", x.data(), T, D);
    lm_head(x, logits);
    constexpr size_t kKeptScratchBytes = size_t(64) << 20;  // a 512-token prompt's is 28 MB
    if (s_.bytes() > kKeptScratchBytes) s_ = Scratch();
  }

 private:
  // HF: self.embed_tokens(input_ids)
  void embed(Buffer<float>& x) { ops::embed(rt_, w_.embed_tokens, rows_.ids, x.data()); }

  // HF: Qwen3DecoderLayer.forward: pre-norm attention and feed-forward, each added to the residual.
  void block(int l, Buffer<float>& x) {
    const LayerWeights& lw = w_.layers[l];
    const int T = rows_.T, D = c_.hidden_size;
    const float eps = static_cast<float>(c_.rms_norm_eps);
    ops::rms_norm(rt_, x.data(), lw.input_layernorm.data(), eps, T, D, s_.h.data());  // input_layernorm
    attention(l, lw);
    ops::add(rt_, x.data(), s_.out.data(), T * D);
    ops::rms_norm(rt_, x.data(), lw.post_attention_layernorm.data(), eps, T, D, s_.h.data());
    ffn(lw);
    ops::add(rt_, x.data(), s_.out.data(), T * D);
  }

  // HF: Qwen3Attention.forward: q/k/v projections, per-head q_norm/k_norm, rope, cached
  // grouped-query attention, o_proj.
  void attention(int l, const LayerWeights& lw) {
    const int T = rows_.T, H = c_.num_attention_heads, Hkv = c_.num_key_value_heads, Dh = c_.head_dim;
    const float eps = static_cast<float>(c_.rms_norm_eps);
    ops::matmul(rt_, s_.h.data(), T, {{lw.q_proj, s_.q.data()}, {lw.k_proj, s_.k.data()}, {lw.v_proj, s_.v.data()}});
    ops::rms_norm(rt_, s_.q.data(), lw.q_norm.data(), eps, T * H, Dh, s_.q.data());  // per head
    ops::rms_norm(rt_, s_.k.data(), lw.k_norm.data(), eps, T * Hkv, Dh, s_.k.data());
    for (int t = 0; t < T; ++t) {
      const float* cos = &rows_.cos[size_t(t) * Dh / 2];
      const float* sin = &rows_.sin[size_t(t) * Dh / 2];
      ops::rope(&s_.q[size_t(t) * H * Dh], H, Dh, cos, sin);
      ops::rope(&s_.k[size_t(t) * Hkv * Dh], Hkv, Dh, cos, sin);
    }
    std::vector<ops::AttentionItem> items;
    for (size_t i = 0; i < batch_.size(); ++i) {
      const StepRows::Cache& cache = rows_.caches[i];
      const size_t first = rows_.item_begin[i];
      items.push_back({&s_.q[first * H * Dh], &s_.k[first * Hkv * Dh], &s_.v[first * Hkv * Dh],
                       static_cast<int>(batch_[i].tokens.size()), cache.p0, (*cache.k)[l].data(), (*cache.v)[l].data(),
                       kv_cache_, cache.capacity, &s_.ctx[first * H * Dh]});
    }
    ops::attention(rt_, items, H, Hkv, Dh);
    ops::matmul(rt_, s_.ctx.data(), T, lw.o_proj, s_.out.data());
  }

  // HF: Qwen3MLP.forward: down_proj(silu(gate_proj(x)) * up_proj(x))
  void ffn(const LayerWeights& lw) {
    const int T = rows_.T, F = c_.intermediate_size;
    ops::matmul(rt_, s_.h.data(), T, {{lw.gate_proj, s_.gate.data()}, {lw.up_proj, s_.up.data()}});
    ops::silu_mul(rt_, s_.gate.data(), s_.up.data(), T * F, s_.gate.data());
    ops::matmul(rt_, s_.gate.data(), T, lw.down_proj, s_.out.data());
  }

  // HF: self.norm(hidden_states)
  void final_norm(Buffer<float>& x) {
    ops::rms_norm(rt_, x.data(), w_.norm.data(), static_cast<float>(c_.rms_norm_eps), rows_.T, c_.hidden_size,
                  x.data());
  }

  // HF: self.lm_head(hidden_states), only on the rows whose logits are wanted, all items in one
  // product so the 151936-row matrix is read once per step.
  void lm_head(const Buffer<float>& x, std::vector<std::vector<float>>& logits) {
    const size_t D = c_.hidden_size, V = c_.vocab_size;
    std::vector<float> wanted;  // [R, D]
    std::vector<int> rows(batch_.size());
    for (size_t i = 0; i < batch_.size(); ++i) {
      const int n = static_cast<int>(batch_[i].tokens.size());
      rows[i] = batch_[i].all_logits ? n : 1;
      const size_t first = rows_.item_begin[i] + n - rows[i];
      wanted.insert(wanted.end(), x.begin() + first * D, x.begin() + (first + rows[i]) * D);
    }
    const int R = static_cast<int>(wanted.size() / D);
    logits.resize(batch_.size());
    if (batch_.size() == 1) {  // straight into the caller's vector
      logits[0].resize(size_t(R) * V);
      ops::matmul(rt_, wanted.data(), R, w_.lm_head, logits[0].data());
      return;
    }
    std::vector<float>& all = batch_logits_;  // [R, V]
    all.resize(size_t(R) * V);
    ops::matmul(rt_, wanted.data(), R, w_.lm_head, all.data());
    size_t row = 0;
    for (size_t i = 0; i < batch_.size(); ++i) {
      logits[i].resize(rows[i] * V);
      ops::copy(rt_, &all[row * V], rows[i] * V, logits[i].data());
      row += rows[i];
    }
    constexpr int kKeptRows = 64;  // a decode batch's worth; a batch of whole prompts lets go of it
    if (R > kKeptRows) std::vector<float>().swap(all);
  }

  void alloc_scratch() {
    const size_t T = rows_.T, D = c_.hidden_size, F = c_.intermediate_size;
    const size_t q = size_t(c_.num_attention_heads) * c_.head_dim, kv = size_t(c_.num_key_value_heads) * c_.head_dim;
    s_.x.resize(T * D);
    s_.h.resize(T * D);
    s_.q.resize(T * q);
    s_.k.resize(T * kv);
    s_.v.resize(T * kv);
    s_.ctx.resize(T * q);
    s_.out.resize(T * D);
    s_.gate.resize(T * F);
    s_.up.resize(T * F);
  }

  const ModelConfig& c_;
  const Weights& w_;
  ops::Runtime& rt_;
  const DType kv_cache_;
  std::vector<float>& batch_logits_;
  std::span<const BatchItem> batch_;
  const StepRows& rows_;
  Scratch& s_;
};

}  // namespace

std::unique_ptr<Model> Model::load(const std::filesystem::path& dir, const LoadOptions& options) {
  if (!std::filesystem::is_directory(dir))
    throw Error(ErrorKind::io, dir.string() + ": not a model folder (no such directory)");
  std::unique_ptr<Model> m(new Model());
  m->config_ = ModelConfig::load(dir);
  m->name_ = std::filesystem::absolute(dir).lexically_normal().filename().string();
  if (m->name_.empty()) m->name_ = std::filesystem::absolute(dir).lexically_normal().parent_path().filename().string();
  if (options.kv_cache != "auto" && options.kv_cache != "f32" && options.kv_cache != "f16" && options.kv_cache != "bf16")
    throw Error(ErrorKind::invalid_argument, "KV cache type must be auto, f32, f16 or bf16, got '" + options.kv_cache + "'");
  ops::RuntimePtr rt = ops::make_runtime(options.isa, options.threads, options.activations);
  // The bf16 cache comes with bf16 activations: AVX512_BF16's kernels, multiplying pairs of dimensions.
  const bool bf16_cache =
      options.activations == "bf16" && ops::attends_over(*rt, DType::bf16) && m->config_.head_dim % 2 == 0;
  if (options.kv_cache == "bf16" && !bf16_cache)
    throw Error(ErrorKind::unsupported, m->config_.head_dim % 2 ? "a bf16 KV cache needs an even head_dim"
                                                                : "a bf16 KV cache needs --activations bf16 (AVX512_BF16)");
  Weights w = load_weights(dir, m->config_, !options.mmap);
  if (!options.quant.empty()) quantize_weights(w, parse_quant_type(options.quant), options.keep_head, *rt);
  DType kv = options.kv_cache == "f16" ? DType::f16 : options.kv_cache == "bf16" ? DType::bf16 : DType::f32;
  if (options.kv_cache == "auto")
    kv = bf16_cache ? DType::bf16 : is_block_quantized(w.layers.front().q_proj.dtype) ? DType::f16 : DType::f32;
  m->impl_ = std::make_unique<Impl>(std::move(w), std::move(rt), kv);
  return m;
}

Model::~Model() = default;
const char* Model::isa() const { return ops::isa_name(*impl_->rt); }
int Model::threads() const { return ops::thread_count(*impl_->rt); }
uint64_t Model::weight_bytes() const { return impl_->w.bytes_per_token(); }
double Model::read_speed() {
  const auto matrices = impl_->w.per_token_matrices();
  const double bytes = static_cast<double>(weight_bytes());  // outside the timed read
  const auto t0 = std::chrono::steady_clock::now();
  [[maybe_unused]] static volatile uint64_t sink;  // keeps the reads
  sink = ops::read(*impl_->rt, matrices);
  return bytes / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 1e9;
}
const char* Model::kv_cache() const { return dtype_name(impl_->kv_cache); }
int Model::kv_element_bytes() const { return static_cast<int>(row_bytes(impl_->kv_cache, 1)); }

std::vector<std::vector<float>> Model::step(std::span<const BatchItem> batch, const Observer* observer) {
  std::vector<std::vector<float>> logits;
  step(batch, logits, observer);
  return logits;
}

void Model::step(std::span<const BatchItem> batch, std::vector<std::vector<float>>& logits, const Observer* observer) {
  // Everything is checked before any sequence changes.
  if (batch.empty()) throw Error(ErrorKind::invalid_argument, "step: empty batch");
  StepRows rows;
  std::set<const Sequence*> seen;
  for (auto& item : batch) {
    if (!item.sequence) throw Error(ErrorKind::invalid_argument, "step: batch item without a sequence");
    const Sequence& s = *item.sequence;
    if (s.layers_ != config_.num_hidden_layers || s.kv_heads_ != config_.num_key_value_heads ||
        s.head_dim_ != config_.head_dim || s.element_bytes_ != kv_element_bytes())
      throw Error(ErrorKind::invalid_argument, "step: sequence was made for another model");
    if (!seen.insert(&s).second) throw Error(ErrorKind::invalid_argument, "step: a sequence appears twice in a batch");
    if (item.tokens.empty()) throw Error(ErrorKind::invalid_argument, "step: batch item with no tokens");
    if (item.tokens.size() > size_t(s.max_context_ - s.length_))
      throw Error(ErrorKind::context_overflow, "context overflow: " + std::to_string(s.length_) + " cached + " +
                                                   std::to_string(item.tokens.size()) + " new tokens exceed the context of " +
                                                   std::to_string(s.max_context_));
    for (TokenId id : item.tokens)
      if (id < 0 || id >= config_.vocab_size)
        throw Error(ErrorKind::invalid_argument,
                    "token id " + std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(config_.vocab_size) + ")");
  }
  const int half = config_.head_dim / 2;
  for (auto& item : batch) {
    rows.item_begin.push_back(rows.T);
    for (size_t j = 0; j < item.tokens.size(); ++j) {
      rows.ids.push_back(item.tokens[j]);
      rows.cos.resize(rows.cos.size() + half);
      rows.sin.resize(rows.sin.size() + half);
      ops::rope_angles(item.sequence->length_ + static_cast<int>(j), config_.head_dim, config_.rope_theta,
                       &rows.cos[rows.cos.size() - half], &rows.sin[rows.sin.size() - half]);
    }
    rows.T += static_cast<int>(item.tokens.size());
    item.sequence->reserve(item.sequence->length_ + static_cast<int>(item.tokens.size()));
    rows.caches.push_back({&item.sequence->k_, &item.sequence->v_, item.sequence->length_, item.sequence->capacity_});
  }
  Forward(config_, *impl_, batch, rows).run(observer, logits);
  for (auto& item : batch) item.sequence->length_ += static_cast<int>(item.tokens.size());
}

}  // namespace qwen3
