// Block quantization round trips, and every integer matmul kernel against the scalar reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "io/gguf_types.h"
#include "io/quant_blocks.h"
#include "ops/kernels.h"

namespace qwen3 {
namespace {

std::vector<const ops::KernelTable*> quant_tables() {
  std::vector<const ops::KernelTable*> out;
  if (ops::cpu_supports("avx2")) out.push_back(&ops::avx2_kernels());
  if (ops::cpu_supports("avx512")) {
    out.push_back(&ops::avx512_kernels());
    // The variant for AVX-512 CPUs without VNNI (maddubs + madd) runs on any AVX-512 CPU: test it
    // here too, not only where auto would pick it.
    static const ops::KernelTable without_vnni = [] {
      ops::KernelTable t = ops::with_avx512_quant(ops::avx512_kernels(), false);
      t.name = "avx512 without VNNI";
      return t;
    }();
    out.push_back(&without_vnni);
  }
  for (auto* t : out) std::printf("testing integer kernels: %s\n", t->name);
  return out;
}

std::vector<float> random_values(size_t n, std::mt19937& rng, float scale = 1) {
  std::normal_distribution<float> g(0, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = g(rng);
  return v;
}

TEST(QuantBlocks, F16RoundingMatchesTheCompiler) {
  std::mt19937 rng(1);
  for (int i = 0; i < 200000; ++i) {
    uint32_t bits = rng();
    float f;
    std::memcpy(&f, &bits, 4);
    if (std::isnan(f)) continue;
    const _Float16 h = static_cast<_Float16>(f);
    uint16_t want;
    std::memcpy(&want, &h, 2);
    ASSERT_EQ(f32_to_f16(f), want) << "f = " << f;
  }
}

TEST(QuantBlocks, Q8RoundTripWithinHalfAStep) {
  std::mt19937 rng(2);
  for (float scale : {1e-3f, 0.02f, 1.0f, 30.0f}) {
    const int K = 32 * 64;
    auto x = random_values(K, rng, scale);
    std::vector<uint8_t> q(row_bytes(DType::q8_0, K));
    std::vector<float> back(K);
    quantize_row_q8_0(x.data(), K, q.data());
    dequantize_row(DType::q8_0, q.data(), K, back.data());
    for (int i = 0; i < K; ++i) {
      const float d = block_scale(&q[i / 32 * kQ8Bytes]);
      // |err| <= d / 2 from rounding to the step d; the product d * q adds one float rounding.
      ASSERT_LE(std::abs(back[i] - x[i]), d / 2 + 2e-7f * std::abs(x[i]))
          << "scale " << scale << " i " << i;
    }
  }
}

TEST(QuantBlocks, Q4RoundTripWithinHalfAStepExceptTheClampedTop) {
  std::mt19937 rng(3);
  for (float scale : {1e-3f, 0.02f, 1.0f, 30.0f}) {
    const int K = 32 * 64;
    auto x = random_values(K, rng, scale);
    std::vector<uint8_t> q(row_bytes(DType::q4_0, K));
    std::vector<float> back(K);
    quantize_row_q4_0(x.data(), K, q.data());
    dequantize_row(DType::q4_0, q.data(), K, back.data());
    for (int i = 0; i < K; ++i) {
      const float d = std::abs(block_scale(&q[i / 32 * kQ4Bytes]));
      const float err = std::abs(back[i] - x[i]), slack = 2e-7f * std::abs(x[i]);
      // Levels run -8..7 times d, the block's largest magnitude at -8: only values past 7.5 d
      // (of the other sign) clamp to 7, and they are still within d.
      const bool clamped = std::abs(x[i]) > 7.5f * d;
      ASSERT_LE(err, (clamped ? d : d / 2) + slack) << "scale " << scale << " i " << i;
    }
  }
}

// Weights of one dtype as bytes, quantized from random floats, `misalign` bytes into the buffer.
struct QuantWeights {
  std::vector<uint8_t> bytes;
  int misalign;
  const uint8_t* data() const { return bytes.data() + misalign; }
};

bool k_quant(DType t) { return t == DType::q4_k || t == DType::q5_k || t == DType::q6_k; }
// The types a GGUF file's blocks are repacked into (from_ggml), and their ggml types.
bool from_gguf(DType t) {
  return k_quant(t) || t == DType::q4_1 || t == DType::q5_0 || t == DType::q5_1 ||
         t == DType::iq4_nl;
}
io::GgmlType ggml_type(DType t) {
  switch (t) {
    case DType::q4_1: return io::GgmlType::q4_1;
    case DType::q5_0: return io::GgmlType::q5_0;
    case DType::q5_1: return io::GgmlType::q5_1;
    case DType::iq4_nl: return io::GgmlType::iq4_nl;
    case DType::q4_k: return io::GgmlType::q4_k;
    case DType::q5_k: return io::GgmlType::q5_k;
    default: return io::GgmlType::q6_k;
  }
}
// Every block-quantized dtype, for the tests that loop over them.
const DType kQuantDtypes[] = {DType::q8_0,   DType::q4_0, DType::q4_1, DType::q5_0, DType::q5_1,
                              DType::iq4_nl, DType::q4_k, DType::q5_k, DType::q6_k};

void put_f16(uint8_t* p, float v) {
  const uint16_t h = f32_to_f16(v);
  p[0] = uint8_t(h & 0xff);
  p[1] = uint8_t(h >> 8);
}

// N rows of ggml Q4_1, Q5_0, Q5_1, IQ4_NL, Q4_K, Q5_K or Q6_K blocks: any bits for the scales, mins
// and quants; the f16 d (and Q4_K's and Q5_K's dmin) small and positive, Q4_1's and Q5_1's m small
// and of either sign.
std::vector<uint8_t> random_ggml(io::GgmlType type, int N, int K, std::mt19937& rng) {
  const io::GgmlTypeInfo& info = io::ggml_type_info(type);
  const size_t block = info.block_bytes;
  std::vector<uint8_t> bytes(N * io::ggml_row_bytes(type, K));
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(1e-4f, 4e-3f), min(-0.03f, 0.01f);
  const bool with_min = type == io::GgmlType::q4_1 || type == io::GgmlType::q5_1;
  for (size_t b = 0; b < bytes.size(); b += block) {
    for (size_t i = 0; i < block; ++i) bytes[b + i] = uint8_t(byte(rng));
    if (type == io::GgmlType::q6_k) put_f16(&bytes[b + 208], scale(rng));
    else put_f16(&bytes[b], scale(rng));
    if (with_min) put_f16(&bytes[b + 2], min(rng));
    else if (info.block_size == kSuperBlock && type != io::GgmlType::q6_k)
      put_f16(&bytes[b + 2], scale(rng));
  }
  return bytes;
}

// Plain rows of random blocks, N x row_bytes (GGUF's types: random ggml blocks repacked).
std::vector<uint8_t> random_plain_rows(DType dtype, int N, int K, std::mt19937& rng) {
  std::vector<uint8_t> plain(N * row_bytes(dtype, K));
  if (from_gguf(dtype)) {
    const auto ggml = random_ggml(ggml_type(dtype), N, K, rng);
    for (int n = 0; n < N; ++n)
      from_ggml(dtype, &ggml[n * io::ggml_row_bytes(ggml_type(dtype), K)], K,
                &plain[n * row_bytes(dtype, K)]);
    return plain;
  }
  auto f = random_values(size_t(N) * K, rng, 0.05f);
  for (int n = 0; n < N; ++n)
    quantize_row(dtype, &f[size_t(n) * K], K, &plain[n * row_bytes(dtype, K)]);
  return plain;
}

// In the kernels' row-group layout.
QuantWeights random_quant_weights(DType dtype, int N, int K, int misalign, std::mt19937& rng) {
  QuantWeights w{std::vector<uint8_t>(misalign + N * row_bytes(dtype, K)), misalign};
  interleave_rows(dtype, N, K, random_plain_rows(dtype, N, K, rng).data(),
                  w.bytes.data() + misalign);
  return w;
}

TEST(QuantBlocks, RowGroupLayoutRoundTripsEveryRow) {
  std::mt19937 rng(4);
  for (DType dtype : kQuantDtypes)
    for (int N : {1, 15, 16, 17, 32, 45}) {
      const int K = k_quant(dtype) ? 512 : 96;
      const size_t rb = row_bytes(dtype, K);
      const auto plain = random_plain_rows(dtype, N, K, rng);
      std::vector<uint8_t> grouped(plain.size()), row(rb);
      interleave_rows(dtype, N, K, plain.data(), grouped.data());
      if (N >= 16) {
        EXPECT_NE(grouped, plain) << "complete groups are interleaved";
      }
      for (int n = 0; n < N; ++n) {
        extract_row(dtype, grouped.data(), N, K, n, row.data());
        ASSERT_TRUE(std::equal(row.begin(), row.end(), plain.begin() + n * rb))
            << dtype_name(dtype) << " N " << N << " n " << n;
      }
      // The q8_0 layout's first chunk: row r's first 4 quants after the group's 16 scales.
      if (dtype == DType::q8_0 && N >= 16) {
        for (int r = 0; r < 16; ++r) ASSERT_EQ(grouped[32 + 4 * r + 1], plain[r * rb + 2 + 1]);
      }
    }
}

// q4_1, q5_0, q5_1, iq4_nl, q4_k, q5_k and q6_k hold Q4_1's, Q5_0's, Q5_1's, IQ4_NL's, Q4_K's,
// Q5_K's and Q6_K's values exactly: a file's rows, repacked into row groups and extracted again,
// dequantize to ggml's values bit for bit, in 5, 5.5, 6, 4.5, 4.625, 5.625 and 6.5625 bits a
// weight.
TEST(QuantBlocks, GgufRepackIsLossless) {
  EXPECT_EQ(row_bytes(DType::q4_1, kQuantBlock) * 8, 5 * kQuantBlock);
  EXPECT_EQ(row_bytes(DType::q5_0, kQuantBlock) * 8, 5.5 * kQuantBlock);
  EXPECT_EQ(row_bytes(DType::q5_1, kQuantBlock) * 8, 6 * kQuantBlock);
  EXPECT_EQ(row_bytes(DType::iq4_nl, kQuantBlock) * 8, 4.5 * kQuantBlock);
  EXPECT_EQ(row_bytes(DType::q4_k, kSuperBlock) * 8, 4.625 * kSuperBlock);
  EXPECT_EQ(row_bytes(DType::q5_k, kSuperBlock) * 8, 5.625 * kSuperBlock);
  EXPECT_EQ(row_bytes(DType::q6_k, kSuperBlock) * 8, 6.5625 * kSuperBlock);
  std::mt19937 rng(5);
  for (DType dtype : kQuantDtypes) {
    if (!from_gguf(dtype)) continue;
    EXPECT_EQ(row_bytes(dtype, 768), io::ggml_row_bytes(ggml_type(dtype), 768) +
                                         (dtype == DType::q4_k || dtype == DType::q5_k ? 12 : 0))
        << dtype_name(dtype);
    for (int N : {1, 16, 35}) {
      const int K = 768;
      const size_t in_row = io::ggml_row_bytes(ggml_type(dtype), K), rb = row_bytes(dtype, K);
      const auto ggml = random_ggml(ggml_type(dtype), N, K, rng);
      std::vector<uint8_t> plain(N * rb), grouped(N * rb), row(rb);
      for (int n = 0; n < N; ++n) from_ggml(dtype, &ggml[n * in_row], K, &plain[n * rb]);
      interleave_rows(dtype, N, K, plain.data(), grouped.data());
      std::vector<float> want(K), got(K);
      for (int n = 0; n < N; ++n) {
        io::dequantize_row(ggml_type(dtype), &ggml[n * in_row], K, want.data());
        extract_row(dtype, grouped.data(), N, K, n, row.data());
        dequantize_row(dtype, row.data(), K, got.data());
        ASSERT_EQ(std::memcmp(got.data(), want.data(), K * sizeof(float)), 0)
            << dtype_name(dtype) << " N " << N << " n " << n;
      }
    }
  }
}

struct QuantActivations {
  std::vector<int8_t> q;
  std::vector<float> d;
  std::vector<int32_t> sum;
};

QuantActivations random_activations(int T, int K, int misalign, std::mt19937& rng) {
  auto x = random_values(size_t(T) * K, rng, 2.0f);
  const size_t nb = size_t(T) * K / 32;
  QuantActivations a{std::vector<int8_t>(misalign + size_t(T) * K), std::vector<float>(1 + nb),
                     std::vector<int32_t>(1 + nb)};
  for (int t = 0; t < T; ++t)
    quantize_activations(&x[size_t(t) * K], K, &a.q[misalign + size_t(t) * K],
                         &a.d[1 + size_t(t) * K / 32], &a.sum[1 + size_t(t) * K / 32]);
  return a;
}

TEST(QuantizeActivations, KernelsMatchTheReferenceBitForBit) {
  std::mt19937 rng(11);
  const int K = 8 * 32;
  auto x = random_values(K, rng, 3.0f);
  for (int i = 0; i < 32; ++i) {
    x[32 + i] = 0;                             // an all-zero block: scale 0, quants 0
    x[64 + i] = i == 5 ? -127.0f : i - 15.5f;  // quants at exact halves: ties round to even
    x[96 + i] = i == 0 ? 1e30f : 1e-30f;       // extreme range inside one block
  }
  std::vector<int8_t> want_q(K), got_q(K);
  std::vector<float> want_d(K / 32), got_d(K / 32);
  std::vector<int32_t> want_s(K / 32), got_s(K / 32);
  quantize_activations(x.data(), K, want_q.data(), want_d.data(), want_s.data());
  EXPECT_EQ(want_q[64 + 0], -16) << "-15.5 rounds to even";
  EXPECT_EQ(want_q[64 + 1], -14) << "-14.5 rounds to even";
  for (const ops::KernelTable* kt : quant_tables()) {
    kt->quantize_x(x.data(), K, got_q.data(), got_d.data(), got_s.data());
    EXPECT_EQ(got_q, want_q) << kt->name;
    EXPECT_EQ(got_d, want_d) << kt->name;
    EXPECT_EQ(got_s, want_s) << kt->name;
  }
}

// The magnitudes of a plain row's parts the kernels sum: |value|, for q4_1, q5_1, q4_k and q5_k
// |d (sc) q| + |m| or |dmin m| (the two products are summed apart, so their rounding is relative to
// each).
void weight_magnitudes(DType dtype, const uint8_t* row, int K, float* out) {
  dequantize_row(dtype, row, K, out);
  const bool k4 = dtype == DType::q4_k || dtype == DType::q5_k;
  if (!k4 && dtype != DType::q4_1 && dtype != DType::q5_1) {
    for (int k = 0; k < K; ++k) out[k] = std::abs(out[k]);
    return;
  }
  std::vector<uint8_t> positive(row, row + row_bytes(dtype, K));
  const size_t unit = row_bytes(dtype, k4 ? kSuperBlock : kQuantBlock);
  for (size_t u = 0; u < positive.size(); u += unit) {
    positive[u + 1] &= 0x7f;          // |d|: the f16's sign bit
    if (k4) positive[u + 3] |= 0x80;  // -|dmin|
    else positive[u + 3] &= 0x7f;     // |m|
  }
  dequantize_row(dtype, positive.data(), K, out);
}

TEST(QuantMatmulKernel, MatchesReferenceAtOddAndRealSizes) {
  const float eps = std::numeric_limits<float>::epsilon();
  std::mt19937 rng(42);
  for (const ops::KernelTable* kt : quant_tables()) {
    for (DType dtype : kQuantDtypes) {
      const auto sizes = k_quant(dtype) ? std::vector<int>{256, 512, 2816, 3072}
                                        : std::vector<int>{32, 64, 96, 160, 1024, 3072};
      for (int K : sizes) {
        for (int T = 1; T <= 13; ++T) {
          // A sub-range of rows, sentinels around it: part of a 16-row group, and a plain tail row.
          const int N = 19, n0 = 3, n1 = 17, ldy = N + 4;
          const int misalign = (K / 32 + T) % 3;  // byte offsets off any alignment
          QuantWeights w = random_quant_weights(dtype, N, K, misalign, rng);
          QuantActivations x = random_activations(T, K, misalign, rng);
          const float sentinel = -12345.0f;
          std::vector<float> want(size_t(T) * ldy, sentinel), got(size_t(T) * ldy, sentinel);
          const int8_t* xq = x.q.data() + misalign;
          const float* xd = x.d.data() + 1;
          const int32_t* xs = x.sum.data() + 1;
          ops::quant_matmul(ops::reference_kernels(), dtype)(xq, xd, xs, T, K, w.data(), N, n0, n1,
                                                             want.data(), ldy);
          ops::quant_matmul(*kt, dtype)(xq, xd, xs, T, K, w.data(), N, n0, n1, got.data(), ldy);
          const size_t rb = row_bytes(dtype, K);
          std::vector<float> wrow(K), wabs(K);
          std::vector<uint8_t> blocks(rb);
          for (int t = 0; t < T; ++t)
            for (int n = 0; n < ldy; ++n) {
              const size_t i = size_t(t) * ldy + n;
              if (n < n0 || n >= n1) {
                ASSERT_EQ(got[i], sentinel)
                    << kt->name << " wrote outside its rows at t=" << t << " n=" << n;
                continue;
              }
              // Block sums are exact integers; only the float sum over K / 32 scaled blocks (q4_1,
              // q5_1, q4_k, q5_k: two terms each) and the lanes rounds, so both results are within
              // 2 (K / 32 + 16) eps sum|x_k w_k| of the dequantized row times x (w_k's parts
              // apart for those), and of each other.
              extract_row(dtype, w.data(), N, K, n, blocks.data());
              dequantize_row(dtype, blocks.data(), K, wrow.data());
              weight_magnitudes(dtype, blocks.data(), K, wabs.data());
              double dot = 0;
              float sum_abs = 0;
              for (int k = 0; k < K; ++k) {
                const float xk = xq[size_t(t) * K + k] * xd[(size_t(t) * K + k) / 32];
                dot += double(xk) * wrow[k];
                sum_abs += std::abs(xk) * wabs[k];
              }
              const float tol = 2 * (K / 32 + 16) * eps * sum_abs;
              ASSERT_NEAR(want[i], dot, tol) << "reference, dtype " << dtype_name(dtype) << ", K "
                                             << K << ", t " << t << ", n " << n;
              ASSERT_NEAR(got[i], want[i], tol)
                  << "op matmul, isa " << kt->name << ", dtype " << dtype_name(dtype) << ", K " << K
                  << ", T " << T << ", t " << t << ", n " << n;
            }
        }
      }
    }
  }
}

// Rows whose every weight is its type's largest magnitude operand (q4: nibble 15, q5: 31, q6: -32,
// q8 and iq4_nl: -127): with activations all +-127, the kernels' integer sums reach their largest
// values, where 16-bit partial sums would saturate if a kernel kept too many of them.
std::vector<uint8_t> extreme_plain_rows(DType dtype, int N, int K, std::mt19937& rng) {
  if (!from_gguf(dtype)) {
    std::vector<uint8_t> plain(N * row_bytes(dtype, K));
    const int bytes = dtype == DType::q8_0 ? kQ8Bytes : kQ4Bytes;
    for (size_t b = 0; b < plain.size(); b += bytes) {
      put_f16(&plain[b], 1e-3f);
      std::memset(&plain[b + 2], dtype == DType::q8_0 ? 0x81 : 0xff, bytes - 2);
    }
    return plain;
  }
  auto ggml = random_ggml(ggml_type(dtype), N, K, rng);
  const io::GgmlTypeInfo& info = io::ggml_type_info(ggml_type(dtype));
  // where the quants start: after the f16 d (Q5_0, IQ4_NL), d and m (Q4_1, Q5_1), or Q4_K's and
  // Q5_K's scales
  const int quants = dtype == DType::q5_0 || dtype == DType::iq4_nl ? 2 : k_quant(dtype) ? 16 : 4;
  for (size_t b = 0; b < ggml.size(); b += info.block_bytes)
    if (dtype == DType::q6_k) std::memset(&ggml[b], 0, 128 + 64);  // ql, qh: q = 0, less 32
    else if (dtype == DType::iq4_nl) std::memset(&ggml[b + quants], 0, 16);  // level -127
    else std::memset(&ggml[b + quants], 0xff, info.block_bytes - quants);    // all bits set
  std::vector<uint8_t> plain(N * row_bytes(dtype, K));
  for (int n = 0; n < N; ++n)
    from_ggml(dtype, &ggml[n * io::ggml_row_bytes(ggml_type(dtype), K)], K,
              &plain[n * row_bytes(dtype, K)]);
  return plain;
}

TEST(QuantMatmulKernel, IntegerSumsDoNotSaturateAtExtremes) {
  std::mt19937 rng(9);
  const int N = 16, T = 13, K = 512;  // T: two 6-token tiles and a single token
  std::vector<float> x(size_t(T) * K);
  for (int t = 0; t < T; ++t)
    std::fill_n(&x[size_t(t) * K], K, t % 2 ? -1.0f : 1.0f);  // quantized to +-127
  QuantActivations a{std::vector<int8_t>(x.size()), std::vector<float>(x.size() / 32),
                     std::vector<int32_t>(x.size() / 32)};
  for (int t = 0; t < T; ++t)
    quantize_activations(&x[size_t(t) * K], K, &a.q[size_t(t) * K], &a.d[size_t(t) * K / 32],
                         &a.sum[size_t(t) * K / 32]);
  ASSERT_EQ(a.q[K], -127);
  for (DType dtype : kQuantDtypes) {
    std::vector<uint8_t> w(N * row_bytes(dtype, K));
    interleave_rows(dtype, N, K, extreme_plain_rows(dtype, N, K, rng).data(), w.data());
    std::vector<float> want(size_t(T) * N), got(size_t(T) * N), row(K);
    ops::quant_matmul(ops::reference_kernels(), dtype)(a.q.data(), a.d.data(), a.sum.data(), T, K,
                                                       w.data(), N, 0, N, want.data(), N);
    for (const ops::KernelTable* kt : quant_tables()) {
      ops::quant_matmul(*kt, dtype)(a.q.data(), a.d.data(), a.sum.data(), T, K, w.data(), N, 0, N,
                                    got.data(), N);
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-5f * std::abs(want[i]))
            << kt->name << ", dtype " << dtype_name(dtype) << ", t " << i / N << ", n " << i % N;
    }
  }
}

TEST(QuantMatmulKernel, RowResultsDoNotDependOnBatchOrRange) {
  std::mt19937 rng(7);
  // Two row groups and a plain tail of 5 rows; T spans two token blocks of 64 and a partial tile.
  const int N = 37, T = 75;
  for (const ops::KernelTable* kt : quant_tables()) {
    for (DType dtype : kQuantDtypes) {
      const int K = k_quant(dtype) ? 1280 : 1024 + 32;
      QuantWeights w = random_quant_weights(dtype, N, K, 0, rng);
      QuantActivations x = random_activations(T, K, 0, rng);
      const float* xd = x.d.data() + 1;
      const int32_t* xs = x.sum.data() + 1;
      std::vector<float> all(size_t(T) * N), one(N);
      ops::quant_matmul(*kt, dtype)(x.q.data(), xd, xs, T, K, w.data(), N, 0, N, all.data(), N);
      for (int t = 0; t < T; ++t) {
        // Alone, and split into odd row ranges that cut groups and the tail.
        for (auto [n0, n1] : {std::pair{0, 5}, {5, 20}, {20, 34}, {34, N}})
          ops::quant_matmul(*kt, dtype)(&x.q[size_t(t) * K], xd + t * K / 32, xs + t * K / 32, 1, K,
                                        w.data(), N, n0, n1, one.data(), N);
        for (int n = 0; n < N; ++n)
          ASSERT_EQ(one[n], all[size_t(t) * N + n])
              << kt->name << " " << dtype_name(dtype) << " t=" << t << " n=" << n;
      }
    }
  }
}

}  // namespace
}  // namespace qwen3
