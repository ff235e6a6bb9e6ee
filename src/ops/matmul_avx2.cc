// AVX2 + FMA + F16C kernels (reached through dispatch.cc only when cpuid reports
// them). Dense: fp32 accumulation, weights widened to fp32 in registers. GPTQ:
// integer dot products (vpmaddubsw + vpmaddwd).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "ops/matmul_table.h"
#include "ops/prefetch_hint.h"
#include "ops/unroll.h"

namespace qinfer::ops::detail {
namespace {

struct V {
  using T = __m256;
  using I = __m256i;
  static constexpr int W = 8;
  static constexpr int NR1 = 4;   // 16 ymm registers: keep tiles small
  static constexpr int NR = 4;
  static constexpr int NX = 2;
  static constexpr int kTileAcc = 0;   // no dense_rows_wide: 16 registers
  static constexpr int PNX = 6;  // activation rows per fp32 panel pass (prefill): 12 accumulators
  static constexpr bool kPanelPairs = false;  // 16 registers: one panel (2 vectors) per pass
  static constexpr int Q4NX = 1;  // activation rows per int4 tile pass
  static constexpr int kC12Acc = 8;   // accumulators of a BF16C tile (bf16c_simd.h)

  static T zero() { return _mm256_setzero_ps(); }
  static T set1(float f) { return _mm256_set1_ps(f); }
  static T load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, T v) { _mm256_storeu_ps(p, v); }
  static T fma(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
  static T mul(T a, T b) { return _mm256_mul_ps(a, b); }
  static T add(T a, T b) { return _mm256_add_ps(a, b); }
  static float reduce(T v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static T load_bf16(const uint16_t* p) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }  // BF16C block decoder (ops/bf16c.h), in two 256-bit halves: the low nibbles of
  // the 32 index bytes index positions 0..31, the high ones 32..63 (vpshufb looks
  // them up in the table, in both 128-bit lanes). Low and high bytes interleaved in
  // each lane are bf16 words, each word interleaved with a zero word its fp32 value;
  // the layout puts column 16 g + 4 q + m at lane q's word 4 g + m, so half h, group
  // g is columns 16 g + 8 h .. + 7 (vector 2 g + h) in the plain kernel's lanes: 17
  // integer ops a block. (Two vpshufb and an OR per vector on the layout before took
  // 30, and shifts and masks ~40, ~10% slower than that in cache on an Intel Xeon.)
  struct C12 {
    __m256i tbl, m0f;
    explicit C12(const uint8_t* t)
        : tbl(_mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t)))),
          m0f(_mm256_set1_epi8(0x0f)) {}
    static void half(__m256i L, __m256i H, T* w) {
      const __m256i z = _mm256_setzero_si256();
      const __m256i wl = _mm256_unpacklo_epi8(L, H), wh = _mm256_unpackhi_epi8(L, H);
      w[0] = _mm256_castsi256_ps(_mm256_unpacklo_epi16(z, wl));
      w[2] = _mm256_castsi256_ps(_mm256_unpackhi_epi16(z, wl));
      w[4] = _mm256_castsi256_ps(_mm256_unpacklo_epi16(z, wh));
      w[6] = _mm256_castsi256_ps(_mm256_unpackhi_epi16(z, wh));
    }
    void block(const uint8_t* lo, const uint8_t* idx, T* w) const {
      const __m256i N = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(idx));
      const __m256i H0 = _mm256_shuffle_epi8(tbl, _mm256_and_si256(N, m0f));
      const __m256i H1 = _mm256_shuffle_epi8(tbl, _mm256_and_si256(_mm256_srli_epi16(N, 4), m0f));
      half(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(lo)), H0, w);
      half(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(lo + 32)), H1, w + 1);
    }
  };

  static T load_f16(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static T load_i8(const int8_t* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  static T load_u8(const uint8_t* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  // GPTQ integer path (see gptq_dot_simd.h): 8 int32 lanes = half of a 16-row tile.
  static I izero() { return _mm256_setzero_si256(); }
  static I load_i(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static I nib_lo(I v) { return _mm256_and_si256(v, _mm256_set1_epi8(15)); }
  static I nib_hi(I v) { return _mm256_and_si256(_mm256_srli_epi16(v, 4), _mm256_set1_epi8(15)); }
  // acc + Σ of 4 products per lane (codes <= 15, so the int16 pair sums of
  // vpmaddubsw cannot saturate).
  static I dot4(I acc, I u, const int8_t* x) {
    int32_t w;
    __builtin_memcpy(&w, x, 4);
    const __m256i p = _mm256_maddubs_epi16(u, _mm256_set1_epi32(w));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p, _mm256_set1_epi16(1)));
  }
  // The same without the int32 step: 16 int16 pair sums of codes u times the bytes at
  // x (gptq_dot_simd.h adds a block's pair sums in int16, then widens them once).
  static constexpr bool kPairs16 = true;
  static I pairs(I u, const int8_t* x) {
    int32_t w;
    __builtin_memcpy(&w, x, 4);
    return _mm256_maddubs_epi16(u, _mm256_set1_epi32(w));
  }
  static I add16(I a, I b) { return _mm256_add_epi16(a, b); }
  static I widen16(I p) { return _mm256_madd_epi16(p, _mm256_set1_epi16(1)); }
  static constexpr bool kDensePanels = true;
  // 8 x 8 transpose: out[c] = column c of the rows in[0..7].
  static void transpose8(const T* in, T* out) {
    T t[8], u[8];
    for (int i = 0; i < 4; ++i) {
      t[2 * i] = _mm256_unpacklo_ps(in[2 * i], in[2 * i + 1]);
      t[2 * i + 1] = _mm256_unpackhi_ps(in[2 * i], in[2 * i + 1]);
    }
    for (int h = 0; h < 2; ++h) {
      u[4 * h + 0] = _mm256_shuffle_ps(t[4 * h + 0], t[4 * h + 2], 0x44);
      u[4 * h + 1] = _mm256_shuffle_ps(t[4 * h + 0], t[4 * h + 2], 0xEE);
      u[4 * h + 2] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0x44);
      u[4 * h + 3] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0xEE);
    }
    for (int c = 0; c < 4; ++c) {
      out[c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x20);
      out[4 + c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x31);
    }
  }
  // 16 rows of 8 columns into panel order: r[2c + h] = column c of rows 8h .. 8h + 7
  // (stored one after another, a k-major panel row of 16 is two vectors).
  static void transpose16(T* r) {
    T a[8], b[8];
    transpose8(r, a);
    transpose8(r + 8, b);
    for (int c = 0; c < 8; ++c) {
      r[2 * c] = a[c];
      r[2 * c + 1] = b[c];
    }
  }
  // Byte e of every 32-bit lane, zero-extended.
  static I byte_lane(I v, int e) { return _mm256_and_si256(_mm256_srli_epi32(v, 8 * e), _mm256_set1_epi32(255)); }
  static T fmsub(T a, T b, T c) { return _mm256_fmsub_ps(a, b, c); }  // a*b - c
  // Sum of S partial accumulators.
  template <int S>
  static I iadd(const I* v) {
    if constexpr (S == 1) return v[0];
    else return _mm256_add_epi32(v[0], v[1]);
  }
  static I shl7(I v) { return _mm256_slli_epi32(v, 7); }
  // 2^14 h + 2^7 m + l
  static I combine(I h, I m, I l) {
    return _mm256_add_epi32(_mm256_slli_epi32(_mm256_add_epi32(_mm256_slli_epi32(h, 7), m), 7), l);
  }
  static T cvt_i(I v) { return _mm256_cvtepi32_ps(v); }
  static T fnmadd(T a, T b, T c) { return _mm256_fnmadd_ps(a, b, c); }  // c - a*b
};

#include "ops/matmul_simd.h"

}  // namespace

const KernelTable& avx2_kernels() {
  // No q8_int_rows: without VNNI a byte dot product (vpmaddubsw, vpmaddwd, vpaddd) per
  // level costs as many instructions as widening the int8 codes to fp32.
  static const KernelTable t{"avx2", dense_rows, gptq_rows, gptq_rows_f32, q4_quantize_scalar, nullptr, matvec_rows,
                             nullptr, nullptr, nullptr, nullptr, kQ4PanelMinAvx2};
  return t;
}

}  // namespace qinfer::ops::detail
