// The names of LoadOptions' choices, for front ends and messages, and back.
#include <array>
#include <string>
#include <utility>

#include "qwen3/error.h"
#include "qwen3/model.h"

namespace qwen3 {

namespace {

template <class E, size_t N>
const char* name_of(const std::array<std::pair<E, const char*>, N>& names, E value) {
  for (auto& [v, n] : names)
    if (v == value) return n;
  return "?";
}

template <class E, size_t N>
E parse(const std::array<std::pair<E, const char*>, N>& names, std::string_view name,
        const char* what) {
  std::string accepted;
  for (auto& [v, n] : names) {
    if (name == n) return v;
    accepted += (accepted.empty() ? "" : ", ") + std::string(n);
  }
  throw Error(ErrorKind::invalid_argument, std::string(what) + " must be one of " + accepted +
                                               ", got \"" + std::string(name) + "\"");
}

constexpr std::array<std::pair<Isa, const char*>, 5> kIsa{{{Isa::automatic, "auto"},
                                                           {Isa::amx, "amx"},
                                                           {Isa::avx512, "avx512"},
                                                           {Isa::avx2, "avx2"},
                                                           {Isa::scalar, "scalar"}}};
constexpr std::array<std::pair<WeightQuant, const char*>, 3> kQuant{
    {{WeightQuant::none, "none"}, {WeightQuant::q8, "q8"}, {WeightQuant::q4, "q4"}}};
constexpr std::array<std::pair<KvCacheType, const char*>, 5> kKvCache{
    {{KvCacheType::automatic, "auto"},
     {KvCacheType::f32, "f32"},
     {KvCacheType::f16, "f16"},
     {KvCacheType::bf16, "bf16"},
     {KvCacheType::q8, "q8"}}};
constexpr std::array<std::pair<Activations, const char*>, 3> kActivations{
    {{Activations::automatic, "auto"}, {Activations::f32, "f32"}, {Activations::bf16, "bf16"}}};

}  // namespace

const char* to_string(Isa isa) { return name_of(kIsa, isa); }
const char* to_string(WeightQuant quant) { return name_of(kQuant, quant); }
const char* to_string(KvCacheType type) { return name_of(kKvCache, type); }
const char* to_string(Activations activations) { return name_of(kActivations, activations); }
Isa parse_isa(std::string_view name) { return parse(kIsa, name, "isa"); }
WeightQuant parse_weight_quant(std::string_view name) {
  return parse(kQuant, name, "quantization type");
}
KvCacheType parse_kv_cache_type(std::string_view name) {
  return parse(kKvCache, name, "KV cache type");
}
Activations parse_activations(std::string_view name) {
  return parse(kActivations, name, "activations");
}

}  // namespace qwen3
