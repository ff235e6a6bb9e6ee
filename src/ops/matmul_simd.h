// Internal: SIMD matrix-product kernel templates shared by matmul_avx2.cc and matmul_avx512.cc.
// Each of those files defines a vector-traits struct V (width W, loads that widen
// BF16/F16/int8 to fp32, the int4 block decoder, tile shapes) and includes this
// header inside an anonymous namespace, so every instantiation stays local to
// the translation unit compiled for its instruction set.
//
// Dense weights (entry: dense_rows, matvec_rows below; BF16C in bf16c_simd.h):
//  * n = 1 (decode): rows of <= 8 KiB read one after another (dense_row_seq),
//    longer rows in 8-row tiles; n < kPrefillMin: NR x NX fused tiles, for
//    2-4 rows on AVX-512 wide ones of V::kTileAcc accumulators (dense_rows_wide;
//    dense_matvec_simd.h).
//  * kPrefillMin <= n < kDensePanelMin: 16 weight rows widened to fp32 once into
//    a per-thread scratch, reused by every activation row of a 64-row block.
//  * n >= kDensePanelMin (where V::kDensePanels): 16 rows transposed into a
//    k-major fp32 panel, then a broadcast-FMA GEMM (q4_panel_rows)
//    (both in dense_panel_simd.h).
// GPTQ int4 weights: n < q4_panel_min (the table's) integer (VNNI-style) dot products on
// 16-row tiles (gptq_dot_simd.h); from there on each tile dequantized once
// into the same fp32 panel form (gptq_panel_simd.h).
// Not include-guarded on purpose (meant for exactly one inclusion per ISA file).

constexpr int64_t kPrefillMin = 8;
constexpr int64_t kDensePanelMin = 128;  // dense prefill on k-major panels from here
constexpr int64_t kWBlock = 16;  // weight rows per prefill scratch
constexpr int64_t kXBlock = 64;  // activation rows per prefill pass

inline int64_t round_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

// Rows of a GPTQ tile and of an fp32 panel; vectors per panel row.
constexpr int kTR = GptqMatrix::kTileRows;
constexpr int kH = kTR / V::W;

#include "ops/dense_matvec_simd.h"
#include "ops/dense_panel_simd.h"
#include "ops/gptq_dot_simd.h"
#include "ops/gptq_panel_simd.h"
#include "ops/bf16c_simd.h"

template <class L, class E, int Mode = kSeqNta>
void dense_rows_typed(const DenseMatrix& W, const float* X, int64_t n, float* Y, int64_t r0, int64_t r1) {
  const E* w = static_cast<const E*>(W.weights());
  const int64_t K = W.cols, ldy = W.rows;
  const float* scales = W.type == WType::Q8 ? W.row_scale.data() : nullptr;
  if (n >= kPrefillMin) {
    if constexpr (V::kDensePanels) {
      // The transposes pay off from about 100 activation rows on (bench_ops:
      // n = 512 1.39x faster, n = 64 8% slower).
      if (n >= kDensePanelMin) {
        dense_panel_rows<L, E>(w, K, scales, X, n, Y, ldy, r0, r1);
        return;
      }
    }
    auto decode = [&](int64_t r, int64_t count, float* dst, int64_t ld) {
      for (int64_t i = 0; i < count; ++i) {
        const E* src = w + (r + i) * K;
        float* d = dst + i * ld;
        const typename V::T sc = V::set1(scales ? scales[r + i] : 1.0f);
        int64_t k = 0;
        for (; k + V::W <= K; k += V::W) V::store(d + k, V::mul(L::ld(src + k), sc));
        if (k < K) V::store(d + k, V::mul(L::ld_tail(src + k, static_cast<int>(K - k)), sc));
      }
    };
    prefill_rows(decode, K, X, K, n, Y, ldy, r0, r1);
    return;
  }
  int64_t r = r0;
  if (n == 1) {
    // Rows of up to 8 KiB of weights are read one after the other (one
    // sequential stream; x stays in L1); longer rows in 8-row tiles that read x once.
    if (Mode != kTiled && K * static_cast<int64_t>(sizeof(E)) <= kSeqRowBytes) {
      constexpr int hint = Mode == kSeqT0 ? _MM_HINT_T0 : Mode == kSeqNone ? -1 : _MM_HINT_NTA;
      for (; r < r1; ++r) dense_row_seq<L, E, 4, hint>(w + r * K, X, K, Y + r, scales ? scales + r : nullptr);
      return;
    }
    for (; r + V::NR1 <= r1; r += V::NR1)
      dense_tile<L, E, V::NR1, 1, true>(w + r * K, K, X, K, K, Y + r, ldy, scales ? scales + r : nullptr);
  } else {
    if constexpr (V::kTileAcc > 0) {
      if (n <= 4) {   // dense_rows_wide, the last rows below
        if (n == 2) r = dense_rows_wide<L, E, 2>(w, K, X, Y, ldy, scales, r, r1);
        else if (n == 3) r = dense_rows_wide<L, E, 3>(w, K, X, Y, ldy, scales, r, r1);
        else r = dense_rows_wide<L, E, 4>(w, K, X, Y, ldy, scales, r, r1);
      }
    }
    for (; r + V::NR <= r1; r += V::NR)
      dense_rows_x<L, E, V::NR, true>(w + r * K, K, X, K, n, K, Y + r, ldy, scales ? scales + r : nullptr);
  }
  for (; r < r1; ++r) dense_rows_x<L, E, 1>(w + r * K, K, X, K, n, K, Y + r, ldy, scales ? scales + r : nullptr);
}

void dense_rows(const DenseMatrix& W, const float* X, int64_t n, float* Y, int64_t r0, int64_t r1) {
  switch (W.type) {
    case WType::F32: return dense_rows_typed<LdF32, float>(W, X, n, Y, r0, r1);
    case WType::BF16: return dense_rows_typed<LdBF16, uint16_t>(W, X, n, Y, r0, r1);
    case WType::F16: return dense_rows_typed<LdF16, uint16_t>(W, X, n, Y, r0, r1);
    case WType::Q8: return dense_rows_typed<LdI8, int8_t>(W, X, n, Y, r0, r1);
    case WType::BF16C: return c12_rows(W, X, n, Y, r0, r1);
  }
}

// BF16 or int8 decode (n = 1) with one of the DecodeMode variants (all fp32-widening,
// as exact as dense_rows; only the summation order of the tiled one differs).
template <class L, class E>
void matvec_rows_typed(int mode, const DenseMatrix& W, const float* X, float* Y, int64_t r0, int64_t r1) {
  switch (mode) {
    case kSeqT0: return dense_rows_typed<L, E, kSeqT0>(W, X, 1, Y, r0, r1);
    case kSeqNone: return dense_rows_typed<L, E, kSeqNone>(W, X, 1, Y, r0, r1);
    case kTiled: return dense_rows_typed<L, E, kTiled>(W, X, 1, Y, r0, r1);
    default: return dense_rows_typed<L, E, kSeqNta>(W, X, 1, Y, r0, r1);
  }
}

void matvec_rows(int mode, const DenseMatrix& W, const float* X, float* Y, int64_t r0, int64_t r1) {
  if (W.type == WType::BF16C) {   // rows one after another (kTiled: as kSeqNta)
    if (mode == kSeqT0) return c12_rows<kSeqT0>(W, X, 1, Y, r0, r1);
    if (mode == kSeqNone) return c12_rows<kSeqNone>(W, X, 1, Y, r0, r1);
    return c12_rows<kSeqNta>(W, X, 1, Y, r0, r1);
  }
  if (W.type == WType::Q8) return matvec_rows_typed<LdI8, int8_t>(mode, W, X, Y, r0, r1);
  return matvec_rows_typed<LdBF16, uint16_t>(mode, W, X, Y, r0, r1);
}
