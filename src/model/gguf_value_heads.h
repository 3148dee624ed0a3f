// Qwen3.5's value heads in a GGUF file. With more value heads than key heads (r = nv / nk of them
// per key head), llama.cpp's converter (_LinearAttentionVReorderBase) reorders every Gated
// DeltaNet tensor with a value-head axis from Hugging Face's grouped order (head g r + i) to a
// tiled one (i nk + g); loading puts them back. (The converter's other changes, A_log stored as
// -exp(A_log) and zero-centred norm gains as 1 + w, are undone where the tensors are bound.)
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "qwen3/model.h"

namespace qwen3 {

struct HeadOrder {
  int64_t rows = 1, row_len = 0;  // the tensor as rows x row_len values
  int64_t first = 0, block = 0;   // in each row, nv blocks of `block` values from `first`

  // The same in bytes of a type of `bytes` per block of `size` values; nullopt where a head
  // would split a block (a K-quant's 256 values across 128-wide heads).
  std::optional<HeadOrder> in_bytes(int size, int bytes) const;
};

// Where the tensor `name` of shape [rows, cols] (a vector: [n], cols 1; the convolution [C, K])
// has its value heads; nullopt for other tensors, and when there is nothing to reorder (nv = nk).
std::optional<HeadOrder> value_heads(const ModelConfig& c, const std::string& name, int64_t rows,
                                     int64_t cols);

// HF's grouped order back from the file's tiled one: on bytes (o in bytes), or on floats.
void untile_value_heads(uint8_t* x, const HeadOrder& o, int nk, int nv);
void untile_value_heads(float* x, const HeadOrder& o, int nk, int nv);

}  // namespace qwen3
