// Loading a Qwen model folder and stepping a batch of sequences through it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace qwen3 {

using TokenId = int32_t;

// How a layer mixes tokens, and which feed-forward follows it: chosen per layer from config.json.
enum class Mixer {
  attention,        // grouped-query attention over a KV cache
  gated_delta_net,  // Qwen3.5's linear attention: a fixed-size recurrent state per sequence
};
enum class FeedForward { mlp, moe };  // a dense SwiGLU MLP, or a routed mixture of experts
struct LayerKind {
  Mixer mixer = Mixer::attention;
  FeedForward ffn = FeedForward::mlp;
  bool operator==(const LayerKind&) const = default;
};

// config.json, with Hugging Face's key names.
struct ModelConfig {
  std::string model_type;  // "qwen3", "qwen3_moe", "qwen3_5" or "qwen3_5_moe"
  int hidden_size = 0;
  int intermediate_size = 0;  // of the dense MLP layers
  int num_hidden_layers = 0;
  int num_attention_heads = 0;
  int num_key_value_heads = 0;
  int head_dim = 0;  // explicit: 16 x 128 != 1024 in Qwen3-0.6B
  int vocab_size = 0;
  int max_position_embeddings = 0;
  double rope_theta = 0;
  double rms_norm_eps = 0;
  bool tie_word_embeddings = false;
  std::string torch_dtype;
  int bos_token_id = -1;
  std::vector<int> eos_token_id;
  // Mixture of experts (qwen3_moe): an MoE layer routes each token to num_experts_per_tok of
  // num_experts SwiGLU experts of moe_intermediate_size. Layer i is MoE unless it is listed in
  // mlp_only_layers or (i + 1) % decoder_sparse_step != 0.
  int num_experts = 0;
  int num_experts_per_tok = 0;
  int moe_intermediate_size = 0;
  bool norm_topk_prob = false;  // renormalise the chosen experts' probabilities to sum to 1
  int decoder_sparse_step = 1;
  std::vector<int> mlp_only_layers;
  // Qwen3.5-MoE: a shared expert every token goes through, scaled by sigmoid(shared_expert_gate).
  int shared_expert_intermediate_size = 0;

  // Qwen3.5 (qwen3_5, qwen3_5_moe; the text model of a nested config.json's text_config).
  std::string weight_prefix = "model.";  // "model.language_model." in Qwen3.5's checkpoints
  bool zero_centred_norms = false;       // RMSNorm weights w applied as (1 + w)
  bool attn_output_gate = false;         // q_proj also gives a gate per head: out *= sigmoid(gate)
  int rotary_dim =
      0;  // leading dims of each head that RoPE turns: head_dim * partial_rotary_factor
  // Gated DeltaNet layers: nk key heads and nv value heads (value head j reads key head
  // j / (nv / nk)), and a causal convolution of linear_conv_kernel_dim taps.
  int linear_num_key_heads = 0;
  int linear_num_value_heads = 0;
  int linear_key_head_dim = 0;
  int linear_value_head_dim = 0;
  int linear_conv_kernel_dim = 0;
  // How the checkpoint stores an MoE layer's experts: one tensor per expert and projection
  // (Qwen3-MoE), or packed, mlp.experts.gate_up_proj [E, 2I, D] and down_proj [E, D, I] (the
  // Qwen3.5-MoE checkpoints). Read from the weights' names when the model loads.
  bool packed_experts = false;
  // Qwen3.5's multi-token-prediction head (mtp.*): 1 when the checkpoint holds one, else 0;
  // mtp_packed_experts as packed_experts, for its MoE layer.
  int mtp_num_hidden_layers = 0;
  bool mtp_packed_experts = false;

  std::vector<LayerKind> layers;  // [num_hidden_layers], derived from the fields above

  // "Qwen3-0.6B (28 layers, 1024 dim, 16 Q heads, 8 KV heads)" style summary.
  std::string summary(const std::string& name) const;
  static ModelConfig load(const std::filesystem::path& model_dir);  // validates every field
};

// Kernels: the best the CPU has, or one forced (scalar: the plain reference kernels, the oracle;
// amx: bf16 weights' products on AMX tiles, exact with f32 activations).
enum class Isa { automatic, amx, avx512, avx2, scalar };
// Load-time quantization of float weights, as `qwen3 quantize` writes them.
enum class WeightQuant { none, q8, q4 };
// How each sequence's KV cache holds keys and values: f32 exactly; f16, which halves the cache's
// memory and what attention reads per token (decode at long contexts) at a small accuracy cost;
// bf16, the same memory, with attention as AVX512_BF16 dot products (query and weights rounded
// to bf16; needs bf16 activations); q8, int8 with a scale per 32 values (GGUF's Q8_0 blocks): a
// quarter of f32's memory and reads, logits move a little more than with f16 (head_dim a multiple
// of 32). automatic takes bf16 with bf16 activations, else f16 for quantized (q8/q4) layers,
// whose own error is far larger, and f32 for float ones.
enum class KvCacheType { automatic, f32, f16, bf16, q8 };
// How products with bf16 weights take their activations: f32 exactly (widened weights, float
// multiply-adds: within 1e-5 of a float32 reference); bf16 rounded, as llama.cpp does, for
// AVX512_BF16 dot products with twice the multiply-adds per instruction (faster prompts; logits
// move by up to about 0.2: docs/precision.md). bf16 needs a CPU with AVX512_BF16. automatic: the
// fastest within the bounds docs/precision.md measures, chosen by the row: prompt tokens' rows
// bf16 where bf16 dot products outrun float FMAs (AMD CPUs with AVX512_BF16; AMX tiles with --isa
// amx), as prompts are bounded by multiply-adds; generated tokens' rows f32 (decode is bounded by
// memory, so rounding would buy nothing); f32 everywhere else.
enum class Activations { automatic, f32, bf16 };

// The names front ends and messages use ("auto", "avx512", "q8", "f16", ...), and back: parse_*
// throws Error(invalid_argument) naming the accepted values.
const char* to_string(Isa isa);
const char* to_string(WeightQuant quant);  // "none", "q8", "q4"
const char* to_string(KvCacheType type);
const char* to_string(Activations activations);
Isa parse_isa(std::string_view name);
WeightQuant parse_weight_quant(std::string_view name);
KvCacheType parse_kv_cache_type(std::string_view name);
Activations parse_activations(std::string_view name);

struct LoadOptions {
  int threads = 0;  // 0 = one per core
  Isa isa = Isa::automatic;
  // none: the folder's weights as they are (a quantized folder is mapped); q8 / q4: float
  // matrices quantized at load time into owned memory (MoE routers stay in float).
  WeightQuant quant = WeightQuant::none;
  bool keep_head = false;  // with quant: leave embed_tokens and lm_head in their file dtype
  // true: memory-map the weights (fast start, shared page cache; 2 MiB pages where the cache holds
  // the file in 2 MiB folios, see drop_from_page_cache). false: read them into huge-page memory
  // (slower start; faster decode than a map of a file cached in 4 KiB pages).
  bool mmap = true;
  KvCacheType kv_cache = KvCacheType::automatic;
  Activations activations = Activations::automatic;
};

class Model;

// One sequence's state in every layer (an attention layer's is a KV cache), owned by the library.
// It grows as tokens arrive (capacity is not reserved up front) up to max_context tokens;
// stepping past that throws Error(context_overflow).
class Sequence {
 public:
  explicit Sequence(const Model& model, int max_context = 0);  // 0 = the model's maximum
  ~Sequence();
  Sequence(Sequence&&) noexcept;
  Sequence& operator=(Sequence&&) noexcept;

  int length() const;
  int max_context() const;
  // Forgets every cached token from `length` on (to rewind, or to reuse a shared prefix) and
  // returns the length kept. A recurrent layer's state cannot be cut back, so a hybrid model's
  // sequence rewinds to the newest state snapshot at or before `length` (taken at the end of each
  // prompt step and every 32 decoded tokens): the caller feeds the tokens from the
  // returned length on again. Attention-only models keep exactly `length`.
  int truncate(int length);
  bool recurrent() const;  // whether truncate rewinds to snapshots (a hybrid model's sequence)
  int mtp_length() const;  // rows the multi-token-prediction head holds (Model::mtp_step)
  // Whether both hold the same tokens' states in the model's layers, bit for bit: KV caches up to
  // the length, recurrent states. (For tests of rewinding.)
  bool same_state(const Sequence& other) const;
  size_t bytes() const;  // state memory held: KV caches, recurrent states and their snapshots

  struct State;  // the model layer's (src/model/sequence_state.h)

 private:
  friend class Model;
  std::unique_ptr<State> state_;
};

// One entry of a batch: the new tokens of one sequence (a whole prompt, or one token).
struct BatchItem {
  Sequence* sequence = nullptr;
  std::span<const TokenId> tokens;
  bool all_logits = false;  // logits for every token, not just the last
  // Speculative decoding's verification: keeps what Sequence::truncate needs to rewind exactly to
  // any length within this step (a hybrid model's recurrent states after each token), until the
  // sequence's next step.
  bool rewindable = false;
  // When set, receives the rows after the model's final norm, [tokens, hidden_size]: what its LM
  // head reads and what Qwen3.5's multi-token-prediction head drafts from (Model::mtp_step).
  std::vector<float>* hidden = nullptr;
  // The tokens were sampled from this model (a decode step, a speculative verification), not
  // given (a prompt): with automatic activations they take the exact f32 path, prompt tokens the
  // faster one (Activations). A row's results depend on this and on its sequence alone.
  bool generated = false;
};

// Receives named intermediates ("embed", "layers.3", "norm") as [rows, cols] float rows.
using Observer = std::function<void(std::string_view name, const float* data, int rows, int cols)>;

class Model {
 public:
  // Reads config.json and the safetensors weights (memory-mapped, never converted), or a GGUF
  // file (llama.cpp's format; qwen3 and qwen3moe): its metadata for the config, f32 / f16 / bf16
  // tensors mapped, q8_0 / q4_0 / q4_1 / q5_0 / q5_1 / iq4_nl / q4_K / q5_K / q6_K repacked and
  // other types dequantized to bf16 at load (load_notes). Checks every tensor's presence, dtype and
  // shape before any compute.
  static std::unique_ptr<Model> load(const std::filesystem::path& model_dir,
                                     const LoadOptions& options = {});
  ~Model();

  const ModelConfig& config() const { return config_; }
  const std::string& name() const { return name_; }  // folder name, or GGUF file stem
  const char* isa() const;                           // the kernels in use
  // The kernels prompt tokens' rows take: isa(), or with automatic activations where bf16 dot
  // products outrun float ones (AMD CPUs with AVX512_BF16, --isa amx) the bf16 ones
  // ("avx512-bf16", "amx-bf16").
  const char* prompt_isa() const;
  // With automatic activations, why prompt rows take the exact kernels on this CPU ("this CPU has
  // no AVX512_BF16", ...); empty where they take the faster bf16 ones, or activations were given.
  const std::string& prompt_note() const { return prompt_note_; }
  // Whether prompt tokens' rows and generated tokens' rows take different kernels: then the states
  // of generated tokens are not the bits the same tokens give as a prompt (what a cache of
  // sequences for reuse as prompts must mind).
  bool splits_rows() const;
  int threads() const;
  // Rows of a step (a decode batch, a speculative verification) that share one pass over the
  // weights: up to this many cost little more than one.
  int pass_rows() const;
  // Bytes of weights read per decoded token: every matrix of a dense model; of an MoE layer, the
  // router and num_experts_per_tok experts' matrices.
  uint64_t weight_bytes() const;
  // The same for one token through the multi-token-prediction head (its layer and the LM head
  // it shares); 0 without one.
  uint64_t mtp_bytes() const;
  // GB/s of one plain read of those bytes on the model's threads, nothing computed: the bound a
  // decode step's weight reads answer to, measured on the very memory that holds them (a file's
  // pages in the page cache, or the huge pages it was read into) rather than on fresh memory.
  double read_speed();
  const char* kv_cache() const;  // "f32", "f16", "bf16" or "q8"
  // Groups of checkpoint tensors the text model does not read, e.g. Qwen3.5's vision tower
  // "model.visual.* (28 tensors)" and its multi-token-prediction head "mtp.* (15 tensors)".
  const std::vector<std::string>& unread_tensors() const;
  // What loading converted, per tensor type: a GGUF file's q8_0 / q4_0 / q4_1 / q5_0 / q5_1 /
  // iq4_nl / q4_K / q5_K / q6_K matrices repacked, its types without a kernel dequantized to bf16.
  // Empty when nothing was.
  const std::vector<std::string>& load_notes() const;

  // Qwen3.5's multi-token-prediction head, the draft of speculative decoding: from the main
  // model's hidden states h_t after its final norm (the rows its LM head reads: BatchItem::hidden)
  // and the tokens x_{t+1} that followed them, logits for x_{t+2}. The rows go through the head's
  // own attention layer, whose KV cache the sequence holds beside the model's (row t at position
  // t, the position of h_t). Throws Error(unsupported) without an mtp.* head.
  struct MtpRows {
    int position = 0;  // of the first row; the head forgets its rows from here on (<= its length)
    std::span<const TokenId> next_tokens;      // x_{t+1} of each row
    const float* hidden = nullptr;             // h_t of each row, [rows, hidden_size]
    bool all_logits = true;                    // logits of every row, else of the last
    std::vector<float>* hidden_out = nullptr;  // the rows after the head's final norm, [rows,
                                               // hidden_size]: the h a chained draft goes on from
  };
  std::vector<float> mtp_step(Sequence& sequence, const MtpRows& rows);

  // Advances every item's sequence by its tokens, all in one pass over the weights. Returns,
  // per item, logits [rows, vocab_size]: one row (the last token) or one per token.
  // A sequence's results are bit-identical whatever else is in the batch and whatever the
  // thread count. Throws Error (invalid_argument, context_overflow) before computing anything.
  std::vector<std::vector<float>> step(std::span<const BatchItem> batch,
                                       const Observer* observer = nullptr);
  // The same, writing into `logits` (one vector per item) and reusing its memory: a decode loop
  // that keeps it allocates nothing per token (a fresh 600 KB vector per token has its pages
  // faulted in again each time: 3-5% of a q4 decode).
  void step(std::span<const BatchItem> batch, std::vector<std::vector<float>>& logits,
            const Observer* observer = nullptr);

  struct Impl;

 private:
  friend class Sequence;
  Model() = default;
  void check_batch(std::span<const BatchItem> batch) const;
  void run_step(std::span<const BatchItem> batch, std::vector<std::vector<float>>& logits,
                const Observer* observer);
  ModelConfig config_;
  std::string name_;
  std::string prompt_note_;
  std::unique_ptr<Impl> impl_;
};

// For writers of weight files (downloads, quantize, random models): writes the file to disk and
// drops it from the page cache, so that the next load reads it back in 2 MiB pieces, which a map
// then uses as 2 MiB pages (decode 4-15% faster than over the 4 KiB pieces a file is written in).
// Best effort: pages that a running process maps stay where they are.
void drop_from_page_cache(const std::filesystem::path& weights_file);

}  // namespace qwen3
