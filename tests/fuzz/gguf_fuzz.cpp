// Fuzz target: the GGUF reader must refuse any input with qwen3::Error, never crash or read
// outside the bytes; what it accepts must be safe to read through every getter and dequantizer.
#include <cstdint>
#include <fstream>
#include <iterator>
#include <vector>

#include "io/gguf.h"
#include "qwen3/error.h"

namespace {

// Reads everything the parser vouched for: each value through the getter for its type, each
// dequantizable tensor row by row (under ASan an offset or size it got wrong is an error here).
void read_all(const qwen3::io::GgufFile& g) {
  using VT = qwen3::io::GgufValueType;
  for (const auto& [key, value] : g.metadata()) {
    try {
      if (value.type == VT::string) g.get_string(key);
      else if (value.type == VT::boolean) g.get_bool(key);
      else if (value.type == VT::float32 || value.type == VT::float64) g.get_f32(key);
      else if (value.type != VT::array) g.get_int(key);
      else if (value.element_type == VT::string) g.get_string_array(key);
      else if (value.element_type == VT::float32 || value.element_type == VT::float64)
        g.get_f32_array(key);
      else if (value.element_type != VT::array && value.element_type != VT::boolean)
        g.get_int_array(key);
    } catch (const qwen3::Error&) {  // a uint64 beyond int64
    }
  }
  std::vector<float> row;
  for (const auto& t : g.tensors()) {
    if (!qwen3::io::ggml_type_info(t.type).dequantizable || t.numel() > (1 << 16) || t.dims.empty())
      continue;
    row.resize(size_t(t.dims[0]));
    const size_t row_bytes = qwen3::io::ggml_row_bytes(t.type, t.dims[0]);
    for (int64_t r = 0; r < t.rows(); ++r)
      qwen3::io::dequantize_row(t.type, static_cast<const uint8_t*>(t.data) + r * row_bytes,
                                t.dims[0], row.data());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A copy of exactly `size` bytes, so reading one byte past the input is caught.
  const std::vector<uint8_t> bytes(data, data + size);
  try {
    read_all(qwen3::io::GgufFile::parse(bytes.data(), bytes.size(), "fuzz.gguf"));
  } catch (const qwen3::Error&) {}
  return 0;
}

std::vector<std::vector<uint8_t>> fuzz_seeds() {
  std::vector<std::vector<uint8_t>> seeds;
  // A GGUF file written by ggml itself (every scalar type, string and number arrays, six tensor
  // types), when run from tests/fixtures as ctest does.
  std::ifstream in("gguf/ggml_written.gguf", std::ios::binary);
  if (in) seeds.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  // The smallest valid file: the header of an empty one.
  seeds.push_back({'G', 'G', 'U', 'F', 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  return seeds;
}
