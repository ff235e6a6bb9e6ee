// The exact BF16 dense kernels (widen and its decode variants, widen256, split3, split, amx) and their choice: splits
// against a double reference and against its scalar twin on awkward sizes,
// options forcing a kernel (and refusing one the path lacks), the start-up probe.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include "kernels_test_util.h"
#include "ops/matmul_table.h"
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

// One kernel forced on one path, on every awkward shape and activation count,
// against the double reference and against `other` (a second path + kernel).
using Shapes = std::vector<std::pair<int64_t, int64_t>>;
void check_against(const std::string& path, Bf16Kernel k, const std::string& other_path, Bf16Kernel other,
                   double tol, const std::vector<int64_t>& ns,
                   const Shapes& shapes = Shapes(std::begin(kShapes), std::end(kShapes))) {
  std::mt19937 rng(11);
  for (auto [rows, cols] : shapes)
    for (int64_t n : ns) {
      Case c = make_case(rng, rows, cols, n);
      std::vector<float> got, want;
      {
        PathGuard g(path);
        OptionsGuard o(forced(k));
        ASSERT_EQ(bf16_kernel_for(n), k);
        got = run(c, rows, cols, n);
      }
      {
        PathGuard g(other_path);
        OptionsGuard o(forced(other));
        want = run(c, rows, cols, n);
      }
      const std::string what = qinfer::cat(path, " ", bf16_kernel_name(k), " ", rows, "x", cols, " n=", n);
      testing::expect_close(got, c.ref, c.mag, tol, what);
      std::vector<double> want_d(want.begin(), want.end());
      testing::expect_close(got, want_d, c.mag, tol,
                            qinfer::cat(what, " vs ", other_path, " ", bf16_kernel_name(other)));
    }
}

const std::vector<int64_t> kAllNs(std::begin(kNs), std::end(kNs));
// split3: as tight as the widening kernels' test (kernels_dense_test.cc);
// split: hi + lo keep 16 mantissa bits, 2^-18 relative per activation.
double split_tol(Bf16Kernel k) { return k == Bf16Kernel::kSplit3 ? 2e-6 : 2e-5; }

// The scalar twins of split3 / split against the scalar widening kernel (fp32
// weights x fp32 activations in double: the reference every path is held to).
TEST(Bf16Kernels, ScalarSplitTwinsMatchTheWideningReference) {
  for (Bf16Kernel k : {Bf16Kernel::kSplit3, Bf16Kernel::kSplit})
    check_against("scalar", k, "scalar", Bf16Kernel::kWiden, split_tol(k), kAllNs);
}

// The vdpbf16ps splits against their scalar twins (needs AVX-512 BF16).
TEST(Bf16Kernels, Avx512SplitsMatchTheirScalarTwins) {
  if (!cpu_features().has_avx512_path())
    GTEST_SKIP() << "split3/split run vdpbf16ps on the avx512 path, which this CPU lacks (" << cpu_features().describe()
                 << "); their scalar twins are tested in ScalarSplitTwinsMatchTheWideningReference";
  for (Bf16Kernel k : {Bf16Kernel::kSplit3, Bf16Kernel::kSplit})
    check_against("avx512", k, "scalar", k, split_tol(k), kAllNs);
}

// The decode-only widening variants (prefetch hints, row tiles) on each SIMD
// path against the scalar widening kernel; n > 1 runs plain widen.
// The AMX kernel against its scalar twin (the scalar split3: the same three bf16
// parts, another summation order): rows that are not whole 16- or 32-row blocks,
// activation counts around the 16-row token blocks, widths of whole 32-column
// blocks (the tiles' unit) and others (which widen instead).
TEST(Bf16Kernels, AmxMatchesItsScalarTwin) {
  if (!cpu_features().has_avx512_path() || !cpu_features().amx_bf16)
    GTEST_SKIP() << "the amx kernel needs AMX-BF16 granted by the kernel, which this CPU lacks ("
                 << cpu_features().describe() << ")";
  const Shapes shapes = {{1, 32}, {13, 64}, {16, 96}, {17, 32}, {31, 160}, {33, 1024}, {70, 256}, {9, 33}, {40, 257}};
  check_against("avx512", Bf16Kernel::kAmx, "scalar", Bf16Kernel::kSplit3, 2e-6, {1, 2, 15, 16, 17, 33, 40}, shapes);
}

TEST(Bf16Kernels, WideningVariantsMatchTheScalarWidening) {
  int paths = 0;
  for (const std::string& path : testing::available_paths()) {
    if (path == "scalar") continue;
    ++paths;
    for (Bf16Kernel k : {Bf16Kernel::kWiden, Bf16Kernel::kWidenT0, Bf16Kernel::kWidenNoPf, Bf16Kernel::kWidenTiled})
      check_against(path, k, "scalar", Bf16Kernel::kWiden, 2e-6, {1, 2, 17});
  }
  if (paths == 0) GTEST_SKIP() << "no SIMD kernel path on this CPU (" << cpu_features().describe() << ")";
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
    const std::vector<Bf16Kernel> avail = bf16_kernels_available();
    for (Bf16Kernel k : {Bf16Kernel::kWiden, Bf16Kernel::kWidenT0, Bf16Kernel::kWidenNoPf, Bf16Kernel::kWidenTiled,
                         Bf16Kernel::kWiden256, Bf16Kernel::kSplit3, Bf16Kernel::kSplit, Bf16Kernel::kAmx}) {
      OptionsGuard o(forced(k));
      const bool split = k == Bf16Kernel::kSplit || k == Bf16Kernel::kSplit3;
      const bool variant = k == Bf16Kernel::kWidenT0 || k == Bf16Kernel::kWidenNoPf || k == Bf16Kernel::kWidenTiled;
      const bool has = k == Bf16Kernel::kWiden || (split && path != "avx2") || (variant && path != "scalar") ||
                       (k == Bf16Kernel::kWiden256 && path == "avx512") ||
                       (k == Bf16Kernel::kAmx && path == "avx512" && cpu_features().amx_bf16);
      EXPECT_EQ(has, std::find(avail.begin(), avail.end(), k) != avail.end()) << path << " " << bf16_kernel_name(k);
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
      for (auto [n, cols] : {std::pair<int64_t, int64_t>{1, 129}, {20, 129}, {20, 128}}) {
        Case c = make_case(rng, 37, cols, n);
        // Through matmul_batch too (BF16 dot-product kernels leave its shared pass).
        DenseMatrix m = dense_view(WType::BF16, c.w.data(), 37, cols);
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
  EXPECT_EQ(parse_kernel_options("bf16_widen_t0").bf16, Bf16Kernel::kWidenT0);
  EXPECT_EQ(parse_kernel_options("bf16_widen_nopf").bf16, Bf16Kernel::kWidenNoPf);
  EXPECT_EQ(parse_kernel_options("bf16_widen_tiled").bf16, Bf16Kernel::kWidenTiled);
  EXPECT_EQ(parse_kernel_options("bf16_amx").bf16, Bf16Kernel::kAmx);
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
    const ProbeTime before = kernel_probe_time();
    const auto t0 = std::chrono::steady_clock::now();
    const Bf16Kernel d = bf16_kernel_for(1), p = bf16_kernel_for(64);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // The probes' own clock (qinfer bench prints it) saw them, inside the wall time.
    const ProbeTime after = kernel_probe_time();
    EXPECT_GT(after.count, before.count) << path;
    EXPECT_GT(after.seconds, before.seconds) << path;
    EXPECT_LE(after.seconds - before.seconds, s + 1e-3) << path;
    std::cout << path << ": decode " << bf16_kernel_name(d) << ", panels " << bf16_kernel_name(p) << " (" << s
              << " s)\n";
    EXPECT_LT(s, testing::kProbeRunawaySeconds) << path;
    const std::vector<Bf16Kernel> avail = bf16_kernels_available();
    for (Bf16Kernel k : {d, p}) {
      EXPECT_NE(k, Bf16Kernel::kProbe);
      EXPECT_NE(k, Bf16Kernel::kSplit);  // less exact than fp32: forced only
      EXPECT_NE(std::find(avail.begin(), avail.end(), k), avail.end()) << path << " " << bf16_kernel_name(k);
      if (path == "avx2") {
        EXPECT_NE(k, Bf16Kernel::kSplit3);
      }
      if (path != "avx512") {
        EXPECT_NE(k, Bf16Kernel::kWiden256);
      }
    }
    // The decode-only variants never serve panels, AMX never serves decode.
    EXPECT_TRUE(p == Bf16Kernel::kWiden || p == Bf16Kernel::kWiden256 || p == Bf16Kernel::kSplit3 ||
                p == Bf16Kernel::kAmx)
        << bf16_kernel_name(p);
    EXPECT_NE(d, Bf16Kernel::kAmx);
    EXPECT_EQ(bf16_kernel_for(2), d);  // decided once, then kept
  }
}

}  // namespace
}  // namespace qinfer::ops
