// BF16 dense products on Intel AMX tiles (Bf16Kernel::kAmx), compiled for
// AMX-TILE/AMX-BF16 + AVX-512 and reached only through dispatch.cc when
// cpu_features().amx_bf16 (the CPU has the tiles and the kernel granted this
// process the tile state, arch_prctl ARCH_REQ_XCOMP_PERM).
//
// Exactness: the activations are split into three bf16 parts x = h + m + l
// (each part the bf16 rounding of what the previous ones left; the remainder after
// three parts is below 2^-24 |x|, fp32's own rounding), as in the split3 kernel.
// A product of two bf16 values is exact in fp32, so the only rounding is the fp32
// accumulation, as on the widening path; only the summation order differs.
// (AMX and the bf16 conversion flush denormals: parts below 2^-126 are dropped.)
//
// Layout: C = W · Xᵀ tile by tile. A tiles are 16 weight rows x 32 bf16 columns
// read straight from W (row stride 2 K bytes); B tiles hold 32 columns of 16
// activation rows in the pair-interleaved (VNNI) order tdpbf16ps wants:
// B[kk][2 t + e] = x_t[32 kb + 2 kk + e]. Each (token block, column block) has its
// three parts' B tiles next to each other (3 KiB). Per step of 32 columns: 2 A
// loads (32 weight rows), 6 B loads (2 token blocks x 3 parts), 12 tdpbf16ps into
// 4 accumulators (2 x 2 blocks of 16 x 16).
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "ops/gptq_pack.h"
#include "ops/matmul_table.h"

// GCC 12 warns that the conversion intrinsics' undefined pass-through vector may be
// used uninitialized: a false positive in its own headers.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace qinfer::ops::detail {
namespace {

constexpr int kParts = 3;
constexpr int64_t kTileBytes = 1024;                 // 16 rows x 64 bytes
constexpr int64_t kTileElems = kTileBytes / 2;       // bf16 values per tile
constexpr int64_t kStepElems = kParts * kTileElems;  // one (token block, column block)

struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

void load_config() {
  TileConfig c;
  for (int i = 0; i < 8; ++i) {
    c.colsb[i] = 64;
    c.rows[i] = 16;
  }
  _tile_loadconfig(&c);
}

// Rows 16 * a .. of the output block: 1 or 2 weight blocks (MB) x 1 or 2 token
// blocks (NB). w: the first weight row; x: the token block's first step.
template <int MB, int NB>
void amx_block(const uint16_t* w, int64_t K, const uint16_t* x, int64_t nkb, float* c /* [4][16][16] */) {
  _tile_zero(0);
  if (NB > 1) _tile_zero(1);
  if (MB > 1) _tile_zero(2);
  if (MB > 1 && NB > 1) _tile_zero(3);
  const int64_t lda = K * 2, tb_stride = nkb * kStepElems;
  for (int64_t kb = 0; kb < nkb; ++kb) {
    _tile_loadd(4, w + kb * 32, lda);
    if (MB > 1) _tile_loadd(5, w + 16 * K + kb * 32, lda);
    const uint16_t* b = x + kb * kStepElems;
    for (int p = 0; p < kParts; ++p) {
      _tile_loadd(6, b + p * kTileElems, 64);
      if (NB > 1) _tile_loadd(7, b + tb_stride + p * kTileElems, 64);
      _tile_dpbf16ps(0, 4, 6);
      if (NB > 1) _tile_dpbf16ps(1, 4, 7);
      if (MB > 1) _tile_dpbf16ps(2, 5, 6);
      if (MB > 1 && NB > 1) _tile_dpbf16ps(3, 5, 7);
    }
  }
  _tile_stored(0, c, 64);
  if (NB > 1) _tile_stored(1, c + 256, 64);
  if (MB > 1) _tile_stored(2, c + 512, 64);
  if (MB > 1 && NB > 1) _tile_stored(3, c + 768, 64);
}

// Y[t][r + i] = c[..][i][t] for the tokens that exist.
void scatter(const float* c, int mb, int nb, int64_t rows_here, int64_t t0, int64_t n, float* Y, int64_t ldy,
             int64_t r) {
  for (int a = 0; a < mb; ++a)
    for (int b = 0; b < nb; ++b) {
      const float* blk = c + (2 * a + b) * 256;
      for (int64_t t = 0; t < 16 && t0 + 16 * b + t < n; ++t) {
        float* y = Y + (t0 + 16 * b + t) * ldy + r + 16 * a;
        const int64_t m = std::min<int64_t>(16, rows_here - 16 * a);
        for (int64_t i = 0; i < m; ++i) y[i] = blk[i * 16 + t];
      }
    }
}

// 16 fp32 values as three bf16 parts (each the rounding of what the previous left).
inline void split3(__m512 v, __m256i part[kParts]) {
  for (int p = 0; p < kParts; ++p) {
    part[p] = reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(v));
    v = _mm512_sub_ps(v, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(part[p]), 16)));
  }
}

}  // namespace

int64_t amx_bf16_input_elems(int64_t n, int64_t k) { return (n + 15) / 16 * (k / 32) * kStepElems; }

AmxBf16Input amx_bf16_input_view(int64_t n, int64_t k, uint16_t* mem) { return {n, k, (n + 15) / 16, k / 32, mem}; }

// Token blocks [tb0, tb1) of X [n][k] into in's tiles.
void pack_amx_bf16_blocks(const float* X, const AmxBf16Input& in, int64_t tb0, int64_t tb1) {
  uint16_t* mem = in.tiles;
  const int64_t k = in.k, n = in.n;
  std::memset(mem + tb0 * in.nkb * kStepElems, 0, (tb1 - tb0) * in.nkb * kStepElems * sizeof(uint16_t));
  // Dword kk of a token's 32 values goes to tile row kk (16 dwords per row).
  const __m512i rows = _mm512_set_epi32(240, 224, 208, 192, 176, 160, 144, 128, 112, 96, 80, 64, 48, 32, 16, 0);
  for (int64_t t = tb0 * 16; t < std::min(n, tb1 * 16); ++t) {
    const float* x = X + t * k;
    for (int64_t kb = 0; kb < in.nkb; ++kb) {
      uint16_t* step = mem + ((t / 16) * in.nkb + kb) * kStepElems;
      __m256i lo[kParts], hi[kParts];
      split3(_mm512_loadu_ps(x + 32 * kb), lo);
      split3(_mm512_loadu_ps(x + 32 * kb + 16), hi);
      for (int p = 0; p < kParts; ++p) {
        const __m512i hv = _mm512_inserti64x4(_mm512_castsi256_si512(lo[p]), hi[p], 1);  // 32 bf16 in order
        _mm512_i32scatter_epi32(reinterpret_cast<int32_t*>(step + p * kTileElems) + (t % 16), rows, hv, 4);
      }
    }
  }
}

void amx_bf16_rows(const DenseMatrix& W, const AmxBf16Input& X, float* Y, int64_t r0, int64_t r1) {
  const uint16_t* w = static_cast<const uint16_t*>(W.weights());
  const int64_t K = W.cols, ldy = W.rows, nkb = X.nkb;
  load_config();
  alignas(64) float c[4 * 256];
  // Token blocks in chunks whose B tiles (3 parts) fit in about 1 MiB of L2; every
  // weight row pair of [r0, r1) runs against a chunk before the next one.
  const int64_t chunk = std::max<int64_t>(2, std::min<int64_t>(X.ntb, (int64_t{1} << 20) / (nkb * kParts * kTileBytes)) / 2 * 2);
  std::vector<uint16_t> pad;  // a last block of fewer than 16 rows, zero padded
  for (int64_t tc = 0; tc < X.ntb; tc += chunk) {
    const int64_t tend = std::min(X.ntb, tc + chunk);
    for (int64_t r = r0; r < r1; r += 32) {
      const int64_t rows_here = std::min<int64_t>(32, r1 - r);
      const uint16_t* wr = w + r * K;
      if (rows_here < 16 || (rows_here > 16 && rows_here < 32)) {  // copy the rows into a 32-row zeroed block
        pad.assign(32 * K, 0);
        std::memcpy(pad.data(), wr, rows_here * K * sizeof(uint16_t));
        wr = pad.data();
      }
      const bool two_w = rows_here > 16;
      for (int64_t tb = tc; tb < tend; tb += 2) {
        const uint16_t* x = X.tiles + tb * nkb * kStepElems;
        const bool two_t = tb + 1 < tend;
        if (two_w && two_t) amx_block<2, 2>(wr, K, x, nkb, c);
        else if (two_w) amx_block<2, 1>(wr, K, x, nkb, c);
        else if (two_t) amx_block<1, 2>(wr, K, x, nkb, c);
        else amx_block<1, 1>(wr, K, x, nkb, c);
        scatter(c, two_w ? 2 : 1, two_t ? 2 : 1, rows_here, tb * 16, X.n, Y, ldy, r);
      }
    }
  }
  _tile_release();
}

// ---- GPTQ int4 prefill panels (uniform zero point): Y = Σ_blocks s_b ⊙ (X · (q - z)_bᵀ) ----
//
// Each 32-column block of a 16-row tile is one tdpbf16ps step: the codes minus
// the zero point (-15..15) are exact in bf16, the activations are three bf16
// parts, so the block's partial sums C_b[token][row] are fp32 sums of exact
// products; they are scaled by the block's group scales (one vector of 16 rows)
// and added in fp32, as the widening path adds s (q - z) x. Roles: A = 16
// activation rows x 32 columns (row-major parts, no interleaving), B = the tile's
// codes in the pair-interleaved order, built once per tile for all token blocks.
// Two C tiles alternate so the tiles compute block b + 1 while the vector unit
// scales block b.

int64_t amx_q4_input_elems(int64_t n, int64_t kp) { return kParts * ((n + 15) / 16 * 16) * kp; }

AmxQ4Input amx_q4_input_view(int64_t n, int64_t kp, uint16_t* mem) { return {n, kp, (n + 15) / 16 * 16, mem}; }

void pack_amx_q4_rows(const float* Xp, const AmxQ4Input& in, int64_t j0, int64_t j1) {
  const int64_t kp = in.kp, plane = in.np * kp;
  for (int64_t j = j0; j < j1; ++j) {
    uint16_t* d = in.parts + j * kp;
    if (j >= in.n) {
      for (int p = 0; p < kParts; ++p) std::memset(d + p * plane, 0, kp * sizeof(uint16_t));
      continue;
    }
    const float* x = Xp + j * kp;
    for (int64_t k = 0; k < kp; k += 16) {  // kp is a multiple of 32
      __m256i part[kParts];
      split3(_mm512_loadu_ps(x + k), part);
      for (int p = 0; p < kParts; ++p) _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + p * plane + k), part[p]);
    }
  }
}

namespace {

// The tile's codes as B tiles, one per block: row 4c + m holds, for each of the 16
// weight rows l, the pair of columns 8c + 2m', 8c + 2m' + 1 (m' = m & 1, low
// nibbles for m < 2, high for m >= 2) as bf16 (q - z): bytes 4l + 2m' + e of the
// block's chunk c (ops/gptq_pack.h).
void build_b_tiles(const uint8_t* codes, int64_t nb, const __m512i table, uint16_t* bbuf) {
  alignas(64) uint8_t idx[2][64];
  for (int odd = 0; odd < 2; ++odd)
    for (int w = 0; w < 32; ++w) {
      idx[odd][2 * w] = static_cast<uint8_t>(4 * (w >> 1) + 2 * odd + (w & 1));
      idx[odd][2 * w + 1] = 0;
    }
  const __m512i ix0 = _mm512_load_si512(idx[0]), ix1 = _mm512_load_si512(idx[1]);
  const __mmask64 even = 0x5555555555555555ull;
  const __m512i nib = _mm512_set1_epi8(0x0f);
  for (int64_t b = 0; b < nb; ++b)
    for (int c = 0; c < 4; ++c) {
      const __m512i v = _mm512_loadu_si512(codes + b * GptqMatrix::kTileBlockBytes + 64 * c);
      const __m512i lo = _mm512_and_si512(v, nib), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), nib);
      uint16_t* row = bbuf + (b * 16 + 4 * c) * 32;
      _mm512_storeu_si512(row, _mm512_permutexvar_epi16(_mm512_maskz_permutexvar_epi8(even, ix0, lo), table));
      _mm512_storeu_si512(row + 32, _mm512_permutexvar_epi16(_mm512_maskz_permutexvar_epi8(even, ix1, lo), table));
      _mm512_storeu_si512(row + 64, _mm512_permutexvar_epi16(_mm512_maskz_permutexvar_epi8(even, ix0, hi), table));
      _mm512_storeu_si512(row + 96, _mm512_permutexvar_epi16(_mm512_maskz_permutexvar_epi8(even, ix1, hi), table));
    }
}

// C tile CT = Σ parts A_p · B(b): the block's 16 x 16 partial sums.
#define QINFER_AMX_Q4_STEP(CT, BT, b)                      \
  do {                                                     \
    _tile_zero(CT);                                        \
    _tile_loadd(BT, bbuf + (b) * kTileElems, 64);          \
    _tile_loadd(4, a + (b) * 32, lda);                     \
    _tile_dpbf16ps(CT, 4, BT);                             \
    _tile_loadd(5, a + plane + (b) * 32, lda);             \
    _tile_dpbf16ps(CT, 5, BT);                             \
    _tile_loadd(6, a + 2 * plane + (b) * 32, lda);         \
    _tile_dpbf16ps(CT, 6, BT);                             \
  } while (0)

}  // namespace

void amx_gptq_rows(const GptqMatrix& W, const AmxQ4Input& X, float* Y, int64_t r0, int64_t r1) {
  const int64_t nb = W.blocks(), kp = X.kp, lda = kp * 2, plane = X.np * kp, ldy = W.rows();
  load_config();
  alignas(64) uint16_t tbl[32] = {};
  const int z = W.uniform_zero();
  for (int q = 0; q < 16; ++q) tbl[q] = f32_to_bf16(static_cast<float>(q - z));
  const __m512i table = _mm512_load_si512(tbl);
  thread_local std::vector<uint16_t> bstore;
  if (static_cast<int64_t>(bstore.size()) < nb * kTileElems) bstore.resize(nb * kTileElems);
  uint16_t* bbuf = bstore.data();
  alignas(64) float cbuf[2][256];
  const bool half = W.half_scales();
  for (int64_t r = r0; r < r1; r += 16) {
    const int64_t t = r / 16;
    const int nr = static_cast<int>(std::min<int64_t>(16, r1 - r));
    build_b_tiles(W.tile_codes(t), nb, table, bbuf);
    for (int64_t j0 = 0; j0 < X.n; j0 += 16) {
      const uint16_t* a = X.parts + j0 * kp;
      __m512 acc[16];
      for (int i = 0; i < 16; ++i) acc[i] = _mm512_setzero_ps();
      auto scale_add = [&](const float* c, int64_t b) {
        const int64_t g = W.block_group(b);
        const __m512 sv = half ? _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(W.tile_scales_f16(t, g))))
                               : _mm512_loadu_ps(W.tile_scales_f32(t, g));
#pragma GCC unroll 16
        for (int i = 0; i < 16; ++i) acc[i] = _mm512_fmadd_ps(_mm512_load_ps(c + 16 * i), sv, acc[i]);
      };
      QINFER_AMX_Q4_STEP(0, 2, 0);
      for (int64_t b = 0; b < nb; b += 2) {
        if (b + 1 < nb) QINFER_AMX_Q4_STEP(1, 3, b + 1);
        _tile_stored(0, cbuf[0], 64);
        scale_add(cbuf[0], b);
        if (b + 1 < nb) {
          if (b + 2 < nb) QINFER_AMX_Q4_STEP(0, 2, b + 2);
          _tile_stored(1, cbuf[1], 64);
          scale_add(cbuf[1], b + 1);
        }
      }
      const __mmask16 m = static_cast<__mmask16>((1u << nr) - 1);
      for (int64_t i = 0; i < 16 && j0 + i < X.n; ++i) _mm512_mask_storeu_ps(Y + (j0 + i) * ldy + r, m, acc[i]);
    }
  }
  _tile_release();
}
#undef QINFER_AMX_Q4_STEP

}  // namespace qinfer::ops::detail
