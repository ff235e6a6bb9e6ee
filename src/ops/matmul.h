// Matrix kernels for inference: dense (F32/BF16/F16/Q8) and GPTQ int4 weights
// times fp32 activations, with runtime CPU dispatch (AVX-512, AVX2, scalar).
// Every entry point (dense_to_q8 included) splits output rows across the global
// thread pool (qinfer::parallel_for); do not call them from inside a
// parallel_for body (the pool is not reentrant). X and Y must not overlap.
// gptq_pack is single-threaded and thread-safe: call it from parallel loaders.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "ops/gptq_pack.h"

namespace qinfer::ops {

// BF16C: BF16 values in the lossless 12-bit form of ops/bf16c.h (made at load).
enum class WType { F32, BF16, F16, Q8 /* int8 per-row scale, for --dense int8 */, BF16C };
const char* wtype_name(WType t);

// A dense weight matrix W [rows=out, cols=in], row-major as in the checkpoint
// (PyTorch Linear). Either borrows the mmapped checkpoint bytes (BF16/F16/F32)
// or owns a re-encoded copy (Q8: int8 codes in `owned`, w = code * row_scale[r];
// BF16C: the 12-bit stream in `owned` or caller memory, the rest in `bf16c`).
struct Bf16cAux;
struct DenseMatrix {
  WType type = WType::F32;
  int64_t rows = 0, cols = 0;
  const void* data = nullptr;
  std::vector<uint8_t> owned;
  std::vector<float> row_scale;
  std::shared_ptr<const Bf16cAux> bf16c;   // BF16C only: table and escapes

  // The weight bytes (owned ones when present, so copies stay valid).
  const void* weights() const { return owned.empty() ? data : owned.data(); }
  // Bytes at weights() (the stream of a BF16C matrix).
  int64_t weight_bytes() const;
  // Everything the matrix holds (row scales, BF16C escapes included).
  int64_t bytes() const;
};

DenseMatrix dense_view(WType t, const void* data, int64_t rows, int64_t cols);
// --dense int8. rows_done (optional) is called, from any thread, once source
// rows [r0, r1) have been read, so a caller can release their pages early.
// dst (optional, rows x cols bytes): the codes are written there (caller-owned
// memory, e.g. the resident weights) instead of into `owned`.
DenseMatrix dense_to_q8(const DenseMatrix& m, const std::function<void(int64_t, int64_t)>& rows_done = nullptr,
                        uint8_t* dst = nullptr);

// Y[n][rows] = X[n][cols] · Wᵀ ; X, Y float32 row-major. n = 1 is the decode
// (matrix-vector) case. Accumulates in fp32 with fp32 activations.
void matmul(const DenseMatrix& W, const float* X, int64_t n, float* Y);

// GPTQ int4 (see gptq_pack.h). Below 16 activation rows (decode) the
// activations are quantized per 32-column block to 21-bit integers (error <=
// max|x| of the block / 4.2e6 per element, i.e. fp32-level: the golden logits
// move by < 1e-5), then integer dot products on the codes (VNNI vpdpbusd on
// AVX-512), scaled in fp32 per block. From 16 rows on (prefill) each 16-row
// tile is dequantized once to fp32 and multiplied with fp32 FMAs. Every path
// (scalar included) gives bit-identical results, except that where the BF16
// panels run on AMX (Bf16Kernel::kAmx, below) symmetric-GPTQ prefill panels do
// too: per 32-column block, tdpbf16ps of the exact codes (q - z in bf16) against
// the activations' three bf16 parts, then fp32 scaling by the group scales; as
// accurate (fp32 sums of exact products), another summation order.
void matmul(const GptqMatrix& W, const float* X, int64_t n, float* Y);

// Several products in one parallel pass (e.g. the experts of one MoE layer,
// tokens grouped by expert, together with the shared expert's dense products):
// one thread-pool dispatch, every thread busy until the last row. Each item has
// exactly one of gptq / dense. Items with n == 0 are skipped. Results equal
// matmul() of each item alone.
struct BatchProduct {
  const GptqMatrix* gptq = nullptr;
  const DenseMatrix* dense = nullptr;
  const float* X = nullptr;  // [n][cols]
  int64_t n = 0;
  float* Y = nullptr;        // [n][rows]
};
void matmul_batch(const BatchProduct* items, size_t count);

// BF16-weight dense products have several exact kernels; which one runs is
// chosen per host at the first BF16 product by a short timing probe (logged
// once on stderr), separately for decode-sized (n < 16) and panel-sized inputs
// (decode candidates timed with every pool thread and with one: dispatch.cc,
// probe_kernels), among those as accurate as fp32 widening (so no test tolerance depends on
// the host's choice):
//   widen     weights widened to fp32 in registers, fp32 FMA (every path);
//             decode on rows of <= 8 KiB reads them one after another with a
//             non-temporal prefetch 4 KiB ahead;
//   widen_t0, widen_nopf, widen_tiled  (decode only, SIMD paths; products
//             with n > 1 run widen): the same fp32 widening with the short-row
//             prefetch into L1 instead, with no software prefetch, or in 8-row
//             (avx512) / 4-row (avx2) tiles that read x once per tile with the
//             next tile prefetched (the long-row kernel). Which is fastest
//             depends on the CPU's prefetchers (issue 19: 2048-wide rows ran at
//             a fifth of the bandwidth of 8192-wide ones on one Xeon);
//   widen256  the AVX2 widening kernel, a candidate on the avx512 path;
//   split3    each fp32 activation split into three bf16 parts (hi, mid, lo;
//             x - Σ parts is at most 2^-27 |x|), three BF16 dot products into
//             fp32 in one pass over the weights (vdpbf16ps on avx512; the
//             scalar path has a twin; absent on avx2).
//   amx       the same three-part split on Intel AMX tiles (tdpbf16ps, 16 x 16
//             output blocks; avx512 hosts whose CPU and kernel grant AMX; matrices
//             whose width is a multiple of 32, others widen): a panel candidate
//             (n >= 16), about 4-5x the fp32 FMA rate per core (prefill); when
//             chosen, symmetric GPTQ panels run on AMX as well (see matmul above).
// Forced only (never picked by the probe):
//   split     two parts (hi + lo, at most 2^-18 |x|): logits move ~7e-5
//             relative on the test model, inside the golden 1e-3 budget but
//             not as exact as fp32 widening (same paths as split3; decode,
//             n = 1, runs a fused avx512 kernel: two vdpbf16ps per 32 weights).
//             Not a probe candidate: its ~1e-4 moves the max-abs logit error of
//             the tiny fixtures past 1e-3 and makes a one-row decode differ from
//             a verify pass of several rows by more than greedy identity of
//             speculative decoding tolerates; on the Zen 5 host it was also
//             slower than widening (docs/PERFORMANCE.md, issue 19);
//   bf16_dot  opt-in, less exact: activations rounded to one bf16 (~2e-3,
//             over the golden budget; report in tests/ops/kernels_options_test.cc),
//             as llama.cpp and vLLM do. Its one-row products (avx512) run in
//             8-row tiles or with the rows read one after another, whichever a
//             probe on first use times faster (logged; Zen 4: the rows).
// BF16C matrices (the lossless 12-bit form, ops/bf16c.h) always widen, with their
// own kernels (same sums as widen; one-row prefetch variant picked by bf16c_pays's
// probe); the loader makes them only where that probe finds them faster, or BF16
// faster by at most 10% (a quarter fewer bytes resident; --dense auto).
// Environment: QINFER_KERNEL_OPTS=bf16_dot, or bf16_<name> for any kernel above
// (bf16_widen, bf16_widen_t0, ..., bf16_split) to force it (an error when the
// path lacks it).
enum class Bf16Kernel { kProbe, kWiden, kWiden256, kSplit3, kSplit, kWidenT0, kWidenNoPf, kWidenTiled, kAmx };
// --dense int8 products have two kernels on paths with a byte dot product
// (avx512's VNNI, and the scalar twin):
//   int    integer dot products on the codes against 15-bit quantized activations
//          (ops/matmul_table.h, Q8Input; ~3e-5 relative, far below the int8 codes'
//          own ~4e-3; a row's result does not depend on n);
//   widen  the codes widened to fp32 in registers (dense_rows), as for n >= 8.
// Which is faster depends on the host, so a start-up probe picks one for n = 1;
// 2 <= n < 8 follow it (int if int, widening otherwise), so that a speculative
// verify pass computes every row with the numerics of one-row decode (the integer
// kernel's 15-bit activations differ from widening by ~3e-5 relative). From 8 rows
// on (prefill: compute-bound, where two vpdpbusd per 64 products beat widening's
// fp32 FMAs ~1.8x on AVX-512 from 64 rows on, in k-major integer panels) a second
// probe picks one for panels. QINFER_KERNEL_OPTS=q8_int, q8_widen or q8_widen_tiled
// forces one for every n (widen_tiled widens for n > 1).
//   widen_tiled  (one row only, SIMD paths) the same widening in 8-row (avx512) /
//          4-row (avx2) tiles that read x once: on the Intel Xeon of issue 19 the
//          row-after-row kernels stream 2 KiB int8 rows at a fraction of the rate.
enum class Q8Kernel { kProbe, kInt, kWiden, kWidenTiled };
// GPTQ int4 products with one activation row (decode) stream each 16-row tile's
// codes in one pass; two layouts of the same integer kernel, the same bits:
//   tiles  one tile after another (every path);
//   pairs  two tiles side by side, two streams (avx512): on the Intel Xeon of issue
//          19 ~10% more bandwidth from memory; elsewhere it may not pay.
// A start-up probe picks one; QINFER_KERNEL_OPTS=q4_tiles or q4_pairs forces it.
enum class Q4Kernel { kProbe, kTiles, kPairs };
// GPTQ int4 products with the path's q4_panel_min or more activation rows (prefill;
// not where AMX panels run them): two exact kernels, both within the fixtures' budget:
//   panels  tiles dequantized once into fp32 panels, fp32 FMAs (the activations as they are);
//   int     the decode kernel's integer dot products on 21-bit activations, for every
//           row count: on AMD Zen 4 (one 512-bit FMA and one vpdpbusd a cycle) 1.2x the
//           panels at 64 and 512 rows; on Zen 5 and the Intel Xeon the panels win or tie.
// A start-up probe picks one (avx2 and avx512); QINFER_KERNEL_OPTS=q4_panels or q4_int forces it,
// and forced, it runs these products where AMX panels would otherwise.
enum class Q4Prefill { kProbe, kPanels, kInt };
// BF16C one-row decode (SIMD paths) reads the rows one after another with one of
// three software prefetches 4 KiB ahead (the same bits): nta (non-temporal), t0
// (into L1), none. bf16c_pays's probe picks one; QINFER_KERNEL_OPTS=bf16c_nta,
// bf16c_t0 or bf16c_none forces it (the probe still decides whether the form pays).
enum class Bf16cKernel { kProbe, kNta, kT0, kNone };
struct KernelOptions {
  bool bf16_dot = false;
  Bf16Kernel bf16 = Bf16Kernel::kProbe;
  Q8Kernel q8 = Q8Kernel::kProbe;
  Q4Kernel q4 = Q4Kernel::kProbe;
  Bf16cKernel bf16c = Bf16cKernel::kProbe;
  Q4Prefill q4_prefill = Q4Prefill::kProbe;
};
// Parses QINFER_KERNEL_OPTS (comma separated; throws naming an unknown token).
KernelOptions parse_kernel_options(const char* spec);
void set_kernel_options(const KernelOptions& o);
KernelOptions kernel_options();
const char* bf16_kernel_name(Bf16Kernel k);
const char* q8_kernel_name(Q8Kernel k);
const char* q4_kernel_name(Q4Kernel k);
const char* bf16c_kernel_name(Bf16cKernel k);
const char* q4_prefill_name(Q4Prefill k);
// The prefetch variant BF16C one-row products use on the current path (kNta on
// the scalar path; runs bf16c_pays's probe first where nothing is forced).
Bf16cKernel bf16c_kernel_for_one_row();
// The layout one-row GPTQ products use on the current path (probes first where it
// has not run, nothing is forced and the path has both).
Q4Kernel q4_kernel_for_one_row();
// The kernel GPTQ products of q4_panel_min or more activation rows use on the current
// path (probes first where it has not run and nothing is forced; kPanels on the
// scalar path, whose threshold is the reference's).
Q4Prefill q4_prefill_kernel();
// The kernel an int8 dense product with n activation rows uses on the current
// path (runs the probe for n's class first where it has not run, nothing is
// forced and both exist).
Q8Kernel q8_kernel_for(int64_t n);
// The exact BF16 kernel products with n activation rows use on the current
// path (runs the probe first when it has not run and nothing is forced).
Bf16Kernel bf16_kernel_for(int64_t n);
// Whether BF16C (ops/bf16c.h) decodes faster than BF16 on this host and path (or
// BF16 by at most 10%): a probe on first call (~0.3 s; logged), which also picks BF16C's one-row prefetch
// variant. False where BF16 products are not fp32 widening (bf16_dot, a forced
// split or widen256) or its panels run on AMX (BF16C panels widen).
bool bf16c_pays();
// Every exact BF16 kernel the current path can run (forced-only split included;
// what the probe may pick is the rest). Tests run the golden models on each.
std::vector<Bf16Kernel> bf16_kernels_available();

// Wall time the start-up kernel probes have taken in this process so far, and how
// many ran (each runs once per path, on first use; qinfer bench prints it).
struct ProbeTime {
  double seconds = 0;
  int count = 0;
};
ProbeTime kernel_probe_time();

// Which path runs ("avx512", "avx2", "scalar"); the environment variable
// QINFER_KERNELS=scalar|avx2|avx512 forces one (an error if the CPU lacks it).
const char* kernel_path();

// Tests and benchmarks: force a path by name ("" = best available). Throws
// qinfer::Error for an unknown name or one this CPU cannot run.
void set_kernel_path(const char* name);

}  // namespace qinfer::ops
