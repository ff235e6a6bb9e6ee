// AVX2 + FMA sequence kernels (attention core, delta rule, conv + SiLU, exp):
// the vector traits, then the shared implementation headers. Reached through
// seq_kernels.cc only when cpuid reports avx2, fma and f16c.
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
  using T = __m256;
  static constexpr int W = 8;
  static constexpr int NK = 2;   // keys per attention score tile (x 4 items): 8 accumulators
  static constexpr int PI = 2;   // items per attention p·V tile (x 4 vectors): 8 accumulators
  // Packed path (kAttnPackedItemPad must be a multiple of QR and PR):
  static constexpr int QR = 6;   // items per q kᵀ tile (x QN key vectors): 12 accumulators
  static constexpr int QN = 2;
  static constexpr int PR = 4;   // items per p·V tile (x up to 3 vectors of head_dim): 12 accumulators
  static T zero() { return _mm256_setzero_ps(); }
  static T set1(float f) { return _mm256_set1_ps(f); }
  static T load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, T v) { _mm256_storeu_ps(p, v); }
  static T fma(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
  static T mul(T a, T b) { return _mm256_mul_ps(a, b); }
  static T add(T a, T b) { return _mm256_add_ps(a, b); }
  static T sub(T a, T b) { return _mm256_sub_ps(a, b); }
  static T div(T a, T b) { return _mm256_div_ps(a, b); }
  static T max(T a, T b) { return _mm256_max_ps(a, b); }   // b when either is NaN
  static T min(T a, T b) { return _mm256_min_ps(a, b); }
  static T round(T x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // 2^n for integer-valued n in [-126, 127]
  static T pow2n(T n) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(n), _mm256_set1_epi32(127)), 23));
  }
  // y where !(x < thr), else 0
  static T zero_where_less(T x, T thr, T y) { return _mm256_and_ps(_mm256_cmp_ps(x, thr, _CMP_NLT_UQ), y); }
  static float reduce_add(T v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  // dst[i*ld + r] = Σ acc[i][r] for 4 items x NK = 2 keys: halves combined
  // pairwise (128-bit lane r of x_i holds partial sums of key r), then within lanes.
  static void hsum_store(const T (&acc)[4][NK], float* dst, int64_t ld) {
    T x[4];
    for (int i = 0; i < 4; ++i)
      x[i] = _mm256_add_ps(_mm256_permute2f128_ps(acc[i][0], acc[i][1], 0x20),
                           _mm256_permute2f128_ps(acc[i][0], acc[i][1], 0x31));
    const T u01 = _mm256_add_ps(_mm256_unpacklo_ps(x[0], x[1]), _mm256_unpackhi_ps(x[0], x[1]));
    const T u23 = _mm256_add_ps(_mm256_unpacklo_ps(x[2], x[3]), _mm256_unpackhi_ps(x[2], x[3]));
    const T sums = _mm256_add_ps(_mm256_shuffle_ps(u01, u23, _MM_SHUFFLE(1, 0, 1, 0)),
                                 _mm256_shuffle_ps(u01, u23, _MM_SHUFFLE(3, 2, 3, 2)));  // element r*4+i
    const T by_item = _mm256_permutevar8x32_ps(sums, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    const __m128 lo = _mm256_castps256_ps128(by_item), hi = _mm256_extractf128_ps(by_item, 1);
    _mm_storel_pi(reinterpret_cast<__m64*>(dst), lo);
    _mm_storeh_pi(reinterpret_cast<__m64*>(dst + ld), lo);
    _mm_storel_pi(reinterpret_cast<__m64*>(dst + 2 * ld), hi);
    _mm_storeh_pi(reinterpret_cast<__m64*>(dst + 3 * ld), hi);
  }
  static float reduce_max(T v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
};

inline float sexp(float x) { return __builtin_expf(x); }

#include "ops/vec_math_simd.h"
#include "ops/attention_kernels_simd.h"
#include "ops/delta_rule_simd.h"
#include "ops/conv_silu_simd.h"

}  // namespace

const SeqKernelTable& seq_avx2_kernels() {
  static const SeqKernelTable t{"avx2", vexp_simd, attend_simd, attend_packed_simd, delta_recurrent_simd, delta_chunked_simd,
                                conv_silu_simd};
  return t;
}

}  // namespace qinfer::ops::detail
