// AVX-512 kernels (compiled with -mavx512f/bw/vl/dq/vnni/bf16, reached through
// dispatch.cc only when cpuid reports them). fp32 accumulation, weights widened
// to fp32 in registers.
// GCC 12 flags its own _mm512_undefined_* helpers inside the intrinsics headers.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "ops/kernel_table.h"

namespace qinfer::ops::detail {
namespace {

struct V {
  using T = __m512;
  using I = __m512i;
  static constexpr int W = 16;
  static constexpr int NR1 = 8;   // weight rows per decode (n = 1) tile
  static constexpr int NR = 4;    // weight rows per tile for n > 1
  static constexpr int NX = 4;    // activation rows per tile
  static constexpr int Q4NR = 4;  // int4 tile shape
  static constexpr int Q4NX = 2;

  static T zero() { return _mm512_setzero_ps(); }
  static T set1(float f) { return _mm512_set1_ps(f); }
  static I iset1(int32_t i) { return _mm512_set1_epi32(i); }
  static T load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, T v) { _mm512_storeu_ps(p, v); }
  static T fma(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
  static T mul(T a, T b) { return _mm512_mul_ps(a, b); }
  static float reduce(T v) { return _mm512_reduce_add_ps(v); }
  static T load_bf16(const uint16_t* p) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  static T load_f16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static T load_i8(const int8_t* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  // 16 bytes = 32 int4 codes (byte j: column j low nibble, column j+16 high) ->
  // two vectors of s * (q - z).
  static void q4_block(const uint8_t* p, I z, T s, T* out) {
    const __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    const __m512i lo = _mm512_and_si512(v, _mm512_set1_epi32(15));
    const __m512i hi = _mm512_srli_epi32(v, 4);
    out[0] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(lo, z)), s);
    out[1] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(hi, z)), s);
  }
};

#include "ops/kernels_simd.h"

}  // namespace

const KernelTable& avx512_kernels() {
  static const KernelTable t{"avx512", dense_rows, gptq_rows};
  return t;
}

}  // namespace qinfer::ops::detail
