// The model's operations: threading and kernel dispatch live here, not in the model.
#include "ops/ops.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "io/huge_page_buffer.h"
#include "io/quant_blocks.h"
#include "ops/kernels.h"
#include "parallel/thread_pool.h"
#include "qwen3/error.h"

namespace qwen3::ops {

class Runtime {
 public:
  Runtime(const KernelTable& prompt, const KernelTable& generated, int threads)
      : kernels(&generated), prompt(prompt), generated(generated), pool(threads) {}
  const KernelTable* kernels;    // what the next products use: prompt or generated
  const KernelTable& prompt;     // for prompt tokens' rows
  const KernelTable& generated;  // for generated tokens' rows
  parallel::ThreadPool pool;
  io::Buffer<float> xf;    // activations laid out for the float kernels (prepare_x), reused
  io::Buffer<float> xr;    // [T, K] activations rotated by the weights' lead, where they have one
  io::Buffer<int8_t> xq;   // [T, K] activations quantized for the integer kernels, reused
  io::Buffer<float> xd;    // [T, K / 32] their scales
  io::Buffer<int32_t> xs;  // [T, K / 32] their block sums
};

RuntimePtr make_runtime(std::string_view isa, int threads, std::string_view activations) {
  if (threads < 0 || threads > 1024)
    throw Error(ErrorKind::invalid_argument,
                "threads must be between 0 and 1024, got " + std::to_string(threads));
  if (threads == 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (activations == "auto") {
    const KernelTable& exact = select_kernels(isa, "f32");
    const KernelTable* rounded = rounding_kernels(isa);
    return RuntimePtr(new Runtime(rounded ? *rounded : exact, exact, threads));
  }
  const KernelTable& k = select_kernels(isa, activations);
  return RuntimePtr(new Runtime(k, k, threads));
}

void destroy(Runtime* runtime) { delete runtime; }
const char* isa_name(const Runtime& rt) { return rt.generated.name; }
const char* prompt_isa_name(const Runtime& rt) { return rt.prompt.name; }
void use_prompt_kernels(Runtime& rt, bool prompt) {
  rt.kernels = prompt ? &rt.prompt : &rt.generated;
}
bool splits_rows(const Runtime& rt) { return &rt.prompt != &rt.generated; }
int thread_count(const Runtime& rt) { return rt.pool.size(); }
int pass_rows(const Runtime& rt) { return rt.generated.pass_rows; }
bool attends_over(const Runtime& rt, DType kv_cache) {
  return rt.generated.key_scores[int(kv_cache)] != nullptr;
}

void embed(Runtime&, const Matrix& table, std::span<const int32_t> ids, float* out) {
  const int D = table.cols;
  for (size_t t = 0; t < ids.size(); ++t) {
    float* row = out + t * D;
    const size_t base = size_t(ids[t]) * D;
    if (is_block_quantized(table.dtype)) {
      std::vector<uint8_t> blocks(row_bytes(table.dtype, D));
      extract_row(table.dtype, static_cast<const uint8_t*>(table.data), table.rows, D, ids[t],
                  blocks.data());
      dequantize_row(table.dtype, blocks.data(), D, row);
      continue;
    }
    for (int i = 0; i < D; ++i) row[i] = float_at(table.dtype, table.data, base + i);
  }
}

namespace {
// Scratch buffers only grow: shrinking and growing back would zero-fill megabytes per product.
template <class T>
void at_least(io::Buffer<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

// fn(begin, end) over [0, n) where each index is `cost` floats of work: on the pool when there is
// enough of it (a prompt's rows), on the calling thread when a hand-off would cost more (decode).
template <class Fn>
void for_range(Runtime& rt, int n, size_t cost, const Fn& fn) {
  constexpr size_t kParallelFloats = 16384;
  if (size_t(n) * cost < kParallelFloats) return fn(0, n);
  rt.pool.run(n, fn);
}

// Element-wise work split into chunks of whole cache lines.
template <class Fn>
void for_elements(Runtime& rt, size_t n, const Fn& fn) {
  constexpr size_t kChunk = 1024;
  for_range(rt, int((n + kChunk - 1) / kChunk), kChunk,
            [&](int b, int e) { fn(b * kChunk, std::min(n, e * kChunk)); });
}
}  // namespace

void rms_norm(Runtime& rt, const float* x, const float* w, float eps, int rows, int n, float* out) {
  for_range(rt, rows, n, [&](int begin, int end) {
    for (int r = begin; r < end; ++r)
      rt.kernels->rms_norm(x + size_t(r) * n, w, eps, n, out + size_t(r) * n);
  });
}

void matmul(Runtime& rt, const float* x, int T, const Matrix& w, float* y) {
  matmul(rt, x, T, {{w, y}});
}

void matmul(Runtime& rt, const float* x, int T, std::initializer_list<Product> products) {
  const ProductGroup group{x, T, std::span<const Product>(products.begin(), products.size())};
  matmul(rt, std::span<const ProductGroup>(&group, 1));
}

void matmul(Runtime& rt, std::span<const ProductGroup> groups) {
  // Threads take whole blocks of W rows, numbered across the matrices in order: every thread
  // streams its own contiguous part of the weights, in whole row groups of the quantized layout.
  constexpr int kRowsPerUnit = kQuantRows;
  struct Job {
    const ProductGroup* group;
    const Product* product;
    size_t x_at;  // where the group's prepared x starts in the runtime's buffers
  };
  const Product& front = groups.front().products.front();
  const int K = front.w.cols;
  const DType dtype = front.w.dtype;
  const bool quantized = is_block_quantized(dtype);
  auto lead = [&](const Matrix& w) {
    return quantized ? 0 : rt.kernels->lead[int(dtype)](w.data, K);
  };
  const int first_lead = lead(front.w);
  const int g = quantized ? 1 : rt.kernels->tile_rows;  // rows prepared together
  std::vector<Job> jobs;
  std::vector<int> first_unit{0};  // job j's units: [first_unit[j], first_unit[j + 1])
  std::vector<int> first_tile{0};  // group i's tiles of x to prepare
  size_t x_size = 0;
  for (const ProductGroup& group : groups) {
    for (const Product& p : group.products) {
      // x is prepared for one dtype and lead (quantized the same for every block-quantized one,
      // such as a Q4_K_M file's q4_k and q6_k): a folder mixing dtypes, or placing matrices at odd
      // offsets, has its products one by one, each with its own lead (the lead sets the order of
      // each dot product's sum, so a matrix always takes the same one)
      const bool same_x = quantized ? is_block_quantized(p.w.dtype) : p.w.dtype == dtype;
      if (!same_x || p.w.cols != K || lead(p.w) != first_lead) {
        for (const ProductGroup& each : groups)
          for (const Product& q : each.products) matmul(rt, each.x, each.T, {q});
        return;
      }
      jobs.push_back({&group, &p, x_size});
      first_unit.push_back(first_unit.back() + (p.w.rows + kRowsPerUnit - 1) / kRowsPerUnit);
    }
    first_tile.push_back(first_tile.back() + (group.T + g - 1) / g);
    x_size += quantized ? size_t(group.T) * K : rt.kernels->prepared_floats(group.T, K);
  }
  auto group_of_tile = [&](int tile) {
    return std::upper_bound(first_tile.begin(), first_tile.end(), tile) - first_tile.begin() - 1;
  };
  std::vector<size_t> x_at(groups.size());
  for (const Job& j : jobs) x_at[j.group - groups.data()] = j.x_at;
  if (!quantized) {
    at_least(rt.xf, x_size);
    std::vector<size_t> first_row{0};  // group i's rows, rotated, at first_row[i] * K
    for (const ProductGroup& group : groups) first_row.push_back(first_row.back() + group.T);
    if (first_lead) at_least(rt.xr, first_row.back() * K);
    rt.pool.run(first_tile.back(), [&](int b, int e) {
      for (int tile = b; tile < e; ++tile) {
        const size_t i = group_of_tile(tile);
        const ProductGroup& group = groups[i];
        const int t0 = (tile - first_tile[i]) * g, t1 = std::min(group.T, t0 + g);
        const float* rows = group.x;
        if (first_lead) {
          float* rotated = &rt.xr[first_row[i] * K];
          rotate_rows(group.x, K, first_lead, t0, t1, rotated);
          rows = rotated;
        }
        rt.kernels->prepare_x[int(dtype)](rows, group.T, K, t0, t1, &rt.xf[x_at[i]]);
      }
    });
  } else {
    // Each row of x is quantized once here, not once per thread inside the kernel.
    at_least(rt.xq, x_size);
    at_least(rt.xd, x_size / kQuantBlock);
    at_least(rt.xs, x_size / kQuantBlock);
    rt.pool.run(first_tile.back(), [&](int b, int e) {
      for (int tile = b; tile < e; ++tile) {
        const size_t i = group_of_tile(tile);
        const size_t at = x_at[i] + size_t(tile - first_tile[i]) * K;
        rt.kernels->quantize_x(groups[i].x + (at - x_at[i]), K, &rt.xq[at],
                               &rt.xd[at / kQuantBlock], &rt.xs[at / kQuantBlock]);
      }
    });
  }
  rt.pool.run(first_unit.back(), [&](int b, int e) {
    size_t j = std::upper_bound(first_unit.begin(), first_unit.end(), b) - first_unit.begin() - 1;
    for (; j < jobs.size() && first_unit[j] < e; ++j) {
      const Job& job = jobs[j];
      const Matrix& w = job.product->w;
      const int ub = std::max(b, first_unit[j]), ue = std::min(e, first_unit[j + 1]);
      const int n0 = (ub - first_unit[j]) * kRowsPerUnit,
                n1 = std::min(w.rows, (ue - first_unit[j]) * kRowsPerUnit);
      const int T = job.group->T;
      if (quantized)
        quant_matmul(*rt.kernels, w.dtype)(&rt.xq[job.x_at], &rt.xd[job.x_at / kQuantBlock],
                                           &rt.xs[job.x_at / kQuantBlock], T, K, w.data, w.rows, n0,
                                           n1, job.product->y, w.rows);
      else
        rt.kernels->matmul[int(dtype)](&rt.xf[job.x_at], T, K, w.data, first_lead, n0, n1,
                                       job.product->y, w.rows);
    }
  });
}

void quantize(Runtime& rt, const Matrix& w, DType to, uint8_t* out) {
  // Threads take whole row groups: each quantizes its rows plain, then interleaves them.
  const size_t in_row = row_bytes(w.dtype, w.cols), out_row = row_bytes(to, w.cols);
  rt.pool.run((w.rows + kQuantRows - 1) / kQuantRows, [&](int b, int e) {
    std::vector<float> row(w.cols);
    std::vector<uint8_t> plain(kQuantRows * out_row);
    for (int g = b; g < e; ++g) {
      const int r0 = g * kQuantRows, rows = std::min(kQuantRows, w.rows - r0);
      for (int r = 0; r < rows; ++r) {
        dequantize_row(w.dtype, static_cast<const uint8_t*>(w.data) + (r0 + r) * in_row, w.cols,
                       row.data());
        quantize_row(to, row.data(), w.cols, &plain[r * out_row]);
      }
      interleave_rows(to, rows, w.cols, plain.data(), out + r0 * out_row);
    }
  });
}

void rope_angles(int pos, int dims, double theta, float* cos, float* sin) {
  for (int i = 0; i < dims / 2; ++i) {
    const float inv_freq =
        1.0f / std::pow(static_cast<float>(theta), static_cast<float>(2 * i) / dims);
    const float angle = static_cast<float>(pos) * inv_freq;
    cos[i] = std::cos(angle);
    sin[i] = std::sin(angle);
  }
}

void rope(float* x, int heads, int head_dim, int dims, const float* cos, const float* sin) {
  const int half = dims / 2;
  for (int h = 0; h < heads; ++h) {
    float* v = x + size_t(h) * head_dim;
    for (int i = 0; i < half; ++i) {
      const float a = v[i], b = v[i + half];
      v[i] = a * cos[i] - b * sin[i];
      v[i + half] = b * cos[i] + a * sin[i];
    }
  }
}

void attention(Runtime& rt, std::span<const AttentionItem> items, int heads, int kv_heads,
               int head_dim) {
  // A task is one item's KV head and block of query tokens: the block's queries of every head in
  // the group are scored together against the head's cached keys, [rows, Dh] . [P, Dh]^T. All
  // items' tasks go in one parallel run (a batch of 8 decoding sequences: 28 runs a step, not 224).
  constexpr int kQueryBlock = 16;
  const int group = heads / kv_heads, q_row = heads * head_dim;
  std::vector<int> first_task(items.size() + 1,
                              0);  // item i's tasks: [first_task[i], first_task[i + 1])
  for (size_t i = 0; i < items.size(); ++i)
    first_task[i + 1] = first_task[i] + kv_heads * ((items[i].n + kQueryBlock - 1) / kQueryBlock);
  auto append = [&](const AttentionItem& it, int g) {  // head g's new keys and values
    const size_t head = row_bytes(it.kv_dtype, size_t(g) * it.capacity * head_dim);
    rt.kernels->append_kv[int(it.kv_dtype)](
        it.new_k + size_t(g) * head_dim, it.new_v + size_t(g) * head_dim, kv_heads * head_dim, it.n,
        head_dim, it.p0, static_cast<uint8_t*>(it.k) + head, static_cast<uint8_t*>(it.v) + head);
  };
  // With one block of queries per item (decode), each task appends its own head's keys and values
  // first, in parallel; a prompt's blocks read each other's keys, so they are all appended first.
  const bool one_block = first_task.back() == int(items.size()) * kv_heads;
  if (!one_block)
    rt.pool.run(int(items.size()) * kv_heads, [&](int b, int e) {
      for (int task = b; task < e; ++task) append(items[task / kv_heads], task % kv_heads);
    });
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  const KernelTable& kt = *rt.kernels;
  rt.pool.run(first_task.back(), [&](int b, int e) {
    thread_local io::Buffer<float> queries, scores,
        context;  // kept: a decode step has 28 x 8 tasks
    for (int task = b; task < e; ++task) {
      const size_t i =
          std::upper_bound(first_task.begin(), first_task.end(), task) - first_task.begin() - 1;
      const AttentionItem& it = items[i];
      const int blocks = (it.n + kQueryBlock - 1) / kQueryBlock, local = task - first_task[i];
      const int g = local / blocks, t0 = (local % blocks) * kQueryBlock,
                nt = std::min(kQueryBlock, it.n - t0);
      if (one_block) append(it, g);
      const int rows = nt * group, P = it.p0 + t0 + nt;  // P: positions the block's last query sees
      const int lds = whole_key_blocks(P);               // key_scores fills whole blocks
      const size_t head_bytes = row_bytes(it.kv_dtype, size_t(g) * it.capacity * head_dim);
      const void* kg = static_cast<const uint8_t*>(it.k) + head_bytes;
      const void* vg = static_cast<const uint8_t*>(it.v) + head_bytes;
      at_least(queries, size_t(rows) * head_dim);
      for (int r = 0; r < rows; ++r)  // row r: token t0 + r / group, head g * group + r % group
        std::copy_n(
            it.q + size_t(t0 + r / group) * q_row + size_t(g * group + r % group) * head_dim,
            head_dim, &queries[size_t(r) * head_dim]);
      at_least(scores, size_t(rows) * lds);
      kt.key_scores[int(it.kv_dtype)](queries.data(), head_dim, rows, head_dim, kg, P,
                                      scores.data(), lds);
      for (int r = 0; r < rows; ++r) {  // softmax over the positions each query sees (causal)
        const int visible = it.p0 + t0 + r / group + 1;
        float* s = &scores[size_t(r) * lds];
        kt.softmax(s, visible, scale);
        std::fill(s + visible, s + P, 0.0f);  // masked: weighs nothing below
      }
      at_least(context, size_t(rows) * head_dim);
      kt.weighted_sum[int(it.kv_dtype)](scores.data(), lds, rows, P, vg, head_dim, context.data(),
                                        head_dim);
      for (int r = 0; r < rows; ++r)
        std::copy_n(
            &context[size_t(r) * head_dim], head_dim,
            it.out + size_t(t0 + r / group) * q_row + size_t(g * group + r % group) * head_dim);
    }
  });
}

void silu_mul(Runtime& rt, const float* gate, const float* up, int n, float* out) {
  for_elements(rt, n, [&](size_t b, size_t e) {
    rt.kernels->silu_mul(gate + b, up + b, int(e - b), out + b);
  });
}

void sigmoid_mul(Runtime& rt, float* x, const float* gate, int n) {
  for_elements(rt, n, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) x[i] *= 1.0f / (1.0f + std::exp(-gate[i]));
  });
}

void l2_normalize(Runtime& rt, const float* x, int rows, int n, float scale, float* out) {
  for_range(rt, rows, n, [&](int begin, int end) {
    for (int r = begin; r < end; ++r) {
      const float* v = x + size_t(r) * n;
      float sum = 0;
      for (int i = 0; i < n; ++i) sum += v[i] * v[i];
      const float inv = 1.0f / std::sqrt(sum + 1e-6f);
      for (int i = 0; i < n; ++i) out[size_t(r) * n + i] = v[i] * inv * scale;
    }
  });
}

void causal_conv1d_silu(Runtime& rt, const float* x, int ld, int n, int C, const float* w, int K,
                        float* state, float* out) {
  // A task is a range of channels over every token, each token's channels one contiguous loop.
  constexpr int kChannels = 256;
  for_range(rt, (C + kChannels - 1) / kChannels, size_t(n) * K * kChannels, [&](int b, int e) {
    const int c0 = b * kChannels, c1 = std::min(C, e * kChannels), width = c1 - c0;
    // The channels' inputs in time order: the state's K - 1 rows, then the n new ones.
    const auto input = [&](int i) {
      return i < K - 1 ? state + size_t(i) * C : x + size_t(i - (K - 1)) * ld;
    };
    const std::vector<float> ones(width, 1.0f);
    std::vector<float> taps(size_t(K) * width);  // [K, width]: tap j of every channel together
    for (int c = c0; c < c1; ++c)
      for (int j = 0; j < K; ++j) taps[size_t(j) * width + (c - c0)] = w[size_t(c) * K + j];
    for (int t = 0; t < n; ++t) {
      float* o = out + size_t(t) * C;
      for (int c = c0; c < c1; ++c) o[c] = 0.0f;
      for (int j = 0; j < K; ++j) {
        const float* in = input(t + j) + c0;
        const float* tap = &taps[size_t(j) * width];
        for (int c = 0; c < width; ++c) o[c0 + c] += tap[c] * in[c];
      }
      rt.kernels->silu_mul(o + c0, ones.data(), width, o + c0);
    }
    // The last K - 1 inputs become the state, oldest first (rows still to be read move later).
    std::vector<float> last(size_t(K - 1) * width);
    for (int i = 0; i < K - 1; ++i) std::copy_n(input(n + i) + c0, width, &last[size_t(i) * width]);
    for (int i = 0; i < K - 1; ++i)
      std::copy_n(&last[size_t(i) * width], width, state + size_t(i) * C + c0);
  });
}

void gated_delta_rule(Runtime& rt, std::span<const DeltaRuleItem> items, int key_heads,
                      int value_heads, int key_dim, int value_dim) {
  const int dk = key_dim, dv = value_dim, group = value_heads / key_heads;
  // A task is one value head of one sequence: its state [dk, dv] stays in cache over the tokens.
  rt.pool.run(int(items.size()) * value_heads, [&](int b, int e) {
    for (int task = b; task < e; ++task) {
      const DeltaRuleItem& it = items[task / value_heads];
      const int j = task % value_heads, hk = j / group;
      for (int t = 0; t < it.n; ++t) {
        const size_t jt = size_t(t) * value_heads + j;
        rt.kernels->delta_rule(it.state + size_t(j) * dk * dv, dk, dv,
                               it.q + (size_t(t) * key_heads + hk) * dk,
                               it.k + (size_t(t) * key_heads + hk) * dk, it.v + jt * dv,
                               std::exp(it.g[jt]), it.beta[jt], it.out + jt * dv);
        if (it.history && t + 1 < it.n)
          std::copy_n(it.state + size_t(j) * dk * dv, size_t(dk) * dv,
                      it.history[t] + size_t(j) * dk * dv);
      }
    }
  });
}

void route(const float* logits, int T, int E, int k, bool normalize, int32_t* experts,
           float* weights) {
  std::vector<float> p(E);
  std::vector<int32_t> order(E);
  for (int t = 0; t < T; ++t) {
    const float* l = logits + size_t(t) * E;
    const float top = *std::max_element(l, l + E);
    float sum = 0;
    for (int e = 0; e < E; ++e) sum += p[e] = std::exp(l[e] - top);
    for (int e = 0; e < E; ++e) p[e] /= sum;
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](int32_t a, int32_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
    std::sort(order.begin(), order.begin() + k);
    float chosen = 0;
    for (int j = 0; j < k; ++j) chosen += p[order[j]];
    for (int j = 0; j < k; ++j) {
      experts[size_t(t) * k + j] = order[j];
      weights[size_t(t) * k + j] = normalize ? p[order[j]] / chosen : p[order[j]];
    }
  }
}

void combine_rows(Runtime& rt, const float* y, const int32_t* rows, const float* weights, int T,
                  int k, int D, float* out) {
  for_range(rt, T, size_t(k) * D, [&](int begin, int end) {
    for (int t = begin; t < end; ++t) {
      float* o = out + size_t(t) * D;
      std::fill(o, o + D, 0.0f);
      for (int j = 0; j < k; ++j) {
        const float* r = y + size_t(rows[size_t(t) * k + j]) * D;
        const float w = weights[size_t(t) * k + j];
        for (int d = 0; d < D; ++d) o[d] += r[d] * w;
      }
    }
  });
}

void add(Runtime& rt, float* x, const float* y, int n) {
  for_elements(rt, n, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) x[i] += y[i];
  });
}

void copy(Runtime& rt, const float* x, size_t n, float* out) {
  for_elements(rt, n, [&](size_t b, size_t e) { std::copy(x + b, x + e, out + b); });
}

uint64_t read(Runtime& rt, std::span<const Matrix> matrices) {
  // Units of 64 KiB, numbered across the matrices in order (as matmul's blocks of rows).
  constexpr size_t kUnit = size_t(64) << 10;
  std::vector<size_t> first_unit{0};  // matrix i's units: [first_unit[i], first_unit[i + 1])
  for (const Matrix& m : matrices)
    first_unit.push_back(first_unit.back() + (m.bytes() + kUnit - 1) / kUnit);
  std::atomic<uint64_t> total{0};
  rt.pool.run(int(first_unit.back()), [&](int b, int e) {
    uint64_t acc[8] = {};  // independent sums: the loads, not one chain of additions, set the pace
    for (int u = b; u < e; ++u) {
      const size_t i = std::upper_bound(first_unit.begin(), first_unit.end(), size_t(u)) -
                       first_unit.begin() - 1;
      const size_t at = (u - first_unit[i]) * kUnit, n = std::min(kUnit, matrices[i].bytes() - at);
      const auto* p = static_cast<const uint8_t*>(matrices[i].data) + at;
      auto word = [&](size_t j, size_t bytes) {  // little-endian, zero-padded
        uint64_t w = 0;
        std::memcpy(&w, p + j, bytes);
        return w;
      };
      size_t j = 0;
      for (; j + 64 <= n; j += 64)
        for (int k = 0; k < 8; ++k) acc[k] += word(j + 8 * k, 8);
      for (; j < n; j += 8) acc[0] += word(j, std::min<size_t>(8, n - j));
    }
    total += std::accumulate(acc, acc + 8, uint64_t(0));
  });
  return total;
}

}  // namespace qwen3::ops
