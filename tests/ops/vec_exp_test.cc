// vexp on every path this CPU runs: error in ulps against double-precision exp
// over the whole normal-output range, and the special inputs.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <string>
#include <vector>

#include "ops/seq_kernel_table.h"
#include "ops/vec_math.h"
#include "util/error.h"

namespace qinfer::ops {
namespace {

// |got - want| in units of the float spacing at want.
double ulps(float got, double want) {
  int e;
  std::frexp(want, &e);
  const double ulp = std::ldexp(1.0, std::max(e - 24, -149));
  return std::fabs(double(got) - want) / ulp;
}

TEST(VecExp, WithinFewUlpOverTheRange) {
  std::vector<float> x;
  for (double v = -87.3; v <= 88.37; v += 0.000731) x.push_back(static_cast<float>(v));
  x.push_back(0.0f);
  x.push_back(-0.0f);
  x.push_back(1e-30f);
  x.push_back(88.0f);
  x.push_back(-87.33f);
  if (x.size() % 16 == 0) x.push_back(0.5f);
  ASSERT_NE(x.size() % 16, 0u);   // a tail on every vector width
  for (const std::string& path : detail::seq_kernel_paths()) {
    std::vector<float> y(x.size());
    detail::seq_kernels_for(path)->vexp(x.data(), static_cast<int64_t>(x.size()), y.data());
    double worst = 0;
    float at = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double u = ulps(y[i], std::exp(double(x[i])));
      if (!(u <= worst)) worst = u, at = x[i];
    }
    EXPECT_LE(worst, 3.0) << path << ": worst at x = " << at;
    std::printf("[ info ] vexp %s: max error %.2f ulp (at x = %g) over %zu inputs\n", path.c_str(), worst, at, x.size());
  }
}

TEST(VecExp, SpecialInputs) {
  const float in[] = {-INFINITY, -1000.0f, -100.0f, -88.0f, 0.0f, 1.0f, -1.0f, 88.0f, NAN, -87.0f, -50.0f};
  const int64_t n = sizeof(in) / sizeof(in[0]);
  for (const std::string& path : detail::seq_kernel_paths()) {
    std::vector<float> y(n, 123.0f);
    detail::seq_kernels_for(path)->vexp(in, n, y.data());
    EXPECT_EQ(y[0], 0.0f) << path;
    EXPECT_EQ(y[1], 0.0f) << path;
    EXPECT_LE(y[2], FLT_MIN) << path;   // 0 on the SIMD paths, a subnormal from std::exp
    EXPECT_GE(y[2], 0.0f) << path;
    EXPECT_LE(y[3], FLT_MIN) << path;
    EXPECT_GE(y[3], 0.0f) << path;
    EXPECT_EQ(y[4], 1.0f) << path;
    EXPECT_LE(ulps(y[5], std::exp(1.0)), 2.0) << path;
    EXPECT_LE(ulps(y[6], std::exp(-1.0)), 2.0) << path;
    EXPECT_LE(ulps(y[7], std::exp(88.0)), 3.0) << path;
    EXPECT_TRUE(std::isnan(y[8])) << path;
    EXPECT_LE(ulps(y[9], std::exp(-87.0)), 3.0) << path;
    EXPECT_LE(ulps(y[10], std::exp(-50.0)), 3.0) << path;
  }
}

TEST(VecExp, InPlaceAndArgumentChecks) {
  std::vector<float> x = {0.5f, -2.0f, 3.0f};
  vexp(x.data(), 3, x.data());
  EXPECT_NEAR(x[0], std::exp(0.5), 1e-6);
  EXPECT_NEAR(x[1], std::exp(-2.0), 1e-7);
  EXPECT_NEAR(x[2], std::exp(3.0), 1e-5);
  EXPECT_THROW(vexp(x.data(), -1, x.data()), Error);
  EXPECT_THROW(vexp(nullptr, 2, x.data()), Error);
}

}  // namespace
}  // namespace qinfer::ops
