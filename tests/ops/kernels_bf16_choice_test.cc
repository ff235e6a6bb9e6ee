// The exact BF16 dense kernels (widen, widen256, split3, split) and their choice: splits
// against a double reference and against its scalar twin on awkward sizes,
// options forcing a kernel (and refusing one the path lacks), the start-up probe.
#include <gtest/gtest.h>

#include <chrono>

#include "kernels_test_util.h"
#include "ops/kernel_table.h"
#include "util/error.h"

namespace qinfer::ops {
namespace {

using testing::PathGuard;

struct OptionsGuard {
  explicit OptionsGuard(KernelOptions o) { set_kernel_options(o); }
  ~OptionsGuard() { set_kernel_options(KernelOptions{}); }
};

KernelOptions forced(Bf16Kernel k) {
  KernelOptions o;
  o.bf16 = k;
  return o;
}

struct Case {
  std::vector<uint16_t> w;
  std::vector<float> x;
  std::vector<double> ref, mag;
};

Case make_case(std::mt19937& rng, int64_t rows, int64_t cols, int64_t n) {
  Case c;
  auto wf = testing::random_floats(rng, rows * cols);
  c.w.resize(wf.size());
  for (size_t i = 0; i < wf.size(); ++i) c.w[i] = detail::f32_to_bf16(wf[i]);
  c.x = testing::random_floats(rng, n * cols, -3.0f, 3.0f);  // full fp32 mantissas: lo parts matter
  c.ref.assign(n * rows, 0);
  c.mag.assign(n * rows, 0);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < cols; ++k) {
        const double p = static_cast<double>(detail::bf16_to_f32(c.w[r * cols + k])) * c.x[j * cols + k];
        c.ref[j * rows + r] += p;
        c.mag[j * rows + r] += std::fabs(p);
      }
  return c;
}

std::vector<float> run(const Case& c, int64_t rows, int64_t cols, int64_t n) {
  DenseMatrix m = dense_view(WType::BF16, c.w.data(), rows, cols);
  std::vector<float> y(n * rows, -1.0f);
  matmul(m, c.x.data(), n, y.data());
  return y;
}

const std::pair<int64_t, int64_t> kShapes[] = {{1, 1}, {3, 31}, {13, 70}, {9, 33}, {40, 257}, {17, 1030}, {70, 95}};
const int64_t kNs[] = {1, 2, 5, 16, 33};

std::vector<std::string> split_paths() {
  std::vector<std::string> p{"scalar"};
  if (cpu_features().has_avx512_path()) p.push_back("avx512");
  return p;
}

TEST(Bf16Kernels, SplitsMatchDoubleReferenceAndScalarTwin) {
  for (const std::string& path : split_paths())
    for (Bf16Kernel k : {Bf16Kernel::kSplit3, Bf16Kernel::kSplit}) {
      std::mt19937 rng(11);
      for (auto [rows, cols] : kShapes)
        for (int64_t n : kNs) {
          Case c = make_case(rng, rows, cols, n);
          std::vector<float> simd, twin;
          {
            PathGuard g(path);
            OptionsGuard o(forced(k));
            ASSERT_EQ(bf16_kernel_for(n), k);
            simd = run(c, rows, cols, n);
          }
          {
            PathGuard g("scalar");
            OptionsGuard o(forced(k));
            twin = run(c, rows, cols, n);
          }
          const std::string what = qinfer::cat(path, " ", bf16_kernel_name(k), " ", rows, "x", cols, " n=", n);
          // split3: as tight as the widening kernels' test (kernels_dense_test.cc);
          // split: hi + lo keep 16 mantissa bits, 2^-18 relative per activation.
          const double tol = k == Bf16Kernel::kSplit3 ? 2e-6 : 2e-5;
          testing::expect_close(simd, c.ref, c.mag, tol, what);
          std::vector<double> twin_d(twin.begin(), twin.end());
          testing::expect_close(simd, twin_d, c.mag, tol, what + " vs scalar twin");
        }
    }
}

// Relative L2 error of one kernel on the scalar path against the double reference.
double rel_error(const Case& c, int64_t rows, int64_t cols, int64_t n, KernelOptions k) {
  OptionsGuard o(k);
  const std::vector<float> y = run(c, rows, cols, n);
  double e = 0, den = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    e += (y[i] - c.ref[i]) * (y[i] - c.ref[i]);
    den += c.ref[i] * c.ref[i];
  }
  return std::sqrt(e / den);
}

TEST(Bf16Kernels, ErrorsOrderedAsDocumented) {
  std::mt19937 rng(5);
  const int64_t rows = 64, cols = 512, n = 2;
  Case c = make_case(rng, rows, cols, n);
  PathGuard g("scalar");
  KernelOptions rounded;
  rounded.bf16_dot = true;
  const double e3 = rel_error(c, rows, cols, n, forced(Bf16Kernel::kSplit3));
  const double e2 = rel_error(c, rows, cols, n, forced(Bf16Kernel::kSplit));
  const double e1 = rel_error(c, rows, cols, n, rounded);
  std::cout << "relative L2 error: split3 " << e3 << ", split " << e2 << ", bf16-rounded " << e1 << "\n";
  EXPECT_LT(e3, 1e-7);
  EXPECT_LT(e2, 1e-5);
  EXPECT_GT(e2, 10 * e3);  // the third part really is used
  EXPECT_GT(e1, 1e-4);     // the opt-in really rounds
}

TEST(Bf16Kernels, EveryForcedKernelAgreesWithTheReference) {
  for (const std::string& path : testing::available_paths()) {
    PathGuard g(path);
    for (Bf16Kernel k : {Bf16Kernel::kWiden, Bf16Kernel::kWiden256, Bf16Kernel::kSplit3, Bf16Kernel::kSplit}) {
      OptionsGuard o(forced(k));
      const bool split = k == Bf16Kernel::kSplit || k == Bf16Kernel::kSplit3;
      const bool has = k == Bf16Kernel::kWiden || (split && path != "avx2") ||
                       (k == Bf16Kernel::kWiden256 && path == "avx512");
      if (!has) {
        try {
          bf16_kernel_for(1);
          ADD_FAILURE() << "forcing " << bf16_kernel_name(k) << " on " << path << " did not fail";
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find(bf16_kernel_name(k)), std::string::npos) << e.what();
          EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
        }
        continue;
      }
      EXPECT_EQ(bf16_kernel_for(1), k);
      EXPECT_EQ(bf16_kernel_for(64), k);
      std::mt19937 rng(3);
      for (int64_t n : {1, 20}) {
        Case c = make_case(rng, 37, 129, n);
        // Through matmul_batch too (BF16 dot-product kernels leave its shared pass).
        DenseMatrix m = dense_view(WType::BF16, c.w.data(), 37, 129);
        std::vector<float> y(n * 37);
        BatchProduct item;
        item.dense = &m;
        item.X = c.x.data();
        item.n = n;
        item.Y = y.data();
        matmul_batch(&item, 1);
        testing::expect_close(y, c.ref, c.mag, 2e-5, qinfer::cat(path, " ", bf16_kernel_name(k), " n=", n));
      }
    }
  }
}

TEST(Bf16Kernels, OptionsParse) {
  EXPECT_EQ(parse_kernel_options(nullptr).bf16, Bf16Kernel::kProbe);
  EXPECT_FALSE(parse_kernel_options("").bf16_dot);
  EXPECT_EQ(parse_kernel_options("bf16_split").bf16, Bf16Kernel::kSplit);
  EXPECT_EQ(parse_kernel_options("bf16_split3").bf16, Bf16Kernel::kSplit3);
  EXPECT_EQ(parse_kernel_options("bf16_widen").bf16, Bf16Kernel::kWiden);
  KernelOptions o = parse_kernel_options("bf16_dot,bf16_widen256");
  EXPECT_TRUE(o.bf16_dot);
  EXPECT_EQ(o.bf16, Bf16Kernel::kWiden256);
  try {
    parse_kernel_options("bf16_split,fast");
    ADD_FAILURE() << "unknown option accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'fast'"), std::string::npos) << e.what();
  }
}

TEST(Bf16Kernels, ProbeChoosesAnAvailableKernelQuickly) {
  for (const std::string& path : testing::available_paths()) {
    PathGuard g(path);
    const auto t0 = std::chrono::steady_clock::now();
    const Bf16Kernel d = bf16_kernel_for(1), p = bf16_kernel_for(64);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cout << path << ": decode " << bf16_kernel_name(d) << ", panels " << bf16_kernel_name(p) << " (" << s
              << " s)\n";
    EXPECT_LT(s, 1.0) << path;
    for (Bf16Kernel k : {d, p}) {
      EXPECT_NE(k, Bf16Kernel::kProbe);
      EXPECT_NE(k, Bf16Kernel::kSplit);  // less exact than fp32: forced only
      if (path == "avx2") EXPECT_EQ(k, Bf16Kernel::kWiden);
      if (path != "avx512") EXPECT_NE(k, Bf16Kernel::kWiden256);
    }
    EXPECT_EQ(bf16_kernel_for(2), d);  // decided once, then kept
  }
}

}  // namespace
}  // namespace qinfer::ops
