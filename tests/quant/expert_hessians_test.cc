// ExpertHessians (Σ xᵀx per expert folded in blocks with ops::matmul, fp32)
// against a double-precision sum written here, with uneven row chunks so the
// fold boundaries fall inside calls.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "quant/expert_hessians.h"

namespace qinfer::quant {
namespace {

TEST(ExpertHessians, MatchesDoubleSumPerExpert) {
  const int64_t E = 5, K = 72, first = 1, last = 4;
  ExpertHessians hs(ExpertHessians::Input::kGateUp, E, K, first, last, /*block_rows=*/64);
  std::mt19937 rng(3);
  std::normal_distribution<float> nd;
  std::vector<std::vector<double>> want(E, std::vector<double>(K * K, 0.0));
  std::vector<int64_t> rows(E, 0);
  const int64_t chunks[] = {1, 63, 130, 7, 64, 200};
  for (int round = 0; round < 2; ++round)
    for (int64_t e = 0; e < E; ++e)
      for (int64_t n : chunks) {
        if ((e + n) % 3 == 0) continue;   // experts see different amounts
        std::vector<float> X(n * K);
        for (int64_t r = 0; r < n; ++r)
          for (int64_t k = 0; k < K; ++k) X[r * K + k] = nd(rng) * (1.0f + static_cast<float>(k % 5));
        hs.gate_up_input(e, X.data(), n);
        hs.down_input(e, X.data(), n);   // the other subset's inputs: ignored
        rows[e] += n;
        for (int64_t r = 0; r < n; ++r)
          for (int64_t i = 0; i < K; ++i)
            for (int64_t j = 0; j < K; ++j) want[e][i * K + j] += static_cast<double>(X[r * K + i]) * X[r * K + j];
      }
  hs.finish();
  for (int64_t e = 0; e < E; ++e) EXPECT_EQ(hs.rows(e), rows[e]) << e;
  for (int64_t e = first; e < last; ++e) {
    double worst = 0;
    for (int64_t i = 0; i < K; ++i)
      for (int64_t j = 0; j < K; ++j) {
        const double scale = std::sqrt(want[e][i * K + i] * want[e][j * K + j]);   // Cauchy-Schwarz bound
        worst = std::max(worst, std::fabs(hs.S(e)[i * K + j] - want[e][i * K + j]) / scale);
      }
    EXPECT_LE(worst, 1e-5) << "expert " << e;
  }
}

}  // namespace
}  // namespace qinfer::quant
