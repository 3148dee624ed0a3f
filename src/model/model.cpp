// The forward pass: a model composed of layers, each a token mixer and a feed-forward chosen per
// layer from config.json (layers.h), between the embeddings and the LM head. Names follow
// transformers' modeling_qwen3.py, modeling_qwen3_moe.py and modeling_qwen3_5(_moe).py.
#include <algorithm>
#include <chrono>
#include <optional>
#include <set>
#include <string>

#include "model/gguf_model.h"
#include "model/model_impl.h"
#include "ops/kernels.h"
#include "qwen3/error.h"

namespace qwen3 {

namespace {

class Forward {
 public:
  Forward(const ModelConfig& c, Model::Impl& m, std::span<const BatchItem> batch,
          const StepRows& rows)
      : c_(c), w_(m.w), step_{c, *m.rt, batch, rows, m.scratch}, batch_logits_(m.batch_logits) {}

  // HF: Qwen3Model.forward, then lm_head on the rows that need logits.
  void run(const Observer* observer, std::vector<std::vector<float>>& logits) {
    const int T = step_.rows.T, D = c_.hidden_size;
    Scratch& s = step_.s;
    s.x.resize(size_t(T) * D);
    s.h.resize(size_t(T) * D);
    s.out.resize(size_t(T) * D);
    embed(s.x);
    if (observer) (*observer)("embed", s.x.data(), T, D);
    for (int l = 0; l < c_.num_hidden_layers; ++l) {
      block(w_.layers[l], l, s.x);
      if (observer && l + 1 < c_.num_hidden_layers)
        (*observer)("layers." + std::to_string(l), s.x.data(), T, D);
    }
    final_norm(s.x);
    if (observer) (*observer)("norm", s.x.data(), T, D);
    for (size_t i = 0; i < step_.batch.size(); ++i)
      if (std::vector<float>* hidden = step_.batch[i].hidden) {
        const size_t first = step_.rows.item_begin[i] * size_t(D);
        hidden->assign(s.x.begin() + first, s.x.begin() + first + step_.batch[i].tokens.size() * D);
      }
    lm_head(s.x, logits);
    release_large_scratch();
  }

  // Qwen3.5's MTP head on the step's rows (the fixtures' semantics, as vLLM's qwen3_next_mtp):
  // fc over [pre_fc_norm_embedding(embed(x_{t+1})) | pre_fc_norm_hidden(h_t)], the head's
  // decoder layer (its KV cache: layer 0 of the rows' states), mtp.norm, the shared LM head.
  void mtp(const float* hidden, std::vector<float>* hidden_out,
           std::vector<std::vector<float>>& logits) {
    const MtpWeights& m = w_.mtp;
    const int T = step_.rows.T, D = c_.hidden_size;
    const float eps = static_cast<float>(c_.rms_norm_eps);
    Scratch& s = step_.s;
    s.x.resize(size_t(T) * D);
    s.h.resize(size_t(T) * D);
    s.out.resize(size_t(T) * D);
    s.mixed.resize(size_t(T) * 2 * D);
    embed(s.x);
    ops::rms_norm(step_.rt, s.x.data(), m.pre_fc_norm_embedding.data(), eps, T, D, s.h.data());
    ops::rms_norm(step_.rt, hidden, m.pre_fc_norm_hidden.data(), eps, T, D, s.out.data());
    for (int t = 0; t < T; ++t) {  // torch.cat([embedding, hidden], dim=-1)
      std::copy_n(&s.h[size_t(t) * D], D, &s.mixed[size_t(t) * 2 * D]);
      std::copy_n(&s.out[size_t(t) * D], D, &s.mixed[size_t(t) * 2 * D + D]);
    }
    ops::matmul(step_.rt, s.mixed.data(), T, m.fc, s.x.data());
    block(m.layer, 0, s.x);
    ops::rms_norm(step_.rt, s.x.data(), m.norm.data(), eps, T, D, s.x.data());
    if (hidden_out) hidden_out->assign(s.x.begin(), s.x.begin() + size_t(T) * D);
    lm_head(s.x, logits);
    release_large_scratch();
  }

 private:
  // HF: self.embed_tokens(input_ids)
  void embed(io::Buffer<float>& x) {
    ops::embed(step_.rt, w_.embed_tokens, step_.rows.ids, x.data());
  }

  // HF: Qwen3DecoderLayer.forward: x += mixer(input_layernorm(x)); x +=
  // ffn(post_attention_layernorm(x))
  void block(const LayerWeights& lw, int l, io::Buffer<float>& x) {
    const int T = step_.rows.T, D = c_.hidden_size;
    const float eps = static_cast<float>(c_.rms_norm_eps);
    Scratch& s = step_.s;
    ops::rms_norm(step_.rt, x.data(), lw.input_layernorm.data(), eps, T, D, s.h.data());
    switch (lw.kind.mixer) {
      case Mixer::attention: attention(step_, l, lw.self_attn, s.h.data(), s.out.data()); break;
      case Mixer::gated_delta_net:
        gated_delta_net(step_, l, lw.linear_attn, s.h.data(), s.out.data());
        break;
    }
    ops::add(step_.rt, x.data(), s.out.data(), T * D);
    ops::rms_norm(step_.rt, x.data(), lw.post_attention_layernorm.data(), eps, T, D, s.h.data());
    switch (lw.kind.ffn) {
      case FeedForward::mlp: mlp(step_, lw.mlp, s.h.data(), s.out.data()); break;
      case FeedForward::moe: moe(step_, lw.moe, s.h.data(), s.out.data()); break;
    }
    ops::add(step_.rt, x.data(), s.out.data(), T * D);
  }

  // HF: self.norm(hidden_states)
  void final_norm(io::Buffer<float>& x) {
    ops::rms_norm(step_.rt, x.data(), w_.norm.data(), static_cast<float>(c_.rms_norm_eps),
                  step_.rows.T, c_.hidden_size, x.data());
  }

  // HF: self.lm_head(hidden_states), only on the rows whose logits are wanted, all items in one
  // product so the 151936-row matrix is read once per step.
  void lm_head(const io::Buffer<float>& x, std::vector<std::vector<float>>& logits) {
    const size_t D = c_.hidden_size, V = c_.vocab_size;
    std::span<const BatchItem> batch = step_.batch;
    std::vector<float> wanted;  // [R, D]
    std::vector<int> rows(batch.size());
    for (size_t i = 0; i < batch.size(); ++i) {
      const int n = static_cast<int>(batch[i].tokens.size());
      rows[i] = batch[i].all_logits ? n : 1;
      const size_t first = step_.rows.item_begin[i] + n - rows[i];
      wanted.insert(wanted.end(), x.begin() + first * D, x.begin() + (first + rows[i]) * D);
    }
    const int R = static_cast<int>(wanted.size() / D);
    logits.resize(batch.size());
    if (batch.size() == 1) {  // straight into the caller's vector
      logits[0].resize(size_t(R) * V);
      ops::matmul(step_.rt, wanted.data(), R, w_.lm_head, logits[0].data());
      return;
    }
    std::vector<float>& all = batch_logits_;  // [R, V]
    all.resize(size_t(R) * V);
    ops::matmul(step_.rt, wanted.data(), R, w_.lm_head, all.data());
    size_t row = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
      logits[i].resize(rows[i] * V);
      ops::copy(step_.rt, &all[row * V], rows[i] * V, logits[i].data());
      row += rows[i];
    }
    constexpr int kKeptRows = 64;  // a decode batch's worth; a batch of whole prompts lets go of it
    if (R > kKeptRows) std::vector<float>().swap(all);
  }

  void release_large_scratch() {
    constexpr size_t kKeptScratchBytes = size_t(64) << 20;  // a 512-token prompt's is 28 MB
    if (step_.s.bytes() > kKeptScratchBytes) step_.s = Scratch();
  }

  const ModelConfig& c_;
  const Weights& w_;
  Step step_;
  std::vector<float>& batch_logits_;
};

// Whether a sequence's state has the shapes of this model's layers.
bool made_for(const Sequence::State& s, const ModelConfig& c, DType kv_cache) {
  if (s.layers != c.num_hidden_layers || s.kv_heads != c.num_key_value_heads ||
      s.head_dim != c.head_dim || s.kv_dtype != kv_cache)
    return false;
  const RecurrentState fresh = initial_recurrent_state(c);
  for (int i = 0; i < s.layers; ++i) {
    const LayerState& l = s.layer[i];
    if (l.mixer != c.layers[i].mixer) return false;
    if (l.mixer == Mixer::gated_delta_net &&
        (l.rec.conv.size() != fresh.conv.size() || l.rec.ssm.size() != fresh.ssm.size()))
      return false;
  }
  return true;
}

void check_tokens(const Sequence::State& s, std::span<const TokenId> tokens, int vocab_size) {
  if (tokens.empty()) throw Error(ErrorKind::invalid_argument, "step: batch item with no tokens");
  if (tokens.size() > size_t(s.max_context - s.length))
    throw Error(ErrorKind::context_overflow, "context overflow: " + std::to_string(s.length) +
                                                 " cached + " + std::to_string(tokens.size()) +
                                                 " new tokens exceed the context of " +
                                                 std::to_string(s.max_context));
  for (TokenId id : tokens)
    if (id < 0 || id >= vocab_size)
      throw Error(ErrorKind::invalid_argument, "token id " + std::to_string(id) +
                                                   " is outside the vocabulary [0, " +
                                                   std::to_string(vocab_size) + ")");
}

// A sequence's new tokens as rows of the step, at the positions after those it holds; its KV
// caches grown to take them.
void add_rows(const ModelConfig& c, Sequence::State& s, std::span<const TokenId> tokens,
              StepRows& rows) {
  const int half = c.rotary_dim / 2;
  rows.item_begin.push_back(rows.T);
  for (size_t j = 0; j < tokens.size(); ++j) {
    rows.ids.push_back(tokens[j]);
    rows.cos.resize(rows.cos.size() + half);
    rows.sin.resize(rows.sin.size() + half);
    ops::rope_angles(s.length + static_cast<int>(j), c.rotary_dim, c.rope_theta,
                     &rows.cos[rows.cos.size() - half], &rows.sin[rows.sin.size() - half]);
  }
  rows.T += static_cast<int>(tokens.size());
  s.reserve(s.length + static_cast<int>(tokens.size()));
  rows.states.push_back(&s);
}

}  // namespace

size_t Scratch::bytes() const {
  size_t floats = 0;
  for (const io::Buffer<float>* b : {&x, &h, &out, &q, &k, &v, &ctx, &mixed, &z, &conv, &a, &b,
                                     &gate, &up, &router, &routed, &expert_out})
    floats += b->size();
  return sizeof(float) * floats;
}

std::unique_ptr<Model> Model::load(const std::filesystem::path& dir, const LoadOptions& options) {
  std::optional<io::GgufFile> gguf;
  if (io::is_gguf_file(dir)) gguf = io::GgufFile::open(dir, !options.mmap);
  else if (!std::filesystem::is_directory(dir))
    throw Error(ErrorKind::io,
                dir.string() + ": not a model folder (no such directory) or a GGUF file");
  std::unique_ptr<Model> m(new Model());
  m->config_ = gguf ? gguf_model_config(*gguf) : ModelConfig::load(dir);
  const std::filesystem::path path = std::filesystem::absolute(dir).lexically_normal();
  m->name_ = gguf ? path.stem().string() : path.filename().string();
  if (m->name_.empty()) m->name_ = path.parent_path().filename().string();
  const bool bf16_activations = options.activations == Activations::bf16;
  if (options.activations == Activations::automatic)
    if (const char* why = ops::rounding_choice(to_string(options.isa))) m->prompt_note_ = why;
  ops::RuntimePtr rt =
      ops::make_runtime(to_string(options.isa), options.threads, to_string(options.activations));
  // The bf16 cache comes with bf16 activations: AVX512_BF16's kernels, multiplying pairs of
  // dimensions.
  const bool bf16_cache =
      bf16_activations && ops::attends_over(*rt, DType::bf16) && m->config_.head_dim % 2 == 0;
  if (options.kv_cache == KvCacheType::bf16 && !bf16_cache)
    throw Error(ErrorKind::unsupported,
                m->config_.head_dim % 2 ? "a bf16 KV cache needs an even head_dim"
                                        : "a bf16 KV cache needs --activations bf16 (AVX512_BF16)");
  if (options.kv_cache == KvCacheType::q8 && m->config_.head_dim % kQuantBlock)
    throw Error(ErrorKind::unsupported,
                "a q8 KV cache needs a head_dim that is a multiple of 32, got " +
                    std::to_string(m->config_.head_dim));
  Weights w =
      gguf ? load_gguf_weights(std::move(*gguf), m->config_, options.quant, options.keep_head)
           : load_weights(dir, m->config_, !options.mmap);
  if (options.quant != WeightQuant::none)
    quantize_weights(m->config_, w, quant_dtype(options.quant), options.keep_head, *rt);
  DType kv = DType::f32;
  const ops::Matrix& any_matrix = w.layers.front().kind.mixer == Mixer::attention
                                      ? w.layers.front().self_attn.q_proj
                                      : w.layers.front().linear_attn.in_proj_qkv;
  switch (options.kv_cache) {
    case KvCacheType::f32: kv = DType::f32; break;
    case KvCacheType::f16: kv = DType::f16; break;
    case KvCacheType::bf16: kv = DType::bf16; break;
    case KvCacheType::q8: kv = DType::q8_0; break;
    case KvCacheType::automatic:
      kv = bf16_cache                             ? DType::bf16
           : is_block_quantized(any_matrix.dtype) ? DType::f16
                                                  : DType::f32;
      break;
  }
  m->impl_ = std::make_unique<Impl>(m->config_, std::move(w), std::move(rt), kv);
  return m;
}

Model::~Model() = default;
const char* Model::isa() const { return ops::isa_name(*impl_->rt); }
const char* Model::prompt_isa() const { return ops::prompt_isa_name(*impl_->rt); }
bool Model::splits_rows() const { return ops::splits_rows(*impl_->rt); }
int Model::threads() const { return ops::thread_count(*impl_->rt); }
int Model::pass_rows() const { return ops::pass_rows(*impl_->rt); }
uint64_t Model::weight_bytes() const {
  uint64_t n = 0;
  for (const ops::Matrix& m : impl_->per_token) n += m.bytes();
  return n;
}
uint64_t Model::mtp_bytes() const {
  if (!config_.mtp_num_hidden_layers) return 0;
  uint64_t n = 0;
  for (const ops::Matrix& m : impl_->mtp_per_token) n += m.bytes();
  return n;
}
double Model::read_speed() {
  const double bytes = static_cast<double>(weight_bytes());  // outside the timed read
  const auto t0 = std::chrono::steady_clock::now();
  [[maybe_unused]] static volatile uint64_t sink;  // keeps the reads
  sink = ops::read(*impl_->rt, impl_->per_token);
  return bytes / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 1e9;
}
const char* Model::kv_cache() const {
  return impl_->kv_cache == DType::q8_0 ? "q8" : dtype_name(impl_->kv_cache);
}
const std::vector<std::string>& Model::unread_tensors() const { return impl_->w.unread; }
const std::vector<std::string>& Model::load_notes() const { return impl_->w.notes; }

std::vector<std::vector<float>> Model::step(std::span<const BatchItem> batch,
                                            const Observer* observer) {
  std::vector<std::vector<float>> logits;
  step(batch, logits, observer);
  return logits;
}

void Model::step(std::span<const BatchItem> batch, std::vector<std::vector<float>>& logits,
                 const Observer* observer) {
  check_batch(batch);
  ops::Runtime& rt = *impl_->rt;
  const auto is_prompt = [](const BatchItem& item) { return !item.generated; };
  const size_t prompts = std::count_if(batch.begin(), batch.end(), is_prompt);
  if (!ops::splits_rows(rt) || prompts == 0) return run_step(batch, logits, observer);
  // Prompt rows and generated rows take different kernels: a batch of both runs as two passes,
  // each item's results the same as in a batch of its own kind alone.
  struct Reset {
    ops::Runtime& rt;
    ~Reset() { ops::use_prompt_kernels(rt, false); }
  } reset{rt};
  ops::use_prompt_kernels(rt, true);
  if (prompts == batch.size()) return run_step(batch, logits, observer);
  std::vector<BatchItem> part[2];  // prompt items, generated items
  std::vector<size_t> index[2];
  for (size_t i = 0; i < batch.size(); ++i) {
    part[batch[i].generated].push_back(batch[i]);
    index[batch[i].generated].push_back(i);
  }
  logits.resize(batch.size());
  std::vector<std::vector<float>> part_logits;
  for (int generated : {0, 1}) {
    ops::use_prompt_kernels(rt, !generated);
    part_logits.resize(index[generated].size());  // the caller's vectors, reused
    for (size_t j = 0; j < index[generated].size(); ++j)
      part_logits[j].swap(logits[index[generated][j]]);
    run_step(part[generated], part_logits, observer);
    for (size_t j = 0; j < index[generated].size(); ++j)
      logits[index[generated][j]].swap(part_logits[j]);
  }
}

void Model::check_batch(std::span<const BatchItem> batch) const {
  // Everything is checked before any sequence changes.
  if (batch.empty()) throw Error(ErrorKind::invalid_argument, "step: empty batch");
  std::set<const Sequence*> seen;
  for (auto& item : batch) {
    if (!item.sequence)
      throw Error(ErrorKind::invalid_argument, "step: batch item without a sequence");
    const Sequence::State& s = *item.sequence->state_;
    if (!made_for(s, config_, impl_->kv_cache))
      throw Error(ErrorKind::invalid_argument, "step: sequence was made for another model");
    if (!seen.insert(item.sequence).second)
      throw Error(ErrorKind::invalid_argument, "step: a sequence appears twice in a batch");
    check_tokens(s, item.tokens, config_.vocab_size);
  }
}

void Model::run_step(std::span<const BatchItem> batch, std::vector<std::vector<float>>& logits,
                     const Observer* observer) {
  StepRows rows;
  for (auto& item : batch) {
    Sequence::State& s = *item.sequence->state_;
    s.prepare_step_states(static_cast<int>(item.tokens.size()), item.rewindable, config_);
    add_rows(config_, s, item.tokens, rows);
  }
  Forward(config_, *impl_, batch, rows).run(observer, logits);
  for (auto& item : batch) {
    Sequence::State& s = *item.sequence->state_;
    s.length += static_cast<int>(item.tokens.size());
    s.snapshot_after_step(static_cast<int>(item.tokens.size()), item.rewindable);
  }
}

std::vector<float> Model::mtp_step(Sequence& sequence, const MtpRows& in) {
  if (!config_.mtp_num_hidden_layers)
    throw Error(ErrorKind::unsupported,
                name_ + " has no multi-token-prediction head (no mtp.* tensors)");
  Sequence::State& main = *sequence.state_;
  if (!made_for(main, config_, impl_->kv_cache))
    throw Error(ErrorKind::invalid_argument, "mtp_step: sequence was made for another model");
  if (!main.mtp) main.mtp = main.head_state();
  Sequence::State& s = *main.mtp;
  if (in.position < 0 || in.position > s.length)
    throw Error(ErrorKind::invalid_argument, "mtp_step: position " + std::to_string(in.position) +
                                                 " is past the head's " + std::to_string(s.length) +
                                                 " rows");
  if (!in.hidden) throw Error(ErrorKind::invalid_argument, "mtp_step: no hidden rows");
  s.length = in.position;
  check_tokens(s, in.next_tokens, config_.vocab_size);
  StepRows rows;
  add_rows(config_, s, in.next_tokens, rows);
  const BatchItem item{&sequence, in.next_tokens, in.all_logits};
  std::vector<std::vector<float>> logits;
  Forward(config_, *impl_, {&item, 1}, rows).mtp(in.hidden, in.hidden_out, logits);
  s.length += static_cast<int>(in.next_tokens.size());
  return std::move(logits[0]);
}

}  // namespace qwen3
