// The integer int8 dense product (--dense int8; ops/matmul_table.h Q8Input): the
// AVX-512 VNNI kernels (row-major tiles, and k-major panels from 64 activation rows)
// against their scalar twin bit for bit on awkward shapes, the
// error bound of the 20-bit activations against a double reference, non-finite
// activations, the widest rows at the int32 limit, and matmul()'s dispatch to it.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <iostream>
#include <cstring>
#include <limits>
#include <memory>
#include <random>

#include "kernels_test_util.h"
#include "ops/matmul_table.h"
#include "util/error.h"

namespace qinfer::ops {
namespace {

using testing::PathGuard;

struct Quantized {
  std::unique_ptr<unsigned char[]> raw;
  detail::Q8Input q;
};
Quantized quantize(const std::vector<float>& x, int64_t n, int64_t k) {
  Quantized out;
  out.raw.reset(new unsigned char[detail::q8_input_bytes(k, n) + 64]);
  unsigned char* mem = out.raw.get() + (64 - reinterpret_cast<uintptr_t>(out.raw.get()) % 64) % 64;
  out.q = detail::quantize_q8_input(x.data(), n, k, mem);
  return out;
}

DenseMatrix random_q8(int64_t rows, int64_t cols, std::mt19937& rng) {
  std::vector<float> w = testing::random_floats(rng, rows * cols);
  DenseMatrix f = dense_view(WType::F32, w.data(), rows, cols);
  return dense_to_q8(f);
}

std::vector<float> run(const detail::KernelTable& t, const DenseMatrix& W, const detail::Q8Input& q, int64_t r0,
                       int64_t r1) {
  std::vector<float> y(q.n * W.rows, -12345.0f);
  t.q8_int_rows(W, q, y.data(), r0, r1);
  return y;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

const int64_t kCols[] = {1, 5, 63, 64, 65, 127, 128, 300, 1026, 2049};
const int64_t kRows[] = {1, 3, 4, 5, 17, 37};
const int64_t kNs[] = {1, 2, 3, 7, 64, 75};   // 64, 75: the avx512 panels (75 = 9 passes of 8 + 3)

TEST(Q8Int, ScalarTwinHasTheKernel) {
  ASSERT_NE(detail::scalar_kernels().q8_int_rows, nullptr);
}

TEST(Q8Int, Avx512MatchesScalarTwinBitForBit) {
  if (!cpu_features().has_avx512_path()) GTEST_SKIP() << "no avx512 path on this CPU (" << cpu_features().describe() << ")";
  const detail::KernelTable& s = detail::scalar_kernels();
  const detail::KernelTable& v = detail::avx512_kernels();
  ASSERT_NE(v.q8_int_rows, nullptr);
  std::mt19937 rng(11);
  for (int64_t rows : kRows)
    for (int64_t cols : kCols)
      for (int64_t n : kNs) {
        const DenseMatrix W = random_q8(rows, cols, rng);
        std::vector<float> x = testing::random_floats(rng, n * cols, -3.0f, 3.0f);
        const Quantized q = quantize(x, n, cols);
        const std::string what = qinfer::cat(rows, "x", cols, " n=", n);
        EXPECT_TRUE(same_bits(run(s, W, q.q, 0, rows), run(v, W, q.q, 0, rows))) << what;
        if (rows > 2) {   // a row range that starts and ends inside tiles
          EXPECT_TRUE(same_bits(run(s, W, q.q, 1, rows - 1), run(v, W, q.q, 1, rows - 1))) << what << " rows 1..";
        }
      }
}

// |y - Σ w x| within the activations' quantization error (half a step per element)
// plus fp32 rounding of the result.
TEST(Q8Int, ErrorWithinTheActivationStep) {
  std::mt19937 rng(5);
  for (const std::string& path : testing::available_paths()) {
    PathGuard guard(path);
    for (int64_t cols : {1, 64, 65, 700, 2049}) {
      const int64_t rows = 9, n = 3;
      const DenseMatrix W = random_q8(rows, cols, rng);
      std::vector<float> x = testing::random_floats(rng, n * cols, -2.0f, 2.0f);
      x[0] = 40.0f;   // an outlier sets the step for its row
      std::vector<float> y(n * rows);
      matmul(W, x.data(), n, y.data());
      const int8_t* codes = static_cast<const int8_t*>(W.weights());
      for (int64_t j = 0; j < n; ++j) {
        double amax = 0;
        for (int64_t k = 0; k < cols; ++k) amax = std::max(amax, std::fabs(double(x[j * cols + k])));
        const double step = amax / detail::kQ8Max;
        for (int64_t r = 0; r < rows; ++r) {
          double ref = 0, l1 = 0;
          for (int64_t k = 0; k < cols; ++k) {
            ref += double(codes[r * cols + k]) * x[j * cols + k];
            l1 += std::fabs(double(codes[r * cols + k]));
          }
          ref *= W.row_scale[r];
          const double tol = W.row_scale[r] * l1 * (0.5 * step) * 1.001 + 1e-6 * std::fabs(ref) + 1e-7;
          EXPECT_LE(std::fabs(y[j * rows + r] - ref), tol) << path << " " << cols << " cols, row " << r << " x " << j;
        }
      }
    }
  }
}

TEST(Q8Int, NonFiniteActivationsGiveNonFiniteRowsAndZerosGiveZeros) {
  std::mt19937 rng(9);
  const int64_t rows = 6, cols = 130, n = 3;
  const DenseMatrix W = random_q8(rows, cols, rng);
  std::vector<float> x = testing::random_floats(rng, n * cols);
  x[5] = std::numeric_limits<float>::quiet_NaN();                  // row 0
  x[cols + 70] = std::numeric_limits<float>::infinity();           // row 1
  for (int64_t k = 0; k < cols; ++k) x[2 * cols + k] = 0.0f;       // row 2
  for (const std::string& path : testing::available_paths()) {
    PathGuard guard(path);
    std::vector<float> y(n * rows, 7.0f);
    matmul(W, x.data(), n, y.data());
    for (int64_t r = 0; r < rows; ++r) {
      EXPECT_TRUE(std::isnan(y[r])) << path << " row " << r;
      EXPECT_FALSE(std::isfinite(y[rows + r])) << path << " row " << r;   // widening: inf or NaN
      EXPECT_EQ(y[2 * rows + r], 0.0f) << path << " row " << r;
    }
  }
}

// The widest rows the integer path takes, every code at +-127 and every activation at
// the top of its range: the int32 lanes and their 16-lane sums must not overflow.
TEST(Q8Int, WidestRowsAtTheInt32Limit) {
  const int64_t cols = detail::kQ8IntMaxCols, rows = 5;
  std::vector<float> w(rows * cols, 1.0f);
  for (int64_t k = 0; k < cols; ++k) w[cols + k] = -1.0f;   // row 1: all -127
  const DenseMatrix W = dense_to_q8(dense_view(WType::F32, w.data(), rows, cols));
  for (int64_t n : {1, 64}) {   // 64: the avx512 panels, one row's whole sum in one lane
    std::vector<float> x(n * cols, 1.0f);
    const Quantized q = quantize(x, n, cols);
    const std::vector<float> want = run(detail::scalar_kernels(), W, q.q, 0, rows);
    EXPECT_FLOAT_EQ(want[0], static_cast<float>(cols));
    EXPECT_FLOAT_EQ(want[1], -static_cast<float>(cols));
    EXPECT_FLOAT_EQ(want[(n - 1) * rows + 1], -static_cast<float>(cols));
    if (cpu_features().has_avx512_path()) {
      EXPECT_TRUE(same_bits(want, run(detail::avx512_kernels(), W, q.q, 0, rows))) << "n=" << n;
    }
  }
}

// Runs matmul() with the int8 kernel choice forced to k (kProbe: the probe's).
std::vector<float> matmul_with(Q8Kernel k, const DenseMatrix& W, const std::vector<float>& x, int64_t n) {
  const KernelOptions saved = kernel_options();
  KernelOptions o = saved;
  o.q8 = k;
  set_kernel_options(o);
  std::vector<float> y(n * W.rows);
  try {
    matmul(W, x.data(), n, y.data());
  } catch (...) {
    set_kernel_options(saved);
    throw;
  }
  set_kernel_options(saved);
  return y;
}

// matmul() runs the kernel q8_kernel_for(n) names for Q8 products (the probes' pick,
// or the forced one; from 8 rows on int or widen), bit for bit as the row kernels
// themselves; matmul_batch the same.
TEST(Q8Int, MatmulDispatch) {
  std::mt19937 rng(21);
  for (const std::string& path : testing::available_paths()) {
    PathGuard guard(path);
    const detail::KernelTable& t = path == "scalar" ? detail::scalar_kernels()
                                   : path == "avx2" ? detail::avx2_kernels() : detail::avx512_kernels();
    for (int64_t n : {1, 4, 7, 8, 70}) {
      const int64_t rows = 33, cols = 515;
      const DenseMatrix W = random_q8(rows, cols, rng);
      std::vector<float> x = testing::random_floats(rng, n * cols);
      std::vector<float> widen(n * rows);
      t.dense_rows(W, x.data(), n, widen.data(), 0, rows);
      const Quantized q = quantize(x, n, cols);
      const std::vector<float> integer = t.q8_int_rows ? run(t, W, q.q, 0, rows) : std::vector<float>{};
      // The tiled widening (one row, SIMD paths): the row kernel in kMatvecTiled mode.
      std::vector<float> tiled(n * rows);
      if (t.matvec_rows && n == 1) t.matvec_rows(detail::kMatvecTiled, W, x.data(), tiled.data(), 0, rows);
      else tiled = widen;
      const Q8Kernel chosen = q8_kernel_for(n);
      ASSERT_TRUE(chosen == Q8Kernel::kInt || chosen == Q8Kernel::kWiden || chosen == Q8Kernel::kWidenTiled)
          << path << " n=" << n;
      if (!t.q8_int_rows && !(t.matvec_rows && n == 1)) {
        EXPECT_EQ(chosen, Q8Kernel::kWiden) << path << " n=" << n;
      }
      if (chosen == Q8Kernel::kWidenTiled) {
        EXPECT_EQ(n, 1) << path;
      }
      const std::vector<float> y = matmul_with(Q8Kernel::kProbe, W, x, n);
      EXPECT_TRUE(same_bits(y, chosen == Q8Kernel::kInt ? integer : chosen == Q8Kernel::kWidenTiled ? tiled : widen))
          << path << " n=" << n;
      EXPECT_TRUE(same_bits(matmul_with(Q8Kernel::kWiden, W, x, n), widen)) << path << " n=" << n << " q8_widen";
      if (t.matvec_rows) {
        EXPECT_TRUE(same_bits(matmul_with(Q8Kernel::kWidenTiled, W, x, n), tiled))
            << path << " n=" << n << " q8_widen_tiled";
        testing::expect_close(tiled, std::vector<double>(widen.begin(), widen.end()),
                              std::vector<double>(widen.size(), 1.0), 1e-4, path + " tiled vs widen");
      } else if (n < 8) {  // from 8 rows on widen_tiled means widen
        EXPECT_THROW(matmul_with(Q8Kernel::kWidenTiled, W, x, n), Error) << path;
      }
      if (t.q8_int_rows) {
        EXPECT_TRUE(same_bits(matmul_with(Q8Kernel::kInt, W, x, n), integer)) << path << " n=" << n << " q8_int";
      } else {
        try {
          matmul_with(Q8Kernel::kInt, W, x, n);
          ADD_FAILURE() << path << ": q8_int accepted without an integer kernel";
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("q8_int"), std::string::npos) << e.what();
        }
      }
      // The same through matmul_batch, beside a BF16 item.
      std::vector<float> yb(n * rows, 0.0f);
      BatchProduct item;
      item.dense = &W;
      item.X = x.data();
      item.n = n;
      item.Y = yb.data();
      matmul_batch(&item, 1);
      EXPECT_TRUE(same_bits(yb, y)) << path << " n=" << n << " matmul_batch";
    }
  }
  EXPECT_EQ(parse_kernel_options("q8_widen").q8, Q8Kernel::kWiden);
  EXPECT_EQ(parse_kernel_options("q8_int").q8, Q8Kernel::kInt);
  EXPECT_EQ(parse_kernel_options("q8_widen_tiled").q8, Q8Kernel::kWidenTiled);
  EXPECT_EQ(parse_kernel_options("bf16_widen").q8, Q8Kernel::kProbe);
}

// The probe decides once per path for one row, quickly; 2..7 rows follow it (int if
// int, widening otherwise: a verify pass computes rows as decode does).
TEST(Q8Int, ProbeChoosesQuicklyAndKeepsTheChoice) {
  for (const std::string& path : testing::available_paths()) {
    PathGuard guard(path);
    const auto t0 = std::chrono::steady_clock::now();
    const Q8Kernel one = q8_kernel_for(1), few = q8_kernel_for(4);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cout << path << ": int8 1 row " << q8_kernel_name(one) << ", 2-7 rows " << q8_kernel_name(few) << " (" << s
              << " s)\n";
    EXPECT_LT(s, testing::kProbeRunawaySeconds) << path;
    EXPECT_TRUE(one == Q8Kernel::kInt || one == Q8Kernel::kWiden || one == Q8Kernel::kWidenTiled) << path;
    EXPECT_EQ(few, one == Q8Kernel::kInt ? Q8Kernel::kInt : Q8Kernel::kWiden) << path;  // tiled: one row only
    if (path == "avx2") {
      EXPECT_NE(one, Q8Kernel::kInt);
      EXPECT_EQ(few, Q8Kernel::kWiden);
    }
    if (path == "scalar") {
      EXPECT_NE(one, Q8Kernel::kWidenTiled);
    }
    for (int64_t n = 2; n < 8; ++n) EXPECT_EQ(q8_kernel_for(n), few) << path << " n=" << n;
    EXPECT_EQ(q8_kernel_for(1), one) << path;
    // Panels (8 rows on): a probe of their own, int or widen (avx2 has no integer kernel).
    const Q8Kernel panel = q8_kernel_for(8);
    EXPECT_TRUE(panel == Q8Kernel::kInt || panel == Q8Kernel::kWiden) << path;
    if (path == "avx2") {
      EXPECT_EQ(panel, Q8Kernel::kWiden);
    }
    EXPECT_EQ(q8_kernel_for(300), panel) << path;
  }
}

}  // namespace
}  // namespace qinfer::ops
