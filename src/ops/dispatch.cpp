// Choosing the kernel table once, from the CPU's features or a forced --isa.
#include <string>

#include "ops/kernels.h"
#include "qwen3/error.h"

namespace qwen3::ops {

bool cpu_supports(std::string_view isa) {
  if (isa == "scalar") return true;
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                    __builtin_cpu_supports("f16c");
  if (isa == "avx2") return avx2;
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512dq");
  if (isa == "avx512") return avx512;
  if (isa == "avx512-bf16") return avx512 && __builtin_cpu_supports("avx512bf16");
  if (isa == "amx") return avx512 && __builtin_cpu_supports("avx512bf16") && amx_usable();
  return false;
}

namespace {
std::string_view resolve(std::string_view isa) {
  if (isa != "auto") return isa;
  return cpu_supports("avx512") ? "avx512" : cpu_supports("avx2") ? "avx2" : "scalar";
}
}  // namespace

const char* rounding_choice(std::string_view isa) {
  isa = resolve(isa);
  if (!cpu_supports(isa)) return "this CPU does not support the kernels";
  if (isa == "amx") return nullptr;
  if (isa != "avx512") return "these kernels have no bf16 dot products";
  if (!cpu_supports("avx512-bf16")) return "this CPU has no AVX512_BF16";
  // Intel's cores run vdpbf16ps at half the rate of vfmadd231ps (one 16-pair product where the
  // float units do two 16-lane ones): the same multiply-adds a cycle, so rounding buys nothing.
  if (!__builtin_cpu_is("amd")) return "this CPU's bf16 dot products are no faster than its FMAs";
  return nullptr;
}

const KernelTable* rounding_kernels(std::string_view isa) {
  if (rounding_choice(isa)) return nullptr;
  return resolve(isa) == "amx" ? &amx_bf16_kernels() : &avx512_bf16_kernels();
}

const KernelTable& select_kernels(std::string_view isa, std::string_view activations) {
  const bool forced = isa != "auto";
  isa = resolve(isa);
  if (isa != "amx" && isa != "avx512" && isa != "avx2" && isa != "scalar")
    throw Error(ErrorKind::invalid_argument,
                "unknown isa \"" + std::string(isa) + "\" (auto, amx, avx512, avx2, scalar)");
  if (activations != "f32" && activations != "bf16")
    throw Error(ErrorKind::invalid_argument,
                "activations must be f32 or bf16, got \"" + std::string(activations) + "\"");
  if (!cpu_supports(isa))
    throw Error(ErrorKind::unsupported, "this CPU does not support " + std::string(isa));
  if (isa == "amx") return activations == "bf16" ? amx_bf16_kernels() : amx_kernels();
  if (activations == "bf16") {
    // Only a forced set is to blame: auto picked the CPU's widest, and it has no AVX512_BF16.
    if (isa != "avx512" || !cpu_supports("avx512-bf16"))
      throw Error(ErrorKind::unsupported,
                  "bf16 activations need AVX512_BF16, which " +
                      (isa == "avx512" || !forced ? std::string("this CPU lacks")
                                                  : "--isa " + std::string(isa) + " does not use"));
    return avx512_bf16_kernels();
  }
  if (isa == "avx512") return avx512_kernels();
  if (isa == "avx2") return avx2_kernels();
  return reference_kernels();
}

}  // namespace qwen3::ops
