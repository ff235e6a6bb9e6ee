// The opt-in bf16_dot variant: exact against bf16-rounded activations, and its
// error against the default fp32 path measured on model-like data (printed).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <iostream>

#include "kernels_test_util.h"
#include "ops/matmul_table.h"
#include "util/error.h"

namespace qinfer::ops {
namespace {

struct OptionsGuard {
  explicit OptionsGuard(KernelOptions o) { set_kernel_options(o); }
  ~OptionsGuard() { set_kernel_options(KernelOptions{}); }
};

std::vector<uint16_t> bf16_normal(std::mt19937& rng, size_t n, float sd) {
  std::normal_distribution<float> d(0, sd);
  std::vector<uint16_t> v(n);
  for (auto& h : v) h = detail::f32_to_bf16(d(rng));
  return v;
}

TEST(KernelOptions, OffByDefault) { EXPECT_FALSE(kernel_options().bf16_dot); }

TEST(KernelOptions, Bf16DotIsExactForBf16Activations) {
  if (!cpu_features().has_avx512_path()) GTEST_SKIP() << "needs the avx512 path";
  testing::PathGuard path("avx512");
  OptionsGuard opts(KernelOptions{true});
  std::mt19937 rng(4);
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{13, 70}, {9, 31}, {40, 257}})
    for (int64_t n : {1, 2, 5, 33, 70}) {
      auto w = bf16_normal(rng, rows * cols, 0.05f);
      auto x = bf16_normal(rng, n * cols, 1.0f);
      std::vector<float> xf(x.size());
      for (size_t i = 0; i < x.size(); ++i) xf[i] = detail::bf16_to_f32(x[i]);
      DenseMatrix m = dense_view(WType::BF16, w.data(), rows, cols);
      std::vector<float> y(n * rows);
      matmul(m, xf.data(), n, y.data());
      std::vector<double> ref(n * rows, 0), mag(n * rows, 0);
      for (int64_t j = 0; j < n; ++j)
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t k = 0; k < cols; ++k) {
            const double p = static_cast<double>(detail::bf16_to_f32(w[r * cols + k])) * xf[j * cols + k];
            ref[j * rows + r] += p;
            mag[j * rows + r] += std::fabs(p);
          }
      testing::expect_close(y, ref, mag, 2e-6, qinfer::cat("bf16_dot ", rows, "x", cols, " n=", n));
    }
}

// The one-row kernel that reads weight rows one after another (avx512's
// bf16_dot_seq_rows, a probe candidate beside the tiles): exact against bf16
// activations on awkward widths and row ranges, the same bits as the tiles (so a
// speculative verify's multi-row products match one-row decode), and what matmul()
// with bf16_dot computes.
TEST(KernelOptions, Bf16DotSequentialRows) {
  if (!cpu_features().has_avx512_path()) GTEST_SKIP() << "needs the avx512 path";
  testing::PathGuard path("avx512");
  const detail::KernelTable& t = detail::avx512_kernels();
  ASSERT_NE(t.bf16_dot_seq_rows, nullptr);
  std::mt19937 rng(6);
  for (int64_t cols : {1, 31, 32, 33, 127, 128, 129, 300, 2049}) {
    const int64_t rows = 7, ld = (cols + detail::kBf16DotPad - 1) / detail::kBf16DotPad * detail::kBf16DotPad;
    auto w = bf16_normal(rng, rows * cols, 0.05f);
    auto x = bf16_normal(rng, cols, 1.0f);
    std::vector<uint16_t> xb(ld, 0);
    std::copy(x.begin(), x.end(), xb.begin());
    std::vector<float> xf(cols);
    for (int64_t k = 0; k < cols; ++k) xf[k] = detail::bf16_to_f32(x[k]);
    DenseMatrix m = dense_view(WType::BF16, w.data(), rows, cols);
    std::vector<double> ref(rows, 0), mag(rows, 0);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < cols; ++k) {
        const double p = static_cast<double>(detail::bf16_to_f32(w[r * cols + k])) * xf[k];
        ref[r] += p;
        mag[r] += std::fabs(p);
      }
    std::vector<float> seq(rows, -7.0f), tiles(rows, -7.0f);
    t.bf16_dot_seq_rows(m, xb.data(), seq.data(), 2, rows);   // a range that starts inside
    EXPECT_EQ(seq[0], -7.0f);
    EXPECT_EQ(seq[1], -7.0f);
    t.bf16_dot_seq_rows(m, xb.data(), seq.data(), 0, 2);
    testing::expect_close(seq, ref, mag, 2e-6, qinfer::cat("bf16_dot rows, ", cols, " cols"));
    t.bf16_dot_rows(m, xb.data(), 1, tiles.data(), 0, rows);
    EXPECT_EQ(std::memcmp(seq.data(), tiles.data(), rows * sizeof(float)), 0) << cols << " cols: rows vs tiles";
    OptionsGuard opts(KernelOptions{true});
    std::vector<float> y(rows), y3(3 * rows);
    matmul(m, xf.data(), 1, y.data());
    EXPECT_EQ(std::memcmp(y.data(), seq.data(), rows * sizeof(float)), 0) << cols << " cols: matmul with bf16_dot";
    std::vector<float> x3(3 * cols);   // a 3-row product (a verify pass): row 1 is x
    for (int64_t k = 0; k < cols; ++k) x3[k] = x3[2 * cols + k] = 0.5f, x3[cols + k] = xf[k];
    matmul(m, x3.data(), 3, y3.data());
    EXPECT_EQ(std::memcmp(y3.data() + rows, seq.data(), rows * sizeof(float)), 0) << cols << " cols: 3 rows";
  }
}

TEST(KernelOptions, Bf16DotErrorOnModelLikeData) {
  if (!cpu_features().has_avx512_path()) GTEST_SKIP() << "needs the avx512 path";
  testing::PathGuard path("avx512");
  std::mt19937 rng(8);
  const int64_t rows = 512, cols = 2048, n = 4;
  auto w = bf16_normal(rng, rows * cols, 0.02f);
  std::normal_distribution<float> d(0, 1);
  std::vector<float> x(n * cols);
  for (auto& v : x) v = d(rng);
  DenseMatrix m = dense_view(WType::BF16, w.data(), rows, cols);
  std::vector<float> exact(n * rows), fast(n * rows);
  matmul(m, x.data(), n, exact.data());
  {
    OptionsGuard opts(KernelOptions{true});
    matmul(m, x.data(), n, fast.data());
  }
  double num = 0, den = 0;
  for (size_t i = 0; i < exact.size(); ++i) {
    num += (fast[i] - exact[i]) * double(fast[i] - exact[i]);
    den += double(exact[i]) * exact[i];
  }
  const double rel = std::sqrt(num / den);
  std::cout << "bf16_dot relative L2 error vs fp32 path (512x2048, x~N(0,1)): " << rel << "\n";
  EXPECT_GT(rel, 0.0);   // activations really are rounded
  EXPECT_LT(rel, 1e-2);  // and the products still track the exact ones
}

}  // namespace
}  // namespace qinfer::ops
