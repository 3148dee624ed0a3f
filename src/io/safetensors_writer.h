// Writing one safetensors file: the header for a list of tensors, then each tensor's bytes in
// turn, into a temporary file renamed into place when complete.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/dtype.h"

namespace qwen3::io {

// The period of TensorToWrite::place, in bytes.
constexpr uint64_t kPlacePeriod = 64;

struct TensorToWrite {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;  // logical; a block-quantized matrix's bytes are its row groups
  // Where the bytes start in the file, modulo kPlacePeriod; -1: right after the previous tensor.
  // A matrix copied from another file can keep its place there, on which the kernels' order of
  // summation depends (ops/kernels.h kLeadPeriod).
  int place = -1;
  uint64_t bytes() const;
};

// The dtype's name in a safetensors header ("BF16", and "Q8_0" / "Q4_0" for quantized folders).
const char* safetensors_dtype(DType t);

// Writes `path` with `metadata` as __metadata__; data(i) returns tensor i's bytes (exactly
// tensors[i].bytes() of them, valid until the next call). Tensors follow one another in the
// given order; where some have a place, the header's padding starts the data on a multiple of
// kPlacePeriod and zero bytes fill the gap before each placed tensor. The file is then dropped
// from the page cache (drop_from_page_cache). Throws Error(io) when the disk refuses.
void write_safetensors(const std::filesystem::path& path, const std::vector<TensorToWrite>& tensors,
                       const nlohmann::json& metadata,
                       const std::function<const void*(size_t i)>& data);

}  // namespace qwen3::io
