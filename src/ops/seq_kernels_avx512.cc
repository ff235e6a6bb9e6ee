// AVX-512 sequence kernels (attention core, delta rule, conv + SiLU, exp):
// the vector traits, then the shared implementation headers. Reached through
// seq_kernels.cc only when cpuid reports avx512f/bw/vl/dq.
// GCC 12 flags its own _mm512_undefined_* helpers inside the intrinsics headers.
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "ops/seq_kernel_table.h"
#include "ops/unroll.h"

#define QSEQ_UNROLL _Pragma("GCC unroll 16")

namespace qinfer::ops::detail {
namespace {

struct V {
  using T = __m512;
  static constexpr int W = 16;
  static constexpr int NK = 4;   // keys per attention score tile (x 4 items)
  static constexpr int PI = 4;   // items per attention p·V tile (x 4 vectors)
  // Packed path (kAttnPackedItemPad must be a multiple of QR and PR):
  static constexpr int QR = 12;  // items per q kᵀ tile (x QN key vectors): 24 accumulators
  static constexpr int QN = 2;
  static constexpr int PR = 6;   // items per p·V tile (x up to 3 vectors of head_dim): 18 accumulators
  static T zero() { return _mm512_setzero_ps(); }
  static T set1(float f) { return _mm512_set1_ps(f); }
  static T load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, T v) { _mm512_storeu_ps(p, v); }
  static T fma(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
  static T mul(T a, T b) { return _mm512_mul_ps(a, b); }
  static T add(T a, T b) { return _mm512_add_ps(a, b); }
  static T sub(T a, T b) { return _mm512_sub_ps(a, b); }
  static T div(T a, T b) { return _mm512_div_ps(a, b); }
  static T max(T a, T b) { return _mm512_max_ps(a, b); }   // b when either is NaN
  static T min(T a, T b) { return _mm512_min_ps(a, b); }
  static T round(T x) { return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // 2^n for integer-valued n in [-126, 127]
  static T pow2n(T n) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_cvttps_epi32(n), _mm512_set1_epi32(127)), 23));
  }
  // y where !(x < thr), else 0
  static T zero_where_less(T x, T thr, T y) { return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, thr, _CMP_NLT_UQ), y); }
  static float reduce_add(T v) { return _mm512_reduce_add_ps(v); }
  // dst[i*ld + r] = Σ acc[i][r] for 4 items x NK = 4 keys: lanes combined pairwise
  // (128-bit lane r of x_i holds partial sums of key r), then within lanes.
  static void hsum_store(const T (&acc)[4][NK], float* dst, int64_t ld) {
    T x[4];
    for (int i = 0; i < 4; ++i) {
      const T ab = _mm512_add_ps(_mm512_shuffle_f32x4(acc[i][0], acc[i][1], 0x44),
                                 _mm512_shuffle_f32x4(acc[i][0], acc[i][1], 0xEE));
      const T cd = _mm512_add_ps(_mm512_shuffle_f32x4(acc[i][2], acc[i][3], 0x44),
                                 _mm512_shuffle_f32x4(acc[i][2], acc[i][3], 0xEE));
      x[i] = _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, 0x88), _mm512_shuffle_f32x4(ab, cd, 0xDD));
    }
    const T u01 = _mm512_add_ps(_mm512_unpacklo_ps(x[0], x[1]), _mm512_unpackhi_ps(x[0], x[1]));
    const T u23 = _mm512_add_ps(_mm512_unpacklo_ps(x[2], x[3]), _mm512_unpackhi_ps(x[2], x[3]));
    const T sums = _mm512_add_ps(_mm512_shuffle_ps(u01, u23, _MM_SHUFFLE(1, 0, 1, 0)),
                                 _mm512_shuffle_ps(u01, u23, _MM_SHUFFLE(3, 2, 3, 2)));  // element r*4+i
    const T by_item = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), sums);
    _mm_storeu_ps(dst, _mm512_castps512_ps128(by_item));
    _mm_storeu_ps(dst + ld, _mm512_extractf32x4_ps(by_item, 1));
    _mm_storeu_ps(dst + 2 * ld, _mm512_extractf32x4_ps(by_item, 2));
    _mm_storeu_ps(dst + 3 * ld, _mm512_extractf32x4_ps(by_item, 3));
  }
  static float reduce_max(T v) { return _mm512_reduce_max_ps(v); }
};

inline float sexp(float x) { return __builtin_expf(x); }

#include "ops/vec_math_simd.h"
#include "ops/attention_kernels_simd.h"
#include "ops/delta_rule_simd.h"
#include "ops/conv_silu_simd.h"

}  // namespace

const SeqKernelTable& seq_avx512_kernels() {
  static const SeqKernelTable t{"avx512", vexp_simd, attend_simd, attend_packed_simd, delta_recurrent_simd, delta_chunked_simd,
                                conv_silu_simd};
  return t;
}

}  // namespace qinfer::ops::detail
