// ops::spd_inverse_upper_factor (fp32, blocked on ops::matmul) against its scalar
// double-precision twin, on every kernel path and on sizes around the block
// boundaries (base blocks of 96, halves rounded to 16).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels_test_util.h"
#include "ops/linalg.h"

namespace qinfer::ops {
namespace {

// A GPTQ-like Hessian: Σ xᵀx over correlated rows with uneven column scales,
// normalised, plus damp · mean(diag) on the diagonal.
std::vector<double> damped_gram(int64_t n, int64_t rows, uint32_t seed, double damp) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> nd;
  std::vector<double> x(rows * n);
  for (int64_t r = 0; r < rows; ++r) {
    double carry = 0;
    for (int64_t k = 0; k < n; ++k) {
      carry = 0.6 * carry + nd(rng);
      x[r * n + k] = carry * (1.0 + 4.0 * ((k * 7) % 11 == 0));
    }
  }
  std::vector<double> A(n * n, 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) A[i * n + j] += 2.0 * x[r * n + i] * x[r * n + j] / static_cast<double>(rows);
  double mean = 0;
  for (int64_t i = 0; i < n; ++i) mean += A[i * n + i] / static_cast<double>(n);
  for (int64_t i = 0; i < n; ++i) A[i * n + i] += damp * mean;
  return A;
}

TEST(SpdInverseUpperFactor, MatchesDoubleReferenceOnEveryPath) {
  for (const std::string& path : testing::available_paths()) {
    testing::PathGuard guard(path);
    for (int64_t n : {1, 2, 7, 95, 96, 97, 130, 200, 333}) {
      // Fewer rows than columns for some sizes: rank-deficient, only the damping keeps it definite.
      const std::vector<double> A = damped_gram(n, n < 100 ? 3 * n : n / 2, static_cast<uint32_t>(n), 0.05);
      std::vector<double> ref(n * n);
      ASSERT_TRUE(spd_inverse_upper_factor_reference(A.data(), n, ref.data())) << n;
      const std::vector<float> Af(A.begin(), A.end());
      std::vector<float> U(n * n, -1.0f);
      ASSERT_TRUE(spd_inverse_upper_factor(Af.data(), n, U.data())) << path << " n=" << n;
      double maxref = 0, maxdiff = 0;
      for (double v : ref) maxref = std::max(maxref, std::fabs(v));
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) {
          if (j < i) {
            ASSERT_EQ(U[i * n + j], 0.0f) << path << " n=" << n << " below the diagonal " << i << "," << j;
          }
          maxdiff = std::max(maxdiff, std::fabs(U[i * n + j] - ref[i * n + j]));
        }
      // fp32 (as GPTQModel's torch factor) against double: a few 1e-5 of the largest entry.
      EXPECT_LE(maxdiff, 2e-4 * maxref) << path << " n=" << n << " max |U - Uref| " << maxdiff << " of " << maxref;
      // And the product property itself, in double: UᵀU A = I.
      double worst = 0;
      for (int64_t i = 0; i < n; i += std::max<int64_t>(1, n / 17))
        for (int64_t j = 0; j < n; ++j) {
          double t = 0;   // (UᵀU A)[i][j] = Σ_k (UᵀU)[i][k] A[k][j]
          for (int64_t k = 0; k < n; ++k) {
            double utu = 0;
            for (int64_t m = 0; m <= std::min(i, k); ++m) utu += static_cast<double>(U[m * n + i]) * U[m * n + k];
            t += utu * A[k * n + j];
          }
          worst = std::max(worst, std::fabs(t - (i == j ? 1.0 : 0.0)));
        }
      EXPECT_LE(worst, 2e-3) << path << " n=" << n;
    }
  }
}

TEST(SpdInverseUpperFactor, RejectsIndefiniteAndNonFinite) {
  for (int64_t n : {2, 150}) {
    std::vector<double> A = damped_gram(n, 2 * n, 9, 0.05);
    A[(n - 1) * n + (n - 1)] = -1.0;   // a negative pivot somewhere (the last row is factored first)
    std::vector<double> ref(n * n);
    EXPECT_FALSE(spd_inverse_upper_factor_reference(A.data(), n, ref.data())) << n;
    std::vector<float> Af(A.begin(), A.end()), U(n * n);
    EXPECT_FALSE(spd_inverse_upper_factor(Af.data(), n, U.data())) << n;
    Af = std::vector<float>(A.begin(), A.end());
    Af[(n - 1) * n + (n - 1)] = 1.0f;
    Af[0] = NAN;
    EXPECT_FALSE(spd_inverse_upper_factor(Af.data(), n, U.data())) << n;
  }
  float one = 4.0f, u = 0;
  ASSERT_TRUE(spd_inverse_upper_factor(&one, 1, &u));
  EXPECT_FLOAT_EQ(u, 0.5f);
}

}  // namespace
}  // namespace qinfer::ops
