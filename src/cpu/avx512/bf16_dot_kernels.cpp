// Products with bf16 weights as AVX512_BF16 dot products, for --activations bf16: x is rounded to
// bf16 (to nearest even) once per product, then each vdpbf16ps multiplies 32 pairs of x and W and
// adds them into 16 float lanes: twice the multiply-adds per instruction of widening W to floats,
// which is what bounds a prompt's products. Every output takes the same steps whatever the tile
// (lane i sums elements 32c + 2i and 32c + 2i + 1 for chunk c = 0, 1, ..., then one fixed
// reduction of the lanes), so batching and threading still change no result. With a lead, W's
// rows are read rotated, as the float kernels read them (simd_kernels.h).
#include "cpu/target.h"  // first: see there
QWEN3_TARGET_AVX512

#include "cpu/avx512/avx512.h"
#include "cpu/simd_kernels.h"

namespace qwen3::cpu {

namespace {

constexpr int kChunk = 32;     // bf16 elements per vector
constexpr int kBatchRows = 8;  // up to this many rows of x (decode, batched decode) go in one tile
constexpr int kMR = 6;         // rows of x per tile for prompts
constexpr int kAheadChunks = 4;  // a prompt tile's x comes from L2: fetched this many chunks ahead
constexpr size_t kBlockBytes = size_t(640)
                               << 10;  // a prompt's block of x, kept in L2 (1 MiB on Zen 4/5)

int chunks_of(int K) { return (K + kChunk - 1) / kChunk; }

// W rows per tile: as the float kernels', but 8 for one row of x. The float kernels' one W row at
// a time (a single stream per core, 1.10x faster for them) made these tiles' decode ~10% slower at
// 2 threads on most runs and no faster at 1; 2 and 4 rows were ~7% slower than 8.
constexpr int nr(int mr) { return mr == 1 ? 8 : Avx512::nr(mr); }

// Rows of x per group of the prepared layout: all of decode's in one, a prompt's in tiles' worth.
int group_rows(int T) { return T <= kBatchRows ? T : kMR; }

// Rows of x per block of a prompt (whole groups): as few blocks as keep each within kBlockBytes,
// of even size, since each block streams all of W from memory once (a 128-token prompt was 120 +
// 8 rows: W read twice).
int block_rows(int T, size_t row_bytes) {
  const int most = std::max(kMR, int(kBlockBytes / row_bytes) / kMR * kMR);
  const int blocks = (T + most - 1) / most;
  return ((T + blocks - 1) / blocks + kMR - 1) / kMR * kMR;
}

// Rows [t0, t1) of x rounded to bf16 as the tiles read them: in groups of group_rows(T) rows,
// each group [chunk][row][32 bf16], the last chunk zero-padded. One register then addresses a
// tile's rows at constant offsets.
void prepare_x(const float* x, int T, int K, int t0, int t1, float* out) {
  const int G = group_rows(T), chunks = chunks_of(K);
  auto* o = reinterpret_cast<uint16_t*>(out);
  for (int t = t0; t < t1; ++t) {
    const int g0 = t - t % G, rows = std::min(G, T - g0);
    const float* src = x + size_t(t) * K;
    for (int c = 0; c < chunks; ++c) {
      const int k = c * kChunk;
      _mm512_storeu_si512(o + (size_t(g0) * chunks + size_t(c) * rows + (t - g0)) * kChunk,
                          bf16_of_up_to_32(src + k, std::min(kChunk, K - k)));
    }
  }
}

// Which part of a W row a chunk holds: 32 elements inside it, chunk 0 of a row rotated by a lead
// (k = -lead), or the last K % 32 (the rest read as zero, as x's padding is).
enum class Span { whole, wrap, tail };

// acc[r][c] += x row r . W row c over the chunk at element k. Inlined: acc stays in registers.
template <int MR, int NR, bool Stream, Span span>
[[gnu::always_inline]] inline void chunk(const uint16_t* xc, const uint16_t* const* wr, int k,
                                         int K, __m512 (&acc)[MR][NR]) {
  __m512i wv[NR];
#pragma GCC unroll 8
  for (int c = 0; c < NR; ++c) {
    const uint16_t* at = wr[c] + k;
    if constexpr (Stream) {  // W from memory, read once: fetch it well ahead
      _mm_prefetch(reinterpret_cast<const char*>(at) + kPrefetchBytes, _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(at) + kL2PrefetchBytes, _MM_HINT_T1);
    }
    if constexpr (span == Span::whole) wv[c] = _mm512_loadu_si512(at);
    else if constexpr (span == Span::wrap)
      wv[c] = _mm512_castps_si512(load_chunk<Avx512, Bf16, true>(wr[c], k, K));
    else wv[c] = _mm512_maskz_loadu_epi16(_cvtu32_mask32((1u << (K - k)) - 1), at);
  }
  if constexpr (!Stream) {  // W is in L1: x, from L2, is the stream (measured 5-10% faster)
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r)
      _mm_prefetch(reinterpret_cast<const char*>(xc + (kAheadChunks * MR + r) * kChunk),
                   _MM_HINT_T0);
  }
  // Unrolled, so that acc stays in registers (rolled, GCC keeps it on the stack: 40% slower).
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    __m512i xv = _mm512_loadu_si512(xc + r * kChunk);
    in_register(xv);  // one load serves the NR products
#pragma GCC unroll 8
    for (int c = 0; c < NR; ++c)
      acc[r][c] = _mm512_dpbf16_ps(acc[r][c], (__m512bh)xv, (__m512bh)wv[c]);
  }
}

// MR rows of x (a group of `rows`, from its first row's chunk 0 at x) against W rows n .. n+NR-1.
template <int MR, int NR, bool Stream>
inline void tile(const uint16_t* x, int rows, int K, const uint16_t* w, int lead, int n, float* y,
                 int ldy) {
  __m512 acc[MR][NR];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 8
    for (int c = 0; c < NR; ++c) acc[r][c] = _mm512_setzero_ps();
  const uint16_t* wr[NR];
  for (int c = 0; c < NR; ++c) wr[c] = w + size_t(n + c) * K;
  if constexpr (Stream) prefetch_next_rows(reinterpret_cast<const char*>(wr[0]), NR, size_t(K) * 2);
  auto x_at = [&](int ch) { return x + size_t(ch) * rows * kChunk; };
  const int full = K / kChunk;
  int ch = 0;
  if (lead) chunk<MR, NR, Stream, Span::wrap>(x_at(ch++), wr, -lead, K, acc);
  for (; ch < full; ++ch)
    chunk<MR, NR, Stream, Span::whole>(x_at(ch), wr, ch * kChunk - lead, K, acc);
  if (K % kChunk) chunk<MR, NR, Stream, Span::tail>(x_at(full), wr, full * kChunk, K, acc);
  float sums[MR * NR];
  lane_sums<Avx512>(&acc[0][0], MR * NR, sums);
  for (int r = 0; r < MR; ++r)
    for (int c = 0; c < NR; ++c) y[size_t(r) * ldy + n + c] = sums[r * NR + c];
}

template <int MR, int NR, bool Stream>
void row_group(const uint16_t* x, int rows, int K, const uint16_t* w, int lead, int n0, int n1,
               float* y, int ldy) {
  int n = n0;
  for (; n + NR <= n1; n += NR) tile<MR, NR, Stream>(x, rows, K, w, lead, n, y, ldy);
  for (; n < n1; ++n) tile<MR, 1, Stream>(x, rows, K, w, lead, n, y, ldy);
}

// row_group for a number of rows (1 .. MR) known only at run time.
template <int MR, bool Stream>
void row_group_of(int rows, const uint16_t* x, int K, const uint16_t* w, int lead, int n0, int n1,
                  float* y, int ldy) {
  if constexpr (MR > 0) {
    if (rows == MR) return row_group<MR, nr(MR), Stream>(x, rows, K, w, lead, n0, n1, y, ldy);
    row_group_of<MR - 1, Stream>(rows, x, K, w, lead, n0, n1, y, ldy);
  }
}

// tile for a number of rows of x (1 .. MR, a whole group) known only at run time.
template <int MR, int NR, bool Stream>
void tile_of(int rows, const uint16_t* x, int K, const uint16_t* w, int lead, int n, float* y,
             int ldy) {
  if constexpr (MR > 0) {
    if (rows < MR) return tile_of<MR - 1, NR, Stream>(rows, x, K, w, lead, n, y, ldy);
    tile<MR, NR, Stream>(x, MR, K, w, lead, n, y, ldy);
  }
}

// Decode's rows in one tile, W streaming past once. A prompt's rows in blocks that stay in L2,
// W in tiles of NR rows that each block's groups of x meet in turn: the first group streams the
// W rows from memory (prefetching ahead), the others find them in L1.
void matmul(const float* xf, int T, int K, const void* wv, int lead, int n0, int n1, float* y,
            int ldy) {
  const auto* x = reinterpret_cast<const uint16_t*>(xf);
  const auto* w = static_cast<const uint16_t*>(wv);
  const size_t row = size_t(chunks_of(K)) * kChunk;  // bf16 elements of one prepared row
  if (T <= kBatchRows) return row_group_of<kBatchRows, true>(T, x, K, w, lead, n0, n1, y, ldy);
  constexpr int NR = nr(kMR);
  const int block = block_rows(T, row * sizeof(uint16_t));
  for (int t0 = 0; t0 < T; t0 += block) {
    const int t1 = std::min(T, t0 + block);
    int n = n0;
    for (; n + NR <= n1; n += NR) {
      tile_of<kMR, NR, true>(std::min(kMR, t1 - t0), x + t0 * row, K, w, lead, n,
                             y + size_t(t0) * ldy, ldy);
      for (int t = t0 + kMR; t < t1; t += kMR)
        tile_of<kMR, NR, false>(std::min(kMR, t1 - t), x + t * row, K, w, lead, n,
                                y + size_t(t) * ldy, ldy);
    }
    for (int t = t0; t < t1; t += kMR)  // the last W rows, fewer than NR
      row_group_of<kMR, false>(std::min(kMR, t1 - t), x + t * row, K, w, lead, n, n1,
                               y + size_t(t) * ldy, ldy);
  }
}

}  // namespace

}  // namespace qwen3::cpu

namespace qwen3::ops {

KernelTable with_avx512_bf16_dot(KernelTable t) {
  t.name = "avx512-bf16";
  t.matmul[int(DType::bf16)] = cpu::matmul;
  t.lead[int(DType::bf16)] = cpu::lead_for<cpu::Avx512, cpu::Bf16>;  // the same 64-byte chunks
  t.prepare_x[int(DType::bf16)] = cpu::prepare_x;
  return t;
}

}  // namespace qwen3::ops
