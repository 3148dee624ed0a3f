// Qwen3.5's value heads in a GGUF file: where each tensor has them, and their order undone.
#include "model/gguf_value_heads.h"

#include <algorithm>
#include <vector>

namespace qwen3 {

std::optional<HeadOrder> HeadOrder::in_bytes(int size, int bytes) const {
  if (row_len % size || first % size || block % size) return std::nullopt;
  auto b = [&](int64_t values) { return values / size * bytes; };
  return HeadOrder{rows, b(row_len), b(first), b(block)};
}

void untile_value_heads(uint8_t* x, const HeadOrder& o, int nk, int nv) {
  const int r = nv / nk;
  std::vector<uint8_t> tiled(size_t(nv * o.block));
  for (int64_t row = 0; row < o.rows; ++row) {
    uint8_t* heads = x + row * o.row_len + o.first;
    std::copy_n(heads, tiled.size(), tiled.begin());
    for (int g = 0; g < nk; ++g)
      for (int i = 0; i < r; ++i)
        std::copy_n(&tiled[size_t((i * nk + g) * o.block)], o.block, heads + (g * r + i) * o.block);
  }
}

void untile_value_heads(float* x, const HeadOrder& o, int nk, int nv) {
  untile_value_heads(reinterpret_cast<uint8_t*>(x), *o.in_bytes(1, sizeof(float)), nk, nv);
}

std::optional<HeadOrder> value_heads(const ModelConfig& c, const std::string& name, int64_t rows,
                                     int64_t cols) {
  const int nk = c.linear_num_key_heads, nv = c.linear_num_value_heads;
  const std::string marker = ".linear_attn.";
  const size_t at = name.find(marker);
  if (nv == nk || at == std::string::npos) return std::nullopt;
  const int64_t dv = c.linear_value_head_dim, qk = 2 * int64_t(nk) * c.linear_key_head_dim;
  const std::string p = name.substr(at + marker.size());
  // value-head rows (of `cols` values each) from row `first`
  auto rows_of = [&](int64_t first, int64_t per_head) {
    return HeadOrder{1, rows * cols, first * cols, per_head * cols};
  };
  if (p == "in_proj_qkv.weight" || p == "conv1d.weight") return rows_of(qk, dv);
  if (p == "in_proj_z.weight") return rows_of(0, dv);
  if (p == "in_proj_a.weight" || p == "in_proj_b.weight" || p == "A_log" || p == "dt_bias")
    return rows_of(0, 1);
  if (p == "out_proj.weight") return HeadOrder{rows, cols, 0, dv};  // columns
  return std::nullopt;
}

}  // namespace qwen3
