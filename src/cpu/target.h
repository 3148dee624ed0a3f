// The first include of every src/cpu/<isa>/ file: what the kernels use from outside src/cpu, then
// the macros that switch the rest of the file to its instruction set.
//
// Those files are compiled for plain x86-64, like the rest of the library, and name their
// instruction set with QWEN3_TARGET_* (#pragma GCC target) only after this header. Inline
// functions and templates defined before the pragma (std::vector's, io/dtype.h's) stay plain
// code even where a kernel instantiates them, while inlined into a kernel they take its
// instructions. Compiled with -mavx512f and the like instead, a kernel file emitted its own
// AVX-512 copy of, say, std::vector<uint16_t>::_M_default_append, and the linker, which keeps one
// copy of each such function for the whole program, gave it to code outside the kernels: a
// sanitizer build's vector resizes ran AVX-512 instructions on any CPU
// (tests/kernels/dispatch_test.cpp). A header of src/cpu that includes anything else from
// outside src/cpu must include it here too.
#pragma once

#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "io/dtype.h"
#include "io/huge_page_buffer.h"
#include "io/quant_blocks.h"
#include "ops/kernels.h"

// The rest of the file may use these instructions (dispatch checks the CPU has them first). One
// string each: _Pragma takes no concatenation.
// clang-format off
#define QWEN3_TARGET_AVX2 _Pragma("GCC target(\"avx2,fma,f16c\")")
#define QWEN3_TARGET_AVX512 _Pragma("GCC target(\"avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512bf16,fma,f16c\")")
#define QWEN3_TARGET_AMX _Pragma("GCC target(\"avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512bf16,fma,f16c,amx-tile,amx-bf16\")")
// clang-format on
