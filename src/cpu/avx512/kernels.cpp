// AVX-512 instantiation of the SIMD kernels.
#include "cpu/target.h"  // first: see there
QWEN3_TARGET_AVX512

#include "cpu/avx512/avx512.h"
#include "cpu/make_table.h"

namespace qwen3::ops {

const KernelTable& avx512_kernels() {
  static const KernelTable table = with_avx512_quant(cpu::make_table<cpu::Avx512>("avx512"),
                                                     __builtin_cpu_supports("avx512vnni"));
  return table;
}

const KernelTable& avx512_bf16_kernels() {
  static const KernelTable table =
      with_avx512_bf16_attention(with_avx512_bf16_dot(avx512_kernels()));
  return table;
}

const KernelTable& amx_kernels() {
  static const KernelTable table = with_amx(avx512_kernels(), true);
  return table;
}

const KernelTable& amx_bf16_kernels() {
  static const KernelTable table = with_amx(avx512_bf16_kernels(), false);
  return table;
}

}  // namespace qwen3::ops
