// Every SIMD kernel against the scalar reference, for each instruction set this CPU has.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "io/quant_blocks.h"
#include "ops/kernels.h"
#include "ops/key_layout.h"
#include "ops/ops.h"
#include "qwen3/error.h"

namespace qwen3::ops {
namespace {

std::vector<const KernelTable*> simd_tables() {
  std::vector<const KernelTable*> out;
  if (cpu_supports("avx2")) out.push_back(&avx2_kernels());
  if (cpu_supports("avx512")) out.push_back(&avx512_kernels());
  if (cpu_supports("avx512-bf16")) out.push_back(&avx512_bf16_kernels());
  if (cpu_supports("amx")) out.push_back(&amx_kernels()), out.push_back(&amx_bf16_kernels());
  for (auto* t : out) std::printf("testing kernels: %s\n", t->name);
  return out;
}

// The tables whose bf16 weights' products round x to bf16 first: the reference then takes x so
// rounded. Each table is named only where the CPU has it: building one runs its instructions.
bool rounds_x(const KernelTable* kt, DType dtype) {
  return dtype == DType::bf16 && cpu_supports("avx512-bf16") &&
         (kt == &avx512_bf16_kernels() || (cpu_supports("amx") && kt == &amx_bf16_kernels()));
}

bool on_amx_tiles(const KernelTable* kt, DType dtype) {  // tile loads take any address: no lead
  return dtype == DType::bf16 && cpu_supports("amx") &&
         (kt == &amx_kernels() || kt == &amx_bf16_kernels());
}

// Weights of a dtype, stored as raw bytes, from float values exactly representable in it.
struct Weights {
  DType dtype;
  std::vector<uint16_t> half;
  std::vector<float> f32;
  const void* data(size_t offset) const {
    return dtype == DType::f32 ? static_cast<const void*>(f32.data() + offset)
                               : half.data() + offset;
  }
  float value(size_t i) const {
    return dtype == DType::f32    ? f32[i]
           : dtype == DType::bf16 ? bf16_to_f32(half[i])
                                  : f16_to_f32(half[i]);
  }
};

// A dot product of K terms in any order is within K * eps * sum|x_k w_k| of exact; two results
// are within twice that of each other. x: K values, w: the row's first element.
float dot_tolerance(const float* x, const Weights& w, size_t row_at, int K) {
  float sum_abs = 0;
  for (int k = 0; k < K; ++k) sum_abs += std::abs(x[k] * w.value(row_at + k));
  return 2 * K * std::numeric_limits<float>::epsilon() * sum_abs;
}

// The product of rows [0, T) of x with W rows [n0, n1) as ops::matmul runs it: x rotated by W's
// lead, laid out for the kernels (rows prepared in pieces of `piece`, as threads do).
void product(const KernelTable& kt, DType dtype, const float* x, int T, int K, const void* w,
             int n0, int n1, float* y, int ldy, int piece = 1 << 30) {
  const int lead = kt.lead[int(dtype)](w, K);
  std::vector<float> rotated(size_t(T) * K), prepared(kt.prepared_floats(T, K));
  rotate_rows(x, K, lead, 0, T, rotated.data());
  for (int t0 = 0; t0 < T; t0 += piece)
    kt.prepare_x[int(dtype)](rotated.data(), T, K, t0, std::min(T, t0 + piece), prepared.data());
  kt.matmul[int(dtype)](prepared.data(), T, K, w, lead, n0, n1, y, ldy);
}

Weights random_weights(DType dtype, size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1, 1);
  Weights w{dtype, {}, {}};
  for (size_t i = 0; i < n; ++i) {
    float v = u(rng);
    if (dtype == DType::f32) w.f32.push_back(v);
    else if (dtype == DType::bf16) w.half.push_back(f32_to_bf16(v));
    else
      w.half.push_back(static_cast<uint16_t>(0x3c00 ^ (rng() & 0x83ff)));  // f16 in (-2, 2), finite
  }
  return w;
}

TEST(MatmulKernel, MatchesReferenceAtOddAndRealSizes) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> u(-1, 1);
  for (const KernelTable* kt : simd_tables()) {
    for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
      for (int K : {1, 2, 7, 8, 15, 16, 17, 31, 32, 33, 47, 128, 1024}) {
        for (int T : {1, 2, 3, 5, 7, 13, 29, 100}) {
          const int N = 19, n0 = 3, n1 = 17,
                    ldy = N + 4;             // a sub-range of rows, sentinels around it
          const int misalign = (K + T) % 3;  // pointers off the natural alignment
          Weights w = random_weights(dtype, size_t(N) * K + misalign, rng);
          std::vector<float> x(size_t(T) * K + misalign);
          for (auto& v : x) v = u(rng);
          if (rounds_x(kt, dtype))
            for (auto& v : x) v = bf16_to_f32(f32_to_bf16(v));
          const float sentinel = -12345.0f;
          std::vector<float> want(size_t(T) * ldy, sentinel), got(size_t(T) * ldy, sentinel);
          const float* xp = x.data() + misalign;
          const void* wp = w.data(misalign);
          reference_kernels().matmul[int(dtype)](xp, T, K, wp, 0, n0, n1, want.data(), ldy);
          product(*kt, dtype, xp, T, K, wp, n0, n1, got.data(), ldy);
          for (int t = 0; t < T; ++t)
            for (int n = 0; n < ldy; ++n) {
              const size_t i = size_t(t) * ldy + n;
              if (n < n0 || n >= n1) {
                ASSERT_EQ(got[i], sentinel)
                    << kt->name << " wrote outside its rows at t=" << t << " n=" << n;
                continue;
              }
              const float tol = dot_tolerance(xp + size_t(t) * K, w, misalign + size_t(n) * K, K);
              ASSERT_NEAR(got[i], want[i], tol)
                  << "op matmul, isa " << kt->name << ", dtype " << dtype_name(dtype) << ", K " << K
                  << ", T " << T << ", t " << t << ", n " << n;
            }
        }
      }
    }
  }
}

// Prompts go through packed panels, decode through dot tiles, a few tokens through small tiles:
// each row's results must be the same bits on every path. 250 rows of 3000: a prompt that the bf16
// dot tiles take in three blocks.
TEST(MatmulKernel, RowResultsDoNotDependOnBatchOrRange) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  for (const KernelTable* kt : simd_tables())
    for (DType dtype : {DType::f32, DType::f16, DType::bf16})
      for (int K : {1024, 1000, 77, 3000})
        for (int T : {2, 3, 5, 11, 40, 100, 250}) {
          const int N =
              T == 100 && K == 1024 ? 700 : 37;  // 700 rows: 22 packed panels, the last partial
          Weights w = random_weights(dtype, size_t(N) * K, rng);
          std::vector<float> x(size_t(T) * K);
          for (auto& v : x) v = u(rng);
          std::vector<float> all(size_t(T) * N), one(N);
          // Rows prepared in pieces, as threads do: whole and split tiles.
          product(*kt, dtype, x.data(), T, K, w.data(0), 0, N, all.data(), N, 29);
          for (int t = 0; t < T; ++t) {
            // Alone, and split into odd row ranges as threads would.
            product(*kt, dtype, &x[size_t(t) * K], 1, K, w.data(0), 0, 5, one.data(), N);
            product(*kt, dtype, &x[size_t(t) * K], 1, K, w.data(0), 5, N, one.data(), N);
            for (int n = 0; n < N; ++n)
              ASSERT_EQ(one[n], all[size_t(t) * N + n])
                  << kt->name << " " << dtype_name(dtype) << " K=" << K << " T=" << T << " t=" << t
                  << " n=" << n;
          }
        }
}

// A mapped file puts a matrix at any offset: the kernels then read each row rotated by a lead that
// puts their loads on whole cache lines. Every placement: the reference's results within
// rounding, and for each row, the same bits on every path (one token, a few, a short prompt,
// packed panels).
TEST(MatmulKernel, AnyPlacementOfTheWeightsGivesTheSameRowResults) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1, 1);
  const int N = 37, K = 256, T = 100;
  for (const KernelTable* kt : simd_tables())
    for (DType dtype : {DType::f32, DType::bf16}) {
      Weights w = random_weights(dtype, size_t(N) * K + 32, rng);
      std::vector<float> x(size_t(T) * K);
      for (auto& v : x) v = rounds_x(kt, dtype) ? bf16_to_f32(f32_to_bf16(u(rng))) : u(rng);
      int leads = 0;
      for (int offset = 0; offset < 32; ++offset) {  // every placement within a cache line
        const void* wp = w.data(offset);
        leads += kt->lead[int(dtype)](wp, K) > 0;
        std::vector<float> want(size_t(T) * N), all(want.size()), few(want.size());
        reference_kernels().matmul[int(dtype)](x.data(), T, K, wp, 0, 0, N, want.data(), N);
        product(*kt, dtype, x.data(), T, K, wp, 0, N, all.data(), N);
        for (int t = 0; t < T; ++t)
          for (int n = 0; n < N; ++n)
            ASSERT_NEAR(all[size_t(t) * N + n], want[size_t(t) * N + n],
                        dot_tolerance(&x[size_t(t) * K], w, offset + size_t(n) * K, K))
                << kt->name << " " << dtype_name(dtype) << " offset " << offset << " t=" << t
                << " n=" << n;
        for (int rows : {1, 5, 20}) {
          product(*kt, dtype, x.data(), rows, K, wp, 0, N, few.data(), N);
          for (size_t i = 0; i < size_t(rows) * N; ++i)
            ASSERT_EQ(few[i], all[i])
                << kt->name << " " << dtype_name(dtype) << " offset " << offset << " rows " << rows;
        }
      }
      if (!on_amx_tiles(kt, dtype)) {
        EXPECT_GE(leads, 8) << kt->name << " " << dtype_name(dtype)
                            << ": placements that take a lead";
      }
    }
}

// The reference takes any lead too: W's rows read rotated, against x rotated alike.
TEST(MatmulKernel, ReferenceReadsRowsRotatedByTheLead) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  const int N = 3, K = 40, T = 2;
  Weights w = random_weights(DType::f32, size_t(N) * K, rng);
  std::vector<float> x(size_t(T) * K), rotated(x.size()), want(size_t(T) * N), got(want.size());
  for (auto& v : x) v = u(rng);
  reference_kernels().matmul[int(DType::f32)](x.data(), T, K, w.data(0), 0, 0, N, want.data(), N);
  for (int lead : {1, 7, 39}) {
    rotate_rows(x.data(), K, lead, 0, T, rotated.data());
    EXPECT_EQ(rotated[lead], x[0]);
    EXPECT_EQ(rotated[0], x[K - lead]);
    reference_kernels().matmul[int(DType::f32)](rotated.data(), T, K, w.data(0), lead, 0, N,
                                                got.data(), N);
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_NEAR(got[i], want[i], dot_tolerance(&x[i / N * K], w, i % N * K, K))
          << "lead " << lead;
  }
}

// Without AVX512_BF16 in the CPU or the kernels asked for, bf16 activations are a clear error.
TEST(MatmulKernel, Bf16ActivationsNeedAvx512Bf16) {
  EXPECT_THROW(select_kernels("scalar", "bf16"), Error);
  EXPECT_THROW(select_kernels("auto", "f16"), Error);
  if (cpu_supports("avx2")) {
    EXPECT_THROW(select_kernels("avx2", "bf16"), Error);
  }
  if (cpu_supports("avx512-bf16")) {
    EXPECT_STREQ(select_kernels("auto", "bf16").name, "avx512-bf16");
  } else {
    try {
      select_kernels("auto", "bf16");
      ADD_FAILURE() << "auto gave bf16 activations without AVX512_BF16";
    } catch (const Error& e) {  // the CPU is to blame, not an --isa never given
      EXPECT_NE(std::string(e.what()).find("this CPU lacks"), std::string::npos) << e.what();
    }
  }
  EXPECT_STREQ(select_kernels("scalar", "f32").name, "scalar");
}

// --isa amx gives the tile kernels where the CPU and the OS allow them, a clear error elsewhere;
// auto never picks them (one-sequence decode is slower on tiles).
TEST(MatmulKernel, AmxOnlyWhenAskedForAndPresent) {
  if (cpu_supports("amx")) {
    EXPECT_STREQ(select_kernels("amx", "f32").name, "amx");
    EXPECT_STREQ(select_kernels("amx", "bf16").name, "amx-bf16");
  } else {
    EXPECT_THROW(select_kernels("amx", "f32"), Error);
  }
  EXPECT_STRNE(select_kernels("auto", "f32").name, "amx");
}

// x is prepared for one weight dtype per call: products of two dtypes in one call (a folder that
// mixes them) give what each gives alone.
// Products of ma and mb in one call give what each gives alone, for one row of x and for 100.
void expect_shared_call_matches_alone(Runtime& rt, const Matrix& ma, const Matrix& mb,
                                      std::mt19937& rng, const std::string& what) {
  std::uniform_real_distribution<float> u(-1, 1);
  const int K = ma.cols, N = ma.rows;
  for (int T : {1, 100}) {
    std::vector<float> x(size_t(T) * K);
    for (auto& v : x) v = u(rng);
    std::vector<float> ya(size_t(T) * N), yb(ya.size()), za(ya.size()), zb(ya.size());
    matmul(rt, x.data(), T, {{ma, ya.data()}, {mb, yb.data()}});
    matmul(rt, x.data(), T, ma, za.data());
    matmul(rt, x.data(), T, mb, zb.data());
    EXPECT_EQ(ya, za) << what << " T=" << T;
    EXPECT_EQ(yb, zb) << what << " T=" << T;
  }
}

TEST(MatmulKernel, ProductsOfTwoDtypesGiveWhatEachGivesAlone) {
  std::mt19937 rng(9);
  const int K = 96, N = 40;
  Weights a = random_weights(DType::f32, size_t(N) * K, rng),
          b = random_weights(DType::bf16, size_t(N) * K, rng);
  const Matrix ma{DType::f32, a.data(0), N, K}, mb{DType::bf16, b.data(0), N, K};
  expect_shared_call_matches_alone(*make_runtime("auto", 2), ma, mb, rng, "f32 and bf16");
}

// N rows of a GGUF type (q4_1, q5_0, q5_1, iq4_nl or a K-quant) in the row-group layout: random
// quants, scales and mins; d and dmin (or m) 2^-10.
std::vector<uint8_t> random_gguf_quant(DType dtype, int N, int K, std::mt19937& rng) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint8_t> plain(size_t(N) * row_bytes(dtype, K)), out(plain.size());
  const bool k_quant = dtype == DType::q4_k || dtype == DType::q5_k || dtype == DType::q6_k;
  const size_t unit = row_bytes(dtype, k_quant ? kSuperBlock : kQuantBlock);
  const uint16_t d = f32_to_f16(1.0f / 1024);
  for (size_t u = 0; u < plain.size(); u += unit) {
    for (size_t i = 0; i < unit; ++i) plain[u + i] = uint8_t(byte(rng));
    const int scales =
        dtype == DType::q6_k || dtype == DType::q5_0 || dtype == DType::iq4_nl ? 1 : 2;
    for (int i = 0; i < scales; ++i) std::memcpy(&plain[u + 2 * i], &d, 2);
  }
  interleave_rows(dtype, N, K, plain.data(), out.data());
  return out;
}

// Block-quantized weights of any dtypes share one quantized x: a Q4_K_M file's q4_k and q6_k
// products in one call give what each gives alone, and so do q5_1 with q5_0 and iq4_nl with q4_1.
TEST(MatmulKernel, ProductsOfTwoQuantDtypesGiveWhatEachGivesAlone) {
  std::mt19937 rng(10);
  const int K = 512, N = 40;
  for (auto [da, db] : {std::pair{DType::q4_k, DType::q6_k},
                        {DType::q5_1, DType::q5_0},
                        {DType::iq4_nl, DType::q4_1}}) {
    const std::vector<uint8_t> a = random_gguf_quant(da, N, K, rng),
                               b = random_gguf_quant(db, N, K, rng);
    const Matrix ma{da, a.data(), N, K}, mb{db, b.data(), N, K};
    for (const char* isa : {"scalar", "auto"})
      expect_shared_call_matches_alone(
          *make_runtime(isa, 2), ma, mb, rng,
          std::string(dtype_name(da)) + " and " + dtype_name(db) + ", " + isa);
  }
}

// An MoE step's experts in one call: each group's rows give the bits its own product gives, for
// every weight dtype (float and quantized), misplaced weights (a lead) and any mix of row counts.
TEST(MatmulKernel, GroupsOfRowsGiveWhatEachGivesAlone) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1, 1);
  const int K = 128, N = 48, groups = 5;
  for (const char* isa : {"scalar", "auto"})
    for (DType dtype : {DType::f32, DType::bf16, DType::q8_0, DType::q4_0}) {
      auto rt = make_runtime(isa, 3);
      const DType stored = is_block_quantized(dtype) ? DType::f32 : dtype;
      std::vector<Weights> w;
      std::vector<std::vector<uint8_t>> q(groups);
      std::vector<Matrix> m;
      for (int i = 0; i < groups; ++i) {
        w.push_back(random_weights(stored, size_t(N) * K + 1, rng));
        m.push_back({stored, w[i].data(1), N, K});  // one element in: a lead for the float kernels
        if (stored != dtype) {
          q[i].resize(size_t(N) * row_bytes(dtype, K));
          quantize(*rt, m[i], dtype, q[i].data());
          m[i] = {dtype, q[i].data(), N, K};
        }
      }
      const int rows[groups] = {1, 17, 3, 40, 2};
      std::vector<std::vector<float>> x(groups), y(groups), alone(groups);
      std::vector<Product> products;
      products.reserve(groups);
      std::vector<ProductGroup> all;
      for (int i = 0; i < groups; ++i) {
        x[i].resize(size_t(rows[i]) * K);
        for (auto& v : x[i]) v = u(rng);
        y[i].resize(size_t(rows[i]) * N);
        alone[i].resize(y[i].size());
        products.push_back({m[i], y[i].data()});
        all.push_back({x[i].data(), rows[i], {&products.back(), 1}});
      }
      matmul(*rt, all);
      for (int i = 0; i < groups; ++i) {
        matmul(*rt, x[i].data(), rows[i], m[i], alone[i].data());
        EXPECT_EQ(y[i], alone[i]) << isa << " " << dtype_name(dtype) << " group " << i;
      }
    }
}

// A KV cache's `n` elements, element i of x (rounded to what `dtype` holds, in place) at offset(i),
// the rest `spare` (NaN: must never reach a result).
template <class Offset>
std::vector<uint8_t> as_cache(std::vector<float>& x, DType dtype, size_t n, const Offset& offset) {
  const float spare = std::numeric_limits<float>::quiet_NaN();
  std::vector<uint8_t> out(row_bytes(dtype, n));
  auto put = [&](size_t at, float& v) {
    if (dtype == DType::f32) return std::memcpy(&out[4 * at], &v, 4), void();
    const uint16_t h = dtype == DType::f16 ? f32_to_f16(v) : f32_to_bf16(v);
    v = dtype == DType::f16 ? f16_to_f32(h) : bf16_to_f32(h);
    std::memcpy(&out[2 * at], &h, 2);
  };
  for (size_t i = 0; i < n; ++i) {
    float nan = spare;
    put(i, nan);
  }
  for (size_t i = 0; i < x.size(); ++i) put(offset(i), x[i]);
  return out;
}

// The cache dtypes a table attends over: f32, f16, and bf16 where it has those kernels.
std::vector<DType> cache_types(const KernelTable* kt) {
  std::vector<DType> out{DType::f32, DType::f16};
  if (kt->key_scores[int(DType::bf16)]) out.push_back(DType::bf16);
  return out;
}

// Keys laid out as key_offset: scores within a dot product's rounding of the reference (which,
// for a bf16 cache, rounds q to bf16 as the kernels do), and a query's scores the same bits
// whether it comes alone (decode) or among many (a prompt's block).
TEST(VectorKernels, KeyScoresMatchReferenceAndDoNotDependOnTheRows) {
  const float eps = std::numeric_limits<float>::epsilon();
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> u(-1, 1);
  for (const KernelTable* kt : simd_tables())
    for (DType dtype : cache_types(kt))
      for (int D : {1, 2, 6, 64, 128})
        for (int P : {1, 15, 16, 17, 100}) {
          if (dtype == DType::bf16 && D % 2) continue;  // pairs of dimensions: head_dim is even
          const int padded = whole_key_blocks(P), R = 13, ldq = D + 1, lds = padded + 3,
                    kv = int(dtype);
          std::vector<float> keys(size_t(padded) * D), q(size_t(R) * ldq);  // keys [p, d]
          for (auto& x : keys) x = u(rng);
          for (auto& x : q) x = u(rng);
          const std::vector<uint8_t> cache = as_cache(keys, dtype, keys.size(), [&](size_t i) {
            return key_offset(dtype, int(i / D), int(i % D), D);
          });
          const float sentinel = -777.0f;
          std::vector<float> want(size_t(R) * lds, sentinel), got(size_t(R) * lds, sentinel);
          reference_kernels().key_scores[kv](q.data(), ldq, R, D, cache.data(), P, want.data(),
                                             lds);
          kt->key_scores[kv](q.data(), ldq, R, D, cache.data(), P, got.data(), lds);
          for (int r = 0; r < R; ++r)
            for (int p = 0; p < lds; ++p) {
              const size_t i = size_t(r) * lds + p;
              if (p >= padded) {
                ASSERT_EQ(got[i], sentinel) << kt->name << " wrote past the last block";
                continue;
              }
              float sum_abs = 0;
              for (int d = 0; d < D; ++d)
                sum_abs += std::abs(q[size_t(r) * ldq + d] * keys[size_t(p) * D + d]);
              ASSERT_NEAR(got[i], want[i], 2 * D * eps * sum_abs)
                  << kt->name << " " << dtype_name(dtype) << " D " << D << " P " << P << " r " << r
                  << " p " << p;
            }
          for (int rows : {1, 2, 3, 7}) {  // the first rows again, in smaller calls: the same bits
            std::vector<float> part(size_t(rows) * lds);
            kt->key_scores[kv](q.data(), ldq, rows, D, cache.data(), P, part.data(), lds);
            for (int r = 0; r < rows; ++r)
              for (int p = 0; p < padded; ++p)
                ASSERT_EQ(part[size_t(r) * lds + p], got[size_t(r) * lds + p])
                    << kt->name << " " << dtype_name(dtype) << " rows " << rows << " r " << r
                    << " p " << p;
          }
        }
}

// Values laid out as value_offset, from one element in (unaligned); a bf16 cache's spare position
// after an odd P holds NaN, which must not reach the sums. The reference, for a bf16 cache, rounds
// the weights to bf16 as the kernels do.
TEST(VectorKernels, WeightedSumMatchesReference) {
  const float eps = std::numeric_limits<float>::epsilon();
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  for (const KernelTable* kt : simd_tables())
    for (DType dtype : cache_types(kt))
      for (int R : {1, 2, 3, 4, 6, 7, 13, 32})
        for (int D : {1, 7, 8, 16, 17, 64, 128, 130})
          for (int P : {0, 1, 5, 33, 300}) {  // 300: past a 32 KiB chunk of values
            const int lda = P + 3, ldo = D + 2, kv = int(dtype);      // strides wider than the rows
            const int stored = P + P % 2;                             // positions the cache holds
            std::vector<float> a(size_t(R) * lda), v(size_t(P) * D);  // v [p, d]
            for (auto& x : a) x = u(rng);
            for (auto& x : v) x = u(rng);
            const std::vector<uint8_t> cache = as_cache(
                v, dtype, 1 + size_t(stored) * D,
                [&](size_t i) { return 1 + value_offset(dtype, int(i / D), int(i % D), D); });
            const uint8_t* values = cache.data() + row_bytes(dtype, 1);
            const float sentinel = -777.0f;
            std::vector<float> want(size_t(R) * ldo, sentinel), got(size_t(R) * ldo, sentinel);
            reference_kernels().weighted_sum[kv](a.data(), lda, R, P, values, D, want.data(), ldo);
            kt->weighted_sum[kv](a.data(), lda, R, P, values, D, got.data(), ldo);
            for (int r = 0; r < R; ++r)
              for (int d = 0; d < ldo; ++d) {
                const size_t i = size_t(r) * ldo + d;
                if (d >= D) {
                  ASSERT_EQ(got[i], sentinel) << kt->name << " wrote past its row";
                  continue;
                }
                float sum_abs = 0;  // the same bound as a dot product of P terms
                for (int p = 0; p < P; ++p)
                  sum_abs += std::abs(a[size_t(r) * lda + p] * v[size_t(p) * D + d]);
                ASSERT_NEAR(got[i], want[i], 2 * P * eps * sum_abs)
                    << "op weighted_sum, isa " << kt->name << ", " << dtype_name(dtype) << ", R "
                    << R << ", D " << D << ", P " << P << ", r " << r << ", d " << d;
              }
          }
}

// Appending a head's new keys and values: every table's bytes the reference's, from any position
// (mid-block, mid-pair), rows wider than D, and what an append does not write left as it was.
TEST(VectorKernels, AppendMatchesReference) {
  std::mt19937 rng(4);
  std::normal_distribution<float> g(0, 1);
  for (const KernelTable* kt : simd_tables())
    for (DType dtype : cache_types(kt))
      for (int D : {2, 8, 30, 64, 128, 130})
        for (int p0 : {0, 1, 15, 16, 17})
          for (int n : {1, 2, 3, 16, 33}) {
            const int ld = D + 6, positions = whole_key_blocks(p0 + n + 1);
            std::vector<float> k(size_t(n) * ld), v(size_t(n) * ld);
            for (auto& x : k) x = g(rng);
            for (auto& x : v) x = g(rng);
            std::vector<uint8_t> want_k(row_bytes(dtype, size_t(positions) * D)),
                want_v(want_k.size());
            for (size_t i = 0; i < want_k.size(); ++i)
              want_k[i] = uint8_t(7 * i + 1), want_v[i] = uint8_t(5 * i + 3);
            std::vector<uint8_t> got_k = want_k, got_v = want_v;
            reference_kernels().append_kv[int(dtype)](k.data(), v.data(), ld, n, D, p0,
                                                      want_k.data(), want_v.data());
            kt->append_kv[int(dtype)](k.data(), v.data(), ld, n, D, p0, got_k.data(), got_v.data());
            const std::string where = std::string(kt->name) + ", " + dtype_name(dtype) + ", D " +
                                      std::to_string(D) + ", p0 " + std::to_string(p0) + ", n " +
                                      std::to_string(n);
            ASSERT_EQ(got_k, want_k) << "keys, " << where;
            ASSERT_EQ(got_v, want_v) << "values, " << where;
          }
}

// A q8_0 cache: every table appends the reference's bytes (in one call or in pieces from any
// position), each value within half a step of its group's scale (plus the scale's f16 rounding)
// of what went in; the reference's scores (the query quantized too) within half a query step
// per dimension of the float product, and every table's scores and weighted sums within a dot
// product's rounding of the reference's, a query's scores the same bits alone or among others.
TEST(VectorKernels, Q8CacheMatchesReference) {
  const float eps = std::numeric_limits<float>::epsilon();
  std::mt19937 rng(6);
  std::normal_distribution<float> g(0, 1);
  for (const KernelTable* kt : simd_tables())
    for (int D : {32, 64, 128, 256})
      for (int P : {1, 15, 16, 17, 100, 300}) {
        const DType q8 = DType::q8_0;
        const int padded = whole_key_blocks(P), R = 13, ldq = D + 1, lds = padded + 3, lda = P + 3,
                  ldo = D + 2, kv = int(q8);
        std::vector<float> k(size_t(P) * D), v(size_t(P) * D), q(size_t(R) * ldq),
            a(size_t(R) * lda);
        for (auto* x : {&k, &v, &q, &a})
          for (auto& e : *x) e = g(rng);
        k[5 % k.size()] = 40.0f;  // an outlier: its group's other values get a coarser step
        std::vector<uint8_t> want_k(row_bytes(q8, size_t(padded) * D), 0x5a), want_v = want_k;
        std::vector<uint8_t> got_k = want_k, got_v = want_v;
        reference_kernels().append_kv[kv](k.data(), v.data(), D, P, D, 0, want_k.data(),
                                          want_v.data());
        const int split = P / 3;
        kt->append_kv[kv](k.data(), v.data(), D, split, D, 0, got_k.data(), got_v.data());
        kt->append_kv[kv](k.data() + size_t(split) * D, v.data() + size_t(split) * D, D, P - split,
                          D, split, got_k.data(), got_v.data());
        const std::string where =
            std::string(kt->name) + ", D " + std::to_string(D) + ", P " + std::to_string(P);
        ASSERT_EQ(got_k, want_k) << "keys, " << where;
        ASSERT_EQ(got_v, want_v) << "values, " << where;
        for (int p = 0; p < P; ++p)
          for (int d0 = 0; d0 < D; d0 += 32) {
            float kmax = 0, vmax = 0;
            for (int d = d0; d < d0 + 32; ++d)
              kmax = std::max(kmax, std::abs(k[size_t(p) * D + d])),
              vmax = std::max(vmax, std::abs(v[size_t(p) * D + d]));
            for (int d = d0; d < d0 + 32; ++d) {
              ASSERT_NEAR(cached_key(q8, got_k.data(), p, d, D), k[size_t(p) * D + d],
                          kmax * (0.5f / 127 + 1.0f / 1024))
                  << where << " key " << p << " " << d;
              ASSERT_NEAR(cached_value(q8, got_v.data(), p, d, D), v[size_t(p) * D + d],
                          vmax * (0.5f / 127 + 1.0f / 1024))
                  << where << " value " << p << " " << d;
            }
          }
        // Scores over every whole block (the spare positions hold what the appends left there).
        for (int p = P; p < padded; ++p)
          reference_kernels().append_kv[kv](k.data(), v.data(), D, 1, D, p, got_k.data(),
                                            got_v.data());
        std::vector<float> want(size_t(R) * lds, -777.0f), got = want;
        reference_kernels().key_scores[kv](q.data(), ldq, R, D, got_k.data(), P, want.data(), lds);
        kt->key_scores[kv](q.data(), ldq, R, D, got_k.data(), P, got.data(), lds);
        for (int r = 0; r < R; ++r)
          for (int p = 0; p < padded; ++p) {
            double exact = 0, step_error = 0;
            float sum_abs = 0;
            for (int d0 = 0; d0 < D; d0 += 32) {
              float qmax = 0;
              for (int d = d0; d < d0 + 32; ++d)
                qmax = std::max(qmax, std::abs(q[size_t(r) * ldq + d]));
              for (int d = d0; d < d0 + 32; ++d) {
                const float key = cached_key(q8, got_k.data(), p, d, D);
                exact += double(q[size_t(r) * ldq + d]) * key;
                step_error += qmax / 254 * std::abs(key);
                sum_abs += std::abs(q[size_t(r) * ldq + d] * key);
              }
            }
            ASSERT_NEAR(want[size_t(r) * lds + p], exact, 1.01 * step_error + 2 * D * eps * sum_abs)
                << where << " reference score r " << r << " p " << p;
            ASSERT_NEAR(got[size_t(r) * lds + p], want[size_t(r) * lds + p], 2 * D * eps * sum_abs)
                << where << " score r " << r << " p " << p;
          }
        for (int rows : {1, 2, 3, 7}) {
          std::vector<float> part(size_t(rows) * lds);
          kt->key_scores[kv](q.data(), ldq, rows, D, got_k.data(), P, part.data(), lds);
          for (int r = 0; r < rows; ++r)
            for (int p = 0; p < padded; ++p)
              ASSERT_EQ(part[size_t(r) * lds + p], got[size_t(r) * lds + p])
                  << where << " rows " << rows;
        }
        std::vector<float> want_out(size_t(R) * ldo, -777.0f), got_out = want_out;
        reference_kernels().weighted_sum[kv](a.data(), lda, R, P, got_v.data(), D, want_out.data(),
                                             ldo);
        kt->weighted_sum[kv](a.data(), lda, R, P, got_v.data(), D, got_out.data(), ldo);
        for (int r = 0; r < R; ++r)
          for (int d = 0; d < ldo; ++d) {
            const size_t i = size_t(r) * ldo + d;
            if (d >= D) {
              ASSERT_EQ(got_out[i], -777.0f) << where << " wrote past its row";
              continue;
            }
            float sum_abs = 0;
            for (int p = 0; p < P; ++p)
              sum_abs += std::abs(a[size_t(r) * lda + p] * cached_value(q8, got_v.data(), p, d, D));
            ASSERT_NEAR(got_out[i], want_out[i], 2 * P * eps * sum_abs)
                << where << " weighted r " << r << " d " << d;
          }
      }
}

// exp is the kernels' own (Cephes' expf): within a few ulp of std::exp, exactly 0 far below.
TEST(VectorKernels, SoftmaxMatchesReference) {
  std::mt19937 rng(5);
  std::normal_distribution<float> g(0, 8);
  for (const KernelTable* kt : simd_tables())
    for (int n : {1, 2, 7, 8, 9, 15, 16, 17, 33, 100, 513}) {
      std::vector<float> x(n + 1);  // + a sentinel past the row
      for (auto& v : x) v = g(rng);
      x[n / 2] = -1e30f;  // a score so low its weight is 0
      const float sentinel = x[n];
      std::vector<float> want = x, got = x;
      reference_kernels().softmax(want.data(), n, 0.25f);
      kt->softmax(got.data(), n, 0.25f);
      float total = 0;
      for (int i = 0; i < n; ++i) {
        ASSERT_NEAR(got[i], want[i], 8 * std::numeric_limits<float>::epsilon() * want[i] + 1e-37f)
            << kt->name << " n " << n << " i " << i;
        total += got[i];
      }
      if (n > 1) {
        EXPECT_EQ(got[n / 2], 0.0f) << kt->name;
      }
      EXPECT_NEAR(total, 1.0f, 1e-5f) << kt->name;
      EXPECT_EQ(got[n], sentinel) << kt->name << " wrote past the row";
    }
}

TEST(VectorKernels, RmsNormMatchesReference) {
  std::mt19937 rng(8);
  std::normal_distribution<float> g(0, 3);
  for (const KernelTable* kt : simd_tables())
    for (int n : {1, 7, 16, 17, 128, 1000, 1024}) {
      std::vector<float> x(n), w(n), want(n + 1, -5.0f), got(n + 1, -5.0f);
      for (int i = 0; i < n; ++i) x[i] = g(rng), w[i] = g(rng);
      reference_kernels().rms_norm(x.data(), w.data(), 1e-6f, n, want.data());
      kt->rms_norm(x.data(), w.data(), 1e-6f, n, got.data());
      for (int i = 0; i < n;
           ++i)  // the sum of squares in another order: a relative error of n ulp at most
        ASSERT_NEAR(got[i], want[i],
                    2 * n * std::numeric_limits<float>::epsilon() * std::abs(want[i]) + 1e-30f)
            << kt->name << " n " << n << " i " << i;
      EXPECT_EQ(got[n], -5.0f) << kt->name << " wrote past the row";
      kt->rms_norm(x.data(), w.data(), 1e-6f, n, x.data());  // out may alias x
      for (int i = 0; i < n; ++i) ASSERT_EQ(x[i], got[i]) << kt->name;
    }
}

TEST(VectorKernels, SiluMulMatchesReference) {
  std::mt19937 rng(6);
  std::normal_distribution<float> g(0, 4);
  for (const KernelTable* kt : simd_tables())
    for (int n : {1, 7, 8, 9, 16, 17, 1000, 3072}) {
      std::vector<float> gate(n), up(n), want(n + 1, -5.0f), got(n + 1, -5.0f);
      for (int i = 0; i < n; ++i) gate[i] = g(rng), up[i] = g(rng);
      gate[0] = -200;  // e^200 overflows: silu is -0 (the kernels' exp saturates: a tiny value)
      if (n > 1) gate[1] = 200;  // e^-200 underflows: silu is x
      reference_kernels().silu_mul(gate.data(), up.data(), n, want.data());
      kt->silu_mul(gate.data(), up.data(), n, got.data());
      for (int i = 0; i < n; ++i)
        ASSERT_NEAR(got[i], want[i],
                    8 * std::numeric_limits<float>::epsilon() * std::abs(want[i]) + 1e-30f)
            << kt->name << " n " << n << " i " << i << " gate " << gate[i];
      EXPECT_EQ(got[n], -5.0f) << kt->name << " wrote past the row";
      kt->silu_mul(gate.data(), up.data(), n, gate.data());  // out may alias gate
      for (int i = 0; i < n; ++i) ASSERT_EQ(gate[i], got[i]) << kt->name;
    }
}

}  // namespace
}  // namespace qwen3::ops
