// Products with bf16 weights on AMX tiles (Intel Sapphire Rapids and later): one TDPBF16PS
// multiplies a 16 x 32 block of W by 32 x 16 of x into 16 x 16 float sums, 8192 multiply-adds, 16
// times those of an AVX-512 FMA per cycle.
//
// A tile is W's rows as they lie in memory (16 rows of 32 bf16, the row stride apart); B is x,
// prepared once per product as column tiles: for each chunk of 32 elements, 16 rows of k pairs
// by 16 columns. A column is one token, or, for exact f32 activations, one of three parts of a
// token: x split into bf16 hi + mid + lo, whose sum is x exactly (each part is what rounding
// leaves of the one before), so the products are exact and only the f32 sums round, as in the
// FMA kernels. A column's sums depend on its own x and W row alone, chunk after chunk, never on
// the tile it sits in: batching, threading and prompt length change no result. Exact mode then
// adds a token's three columns in one fixed order.
#include "cpu/target.h"  // first: see there
QWEN3_TARGET_AMX

#include "cpu/avx512/avx512.h"

namespace qwen3::cpu {

namespace {

constexpr int kChunk = 32;                            // bf16 elements of K per tile row
constexpr int kTile = 16;                             // rows and columns of a tile
constexpr size_t kTileElems = kTile * kChunk;         // bf16 elements of one A or B tile (1 KiB)
constexpr size_t kTokenBlockBytes = size_t(3) << 19;  // x's column tiles taken per pass over W

int chunks_of(int K) { return (K + kChunk - 1) / kChunk; }

// Tokens per column tile with Parts columns each: 5 for exact activations (a spare column), 16
// rounded.
template <int Parts>
constexpr int tile_tokens() {
  return kTile / Parts;
}

template <int Parts>
size_t column_tiles(int T) {
  return (T + tile_tokens<Parts>() - 1) / tile_tokens<Parts>();
}

// The tiles' shapes, loaded once per thread (the OS keeps them across switches): tmm0-3 sums,
// tmm4-5 W, tmm6-7 x, all 16 rows of 64 bytes.
void configure_tiles() {
  thread_local bool configured = false;
  if (configured) return;
  struct alignas(64) {
    uint8_t palette = 1, start_row = 0, reserved[14] = {};
    uint16_t colsb[16] = {};
    uint8_t rows[16] = {};
  } config;
  for (int i = 0; i < 8; ++i) config.colsb[i] = 64, config.rows[i] = kTile;
  _tile_loadconfig(&config);
  configured = true;
}

// x rows [t0, t1) as column tiles [tile][chunk][16 k pairs][16 columns][2 bf16]; column
// (t % tile_tokens) * Parts + p of tile t / tile_tokens holds part p of token t.
template <int Parts>
void prepare_x(const float* x, int T, int K, int t0, int t1, float* out) {
  (void)T;
  auto* o = reinterpret_cast<int32_t*>(out);  // pairs
  const int chunks = chunks_of(K);
  const __m512i rows =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(kTile));
  for (int t = t0; t < t1; ++t) {
    const float* src = x + size_t(t) * K;
    const int column = t % tile_tokens<Parts>() * Parts;
    int32_t* tile = o + size_t(t / tile_tokens<Parts>()) * chunks * kTileElems / 2;
    for (int c = 0; c < chunks; ++c) {
      const int k = c * kChunk;
      __m512 lo, hi;
      load_up_to_32(src + k, std::min(kChunk, K - k), lo, hi);
      for (int p = 0; p < Parts; ++p) {
        const __m512i part =
            (__m512i)_mm512_cvtne2ps_pbh(hi, lo);  // to nearest even, in order of k
        _mm512_i32scatter_epi32(tile + size_t(c) * kTileElems / 2 + column + p, rows, part, 4);
        if (p + 1 < Parts) {  // what rounding left: exact (Sterbenz), the next part's input
          auto widen = [](__m256i h) {
            return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
          };
          lo = _mm512_sub_ps(lo, widen(_mm512_castsi512_si256(part)));
          hi = _mm512_sub_ps(hi, widen(_mm512_extracti64x4_epi64(part, 1)));
        }
      }
    }
  }
}

template <int Parts>
size_t prepared_floats(int T, int K) {
  const size_t amx = column_tiles<Parts>(T) * chunks_of(K) * kTileElems / 2;
  return std::max(
      amx, ops::avx512_kernels().prepared_floats(T, K));  // the f32 / f16 weights' layout too
}

// NA bands of 16 W rows (a0, a1: chunk ch at + ch * a_step, each row `lda` bytes on) by NB column
// tiles (b0, b1) over all chunks; the 16 x 16 sums of band a and tile b go to c + (a * NB + b) *
// 256. `next` (when not null) is fetched into L2 along the way, `next_bytes` of it: the rows that
// stream in after these.
template <int NA, int NB>
void tile_products(const uint16_t* a0, const uint16_t* a1, size_t a_step, size_t lda,
                   const uint16_t* b0, const uint16_t* b1, int chunks, const char* next,
                   size_t next_bytes, float* c) {
  _tile_zero(0);
  if constexpr (NB == 2) _tile_zero(1);
  if constexpr (NA == 2) _tile_zero(2);
  if constexpr (NA == 2 && NB == 2) _tile_zero(3);
  const size_t step = next ? (next_bytes / chunks + 63) / 64 * 64 : 0;  // whole lines per chunk
  for (int ch = 0; ch < chunks; ++ch) {
    for (size_t at = ch * step, end = std::min(next_bytes, at + step); at < end; at += 64)
      _mm_prefetch(next + at, _MM_HINT_T1);
    _tile_loadd(4, a0 + ch * a_step, lda);
    if constexpr (NA == 2) _tile_loadd(5, a1 + ch * a_step, lda);
    _tile_loadd(6, b0 + ch * kTileElems, 64);
    if constexpr (NB == 2) _tile_loadd(7, b1 + ch * kTileElems, 64);
    _tile_dpbf16ps(0, 4, 6);
    if constexpr (NB == 2) _tile_dpbf16ps(1, 4, 7);
    if constexpr (NA == 2) _tile_dpbf16ps(2, 5, 6);
    if constexpr (NA == 2 && NB == 2) _tile_dpbf16ps(3, 5, 7);
  }
  constexpr int kSums = kTile * kTile;
  _tile_stored(0, c, 64);
  if constexpr (NB == 2) _tile_stored(1, c + kSums, 64);
  if constexpr (NA == 2) _tile_stored(2, c + NB * kSums, 64);
  if constexpr (NA == 2 && NB == 2) _tile_stored(3, c + 3 * kSums, 64);
}

// Decode's single column tile b against four bands of 16 W rows in place (a, `lda` bytes a row):
// four sums in flight, as a TDPBF16PS's latency needs, each band's loaded into one of three A
// tiles in turn. The sums of band a go to c + a * 256; `next` as in tile_products.
void column_products(const uint16_t* a, size_t lda, const uint16_t* b, int chunks, const char* next,
                     size_t next_bytes, float* c) {
  const size_t band = lda / sizeof(uint16_t) * kTile;  // elements from one band to the next
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  const size_t step = (next_bytes / chunks + 63) / 64 * 64;
  for (int ch = 0; ch < chunks; ++ch) {
    for (size_t at = ch * step, end = std::min(next_bytes, at + step); at < end; at += 64)
      _mm_prefetch(next + at, _MM_HINT_T1);
    const uint16_t* w = a + ch * kChunk;
    _tile_loadd(7, b + ch * kTileElems, 64);
    _tile_loadd(4, w, lda);
    _tile_dpbf16ps(0, 4, 7);
    _tile_loadd(5, w + band, lda);
    _tile_dpbf16ps(1, 5, 7);
    _tile_loadd(6, w + 2 * band, lda);
    _tile_dpbf16ps(2, 6, 7);
    _tile_loadd(4, w + 3 * band, lda);
    _tile_dpbf16ps(3, 4, 7);
  }
  _tile_stored(0, c, 64);
  _tile_stored(1, c + 256, 64);
  _tile_stored(2, c + 512, 64);
  _tile_stored(3, c + 768, 64);
}

// y rows of column tile j's tokens, outputs n + [0, rows), from the tile's sums s [16 rows of W][16
// columns].
template <int Parts>
void store_sums(const float* s, int j, int T, int n, int rows, float* y, int ldy) {
  __m512 v[kTile];
  for (int r = 0; r < kTile; ++r) v[r] = _mm512_loadu_ps(s + r * kTile);
  Avx512::transpose(v);  // v[column]: that column's 16 outputs
  for (int i = 0; i < tile_tokens<Parts>(); ++i) {
    const int t = j * tile_tokens<Parts>() + i;
    if (t >= T) break;
    __m512 sum = v[i * Parts];
    for (int p = 1; p < Parts; ++p) sum = _mm512_add_ps(sum, v[i * Parts + p]);  // (hi + mid) + lo
    _mm512_mask_storeu_ps(y + size_t(t) * ldy + n, _cvtu32_mask16((1u << rows) - 1), sum);
  }
}

// W rows [r0, r0 + rows), rows <= 32, as two bands of A tiles [band][chunk][16 rows][32 bf16],
// zero past the rows and K: tile loads then read whole lines 64 bytes apart, not 16 rows' lines
// a row stride apart (a power of two that crowds them into a few L1 sets).
const uint16_t* pack_bands(const uint16_t* w, int K, int r0, int rows,
                           std::vector<uint16_t>& pack) {
  const int chunks = chunks_of(K);
  pack.resize(2 * size_t(chunks) * kTileElems);
  for (int a = 0; a < 2; ++a)
    for (int ch = 0; ch < chunks; ++ch)
      for (int r = 0; r < kTile; ++r) {
        const int row = a * kTile + r, n = std::min(kChunk, K - ch * kChunk);
        const __m512i v =
            row < rows ? _mm512_maskz_loadu_epi16(_cvtu32_mask32(n == 32 ? ~0u : (1u << n) - 1),
                                                  w + size_t(r0 + row) * K + ch * kChunk)
                       : _mm512_setzero_si512();
        _mm512_storeu_si512(&pack[(size_t(a * chunks + ch) * kTile + r) * kChunk], v);
      }
  return pack.data();
}

// x's column tiles in blocks that stay in L2 while the W rows stream past once per block; each
// pair of 16-row bands meets the block's tiles two at a time. A prompt's bands are packed first;
// decode's single tile reads them in place, fetching the next bands into L2 as it goes.
template <int Parts>
void matmul(const float* xf, int T, int K, const void* wv, int lead, int n0, int n1, float* y,
            int ldy) {
  (void)lead;  // tile loads take any address: no lead
  configure_tiles();
  const auto* x = reinterpret_cast<const uint16_t*>(xf);
  const auto* w = static_cast<const uint16_t*>(wv);
  const int chunks = chunks_of(K), tiles = int(column_tiles<Parts>(T));
  const size_t tile_bytes = size_t(chunks) * kTileElems * sizeof(uint16_t);
  const int block = std::max<int>(2, int(kTokenBlockBytes / tile_bytes));
  thread_local std::vector<uint16_t> pack;
  alignas(64) float sums[4 * kTile * kTile];
  auto b_at = [&](int j) { return x + size_t(j) * chunks * kTileElems; };
  for (int j0 = 0; j0 < tiles; j0 += block) {
    const int j1 = std::min(tiles, j0 + block);
    int n = n0;
    if (j1 - j0 == 1 && K % kChunk == 0)  // decode: four bands at a time, in place
      for (; n + 4 * kTile <= n1; n += 4 * kTile) {
        const size_t lda = size_t(K) * sizeof(uint16_t);
        const uint16_t* a = w + size_t(n) * K;
        const size_t next_bytes = size_t(std::clamp(n1 - n - 4 * kTile, 0, 4 * kTile)) * lda;
        column_products(a, lda, b_at(j0), chunks,
                        reinterpret_cast<const char*>(a + size_t(4 * kTile) * K), next_bytes, sums);
        for (int band = 0; band < 4; ++band)
          store_sums<Parts>(sums + band * kTile * kTile, j0, T, n + band * kTile, kTile, y, ldy);
      }
    for (; n < n1; n += 2 * kTile) {
      const int rows = std::min(2 * kTile, n1 - n), rows1 = std::max(0, rows - kTile);
      const bool in_place = j1 - j0 <= 2 && rows == 2 * kTile && K % kChunk == 0;
      const uint16_t *a0, *a1;
      size_t a_step, lda;
      const char* next = nullptr;
      size_t next_bytes = 0;
      if (in_place) {
        a0 = w + size_t(n) * K, a1 = a0 + size_t(kTile) * K, a_step = kChunk,
        lda = size_t(K) * sizeof(uint16_t);
        next = reinterpret_cast<const char*>(a0 + size_t(2 * kTile) * K);
        next_bytes = size_t(std::clamp(n1 - n - 2 * kTile, 0, 2 * kTile)) * lda;
      } else {
        a0 = pack_bands(w, K, n, rows, pack), a1 = a0 + size_t(chunks) * kTileElems,
        a_step = kTileElems, lda = 64;
      }
      for (int j = j0; j < j1; j += 2) {
        const bool two = j + 1 < j1;
        if (rows1 && two)
          tile_products<2, 2>(a0, a1, a_step, lda, b_at(j), b_at(j + 1), chunks, next, next_bytes,
                              sums);
        else if (rows1)
          tile_products<2, 1>(a0, a1, a_step, lda, b_at(j), nullptr, chunks, next, next_bytes,
                              sums);
        else if (two)
          tile_products<1, 2>(a0, nullptr, a_step, lda, b_at(j), b_at(j + 1), chunks, next,
                              next_bytes, sums);
        else
          tile_products<1, 1>(a0, nullptr, a_step, lda, b_at(j), nullptr, chunks, next, next_bytes,
                              sums);
        const int nb = two ? 2 : 1;
        for (int a = 0; a < (rows1 ? 2 : 1); ++a)
          for (int b = 0; b < nb; ++b)
            store_sums<Parts>(sums + (a * nb + b) * kTile * kTile, j + b, T, n + a * kTile,
                              a ? rows1 : std::min(rows, kTile), y, ldy);
      }
    }
  }
}

int no_lead(const void*, int) { return 0; }

}  // namespace

}  // namespace qwen3::cpu

namespace qwen3::ops {

// Whether the CPU has AMX-BF16 and the OS lets this process use its tile registers (Linux asks
// each process to request them).
bool amx_usable() {
  static const bool usable = [] {
    unsigned a, b, c, d;
    __cpuid_count(7, 0, a, b, c, d);
    constexpr unsigned kAmxBf16 = 1u << 22, kAmxTile = 1u << 24;
    if ((d & (kAmxBf16 | kAmxTile)) != (kAmxBf16 | kAmxTile)) return false;
    constexpr long kRequestPermission = 0x1023,
                   kTileData = 18;  // ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA
    return syscall(SYS_arch_prctl, kRequestPermission, kTileData) == 0;
  }();
  return usable;
}

KernelTable with_amx(KernelTable t, bool exact) {
  t.name = exact ? "amx" : "amx-bf16";
  t.matmul[int(DType::bf16)] = exact ? cpu::matmul<3> : cpu::matmul<1>;
  t.lead[int(DType::bf16)] = cpu::no_lead;
  t.prepare_x[int(DType::bf16)] = exact ? cpu::prepare_x<3> : cpu::prepare_x<1>;
  t.prepared_floats = exact ? cpu::prepared_floats<3> : cpu::prepared_floats<1>;
  return t;
}

}  // namespace qwen3::ops
