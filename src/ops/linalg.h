// Dense symmetric linear algebra (used by the GPTQ quantizer): the upper
// triangular factor U of the inverse of a symmetric positive definite matrix,
// UᵀU = A⁻¹ (what torch's cholesky(cholesky_inverse(cholesky(A)), upper=True)
// returns). Two implementations:
//   - spd_inverse_upper_factor: fp32, recursive 2×2 blocking whose products
//     run on ops::matmul (so on the AVX-512 / AVX2 / scalar dense kernels and
//     the thread pool); the small diagonal blocks in scalar code with double
//     sums. Call it outside any parallel_for (ops::matmul splits rows itself).
//   - spd_inverse_upper_factor_reference: the plain scalar double-precision
//     twin the tests compare against.
// Both return false (leaving U unspecified) when A is not numerically positive
// definite or the result is not finite. A is [n][n] row-major and symmetric
// (the fast path reads the upper triangle and the diagonal only).
#pragma once
#include <cstdint>

namespace qinfer::ops {

bool spd_inverse_upper_factor(const float* A, int64_t n, float* U);
bool spd_inverse_upper_factor_reference(const double* A, int64_t n, double* U);

}  // namespace qinfer::ops
