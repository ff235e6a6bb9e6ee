// Internal: one table of row-range kernels per instruction set. dispatch.cc picks
// a table and splits rows across threads; each function computes rows [r0, r1)
// of Y (row stride W.rows) single-threaded.
#pragma once
#include <cstdint>
#include <vector>

#include "ops/bf16c.h"
#include "ops/matmul.h"

namespace qinfer::ops::detail {

// Activations of a GPTQ product, quantized per 32-column block of the packed
// column order: x ≈ sx * xq with xq an integer, |xq| <= 2^21 - 1, split into
// three signed bytes xq = 2^14 xh + 2^7 xm + xl (xh in -128..127, xm and xl in
// 0..127), the operand the VNNI byte dot product takes. 21 bits keep the model's
// logits at fp32 accuracy (15 bits moved the golden logits by 2e-3). sxq = Σ xq
// over the block, for the zero-point term. Error per element: at most half a
// step, max|x over the block| / (2 (2^21 - 1)). A block holding a non-finite
// value gets sx = NaN, so its outputs are NaN.
struct Q4Input {
  int64_t n = 0, kp = 0, blocks = 0;
  int8_t *xh = nullptr, *xm = nullptr, *xl = nullptr;  // [n][kp]
  float *sx = nullptr, *sxq = nullptr;                  // [n][blocks]
};
constexpr int kQ4Max = (1 << 21) - 1;
// Bytes of storage a Q4Input for n rows of W needs (64-byte aligned parts).
int64_t q4_input_bytes(const GptqMatrix& W, int64_t n);
// Activations of an int8 dense product (--dense int8) with few rows (decode), for
// integer dot products on the int8 codes: per activation row x ≈ sx * xq with
// |xq| <= 2^14 - 1 (sx = max|x| / (2^14 - 1)), split into two signed bytes
// xq = 2^7 h + l (h in -128..127, l in 0..127), the signed operand of the byte dot
// product (vpdpbusd). Two levels, not Q4Input's three: the int8 codes' own error
// (half a step of max|w| / 127, ~4e-3 of a row's scale) is ~130 times the
// activations' (max|x| / (2 (2^14 - 1)), ~3e-5), and one dot product fewer per 64
// codes lifts one core's rate (AMD Zen 4, 1 GB of codes, one thread: 19 -> 24 GB/s;
// a plain read 28). The codes w are made its unsigned operand as w + 128 (one xor),
// so Σ_k w_k xq_k = Σ (w + 128) xq - 128 Σ xq, with sxq = Σ xq per activation row:
// exact in int64; the output is q8_int_output of it.
// Error per element: at most half a step, max|x| / (2 (2^14 - 1)), far below the
// int8 codes' own (half a step of max|w| / 127). A row holding a non-finite value gets
// sx = NaN (its outputs are NaN). h and l are [n][ld] rows of kp = round_up(k, 64)
// levels, the padding zero (it adds nothing to any sum); the row stride ld is kp or
// kp + 64, an odd number of 64-byte lines, so that the rows a kernel reads side by
// side fall in different L1 sets (4096-wide rows at a 4 KiB stride all shared one:
// the avx512 panels ran at half speed).
struct Q8Input {
  int64_t n = 0, k = 0, kp = 0, ld = 0;
  int8_t *h = nullptr, *l = nullptr;
  float* sx = nullptr;      // [n]
  int64_t* sxq = nullptr;   // [n]
};
constexpr int kQ8Max = (1 << 14) - 1;
// Widest rows the integer int8 path takes: a row's sum Σ (w + 128) xq_level over its
// 16 int32 lanes is at most k * 255 * 128 (< 2^31 up to here); wider rows are widened.
constexpr int64_t kQ8IntMaxCols = int64_t{1} << 15;
// Bytes a Q8Input for n rows of k values needs (64-byte aligned parts).
int64_t q8_input_bytes(int64_t k, int64_t n);
// Quantizes X ([n][k]) into `mem` (q8_input_bytes, 64-byte aligned) and returns the
// view. One scalar routine for every path (O(n k), against the product's O(rows n k)).
Q8Input quantize_q8_input(const float* X, int64_t n, int64_t k, unsigned char* mem);
// Row r's output from its integer dot product d = Σ w xq: every path computes it so.
inline float q8_int_output(int64_t d, float sx, float row_scale) {
  return static_cast<float>(static_cast<double>(d) * (static_cast<double>(sx) * static_cast<double>(row_scale)));
}

struct KernelTable;
// Quantizes X ([n][W.cols()], source column order) into `mem` (q4_input_bytes,
// 64-byte aligned) with t.q4_quantize and returns the view.
Q4Input quantize_q4_input(const KernelTable& t, const GptqMatrix& W, const float* X, int64_t n,
                          unsigned char* mem);

struct KernelTable {
  const char* name;
  // Y[j][r] for r in [r0, r1), j < n. X is [n][W.cols].
  void (*dense_rows)(const DenseMatrix& W, const float* X, int64_t n, float* Y, int64_t r0, int64_t r1);
  // Rows [r0, r1) of Y[n][W.rows] for quantized activations X (r0 a multiple of
  // GptqMatrix::kTileRows). Every path computes bit-identical results.
  void (*gptq_rows)(const GptqMatrix& W, const Q4Input& X, float* Y, int64_t r0, int64_t r1);
  // From q4_panel_min activation rows on (below): rows [r0, r1) of Y for fp32 activations
  // Xp [n][W.padded_cols()] in packed column order (tiles dequantized to fp32).
  void (*gptq_rows_f32)(const GptqMatrix& W, const float* Xp, int64_t n, float* Y, int64_t r0, int64_t r1);
  // Quantizes nblocks blocks of 32 values at x (see Q4Input): xh/xm/xl [nblocks * 32],
  // sx/sxq [nblocks]. Every path returns identical bytes and floats.
  void (*q4_quantize)(const float* x, int64_t nblocks, int8_t* xh, int8_t* xm, int8_t* xl, float* sx, float* sxq);
  // Optional (null when unsupported): BF16 W times bf16 activations Xb
  // [n][round_up(W.cols, 32)], zero padded.
  void (*bf16_dot_rows)(const DenseMatrix& W, const uint16_t* Xb, int64_t n, float* Y, int64_t r0, int64_t r1);
  // Optional (null on the scalar path): BF16 or Q8 W times one fp32 activation row x,
  // rows [r0, r1), with memory-access variant `mode` (kMatvec* below; every
  // one widens to fp32 like dense_rows, only prefetching and row order differ).
  void (*matvec_rows)(int mode, const DenseMatrix& W, const float* x, float* y, int64_t r0, int64_t r1);
  // Optional (null where the ISA has no byte dot product worth it: avx2): Q8 W
  // ([rows][k] int8 codes, row scales) times quantized activations X, rows [r0, r1)
  // of Y[X.n][W.rows]. Every path that has it computes bit-identical results.
  void (*q8_int_rows)(const DenseMatrix& W, const Q8Input& X, float* Y, int64_t r0, int64_t r1);
  // Optional (avx512 only): BF16 W times one activation row split into two bf16
  // rows Xs = [hi][lo] (each zero padded to round_up(W.cols, kBf16DotPad)),
  // y[r] = w_r . (hi + lo) for rows [r0, r1): the fused n = 1 form of the
  // two-part split (Bf16Kernel::kSplit); elsewhere bf16_dot_rows does it.
  void (*bf16_split2_rows)(const DenseMatrix& W, const uint16_t* Xs, float* Y, int64_t r0, int64_t r1);
  // Optional (avx512 only): bf16_dot_rows for one activation row xb (zero padded to
  // round_up(W.cols, kBf16DotPad)) with the weight rows read one after another
  // instead of in tiles; which of the two is faster depends on the host (probe).
  void (*bf16_dot_seq_rows)(const DenseMatrix& W, const uint16_t* xb, float* Y, int64_t r0, int64_t r1);
  // Optional (avx512 only): gptq_rows for one activation row with two tiles read side
  // by side (Q4Kernel::kPairs; which of the two is faster depends on the host: probe).
  // The same bits as gptq_rows.
  void (*gptq_rows_pairs)(const GptqMatrix& W, const Q4Input& X, float* Y, int64_t r0, int64_t r1);
  // GPTQ products with at least this many activation rows take gptq_rows_f32 (a tile
  // dequantized once pays off), fewer the integer gptq_rows: kQ4PanelMinVnni where byte
  // dot products are one instruction (VNNI), kQ4PanelMin in the scalar twin, kQ4PanelMinAvx2 on avx2,
  // whose byte dot product takes two (vpmaddubsw + vpaddw) a level. Both kernels
  // work for any row count; the tests compare each with its scalar twin at every count.
  // On the SIMD paths a probe may keep the integer kernel for every count instead
  // (ops::Q4Prefill: on AMD Zen 4 it is 1.1-1.25x the panels at 64-512 rows).
  int64_t q4_panel_min;
};

// matvec_rows modes (the same numbers as dense_matvec_simd.h's DecodeMode).
constexpr int kMatvecSeqNta = 0, kMatvecSeqT0 = 1, kMatvecSeqNone = 2, kMatvecTiled = 3;

constexpr int64_t kBf16DotPad = 32;
// GPTQ products with at least this many activation rows take gptq_rows_f32
// (KernelTable::q4_panel_min): kQ4PanelMin in the scalar twin (also where the BF16
// kernel choice switches from its decode to its panel probe), kQ4PanelMinVnni on avx512,
// kQ4PanelMinAvx2 on avx2. With VNNI the integer path beats the fp32 panels up to ~24
// rows (Intel Xeon, Emerald Rapids, one thread, bench_ops medians of 3, three alternating
// runs, GFLOP/s integer vs chunked panels: 8 rows 115-118 vs 49-73, 12 rows 116-118 vs
// 77, 16 rows 94-117 vs 86-100, 24 rows 112-117 vs 86-94; the 256-expert MoE of 512
// tokens 107-117 vs 69-100; 64 rows stay on panels, 104-111 either way); without it
// (avx2) the panels win from 8 rows (44 vs 41 at 8, 58 vs 43 at 12).
constexpr int64_t kQ4PanelMin = 16;
constexpr int64_t kQ4PanelMinVnni = 32;
constexpr int64_t kQ4PanelMinAvx2 = 8;
// gptq_rows_f32 builds and uses its panels kQ4PanelBlocks column blocks (256 columns) at a
// time for up to kQ4ChunkRows activation rows, so that a chunk's panel (16-32 KB) is
// still in L1 when each pass reads it; a whole 2048-column panel is 128 KB, read back
// from L2 by every pass. Above kQ4ChunkRows whole panels are faster again (the passes'
// activation rows stream better). Intel Xeon (Emerald Rapids), one thread, bench_ops
// GFLOP/s whole -> chunked: 256-expert MoE of 512 tokens avx2 47-55 -> 60-62, avx512
// 75-88 -> 98; one expert n = 16 avx2 60 -> 66, avx512 74-76 -> 91-97; n = 512 avx2
// 84 -> 68 (hence the limit).
constexpr int64_t kQ4PanelBlocks = 8;
constexpr int64_t kQ4ChunkRows = 32;

// AMX (matmul_amx.cc; call only when cpu_features().amx_bf16): BF16 W times
// activations split into three bf16 parts (Bf16Kernel::kAmx), packed once per
// product into B tiles: `tiles` holds ntb token blocks of 16 x nkb column blocks of
// 32 x 3 parts of 16 x 32 bf16 (pair-interleaved), zero padded. W.cols % 32 == 0.
struct AmxBf16Input {
  int64_t n = 0, k = 0, ntb = 0, nkb = 0;
  uint16_t* tiles = nullptr;
};
int64_t amx_bf16_input_elems(int64_t n, int64_t k);
// The view of `mem` (amx_bf16_input_elems values) for X [n][k];
// pack_amx_bf16_blocks fills token blocks [tb0, tb1) of it from X (any thread).
AmxBf16Input amx_bf16_input_view(int64_t n, int64_t k, uint16_t* mem);
void pack_amx_bf16_blocks(const float* X, const AmxBf16Input& in, int64_t tb0, int64_t tb1);
// Rows [r0, r1) of Y[X.n][W.rows].
void amx_bf16_rows(const DenseMatrix& W, const AmxBf16Input& X, float* Y, int64_t r0, int64_t r1);
// GPTQ prefill panels on AMX (W.uniform_zero() >= 0; when the BF16 panels run on
// AMX): activations Xp [n][kp] (packed column order) as three bf16 parts
// `parts` [3][np][kp], np = n rounded up to 16 (rows past n zero).
struct AmxQ4Input {
  int64_t n = 0, kp = 0, np = 0;
  uint16_t* parts = nullptr;
};
int64_t amx_q4_input_elems(int64_t n, int64_t kp);
AmxQ4Input amx_q4_input_view(int64_t n, int64_t kp, uint16_t* mem);
// Rows [j0, j1) of the view's np rows (any thread).
void pack_amx_q4_rows(const float* Xp, const AmxQ4Input& in, int64_t j0, int64_t j1);
// Rows [r0, r1) of Y[X.n][W.rows()], r0 a multiple of 16.
void amx_gptq_rows(const GptqMatrix& W, const AmxQ4Input& X, float* Y, int64_t r0, int64_t r1);

const KernelTable& scalar_kernels();
// The reference quantizer (also the AVX2 table's).
void q4_quantize_scalar(const float* x, int64_t nblocks, int8_t* xh, int8_t* xm, int8_t* xl, float* sx, float* sxq);
const KernelTable& avx2_kernels();    // only call when cpu_features().has_avx2_path()
const KernelTable& avx512_kernels();  // only call when cpu_features().has_avx512_path()

// Element conversions shared by the scalar code and the packers.
inline float bf16_to_f32(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}
float f16_to_f32(uint16_t h);
inline uint16_t f32_to_bf16(float f) {  // round to nearest even; NaN stays NaN
  uint32_t u;
  __builtin_memcpy(&u, &f, 4);
  if ((u & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}

}  // namespace qinfer::ops::detail
