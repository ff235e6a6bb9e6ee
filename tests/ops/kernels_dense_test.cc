#include <gtest/gtest.h>

#include <cmath>

#include "kernels_test_util.h"
#include "ops/matmul_table.h"
#include "util/error.h"

namespace qinfer::ops {
namespace {

using testing::available_paths;
using testing::expect_close;
using testing::PathGuard;

struct Shape { int64_t rows, cols; };
const Shape kShapes[] = {{1, 1}, {3, 2}, {5, 17}, {23, 64}, {37, 45}, {67, 129}, {19, 300}, {160, 700}, {41, 1026}, {11, 4500}};  // 4500: rows past kSeqRowBytes (tile path)
const int64_t kNs[] = {1, 2, 3, 4, 7, 8, 9, 33, 130};  // 2-4: the wide tiles (avx512); 130: dense prefill panels (kDensePanelMin)

// Weights of type t with values exactly representable, plus their fp32 values.
struct DenseCase {
  std::vector<uint8_t> bytes;
  std::vector<float> w;
  DenseMatrix m;
};

DenseCase make_dense(WType t, int64_t rows, int64_t cols, std::mt19937& rng) {
  DenseCase c;
  auto f = testing::random_floats(rng, rows * cols);
  c.w.resize(f.size());
  switch (t) {
    case WType::F32:
      c.bytes.resize(f.size() * 4);
      std::memcpy(c.bytes.data(), f.data(), c.bytes.size());
      c.w = f;
      break;
    case WType::BF16: case WType::F16: {
      c.bytes.resize(f.size() * 2);
      auto* h = reinterpret_cast<uint16_t*>(c.bytes.data());
      for (size_t i = 0; i < f.size(); ++i) {
        h[i] = t == WType::BF16 ? detail::f32_to_bf16(f[i]) : testing::f32_to_f16(f[i]);
        c.w[i] = t == WType::BF16 ? detail::bf16_to_f32(h[i]) : detail::f16_to_f32(h[i]);
      }
      break;
    }
    case WType::Q8: case WType::BF16C: break;
  }
  c.m = dense_view(t, c.bytes.data(), rows, cols);
  return c;
}

void reference(const std::vector<float>& w, int64_t rows, int64_t cols, const std::vector<float>& x, int64_t n,
               std::vector<double>& ref, std::vector<double>& mag) {
  ref.assign(n * rows, 0);
  mag.assign(n * rows, 0);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < cols; ++k) {
        const double p = static_cast<double>(w[r * cols + k]) * x[j * cols + k];
        ref[j * rows + r] += p;
        mag[j * rows + r] += std::fabs(p);
      }
}

TEST(DenseKernels, F16ConversionEdgeCases) {
  EXPECT_EQ(detail::f16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(detail::f16_to_f32(0xc000), -2.0f);
  EXPECT_EQ(detail::f16_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(detail::f16_to_f32(0x7bff), 65504.0f);
  EXPECT_TRUE(std::isinf(detail::f16_to_f32(0x7c00)));
  EXPECT_TRUE(std::isnan(detail::f16_to_f32(0x7e00)));
  EXPECT_EQ(detail::bf16_to_f32(0x3f80), 1.0f);
}

class DenseByPath : public ::testing::TestWithParam<std::string> {};

TEST_P(DenseByPath, MatchesReferenceOnAwkwardShapes) {
  PathGuard guard(GetParam());
  EXPECT_EQ(std::string(kernel_path()), GetParam());
  std::mt19937 rng(42);
  for (WType t : {WType::F32, WType::BF16, WType::F16}) {
    for (const Shape& s : kShapes) {
      DenseCase c = make_dense(t, s.rows, s.cols, rng);
      for (int64_t n : kNs) {
        auto x = testing::random_floats(rng, n * s.cols);
        std::vector<float> y(n * s.rows, -999.0f);
        matmul(c.m, x.data(), n, y.data());
        std::vector<double> ref, mag;
        reference(c.w, s.rows, s.cols, x, n, ref, mag);
        expect_close(y, ref, mag, 2e-6, qinfer::cat(GetParam(), " ", wtype_name(t), " ", s.rows, "x", s.cols, " n=", n));
      }
    }
  }
}

TEST_P(DenseByPath, Q8MatchesItsDequantizedWeights) {
  PathGuard guard(GetParam());
  std::mt19937 rng(7);
  for (const Shape& s : kShapes) {
    DenseCase c = make_dense(WType::BF16, s.rows, s.cols, rng);
    DenseMatrix q = dense_to_q8(c.m);
    ASSERT_EQ(q.type, WType::Q8);
    // Re-encoding error is at most half a step per weight.
    std::vector<float> wq(s.rows * s.cols);
    const int8_t* codes = static_cast<const int8_t*>(q.weights());
    for (int64_t r = 0; r < s.rows; ++r)
      for (int64_t k = 0; k < s.cols; ++k) {
        wq[r * s.cols + k] = codes[r * s.cols + k] * q.row_scale[r];
        ASSERT_LE(std::fabs(wq[r * s.cols + k] - c.w[r * s.cols + k]), q.row_scale[r] * 0.5f + 1e-7f);
      }
    DenseMatrix copy = q;  // copies keep working (weights() follows `owned`)
    for (int64_t n : kNs) {
      auto x = testing::random_floats(rng, n * s.cols);
      std::vector<float> y(n * s.rows);
      matmul(copy, x.data(), n, y.data());
      std::vector<double> ref, mag;
      reference(wq, s.rows, s.cols, x, n, ref, mag);
      // Any n may run the integer kernel (the probes' choice), whose activations
      // are quantized per row to kQ8Max steps: allow Σ|w| half a step.
      for (int64_t j = 0; j < n; ++j) {
        double amax = 0;
        for (int64_t k = 0; k < s.cols; ++k) amax = std::max(amax, std::fabs(double(x[j * s.cols + k])));
        for (int64_t r = 0; r < s.rows; ++r) {
          double l1 = 0;
          for (int64_t k = 0; k < s.cols; ++k) l1 += std::fabs(double(wq[r * s.cols + k]));
          const double tol = 2e-6 * mag[j * s.rows + r] + 1e-6 + l1 * amax / (2.0 * detail::kQ8Max) * 1.001;
          EXPECT_LE(std::fabs(y[j * s.rows + r] - ref[j * s.rows + r]), tol)
              << GetParam() << " Q8 " << s.rows << "x" << s.cols << " n=" << n << " row " << r << " x " << j;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, DenseByPath, ::testing::ValuesIn(available_paths()),
                         [](const auto& info) { return info.param; });

TEST(DenseKernels, SimdPathsMatchScalarTwin) {
  std::mt19937 rng(3);
  DenseCase c = make_dense(WType::BF16, 131, 515, rng);
  for (const int64_t n : {1, 33, 130}) {   // 1: the decode row kernels (bf16: split lanes); 130: panel pairs
    auto x = testing::random_floats(rng, n * 515);
    std::vector<float> want(n * 131);
    {
      PathGuard g("scalar");
      matmul(c.m, x.data(), n, want.data());
    }
    for (const auto& p : available_paths()) {
      PathGuard g(p);
      std::vector<float> y(n * 131);
      matmul(c.m, x.data(), n, y.data());
      for (size_t i = 0; i < y.size(); ++i)
        ASSERT_NEAR(y[i], want[i], 1e-4f * (1 + std::fabs(want[i]))) << p << " n=" << n << " " << i;
    }
  }
}

// Dense prefill panels (n >= 128) on long rows: each output is one fp32 FMA per column in
// column order, the bits of std::fma in a loop, on every SIMD path (what BF16C's
// bit-identity with BF16 rests on), with a partial last 16-column step (4500) and a partial
// last panel pair (41 rows). F32 weights, and BF16 with the widening kernel forced (the
// probe may pick another there).
TEST(DenseKernels, LongRowPanelsSumInColumnOrder) {
  std::mt19937 rng(5);
  const int64_t rows = 41, cols = 4500, n = 130;
  for (WType t : {WType::F32, WType::BF16}) {
    DenseCase c = make_dense(t, rows, cols, rng);
    auto x = testing::random_floats(rng, n * cols);
    std::vector<float> want(n * rows);
    for (int64_t j = 0; j < n; ++j)
      for (int64_t r = 0; r < rows; ++r) {
        float acc = 0.0f;
        for (int64_t k = 0; k < cols; ++k) acc = std::fma(x[j * cols + k], c.w[r * cols + k], acc);
        want[j * rows + r] = acc;
      }
    KernelOptions o;
    o.bf16 = Bf16Kernel::kWiden;
    set_kernel_options(o);
    for (const auto& p : available_paths()) {
      if (p == "scalar") continue;   // the reference sums in double
      PathGuard g(p);
      std::vector<float> y(n * rows);
      matmul(c.m, x.data(), n, y.data());
      for (size_t i = 0; i < y.size(); ++i)
        ASSERT_EQ(y[i], want[i]) << p << (t == WType::F32 ? " f32 " : " bf16 ") << i;
    }
    set_kernel_options(KernelOptions{});
  }
}

TEST(DenseKernels, BadInputIsAnError) {
  float w[4] = {1, 2, 3, 4}, x[2] = {1, 1}, y[2];
  EXPECT_THROW(dense_view(WType::F32, nullptr, 2, 2), Error);
  EXPECT_THROW(dense_view(WType::F32, w, 0, 2), Error);
  EXPECT_THROW(dense_view(WType::Q8, w, 2, 2), Error);
  DenseMatrix m = dense_view(WType::F32, w, 2, 2);
  EXPECT_THROW(matmul(m, x, -1, y), Error);
  EXPECT_THROW(matmul(m, nullptr, 1, y), Error);
  matmul(m, x, 0, nullptr);  // nothing to do
  matmul(m, x, 1, y);
  EXPECT_EQ(y[0], 3.0f);
  EXPECT_EQ(y[1], 7.0f);
  float bad[2] = {1, NAN};
  EXPECT_THROW(dense_to_q8(dense_view(WType::F32, bad, 1, 2)), Error);
  EXPECT_THROW(set_kernel_path("sse9"), Error);
}

}  // namespace
}  // namespace qinfer::ops
