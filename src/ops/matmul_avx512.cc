// AVX-512 kernels (compiled with -mavx512f/bw/vl/dq/vnni/bf16, reached through
// dispatch.cc only when cpuid reports them). Dense: fp32 accumulation, weights
// widened to fp32 in registers. GPTQ: VNNI byte dot products (vpdpbusd).
// GCC 12 flags its own _mm512_undefined_* helpers inside the intrinsics headers.
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <vector>

#include "ops/matmul_table.h"
#include "ops/prefetch_hint.h"
#include "ops/unroll.h"

namespace qinfer::ops::detail {
namespace {

struct V {
  using T = __m512;
  using I = __m512i;
  static constexpr int W = 16;
  static constexpr int NR1 = 8;   // weight rows per decode (n = 1) tile
  static constexpr int NR = 4;    // weight rows per tile for n > 1
  static constexpr int NX = 4;    // activation rows per tile
  static constexpr int kTileAcc = 24;  // accumulators of a 2-4 row tile (dense_rows_wide)
  static constexpr int PNX = 8;  // activation rows per fp32 panel pass (prefill)
  static constexpr bool kPanelPairs = true;  // two 16-row panels per pass (dense_panel_simd.h)
  static constexpr int PNX2 = 12;  // activation rows per pass over a panel pair: 24 accumulators
  static constexpr int Q4NX = 8;  // activation rows per int4 tile pass
  static constexpr int kC12Acc = 16;  // accumulators of a BF16C tile (bf16c_simd.h)

  static T zero() { return _mm512_setzero_ps(); }
  static T set1(float f) { return _mm512_set1_ps(f); }
  static T load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, T v) { _mm512_storeu_ps(p, v); }
  static T fma(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
  static T mul(T a, T b) { return _mm512_mul_ps(a, b); }
  static T add(T a, T b) { return _mm512_add_ps(a, b); }
  static float reduce(T v) { return _mm512_reduce_add_ps(v); }
  static T load_bf16(const uint16_t* p) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }  // BF16C block decoder (ops/bf16c.h): 64 weights from 64 low bytes and 32 index
  // bytes. The index bytes go to both 256-bit halves; the low half keeps each byte's
  // low nibble, the high half its high one (positions 32..63), and vpshufb looks the
  // 64 high bytes up in the 16-entry table. Low and high bytes interleaved in each
  // 128-bit lane are bf16 words; each word interleaved with a zero word is its fp32
  // value, and the layout puts column 16 g + 4 q + m at lane q's word 4 g + m, so
  // vector g comes out in the plain kernel's lanes (10 integer ops a block). Measured
  // on AMD Zen 5, one thread, lm_head (bench_ops): 20.3-21.0 ms with two masked
  // vpshufb per vector (12 ops, the layout before), 29.2 with the shifts and vpternlogd
  // of the form before that (15 ops); a vpermt2b form (AVX512-VBMI, 7 ops) ran the same
  // from memory.
  struct C12 {
    __m512i tbl, sel, m0f;
    explicit C12(const uint8_t* t)
        : tbl(_mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t)))),
          sel(_mm512_inserti64x4(_mm512_set1_epi8(-1), _mm256_setzero_si256(), 1)),
          m0f(_mm512_set1_epi8(0x0f)) {}
    void block(const uint8_t* lo, const uint8_t* idx, T* w) const {
      const __m512i L = _mm512_loadu_si512(lo);
      const __m512i N = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(idx)));
      // sel ? N : N >> 4, then the nibble
      const __m512i codes = _mm512_and_si512(_mm512_ternarylogic_epi32(sel, N, _mm512_srli_epi16(N, 4), 0xca), m0f);
      const __m512i H = _mm512_shuffle_epi8(tbl, codes);
      const __m512i z = _mm512_setzero_si512();
      const __m512i wl = _mm512_unpacklo_epi8(L, H), wh = _mm512_unpackhi_epi8(L, H);
      w[0] = _mm512_castsi512_ps(_mm512_unpacklo_epi16(z, wl));
      w[1] = _mm512_castsi512_ps(_mm512_unpackhi_epi16(z, wl));
      w[2] = _mm512_castsi512_ps(_mm512_unpacklo_epi16(z, wh));
      w[3] = _mm512_castsi512_ps(_mm512_unpackhi_epi16(z, wh));
    }
  };

  static T load_f16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static T load_i8(const int8_t* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  static T load_u8(const uint8_t* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  // GPTQ integer path (see gptq_dot_simd.h): 16 int32 lanes = the 16 rows of a tile.
  static I izero() { return _mm512_setzero_si512(); }
  static I load_i(const uint8_t* p) { return _mm512_loadu_si512(p); }
  static I nib_lo(I v) { return _mm512_and_si512(v, _mm512_set1_epi8(15)); }
  static I nib_hi(I v) { return _mm512_and_si512(_mm512_srli_epi16(v, 4), _mm512_set1_epi8(15)); }
  // acc + Σ of 4 products per lane: unsigned codes u times the 4 signed bytes at x.
  // (Inline asm for the embedded {1to16} broadcast: GCC 12 emits a separate
  // vpbroadcastd per product otherwise.)
  static I dot4(I acc, I u, const int8_t* x) {
    __asm__("vpdpbusd %[x]%{1to16%}, %[u], %[acc]"
            : [acc] "+v"(acc)
            : [u] "v"(u), [x] "m"(*reinterpret_cast<const int32_t*>(x)));
    return acc;
  }
  static constexpr bool kPairs16 = false;  // vpdpbusd accumulates in int32 directly
  static I pairs(I, const int8_t*);         // (declared for the template; never called)
  static I add16(I, I);
  static I widen16(I);
  // 16x16 transpose of r[16] (row i -> column i), in place: dense prefill builds
  // k-major panels with it.
  static constexpr bool kDensePanels = true;
  static void transpose16(T* r) {
    T t[16], u[16];
    for (int i = 0; i < 8; ++i) {
      t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
      t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; ++i) {
      u[4 * i + 0] = _mm512_shuffle_ps(t[4 * i + 0], t[4 * i + 2], 0x44);
      u[4 * i + 1] = _mm512_shuffle_ps(t[4 * i + 0], t[4 * i + 2], 0xEE);
      u[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
      u[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    for (int c = 0; c < 4; ++c) {
      const T v = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x88), w = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xDD);
      const T v2 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x88), w2 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xDD);
      r[c] = _mm512_shuffle_f32x4(v, v2, 0x88);
      r[8 + c] = _mm512_shuffle_f32x4(v, v2, 0xDD);
      r[4 + c] = _mm512_shuffle_f32x4(w, w2, 0x88);
      r[12 + c] = _mm512_shuffle_f32x4(w, w2, 0xDD);
    }
  }
  // Byte e of every 32-bit lane, zero-extended.
  static I byte_lane(I v, int e) { return _mm512_and_si512(_mm512_srli_epi32(v, 8 * e), _mm512_set1_epi32(255)); }
  static T fmsub(T a, T b, T c) { return _mm512_fmsub_ps(a, b, c); }  // a*b - c
  // Sum of S partial accumulators.
  template <int S>
  static I iadd(const I* v) {
    if constexpr (S == 1) return v[0];
    else return _mm512_add_epi32(v[0], v[1]);
  }
  static I shl7(I v) { return _mm512_slli_epi32(v, 7); }
  // 2^14 h + 2^7 m + l
  static I combine(I h, I m, I l) {
    return _mm512_add_epi32(_mm512_slli_epi32(_mm512_add_epi32(_mm512_slli_epi32(h, 7), m), 7), l);
  }
  static T cvt_i(I v) { return _mm512_cvtepi32_ps(v); }
  static T fnmadd(T a, T b, T c) { return _mm512_fnmadd_ps(a, b, c); }  // c - a*b
};

#include "ops/matmul_simd.h"

// ---- GPTQ activation quantizer: the scalar reference's steps, 32 values at once ----

void q4_quantize(const float* x, int64_t nblocks, int8_t* xh, int8_t* xm, int8_t* xl, float* sx, float* sxq) {
  const __m512 fmax = _mm512_set1_ps(FLT_MAX);
  for (int64_t b = 0; b < nblocks; ++b) {
    const __m512 a0 = _mm512_loadu_ps(x + 32 * b), a1 = _mm512_loadu_ps(x + 32 * b + 16);
    const __m512 m0 = _mm512_abs_ps(a0), m1 = _mm512_abs_ps(a1);
    // Ordered compare: NaN and infinities fail it.
    const bool finite = (_mm512_cmp_ps_mask(m0, fmax, _CMP_LE_OQ) & _mm512_cmp_ps_mask(m1, fmax, _CMP_LE_OQ)) == 0xffff;
    const float m = finite ? _mm512_reduce_max_ps(_mm512_max_ps(m0, m1)) : 0.0f;
    const float inv = static_cast<float>(kQ4Max) / m;
    __m512i q0 = _mm512_setzero_si512(), q1 = q0;
    float s = 0;
    if (!finite) {
      s = NAN;
    } else if (m > 0 && inv <= FLT_MAX) {
      s = m / static_cast<float>(kQ4Max);
      const __m512 vi = _mm512_set1_ps(inv);
      const __m512i lo = _mm512_set1_epi32(-kQ4Max), hi = _mm512_set1_epi32(kQ4Max);
      q0 = _mm512_min_epi32(_mm512_max_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(a0, vi)), lo), hi);
      q1 = _mm512_min_epi32(_mm512_max_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(a1, vi)), lo), hi);
    }
    const __m512i m127 = _mm512_set1_epi32(127);
    int8_t* outs[3] = {xh + 32 * b, xm + 32 * b, xl + 32 * b};
    const __m512i parts[3][2] = {
        {_mm512_srai_epi32(q0, 14), _mm512_srai_epi32(q1, 14)},
        {_mm512_and_si512(_mm512_srai_epi32(q0, 7), m127), _mm512_and_si512(_mm512_srai_epi32(q1, 7), m127)},
        {_mm512_and_si512(q0, m127), _mm512_and_si512(q1, m127)}};
    for (int p = 0; p < 3; ++p) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(outs[p]), _mm512_cvtepi32_epi8(parts[p][0]));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(outs[p] + 16), _mm512_cvtepi32_epi8(parts[p][1]));
    }
    sx[b] = s;
    sxq[b] = static_cast<float>(_mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1)));
  }
}

// ---- Option bf16_dot: BF16 weights x bf16 activations, _mm512_dpbf16_ps ----

// NR weight rows x NX activation rows; 32 elements per step, masked tail.
template <int NR, int NX>
inline void bf16_dot_tile(const uint16_t* w, int64_t K, const uint16_t* x, int64_t ldx, float* y, int64_t ldy) {
  __m512 acc[NX][NR];
  QINFER_UNROLL
  for (int j = 0; j < NX; ++j)
    QINFER_UNROLL
    for (int r = 0; r < NR; ++r) acc[j][r] = _mm512_setzero_ps();
  for (int64_t k = 0; k < K; k += 32) {
    const __mmask32 m = K - k >= 32 ? ~__mmask32{0} : static_cast<__mmask32>((uint64_t{1} << (K - k)) - 1);
    __m512bh wv[NR];
    QINFER_UNROLL
    for (int r = 0; r < NR; ++r) wv[r] = (__m512bh)_mm512_maskz_loadu_epi16(m, w + r * K + k);
    QINFER_UNROLL
    for (int j = 0; j < NX; ++j) {
      const __m512bh xv = (__m512bh)_mm512_loadu_si512(x + j * ldx + k);  // zero padded to 32
      QINFER_UNROLL
      for (int r = 0; r < NR; ++r) acc[j][r] = _mm512_dpbf16_ps(acc[j][r], wv[r], xv);
    }
  }
  QINFER_UNROLL
  for (int j = 0; j < NX; ++j)
    QINFER_UNROLL
    for (int r = 0; r < NR; ++r) y[j * ldy + r] = _mm512_reduce_add_ps(acc[j][r]);
}

template <int NR>
void bf16_dot_rows_x(const uint16_t* w, int64_t K, const uint16_t* X, int64_t ldx, int64_t n, float* Y, int64_t ldy) {
  for (int64_t j = 0; j < n; j += 4) {
    switch (std::min<int64_t>(4, n - j)) {
      case 1: bf16_dot_tile<NR, 1>(w, K, X + j * ldx, ldx, Y + j * ldy, ldy); break;
      case 2: bf16_dot_tile<NR, 2>(w, K, X + j * ldx, ldx, Y + j * ldy, ldy); break;
      case 3: bf16_dot_tile<NR, 3>(w, K, X + j * ldx, ldx, Y + j * ldy, ldy); break;
      default: bf16_dot_tile<NR, 4>(w, K, X + j * ldx, ldx, Y + j * ldy, ldy); break;
    }
  }
}

void bf16_dot_rows(const DenseMatrix& W, const uint16_t* Xb, int64_t n, float* Y, int64_t r0, int64_t r1) {
  const uint16_t* w = static_cast<const uint16_t*>(W.weights());
  const int64_t K = W.cols, ldx = round_up(K, kBf16DotPad), ldy = W.rows;
  // Activation blocks of 64 rows stay in cache while 4-row weight tiles stream.
  for (int64_t xb = 0; xb < n; xb += kXBlock) {
    const int64_t nx = std::min(kXBlock, n - xb);
    int64_t r = r0;
    if (nx == 1) {
      for (; r + 8 <= r1; r += 8) bf16_dot_tile<8, 1>(w + r * K, K, Xb + xb * ldx, ldx, Y + xb * ldy + r, ldy);
    } else {
      for (; r + 4 <= r1; r += 4)
        bf16_dot_rows_x<4>(w + r * K, K, Xb + xb * ldx, ldx, nx, Y + xb * ldy + r, ldy);
    }
    for (; r < r1; ++r) bf16_dot_rows_x<1>(w + r * K, K, Xb + xb * ldx, ldx, nx, Y + xb * ldy + r, ldy);
  }
}

// One activation row against weight rows read one after another (a single sequential
// stream, no software prefetch: what the exact decode probe picks on AMD Zen 4, where
// the 8-row tiles above streamed at two thirds of its rate). One accumulator per row,
// 32 columns a step, masked tail (xb is zero padded), then the lane sum: the very
// operations of bf16_dot_tile, so a row's result is the same bits either way (a
// speculative verify's multi-row products match one-row decode).
void bf16_dot_seq_rows(const DenseMatrix& W, const uint16_t* xb, float* Y, int64_t r0, int64_t r1) {
  const uint16_t* w = static_cast<const uint16_t*>(W.weights());
  const int64_t K = W.cols;
  for (int64_t r = r0; r < r1; ++r) {
    const uint16_t* row = w + r * K;
    __m512 acc = _mm512_setzero_ps();
    for (int64_t k = 0; k < K; k += 32) {
      const __mmask32 m = K - k >= 32 ? ~__mmask32{0} : static_cast<__mmask32>((uint64_t{1} << (K - k)) - 1);
      acc = _mm512_dpbf16_ps(acc, (__m512bh)_mm512_maskz_loadu_epi16(m, row + k), (__m512bh)_mm512_loadu_si512(xb + k));
    }
    Y[r] = _mm512_reduce_add_ps(acc);
  }
}

// ---- Two-part split decode (Bf16Kernel::kSplit, n = 1): x = hi + lo, two bf16 rows ----
//
// One weight row read front to back; each 32-weight step issues vdpbf16ps against
// hi and then lo into the same accumulator (no third pass, no sum of partial
// outputs): 1 load and 2 dot products per 64 bytes of weights, where widening
// takes 2 conversions and 2 FMAs. A accumulators of 32 columns along k; the
// weight lines kSplitPrefetch bytes ahead are prefetched into L1. Xs holds the
// hi row then the lo row, each zero padded to round_up(K, 32).
constexpr int64_t kSplitPrefetch = 4096;
void bf16_split2_row(const uint16_t* w, const uint16_t* xh, const uint16_t* xl, int64_t K, float* y) {
  constexpr int A = 4;
  __m512 acc[A], lo[A];  // hi and lo parts in separate chains (vdpbf16ps latency)
  QINFER_UNROLL
  for (int a = 0; a < A; ++a) acc[a] = lo[a] = _mm512_setzero_ps();
  const char* pf = reinterpret_cast<const char*>(w) + kSplitPrefetch;  // a hint: may run past the matrix
  int64_t k = 0;
  for (; k + A * 32 <= K; k += A * 32) {
    QINFER_UNROLL
    for (int a = 0; a < A; ++a) {
      _mm_prefetch(pf + (k + a * 32) * 2, _MM_HINT_T0);
      const __m512bh wv = (__m512bh)_mm512_loadu_si512(w + k + a * 32);
      acc[a] = _mm512_dpbf16_ps(acc[a], wv, (__m512bh)_mm512_loadu_si512(xh + k + a * 32));
      lo[a] = _mm512_dpbf16_ps(lo[a], wv, (__m512bh)_mm512_loadu_si512(xl + k + a * 32));
    }
  }
  for (; k < K; k += 32) {
    const __mmask32 m = K - k >= 32 ? ~__mmask32{0} : static_cast<__mmask32>((uint64_t{1} << (K - k)) - 1);
    const __m512bh wv = (__m512bh)_mm512_maskz_loadu_epi16(m, w + k);
    acc[0] = _mm512_dpbf16_ps(acc[0], wv, (__m512bh)_mm512_loadu_si512(xh + k));  // zero padded to 32
    lo[0] = _mm512_dpbf16_ps(lo[0], wv, (__m512bh)_mm512_loadu_si512(xl + k));
  }
  QINFER_UNROLL
  for (int a = 1; a < A; ++a) {
    acc[0] = _mm512_add_ps(acc[0], acc[a]);
    lo[0] = _mm512_add_ps(lo[0], lo[a]);
  }
  acc[0] = _mm512_add_ps(lo[0], acc[0]);
  *y = _mm512_reduce_add_ps(acc[0]);
}

void bf16_split2_rows(const DenseMatrix& W, const uint16_t* Xs, float* Y, int64_t r0, int64_t r1) {
  const uint16_t* w = static_cast<const uint16_t*>(W.weights());
  const int64_t K = W.cols, ldx = round_up(K, kBf16DotPad);
  for (int64_t r = r0; r < r1; ++r) bf16_split2_row(w + r * K, Xs, Xs + ldx, K, Y + r);
}

// ---- --dense int8 decode: VNNI byte dot products on the codes (Q8Input) ----
//
// Per 64 columns of a weight row: the codes made unsigned (w + 128: one xor), then
// vpdpbusd with each of the two signed activation levels h, l into 16 int32
// lanes: 2 dot products and an xor where widening takes 12 instructions
// (sign-extend, convert, FMA per 16 codes). Q8R rows at once share the activation
// loads; the next rows' codes are prefetched. Each row's lanes are summed at the end
// and combined in int64 (the - 128 Σ xq term from the quantizer).
constexpr int Q8R = 4;
template <int NRW>
inline void q8_int_tile(const int8_t* w, int64_t K, const Q8Input& X, int64_t j, const float* rscale, float* y,
                        int64_t ldy) {
  const int8_t* xh = X.h + j * X.ld;
  const int8_t* xl = X.l + j * X.ld;
  const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
  __m512i acc[NRW][2];
  QINFER_UNROLL
  for (int i = 0; i < NRW; ++i)
    QINFER_UNROLL
    for (int l = 0; l < 2; ++l) acc[i][l] = _mm512_setzero_si512();
  int64_t k = 0;
  auto step = [&](const __m512i* wv) {
    const __m512i vh = _mm512_loadu_si512(xh + k), vl = _mm512_loadu_si512(xl + k);
    QINFER_UNROLL
    for (int i = 0; i < NRW; ++i) {
      const __m512i u = _mm512_xor_si512(wv[i], bias);
      acc[i][0] = _mm512_dpbusd_epi32(acc[i][0], u, vh);
      acc[i][1] = _mm512_dpbusd_epi32(acc[i][1], u, vl);
    }
  };
  for (; k + 64 <= K; k += 64) {
    __m512i wv[NRW];
    QINFER_UNROLL
    for (int i = 0; i < NRW; ++i) {
      // 4 KiB ahead in the tile's rows (a hint: may run past the matrix), into L1: every
      // activation row re-reads the tile (non-temporal lines were evicted between those
      // passes: the 64 MiB probe ran 4 rows at 8 GB/s against widening's 29).
      _mm_prefetch(reinterpret_cast<const char*>(w + i * K + k) + kSeqPrefetch, _MM_HINT_T0);
      wv[i] = _mm512_loadu_si512(w + i * K + k);
    }
    step(wv);
  }
  if (k < K) {   // the codes past K read as 0 (128 once biased) against zero-padded levels
    const __mmask64 msk = ~0ull >> (64 - (K - k));
    __m512i wv[NRW];
    QINFER_UNROLL
    for (int i = 0; i < NRW; ++i) wv[i] = _mm512_maskz_loadu_epi8(msk, w + i * K + k);
    step(wv);
  }
  QINFER_UNROLL
  for (int i = 0; i < NRW; ++i) {
    const int64_t sh = _mm512_reduce_add_epi32(acc[i][0]), sl = _mm512_reduce_add_epi32(acc[i][1]);
    const int64_t d = sh * (int64_t{1} << 7) + sl - 128 * X.sxq[j];
    y[j * ldy + i] = q8_int_output(d, X.sx[j], rscale[i]);
  }
}

// One weight row read front to back (decode, n = 1: a single sequential stream, like
// the widening kernel's dense_row_seq; the activation levels stay in L1), two 64-column
// chunks per step into separate accumulators (four dependency chains of vpdpbusd).
inline void q8_int_row_seq(const int8_t* w, int64_t K, const Q8Input& X, float rscale, float* y) {
  const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
  __m512i acc[2][2];
  for (auto& a : acc)
    for (auto& v : a) v = _mm512_setzero_si512();
  auto chunk = [&](int e, int64_t k, __m512i wv) {
    const __m512i u = _mm512_xor_si512(wv, bias);
    acc[e][0] = _mm512_dpbusd_epi32(acc[e][0], u, _mm512_loadu_si512(X.h + k));
    acc[e][1] = _mm512_dpbusd_epi32(acc[e][1], u, _mm512_loadu_si512(X.l + k));
  };
  const char* pf = reinterpret_cast<const char*>(w) + kSeqPrefetch;   // a hint: may run past the matrix
  int64_t k = 0;
  for (; k + 128 <= K; k += 128) {
    _mm_prefetch(pf + k, _MM_HINT_NTA);
    _mm_prefetch(pf + k + 64, _MM_HINT_NTA);
    chunk(0, k, _mm512_loadu_si512(w + k));
    chunk(1, k + 64, _mm512_loadu_si512(w + k + 64));
  }
  if (k + 64 <= K) {
    chunk(0, k, _mm512_loadu_si512(w + k));
    k += 64;
  }
  if (k < K) chunk(1, k, _mm512_maskz_loadu_epi8(~0ull >> (64 - (K - k)), w + k));   // zero-padded levels
  const int64_t sh = _mm512_reduce_add_epi32(_mm512_add_epi32(acc[0][0], acc[1][0]));
  const int64_t sl = _mm512_reduce_add_epi32(_mm512_add_epi32(acc[0][1], acc[1][1]));
  const int64_t d = sh * (int64_t{1} << 7) + sl - 128 * X.sxq[0];
  *y = q8_int_output(d, X.sx[0], rscale);
}

// ---- --dense int8 prefill (n >= kQ8PanelMin): k-major integer panels ----
//
// 16 weight rows' codes, made unsigned (w + 128), transposed 4 columns at a time
// into a panel of 64-byte vectors (lane i = row i's 4 codes k..k+3); every
// activation row then runs against it: per 4 columns two vpdpbusd (levels h, l)
// with the row's 4 bytes broadcast, 16 outputs per instruction and no horizontal
// sums (the fp32 panels' scheme, dense_panel_simd.h, at twice the products per
// instruction). Lane i holds row i's exact Σ (w + 128) h and Σ (w + 128) l
// (< 2^31 for k <= kQ8IntMaxCols): the outputs equal the row-major kernels' and
// the scalar twin's bit for bit, whatever n is.
// From 64 activation rows on; below, the transposes cost more than the row-major
// tiles' horizontal sums (bench_ops q8_matmul_2048x8192, 2 threads, Zen 4: n = 8 / 32
// row-major 303 / 314 GFLOP/s, panels 166 / 289; n = 128 / 512 333 / 345 vs 379 / 391).
constexpr int64_t kQ8PanelMin = 64;
// Activation rows per panel pass (16 accumulators): 12 ran at 297 GFLOP/s (n = 512),
// 6 and 8 at 397 (24 activation streams outrun the L1 prefetch and the integer registers).
constexpr int Q8PNX = 8;

// 16 outputs (rows r .. r + nr of activation row j) from the two level sums, as
// q8_int_output computes each: d in int64, then double(d) * (double(sx) * double(scale)).
inline void q8_panel_out(__m512i sh, __m512i sl, const Q8Input& X, int64_t j, const __m512d* rsd, int nr, float* y) {
  const __m512i corr = _mm512_set1_epi64(128 * X.sxq[j]);
  const __m512d sx = _mm512_set1_pd(static_cast<double>(X.sx[j]));
  __m256 half[2];
  for (int hf = 0; hf < 2; ++hf) {
    const __m512i h64 = _mm512_cvtepi32_epi64(hf ? _mm512_extracti64x4_epi64(sh, 1) : _mm512_castsi512_si256(sh));
    const __m512i l64 = _mm512_cvtepi32_epi64(hf ? _mm512_extracti64x4_epi64(sl, 1) : _mm512_castsi512_si256(sl));
    const __m512i d = _mm512_sub_epi64(_mm512_add_epi64(_mm512_slli_epi64(h64, 7), l64), corr);
    half[hf] = _mm512_cvtpd_ps(_mm512_mul_pd(_mm512_cvtepi64_pd(d), _mm512_mul_pd(sx, rsd[hf])));
  }
  const __m512 v = _mm512_insertf32x8(_mm512_castps256_ps512(half[0]), half[1], 1);
  _mm512_mask_storeu_ps(y, static_cast<__mmask16>((1u << nr) - 1), v);
}

template <int NX>
inline void q8_panel_pass(const __m512i* panel, int64_t steps, const Q8Input& X, int64_t j0, const __m512d* rsd,
                          int nr, float* Y, int64_t ldy) {
  __m512i ah[NX], al[NX];
  QINFER_UNROLL
  for (int j = 0; j < NX; ++j) ah[j] = al[j] = _mm512_setzero_si512();
  const int8_t* xh = X.h + j0 * X.ld;
  const int8_t* xl = X.l + j0 * X.ld;
  for (int64_t s = 0; s < steps; ++s) {
    const __m512i u = _mm512_load_si512(panel + s);
    QINFER_UNROLL
    for (int j = 0; j < NX; ++j) {
      ah[j] = V::dot4(ah[j], u, xh + j * X.ld + 4 * s);
      al[j] = V::dot4(al[j], u, xl + j * X.ld + 4 * s);
    }
  }
  QINFER_UNROLL
  for (int j = 0; j < NX; ++j) q8_panel_out(ah[j], al[j], X, j0 + j, rsd, nr, Y + (j0 + j) * ldy);
}

// Panels are built kQ8PanelBlock at a time (16 weight rows each) and each block's
// panels run over the activations a block of rows at a time, both blocks sized to
// sit in L2 together: the activations are read from L3 once per block of panels
// instead of once per panel (4096-wide rows: 4 MiB per pass for 512 rows).
constexpr int kQ8PanelBlock = 4;

void q8_int_panels(const DenseMatrix& W, const Q8Input& X, float* Y, int64_t r0, int64_t r1) {
  const int8_t* w = static_cast<const int8_t*>(W.weights());
  const int64_t K = W.cols, ldy = W.rows, steps = X.kp / 4;
  thread_local std::vector<unsigned char> panel_buf;
  const int64_t bytes = 64 * (kQ8PanelBlock * steps + 1);
  if (static_cast<int64_t>(panel_buf.size()) < bytes) panel_buf.resize(bytes);
  __m512i* panels = reinterpret_cast<__m512i*>(panel_buf.data() + (64 - reinterpret_cast<uintptr_t>(panel_buf.data()) % 64) % 64);
  // Activation rows per block: ~256 KiB of levels (2 kp bytes a row), a multiple of Q8PNX.
  const int64_t xblock = std::max<int64_t>(Q8PNX, (int64_t{256} << 10) / (2 * X.ld) / Q8PNX * Q8PNX);
  const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
  for (int64_t rb = r0; rb < r1; rb += 16 * kQ8PanelBlock) {
    const int np = static_cast<int>(std::min<int64_t>(kQ8PanelBlock, (r1 - rb + 15) / 16));
    __m512d rsd[kQ8PanelBlock][2];
    int nrs[kQ8PanelBlock];
    for (int p = 0; p < np; ++p) {
      const int64_t r = rb + 16 * p;
      const int nr = nrs[p] = static_cast<int>(std::min<int64_t>(16, r1 - r));
      __m512i* panel = panels + p * steps;
      for (int64_t k = 0; k < X.kp; k += 64) {
        const __mmask64 msk = k + 64 <= K ? ~0ull : k < K ? ~0ull >> (64 - (K - k)) : 0;
        __m512 v[16];
        for (int i = 0; i < 16; ++i)   // codes past K or past the last row read as 0 (against zero levels)
          v[i] = _mm512_castsi512_ps(_mm512_xor_si512(
              i < nr ? _mm512_maskz_loadu_epi8(msk, w + (r + i) * K + k) : _mm512_setzero_si512(), bias));
        V::transpose16(v);
        for (int c = 0; c < 16; ++c) _mm512_store_si512(panel + k / 4 + c, _mm512_castps_si512(v[c]));
      }
      alignas(64) double rs[16] = {};
      for (int i = 0; i < nr; ++i) rs[i] = static_cast<double>(W.row_scale[r + i]);
      rsd[p][0] = _mm512_load_pd(rs);
      rsd[p][1] = _mm512_load_pd(rs + 8);
    }
    for (int64_t xb = 0; xb < X.n; xb += xblock) {
      const int64_t xe = std::min(X.n, xb + xblock);
      for (int p = 0; p < np; ++p) {
        const __m512i* panel = panels + p * steps;
        float* y = Y + rb + 16 * p;
        int64_t j = xb;
        for (; j + Q8PNX <= xe; j += Q8PNX) q8_panel_pass<Q8PNX>(panel, steps, X, j, rsd[p], nrs[p], y, ldy);
        for_count<Q8PNX - 1>(xe - j, [&](auto nx) {
          q8_panel_pass<decltype(nx)::value>(panel, steps, X, j, rsd[p], nrs[p], y, ldy);
        });
      }
    }
  }
}

void q8_int_rows(const DenseMatrix& W, const Q8Input& X, float* Y, int64_t r0, int64_t r1) {
  const int8_t* w = static_cast<const int8_t*>(W.weights());
  const int64_t K = W.cols, ldy = W.rows;
  const float* rs = W.row_scale.data();
  if (X.n >= kQ8PanelMin) return q8_int_panels(W, X, Y, r0, r1);
  int64_t r = r0;
  if (X.n == 1) {
    for (; r < r1; ++r) q8_int_row_seq(w + r * K, K, X, rs[r], Y + r);
    return;
  }
  // Activation rows inner: a tile's Q8R rows of codes stay in L1 for all of them.
  for (; r + Q8R <= r1; r += Q8R)
    for (int64_t j = 0; j < X.n; ++j) q8_int_tile<Q8R>(w + r * K, K, X, j, rs + r, Y + r, ldy);
  for (; r < r1; ++r)
    for (int64_t j = 0; j < X.n; ++j) q8_int_tile<1>(w + r * K, K, X, j, rs + r, Y + r, ldy);
}

}  // namespace

const KernelTable& avx512_kernels() {
  static const KernelTable t{"avx512", dense_rows, gptq_rows, gptq_rows_f32, q4_quantize, bf16_dot_rows, matvec_rows,
                             q8_int_rows, bf16_split2_rows, bf16_dot_seq_rows, gptq_rows_pairs<>, kQ4PanelMinVnni};
  return t;
}

}  // namespace qinfer::ops::detail
