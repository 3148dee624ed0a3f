// Fuzz target: the safetensors header parser must reject any input with qwen3::Error, never crash.
#include <cstdint>
#include <string_view>
#include <vector>

#include "io/safetensors.h"
#include "qwen3/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint64_t data_size = data[0] * 64ull;  // first byte: size of the pretend data section
  std::string_view header(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    qwen3::io::parse_safetensors_header(header, data_size, "fuzz.safetensors");
  } catch (const qwen3::Error&) {}
  return 0;
}

std::vector<std::vector<uint8_t>> fuzz_seeds() {
  const std::string_view seeds[] = {
      R"({"a":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]},"b":{"dtype":"F32","shape":[1],"data_offsets":[12,16]}})",
      R"({"__metadata__":{"format":"pt"},"x":{"dtype":"F16","shape":[],"data_offsets":[0,2]}})",
      R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})",
  };
  std::vector<std::vector<uint8_t>> out;
  for (auto s : seeds) {
    std::vector<uint8_t> v{1};
    v.insert(v.end(), s.begin(), s.end());
    out.push_back(v);
  }
  return out;
}
