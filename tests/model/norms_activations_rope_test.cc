// The fp32 helper ops of src/ops/norms_activations_rope.h against direct double-precision formulas.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "ops/norms_activations_rope.h"

namespace qinfer::ops {
namespace {

std::vector<float> randv(int n, int seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = nd(rng);
  return v;
}

TEST(NnOps, Norms) {
  const int n = 37;
  auto x = randv(n, 1), w = randv(n, 2), z = randv(n, 3);
  double ss = 0;
  for (float v : x) ss += double(v) * v;
  const double r = 1.0 / std::sqrt(ss / n + 1e-6);
  std::vector<float> y(n), yz(n), yg(n), yl(n), yw = w;
  rmsnorm(x.data(), w.data(), n, 1e-6f, y.data());
  rmsnorm_zc(x.data(), w.data(), n, 1e-6f, yz.data());
  rmsnorm_gated(x.data(), z.data(), w.data(), n, 1e-6f, yg.data());
  l2norm(x.data(), n, 1e-6f, 0.5f, yl.data());
  add_one(yw.data(), n);
  for (int i = 0; i < n; ++i) {
    EXPECT_NEAR(y[i], x[i] * r * w[i], 1e-5);
    EXPECT_NEAR(yz[i], x[i] * r * (1.0 + w[i]), 1e-5);
    EXPECT_NEAR(yg[i], x[i] * r * w[i] * (z[i] / (1.0 + std::exp(-double(z[i])))), 1e-5);
    EXPECT_NEAR(yl[i], 0.5 * x[i] / std::sqrt(ss + 1e-6), 1e-6);
    EXPECT_FLOAT_EQ(yw[i], 1.0f + w[i]);
  }
  // In place.
  std::vector<float> xi = x;
  rmsnorm(xi.data(), w.data(), n, 1e-6f, xi.data());
  EXPECT_EQ(xi, y);
  EXPECT_NEAR(dot(x.data(), w.data(), n), [&] {
    double s = 0;
    for (int i = 0; i < n; ++i) s += double(x[i]) * w[i];
    return s;
  }(), 1e-4);
}

TEST(NnOps, ActivationsAndSoftmax) {
  EXPECT_FLOAT_EQ(softplus(25.0f), 25.0f);   // PyTorch threshold 20
  EXPECT_NEAR(softplus(0.0f), std::log(2.0), 1e-7);
  EXPECT_NEAR(softplus(-30.0f), std::exp(-30.0), 1e-18);
  EXPECT_NEAR(sigmoid(0.3f), 1.0 / (1.0 + std::exp(-0.3)), 1e-7);
  EXPECT_NEAR(silu(-1.5f), -1.5 / (1.0 + std::exp(1.5)), 1e-7);
  std::vector<float> s = {1000.0f, 1001.0f, 999.0f};   // max-subtracted: no overflow
  softmax(s.data(), 3);
  const double e = std::exp(1.0), d = 1 + e + 1 / e;
  EXPECT_NEAR(s[1], e / d, 1e-6);
  EXPECT_NEAR(s[0] + s[1] + s[2], 1.0, 1e-6);
  std::vector<float> g = {1.0f, -2.0f}, u = {3.0f, 4.0f}, o(2);
  swiglu(g.data(), u.data(), 2, o.data());
  EXPECT_NEAR(o[1], silu(-2.0f) * 4.0f, 1e-6);
}

TEST(NnOps, RotateHalfPairsFWithFPlusHalf) {
  const int rd = 8, hd = 12;
  auto x = randv(hd, 4);
  std::vector<float> inv(rd / 2), c(rd / 2), s(rd / 2);
  rope_inv_freq(1e7, rd, inv.data());
  EXPECT_FLOAT_EQ(inv[0], 1.0f);
  EXPECT_NEAR(inv[1], std::pow(1e7, -2.0 / rd), 1e-9);
  const int64_t pos[3] = {5, 5, 5};
  const int section[3] = {2, 1, 1};
  mrope_cos_sin(pos, inv.data(), rd / 2, section, 3, c.data(), s.data());
  auto y = x;
  rope_rotate_half(y.data(), c.data(), s.data(), rd);
  for (int f = 0; f < rd / 2; ++f) {
    const double a = 5.0 * inv[f];
    EXPECT_NEAR(y[f], x[f] * std::cos(a) - x[f + rd / 2] * std::sin(a), 1e-5);
    EXPECT_NEAR(y[f + rd / 2], x[f + rd / 2] * std::cos(a) + x[f] * std::sin(a), 1e-5);
  }
  for (int i = rd; i < hd; ++i) EXPECT_EQ(y[i], x[i]);   // beyond the rotary dims: untouched
}

TEST(NnOps, MropeInterleavedAxes) {
  // 32 frequencies, sections [11, 11, 10]: f%3==1 (f<33) -> height, f%3==2 (f<30) -> width.
  std::vector<float> inv(32, 1.0f), c(32), s(32);
  const int64_t pos[3] = {100, 200, 300};
  const int section[3] = {11, 11, 10};
  mrope_cos_sin(pos, inv.data(), 32, section, 3, c.data(), s.data());
  for (int f = 0; f < 32; ++f) {
    const int64_t want = (f % 3 == 1 && f < 33) ? 200 : (f % 3 == 2 && f < 30) ? 300 : 100;
    EXPECT_FLOAT_EQ(s[f], std::sin(static_cast<float>(want))) << f;
  }
}

}  // namespace
}  // namespace qinfer::ops
