#include "ops/linalg.h"

#include <cmath>
#include <vector>

#include "ops/matmul.h"
#include "util/thread_pool.h"

namespace qinfer::ops {

namespace {

// Diagonal blocks up to this size are factored by plain loops.
constexpr int64_t kBaseSize = 96;

// Lower Cholesky factor L of B [n][n] (lower triangle read) and Li = L⁻¹,
// both written in full (zeros above the diagonal), scalar with double sums.
bool cholesky_base(const float* B, int64_t n, float* L, float* Li) {
  std::vector<double> l(static_cast<size_t>(n * n), 0.0), li(static_cast<size_t>(n * n), 0.0);
  for (int64_t j = 0; j < n; ++j) {
    const double* lj = &l[j * n];
    double s = B[j * n + j];
    for (int64_t k = 0; k < j; ++k) s -= lj[k] * lj[k];
    if (!(s > 0.0) || !std::isfinite(s)) return false;
    const double d = std::sqrt(s);
    l[j * n + j] = d;
    for (int64_t i = j + 1; i < n; ++i) {
      const double* lr = &l[i * n];
      double t = B[i * n + j];
      for (int64_t k = 0; k < j; ++k) t -= lr[k] * lj[k];
      l[i * n + j] = t / d;
    }
  }
  for (int64_t c = 0; c < n; ++c) {   // L⁻¹ column by column (forward substitution on e_c)
    li[c * n + c] = 1.0 / l[c * n + c];
    for (int64_t i = c + 1; i < n; ++i) {
      double t = 0.0;
      for (int64_t k = c; k < i; ++k) t += l[i * n + k] * li[k * n + c];
      li[i * n + c] = -t / l[i * n + i];
    }
  }
  for (int64_t i = 0; i < n * n; ++i) {
    L[i] = static_cast<float>(l[i]);
    Li[i] = static_cast<float>(li[i]);
  }
  return true;
}

std::vector<float> block(const float* A, int64_t lda, int64_t r0, int64_t c0, int64_t rows, int64_t cols) {
  std::vector<float> b(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) b[r * cols + c] = A[(r0 + r) * lda + c0 + c];
  return b;
}

std::vector<float> transposed(const std::vector<float>& a, int64_t rows, int64_t cols) {
  std::vector<float> t(a.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) t[c * rows + r] = a[r * cols + c];
  return t;
}

// Y [n][rows of W] = X [n][cols] · Wᵀ with W = M [rows][cols] (ops::matmul).
void times_transposed(const std::vector<float>& M, int64_t rows, int64_t cols, const float* X, int64_t n, float* Y) {
  matmul(dense_view(WType::F32, M.data(), rows, cols), X, n, Y);
}

// [[B11, 0], [B21, B22]] = [[L11, 0], [L21, L22]] [[L11ᵀ, L21ᵀ], [0, L22ᵀ]]:
// L21 = B21 L11⁻ᵀ, L22 = chol(B22 − L21 L21ᵀ), and (L⁻¹)21 = −L22⁻¹ L21 L11⁻¹.
bool cholesky_recursive(const float* B, int64_t n, float* L, float* Li) {
  if (n <= kBaseSize) return cholesky_base(B, n, L, Li);
  const int64_t n1 = (n / 2 + 15) / 16 * 16, n2 = n - n1;
  std::vector<float> L11(n1 * n1), L11i(n1 * n1), L22(n2 * n2), L22i(n2 * n2);
  if (!cholesky_recursive(block(B, n, 0, 0, n1, n1).data(), n1, L11.data(), L11i.data())) return false;
  const std::vector<float> B21 = block(B, n, n1, 0, n2, n1);
  std::vector<float> L21(n2 * n1), S(n2 * n2);
  times_transposed(L11i, n1, n1, B21.data(), n2, L21.data());   // B21 · L11⁻ᵀ
  times_transposed(L21, n2, n1, L21.data(), n2, S.data());      // L21 · L21ᵀ
  for (int64_t r = 0; r < n2; ++r)
    for (int64_t c = 0; c <= r; ++c) S[r * n2 + c] = B[(n1 + r) * n + n1 + c] - S[r * n2 + c];
  if (!cholesky_recursive(S.data(), n2, L22.data(), L22i.data())) return false;
  std::vector<float> T(n2 * n1), Li21(n2 * n1);
  times_transposed(transposed(L11i, n1, n1), n1, n1, L21.data(), n2, T.data());   // L21 · L11⁻¹
  times_transposed(transposed(T, n2, n1), n1, n2, L22i.data(), n2, Li21.data());  // L22⁻¹ · T
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < n; ++c) {
      float l = 0.0f, li = 0.0f;
      if (r < n1 && c < n1) {
        l = L11[r * n1 + c];
        li = L11i[r * n1 + c];
      } else if (r >= n1 && c < n1) {
        l = L21[(r - n1) * n1 + c];
        li = -Li21[(r - n1) * n1 + c];
      } else if (r >= n1) {
        l = L22[(r - n1) * n2 + c - n1];
        li = L22i[(r - n1) * n2 + c - n1];
      }
      L[r * n + c] = l;
      Li[r * n + c] = li;
    }
  return true;
}

}  // namespace

// With J the reversal permutation, J A J = L Lᵀ gives A = R Rᵀ for the upper
// R = J L J, and U = R⁻¹ = J L⁻¹ J is upper with UᵀU = (R Rᵀ)⁻¹ = A⁻¹.
bool spd_inverse_upper_factor(const float* A, int64_t n, float* U) {
  if (n <= 0) return n == 0;
  std::vector<float> B(static_cast<size_t>(n * n)), L(B.size()), Li(B.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) B[i * n + j] = A[(n - 1 - i) * n + (n - 1 - j)];
  if (!cholesky_recursive(B.data(), n, L.data(), Li.data())) return false;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const float v = Li[(n - 1 - i) * n + (n - 1 - j)];
      if (!std::isfinite(v)) return false;
      U[i * n + j] = v;
    }
  return true;
}

// A = R Rᵀ with R upper triangular (columns from the right), then U = R⁻¹.
bool spd_inverse_upper_factor_reference(const double* A, int64_t K, double* U) {
  std::vector<double> R(static_cast<size_t>(K * K), 0.0);
  for (int64_t j = K - 1; j >= 0; --j) {
    const double* rj = &R[j * K];
    double s = A[j * K + j];
    for (int64_t k = j + 1; k < K; ++k) s -= rj[k] * rj[k];
    if (!(s > 0.0) || !std::isfinite(s)) return false;
    const double d = std::sqrt(s);
    R[j * K + j] = d;
    parallel_for(j, 64, [&](int64_t i0, int64_t i1, int) {
      for (int64_t i = i0; i < i1; ++i) {
        const double* ri = &R[i * K];
        double t = A[i * K + j];
        for (int64_t k = j + 1; k < K; ++k) t -= ri[k] * rj[k];
        R[i * K + j] = t / d;
      }
    });
  }
  // U = R⁻¹ column by column; Ut[c][k] = U[k][c] keeps the inner sums contiguous.
  std::vector<double> Ut(static_cast<size_t>(K * K), 0.0);
  bool finite = true;
  parallel_for(K, 8, [&](int64_t c0, int64_t c1, int) {
    for (int64_t c = c0; c < c1; ++c) {
      double* u = &Ut[c * K];
      u[c] = 1.0 / R[c * K + c];
      for (int64_t i = c - 1; i >= 0; --i) {
        const double* ri = &R[i * K];
        double t = 0.0;
        for (int64_t k = i + 1; k <= c; ++k) t += ri[k] * u[k];
        u[i] = -t / ri[i];
      }
      for (int64_t i = 0; i <= c; ++i)
        if (!std::isfinite(u[i])) finite = false;
    }
  });
  if (!finite) return false;
  for (int64_t i = 0; i < K; ++i)
    for (int64_t c = 0; c < K; ++c) U[i * K + c] = c >= i ? Ut[c * K + i] : 0.0;
  return true;
}

}  // namespace qinfer::ops
