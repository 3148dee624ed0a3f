// The model's operations: threading and kernel dispatch live here, not in the model.
#include "ops/ops.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "parallel/thread_pool.h"
#include "io/huge_page_buffer.h"
#include "io/quant_blocks.h"
#include "ops/kernels.h"
#include "qwen3/error.h"

namespace qwen3::ops {

class Runtime {
 public:
  Runtime(const KernelTable& k, int threads) : kernels(k), pool(threads) {}
  const KernelTable& kernels;
  parallel::ThreadPool pool;
  io::Buffer<float> xf;    // activations laid out for the float kernels (prepare_x), reused
  io::Buffer<float> xr;    // [T, K] activations rotated by the weights' lead, where they have one
  io::Buffer<int8_t> xq;   // [T, K] activations quantized for the integer kernels, reused
  io::Buffer<float> xd;    // [T, K / 32] their scales
  io::Buffer<int32_t> xs;  // [T, K / 32] their block sums
};

RuntimePtr make_runtime(std::string_view isa, int threads, std::string_view activations) {
  if (threads < 0 || threads > 1024)
    throw Error(ErrorKind::invalid_argument, "threads must be between 0 and 1024, got " + std::to_string(threads));
  if (threads == 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return RuntimePtr(new Runtime(select_kernels(isa, activations), threads));
}

void destroy(Runtime* runtime) { delete runtime; }
const char* isa_name(const Runtime& rt) { return rt.kernels.name; }
int thread_count(const Runtime& rt) { return rt.pool.size(); }
bool attends_over(const Runtime& rt, DType kv_cache) { return rt.kernels.key_scores[int(kv_cache)] != nullptr; }

void embed(Runtime&, const Matrix& table, std::span<const int32_t> ids, float* out) {
  const int D = table.cols;
  for (size_t t = 0; t < ids.size(); ++t) {
    float* row = out + t * D;
    const size_t base = size_t(ids[t]) * D;
    if (is_block_quantized(table.dtype)) {
      std::vector<uint8_t> blocks(row_bytes(table.dtype, D));
      extract_row(table.dtype, static_cast<const uint8_t*>(table.data), table.rows, D, ids[t], blocks.data());
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
  for_range(rt, int((n + kChunk - 1) / kChunk), kChunk, [&](int b, int e) { fn(b * kChunk, std::min(n, e * kChunk)); });
}
}  // namespace

void rms_norm(Runtime& rt, const float* x, const float* w, float eps, int rows, int n, float* out) {
  for_range(rt, rows, n, [&](int begin, int end) {
    for (int r = begin; r < end; ++r) rt.kernels.rms_norm(x + size_t(r) * n, w, eps, n, out + size_t(r) * n);
  });
}

void matmul(Runtime& rt, const float* x, int T, const Matrix& w, float* y) { matmul(rt, x, T, {{w, y}}); }

void matmul(Runtime& rt, const float* x, int T, std::initializer_list<Product> products) {
  // Threads take whole blocks of W rows, numbered across the matrices in order: every thread
  // streams its own contiguous part of the weights, in whole row groups of the quantized layout.
  constexpr int kRowsPerUnit = kQuantRows;
  const int K = products.begin()->w.cols;
  const DType dtype = products.begin()->w.dtype;
  const bool quantized = is_block_quantized(dtype);
  auto lead = [&](const Matrix& w) { return quantized ? 0 : rt.kernels.lead[int(dtype)](w.data, K); };
  const int first_lead = lead(products.begin()->w);
  int units = 0;
  for (const Product& p : products) {
    // x is prepared for one dtype and lead: a folder mixing dtypes, or placing matrices at odd
    // offsets, has its products one by one
    if (p.w.dtype != dtype || lead(p.w) != first_lead) {
      for (const Product& q : products) matmul(rt, x, T, {q});
      return;
    }
    units += (p.w.rows + kRowsPerUnit - 1) / kRowsPerUnit;
  }
  if (!quantized) {
    at_least(rt.xf, rt.kernels.prepared_floats(T, K));
    if (first_lead) at_least(rt.xr, size_t(T) * K);
    const float* rows = first_lead ? rt.xr.data() : x;
    const int g = rt.kernels.tile_rows;
    rt.pool.run((T + g - 1) / g, [&](int b, int e) {
      const int t0 = b * g, t1 = std::min(T, e * g);
      if (first_lead) rotate_rows(x, K, first_lead, t0, t1, rt.xr.data());
      rt.kernels.prepare_x[int(dtype)](rows, T, K, t0, t1, rt.xf.data());
    });
  } else {
    // Each row of x is quantized once here, not once per thread inside the kernel.
    at_least(rt.xq, size_t(T) * K);
    at_least(rt.xd, size_t(T) * K / kQuantBlock);
    at_least(rt.xs, size_t(T) * K / kQuantBlock);
    rt.pool.run(T, [&](int b, int e) {
      for (int t = b; t < e; ++t) {
        const size_t blocks = size_t(t) * K / kQuantBlock;
        rt.kernels.quantize_x(x + size_t(t) * K, K, &rt.xq[size_t(t) * K], &rt.xd[blocks], &rt.xs[blocks]);
      }
    });
  }
  rt.pool.run(units, [&](int b, int e) {
    int first = 0;  // the first unit of the current matrix
    for (const Product& p : products) {
      const int n_units = (p.w.rows + kRowsPerUnit - 1) / kRowsPerUnit;
      const int ub = std::max(b, first), ue = std::min(e, first + n_units);
      if (ub < ue) {
        const int n0 = (ub - first) * kRowsPerUnit, n1 = std::min(p.w.rows, (ue - first) * kRowsPerUnit);
        if (quantized)
          (dtype == DType::q8_0 ? rt.kernels.matmul_q8_0 : rt.kernels.matmul_q4_0)(
              rt.xq.data(), rt.xd.data(), rt.xs.data(), T, K, p.w.data, p.w.rows, n0, n1, p.y, p.w.rows);
        else
          rt.kernels.matmul[int(dtype)](rt.xf.data(), T, K, p.w.data, first_lead, n0, n1, p.y, p.w.rows);
      }
      first += n_units;
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
        dequantize_row(w.dtype, static_cast<const uint8_t*>(w.data) + (r0 + r) * in_row, w.cols, row.data());
        quantize_row(to, row.data(), w.cols, &plain[r * out_row]);
      }
      interleave_rows(to, rows, w.cols, plain.data(), out + r0 * out_row);
    }
  });
}

void rope_angles(int pos, int head_dim, double theta, float* cos, float* sin) {
  for (int i = 0; i < head_dim / 2; ++i) {
    const float inv_freq = 1.0f / std::pow(static_cast<float>(theta), static_cast<float>(2 * i) / head_dim);
    const float angle = static_cast<float>(pos) * inv_freq;
    cos[i] = std::cos(angle);
    sin[i] = std::sin(angle);
  }
}

void rope(float* x, int heads, int head_dim, const float* cos, const float* sin) {
  const int half = head_dim / 2;
  for (int h = 0; h < heads; ++h) {
    float* v = x + size_t(h) * head_dim;
    for (int i = 0; i < half; ++i) {
      const float a = v[i], b = v[i + half];
      v[i] = a * cos[i] - b * sin[i];
      v[i + half] = b * cos[i] + a * sin[i];
    }
  }
}

void attention(Runtime& rt, std::span<const AttentionItem> items, int heads, int kv_heads, int head_dim) {
  // A task is one item's KV head and block of query tokens: the block's queries of every head in
  // the group are scored together against the head's cached keys, [rows, Dh] . [P, Dh]^T. All
  // items' tasks go in one parallel run (a batch of 8 decoding sequences: 28 runs a step, not 224).
  constexpr int kQueryBlock = 16;
  const int group = heads / kv_heads, q_row = heads * head_dim;
  std::vector<int> first_task(items.size() + 1, 0);  // item i's tasks: [first_task[i], first_task[i + 1])
  for (size_t i = 0; i < items.size(); ++i)
    first_task[i + 1] = first_task[i] + kv_heads * ((items[i].n + kQueryBlock - 1) / kQueryBlock);
  auto append = [&](const AttentionItem& it, int g) {  // head g's new keys and values
    const size_t head = row_bytes(it.kv_dtype, size_t(g) * it.capacity * head_dim);
    rt.kernels.append_kv[int(it.kv_dtype)](it.new_k + size_t(g) * head_dim, it.new_v + size_t(g) * head_dim,
                                           kv_heads * head_dim, it.n, head_dim, it.p0,
                                           static_cast<uint8_t*>(it.k) + head, static_cast<uint8_t*>(it.v) + head);
  };
  // With one block of queries per item (decode), each task appends its own head's keys and values
  // first, in parallel; a prompt's blocks read each other's keys, so they are all appended first.
  const bool one_block = first_task.back() == int(items.size()) * kv_heads;
  if (!one_block)
    rt.pool.run(int(items.size()) * kv_heads, [&](int b, int e) {
      for (int task = b; task < e; ++task) append(items[task / kv_heads], task % kv_heads);
    });
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  const KernelTable& kt = rt.kernels;
  rt.pool.run(first_task.back(), [&](int b, int e) {
    thread_local io::Buffer<float> queries, scores, context;  // kept: a decode step has 28 x 8 tasks
    for (int task = b; task < e; ++task) {
      const size_t i = std::upper_bound(first_task.begin(), first_task.end(), task) - first_task.begin() - 1;
      const AttentionItem& it = items[i];
      const int blocks = (it.n + kQueryBlock - 1) / kQueryBlock, local = task - first_task[i];
      const int g = local / blocks, t0 = (local % blocks) * kQueryBlock, nt = std::min(kQueryBlock, it.n - t0);
      if (one_block) append(it, g);
      const int rows = nt * group, P = it.p0 + t0 + nt;  // P: positions the block's last query sees
      const int lds = whole_key_blocks(P);  // key_scores fills whole blocks
      const size_t head_bytes = row_bytes(it.kv_dtype, size_t(g) * it.capacity * head_dim);
      const void* kg = static_cast<const uint8_t*>(it.k) + head_bytes;
      const void* vg = static_cast<const uint8_t*>(it.v) + head_bytes;
      at_least(queries, size_t(rows) * head_dim);
      for (int r = 0; r < rows; ++r)  // row r: token t0 + r / group, head g * group + r % group
        std::copy_n(it.q + size_t(t0 + r / group) * q_row + size_t(g * group + r % group) * head_dim, head_dim,
                    &queries[size_t(r) * head_dim]);
      at_least(scores, size_t(rows) * lds);
      kt.key_scores[int(it.kv_dtype)](queries.data(), head_dim, rows, head_dim, kg, P, scores.data(), lds);
      for (int r = 0; r < rows; ++r) {  // softmax over the positions each query sees (causal)
        const int visible = it.p0 + t0 + r / group + 1;
        float* s = &scores[size_t(r) * lds];
        kt.softmax(s, visible, scale);
        std::fill(s + visible, s + P, 0.0f);  // masked: weighs nothing below
      }
      at_least(context, size_t(rows) * head_dim);
      kt.weighted_sum[int(it.kv_dtype)](scores.data(), lds, rows, P, vg, head_dim, context.data(), head_dim);
      for (int r = 0; r < rows; ++r)
        std::copy_n(&context[size_t(r) * head_dim], head_dim,
                    it.out + size_t(t0 + r / group) * q_row + size_t(g * group + r % group) * head_dim);
    }
  });
}

void silu_mul(Runtime& rt, const float* gate, const float* up, int n, float* out) {
  for_elements(rt, n, [&](size_t b, size_t e) {
    rt.kernels.silu_mul(gate + b, up + b, int(e - b), out + b);
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
  for (const Matrix& m : matrices) first_unit.push_back(first_unit.back() + (m.bytes() + kUnit - 1) / kUnit);
  std::atomic<uint64_t> total{0};
  rt.pool.run(int(first_unit.back()), [&](int b, int e) {
    uint64_t acc[8] = {};  // independent sums: the loads, not one chain of additions, set the pace
    for (int u = b; u < e; ++u) {
      const size_t i = std::upper_bound(first_unit.begin(), first_unit.end(), size_t(u)) - first_unit.begin() - 1;
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
