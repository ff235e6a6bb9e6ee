// Internal: one table of row-range kernels per instruction set. dispatch.cc picks
// a table and splits rows across threads; each function computes rows [r0, r1)
// of Y (row stride W.rows) single-threaded.
#pragma once
#include <cstdint>

#include "ops/kernels.h"

namespace qinfer::ops::detail {

struct KernelTable {
  const char* name;
  // Y[j][r] for r in [r0, r1), j < n. X is [n][W.cols].
  void (*dense_rows)(const DenseMatrix& W, const float* X, int64_t n, float* Y, int64_t r0, int64_t r1);
  // X is [n][W.padded_cols()] in packed column order (see GptqMatrix::gather_input).
  void (*gptq_rows)(const GptqMatrix& W, const float* X, int64_t n, float* Y, int64_t r0, int64_t r1);
  // Optional (null when unsupported): BF16 W times bf16 activations Xb
  // [n][round_up(W.cols, 32)], zero padded.
  void (*bf16_dot_rows)(const DenseMatrix& W, const uint16_t* Xb, int64_t n, float* Y, int64_t r0, int64_t r1);
};

constexpr int64_t kBf16DotPad = 32;

const KernelTable& scalar_kernels();
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
