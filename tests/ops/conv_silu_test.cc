// One token of the causal depthwise conv + SiLU: every path this CPU runs
// against the scalar twin and a double-precision evaluation, on channel ranges
// that are not multiples of the vector width.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "ops/conv_silu.h"
#include "ops/seq_kernel_table.h"
#include "util/error.h"

namespace qinfer::ops {
namespace {

TEST(ConvSilu, EveryPathMatchesReference) {
  const int64_t K = 4, conv_dim = 1037;
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  std::vector<float> w(K * conv_dim), xs(K * conv_dim);
  for (auto& v : w) v = nd(rng);
  for (auto& v : xs) v = nd(rng);
  xs[5] = 60.0f;     // large pre-activations both ways
  xs[conv_dim + 6] = -60.0f;
  std::vector<const float*> rows;
  for (int64_t j = 0; j < K; ++j) rows.push_back(xs.data() + j * conv_dim);
  for (const std::string& path : detail::seq_kernel_paths()) {
    for (auto [c0, c1] : {std::pair<int64_t, int64_t>{0, conv_dim}, {3, 20}, {17, 18}, {512, 1037}, {9, 9}}) {
      std::vector<float> o(conv_dim, 7.0f);
      detail::seq_kernels_for(path)->conv_silu(rows.data(), K, w.data(), conv_dim, c0, c1, o.data());
      for (int64_t c = 0; c < conv_dim; ++c) {
        if (c < c0 || c >= c1) {
          ASSERT_EQ(o[c], 7.0f) << path << ": channel " << c << " outside [" << c0 << ", " << c1 << ") written";
          continue;
        }
        double a = 0;
        for (int64_t j = 0; j < K; ++j) a += double(w[j * conv_dim + c]) * rows[j][c];
        const double want = a / (1.0 + std::exp(-a));
        ASSERT_NEAR(o[c], want, 1e-5 * (1.0 + std::fabs(want))) << path << ": channel " << c;
      }
    }
  }
}

TEST(ConvSilu, BadArgumentsThrow) {
  std::vector<float> w(8), x(8), o(8);
  const float* rows[2] = {x.data(), x.data()};
  EXPECT_THROW(conv_silu(rows, 2, w.data(), 4, 0, 5, o.data()), Error);
  EXPECT_THROW(conv_silu(rows, 0, w.data(), 4, 0, 4, o.data()), Error);
  EXPECT_THROW(conv_silu(rows, 2, nullptr, 4, 0, 4, o.data()), Error);
  EXPECT_NO_THROW(conv_silu(rows, 2, w.data(), 4, 1, 3, o.data()));
}

}  // namespace
}  // namespace qinfer::ops
