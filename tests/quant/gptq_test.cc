// Each GPTQ step against a plain double-precision implementation written here,
// and the spec's worked examples (shared/spec/gptq.md §1.6, §4.5.3, §4.5.5).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>

#include "quant/gptq.h"
#include "util/error.h"

namespace qinfer::quant {
namespace {

TEST(FindParams, SpecExamples) {
  QuantSpec s;
  const float a[4] = {0.9375f, -0.5f, 0.2f, -0.05f};
  GroupParams p = find_params(a, 4, s);
  EXPECT_FLOAT_EQ(p.scale, 0.125f);
  EXPECT_EQ(p.zero, 8.0f);
  const int want_a[4] = {15, 4, 10, 8};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(quantize_code(a[i], p, 15), want_a[i]) << i;
  // All non-negative: xmin stays 0, scale = xmax / 15, the top clips at 7 steps.
  const float b[4] = {0.3f, 0.1f, 0.2f, 0.0f};
  p = find_params(b, 4, s);
  EXPECT_FLOAT_EQ(p.scale, 0.3f / 15.0f);
  const int want_b[4] = {15, 13, 15, 8};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(quantize_code(b[i], p, 15), want_b[i]) << i;
  // All zero: the range becomes [-1, 1].
  const float z[3] = {0, 0, 0};
  p = find_params(z, 3, s);
  EXPECT_FLOAT_EQ(p.scale, 2.0f / 15.0f);
  // Asymmetric: zero = round(-xmin / scale).
  s.sym = false;
  const float c[4] = {-0.1f, 0.5f, 0.2f, 0.4f};
  p = find_params(c, 4, s);
  EXPECT_FLOAT_EQ(p.scale, 0.6f / 15.0f);
  EXPECT_EQ(p.zero, std::nearbyint(0.1f / (0.6f / 15.0f)));
}

TEST(FindParams, RoundsHalfToEven) {
  QuantSpec s;
  GroupParams p{1.0f, 8.0f};
  EXPECT_EQ(quantize_code(0.5f, p, 15), 8);    // 0.5 -> 0
  EXPECT_EQ(quantize_code(1.5f, p, 15), 10);   // 1.5 -> 2
  EXPECT_EQ(quantize_code(-2.5f, p, 15), 6);   // -2.5 -> -2
  EXPECT_EQ(quantize_code(100.0f, p, 15), 15);
  EXPECT_EQ(quantize_code(-100.0f, p, 15), 0);
  (void)s;
}

TEST(Gar, SpecExample) {
  const float d[8] = {.1f, .9f, .3f, .2f, 2.0f, .05f, .4f, .7f};
  std::vector<int> order;
  std::vector<int> perm = gar_permutation(d, 8, 4, &order);
  EXPECT_EQ(perm, (std::vector<int>{4, 7, 6, 5, 1, 2, 3, 0}));
  EXPECT_EQ(order, (std::vector<int>{1, 0}));
}

// Random SPD-ish matrices: S = Σ xᵀx over correlated rows.
std::vector<float> random_S(int64_t K, int64_t n, uint32_t seed, std::vector<float>* X = nullptr) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd;
  std::vector<float> mix(K * K), x(n * K);
  for (auto& v : mix) v = nd(rng);
  for (int64_t r = 0; r < n; ++r) {
    std::vector<float> z(K);
    for (auto& v : z) v = nd(rng);
    for (int64_t k = 0; k < K; ++k) {
      double t = 0;
      for (int64_t j = 0; j < std::min<int64_t>(K, 6); ++j) t += mix[k * K + (k + j) % K] * z[(k + j) % K];
      x[r * K + k] = static_cast<float>(t * (1.0 + (k % 7)));   // correlated, uneven scales
    }
  }
  std::vector<float> S(K * K, 0.0f);
  for (int64_t i = 0; i < K; ++i)
    for (int64_t j = 0; j < K; ++j) {
      double t = 0;
      for (int64_t r = 0; r < n; ++r) t += static_cast<double>(x[r * K + i]) * x[r * K + j];
      S[i * K + j] = static_cast<float>(t);
    }
  if (X) *X = x;
  return S;
}

// Plain Gauss-Jordan inverse in double.
std::vector<double> inverse(std::vector<double> A, int64_t K) {
  std::vector<double> B(K * K, 0.0);
  for (int64_t i = 0; i < K; ++i) B[i * K + i] = 1.0;
  for (int64_t c = 0; c < K; ++c) {
    int64_t p = c;
    for (int64_t r = c + 1; r < K; ++r)
      if (std::fabs(A[r * K + c]) > std::fabs(A[p * K + c])) p = r;
    for (int64_t j = 0; j < K; ++j) {
      std::swap(A[c * K + j], A[p * K + j]);
      std::swap(B[c * K + j], B[p * K + j]);
    }
    const double d = A[c * K + c];
    for (int64_t j = 0; j < K; ++j) {
      A[c * K + j] /= d;
      B[c * K + j] /= d;
    }
    for (int64_t r = 0; r < K; ++r) {
      if (r == c) continue;
      const double f = A[r * K + c];
      for (int64_t j = 0; j < K; ++j) {
        A[r * K + j] -= f * A[c * K + j];
        B[r * K + j] -= f * B[c * K + j];
      }
    }
  }
  return B;
}

TEST(HessianInverse, UpperFactorOfDampedInverse) {
  const int64_t K = 40;
  std::vector<float> S = random_S(K, 100, 3);
  std::vector<double> H(K * K);
  for (int64_t i = 0; i < K * K; ++i) H[i] = 2.0 * S[i] / 100.0;
  QuantSpec s;
  std::vector<float> U;
  double damp = 0;
  ASSERT_TRUE(inverse_hessian_factor(H, K, s, &U, &damp));
  EXPECT_DOUBLE_EQ(damp, 0.05);
  double mean = 0;
  for (int64_t k = 0; k < K; ++k) mean += H[k * K + k] / K;
  std::vector<double> A(H);
  for (int64_t k = 0; k < K; ++k) A[k * K + k] += 0.05 * mean;
  const std::vector<double> Ainv = inverse(A, K);
  double maxabs = 0;
  for (double v : Ainv) maxabs = std::max(maxabs, std::fabs(v));
  for (int64_t i = 0; i < K; ++i)
    for (int64_t j = 0; j < K; ++j) {
      if (j < i) {
        EXPECT_EQ(U[i * K + j], 0.0f);
      }
      if (i == j) {
        EXPECT_GT(U[i * K + j], 0.0f);
      }
      double t = 0;   // (UᵀU)[i][j]
      for (int64_t k = 0; k < K; ++k) t += static_cast<double>(U[k * K + i]) * U[k * K + j];
      EXPECT_NEAR(t, Ainv[i * K + j], 1e-5 * maxabs) << i << "," << j;
    }
}

// The damp that factors a 2x2 matrix (U filled), or -1 when none does.
double damp_of_2x2(const std::vector<double>& H, const QuantSpec& s, std::vector<float>* U) {
  double damp = 0;
  return inverse_hessian_factor(H, 2, s, U, &damp) ? damp : -1.0;
}

TEST(HessianInverse, DampLadderOnIndefiniteMatrix) {
  // diag (1, -0.1), mean 0.45: positive only from damp > 0.2222 on.
  QuantSpec s;
  std::vector<float> U;
  const double damp = damp_of_2x2({1.0, 0.0, 0.0, -0.1}, s, &U);
  ASSERT_NEAR(damp, 0.23, 1e-9);
  EXPECT_NEAR(U[3] * U[3], 1.0 / (-0.1 + damp * 0.45), 1e-4);
  // Without the ladder the floor rounds do not reach a negative diagonal... but a
  // matrix with a NaN never factors: the caller then rounds without feedback.
  EXPECT_EQ(damp_of_2x2({NAN, 0.0, 0.0, 1.0}, s, &U), -1.0);
}

TEST(HessianInverse, DiagonalFloorWhenNoDampWorks) {
  // diag (1, -0.9), mean 0.05: no damp below 1 makes it positive. The first floor
  // round (f = 1e-6 · max|diag|) sets the diagonal to max(d + f, f) = (1 + 1e-6, 1e-6),
  // and the ladder then succeeds at its first damp on the floored diagonal's mean.
  const std::vector<double> H = {1.0, 0.0, 0.0, -0.9};
  QuantSpec s;
  std::vector<float> U;
  ASSERT_DOUBLE_EQ(damp_of_2x2(H, s, &U), 0.05);
  const double mean = (1.0 + 1e-6 + 1e-6) / 2;
  EXPECT_NEAR(U[3] * U[3], 1.0 / (1e-6 + 0.05 * mean), 1e-4 / (1e-6 + 0.05 * mean));
  EXPECT_NEAR(U[0] * U[0], 1.0 / (1.0 + 1e-6 + 0.05 * mean), 1e-6);
  // Without damp increments the ladder stops at its first damp, the floors still apply.
  s.damp_auto_increment = 0.0;
  EXPECT_DOUBLE_EQ(damp_of_2x2(H, s, &U), 0.05);
}

// The GPTQ column loop written out plainly in double: the full inverse Hessian,
// each column's error spread over every later column at once (no blocks), and
// the group parameters taken from the weights as they stood at the start of
// each 128-column block (what GPTQModel's blocked loop does).
struct RefResult {
  std::vector<int> codes;           // [N][K], original column order
  std::vector<float> scale;         // [N][groups], original groups
};

RefResult reference_gptq(const std::vector<float>& W, int64_t N, int64_t K, const std::vector<float>& S, int64_t n,
                         const QuantSpec& s, const std::vector<int>& perm, const std::vector<int>& group_order) {
  const int64_t G = s.group_size, B = s.block_size;
  std::vector<double> H(K * K);
  for (int64_t i = 0; i < K; ++i)
    for (int64_t j = 0; j < K; ++j) H[i * K + j] = 2.0 * S[perm[i] * K + perm[j]] / static_cast<double>(n);
  double mean = 0;
  for (int64_t k = 0; k < K; ++k) mean += H[k * K + k] / K;
  for (int64_t k = 0; k < K; ++k) H[k * K + k] += s.damp_percent * mean;
  RefResult r;
  r.codes.assign(N * K, 0);
  r.scale.assign(N * (K / G), 0.0f);
  for (int64_t row = 0; row < N; ++row) {
    std::vector<double> Hinv = inverse(H, K);
    std::vector<double> w(K), snap(K);
    for (int64_t k = 0; k < K; ++k) w[k] = W[row * K + perm[k]];
    GroupParams cur;
    for (int64_t c = 0; c < K; ++c) {
      if (c % B == 0) snap = w;
      if (c % G == 0) {
        std::vector<float> g(G);
        for (int64_t j = 0; j < G; ++j) g[j] = static_cast<float>(snap[c + j]);
        cur = find_params(g.data(), G, s);
        const int64_t og = group_order.empty() ? c / G : group_order[c / G];
        r.scale[row * (K / G) + og] = cur.scale;
      }
      const int q = quantize_code(static_cast<float>(w[c]), cur, s.maxq());
      r.codes[row * K + perm[c]] = q;
      const double err = (w[c] - dequantize_code(q, cur)) / Hinv[c * K + c];
      for (int64_t k = c + 1; k < K; ++k) w[k] -= err * Hinv[c * K + k];
      // Remove column c from the inverse (OBS update).
      const double d = Hinv[c * K + c];
      std::vector<double> col(K);
      for (int64_t i = 0; i < K; ++i) col[i] = Hinv[i * K + c];
      for (int64_t i = 0; i < K; ++i)
        for (int64_t j = 0; j < K; ++j) Hinv[i * K + j] -= col[i] * col[j] / d;
    }
  }
  return r;
}

void compare_with_reference(bool gar) {
  const int64_t N = 6, K = 160, n = 400;   // two blocks (128 + 32), five groups of 32
  std::vector<float> S = random_S(K, n, 11);
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 0.05f);
  std::vector<float> W(N * K);
  for (auto& v : W) v = nd(rng);
  QuantSpec s;
  s.act_group_aware = gar;
  const PreparedHessian h = prepare_hessian(S.data(), K, n, s);
  ASSERT_FALSE(h.U.empty());
  const Quantized q = quantize_gptq(W.data(), N, K, h, s);
  const RefResult ref = reference_gptq(W, N, K, S, n, s, h.perm, h.group_order);
  int64_t same = 0;
  for (int64_t i = 0; i < N * K; ++i) same += q.w.q[i] == ref.codes[i];
  EXPECT_GE(same, N * K * 99 / 100) << "codes equal: " << same << " of " << N * K;
  for (int64_t i = 0; i < N * (K / 32); ++i) EXPECT_NEAR(q.w.scale[i], ref.scale[i], 1e-3 * std::fabs(ref.scale[i]));
  for (int64_t i = 0; i < N * (K / 32); ++i) EXPECT_EQ(q.w.zero[i], 8);
  EXPECT_TRUE(q.w.g_idx.empty());
  EXPECT_FALSE(q.failsafe);
  EXPECT_GT(q.avg_loss, 0.0);
}

// The fast path (fp32 factor on ops::matmul, trailing updates as one product per
// block) against the scalar twins (double factor, each row's loop alone) on sizes
// that leave a short last block (288 = 128 + 128 + 32) and an odd row count.
void compare_blocked_with_rowwise(bool gar) {
  const int64_t N = 37, K = 288, n = 700;
  std::vector<float> S = random_S(K, n, 17);
  std::mt19937 rng(2);
  std::normal_distribution<float> nd(0.0f, 0.05f);
  std::vector<float> W(N * K);
  for (auto& v : W) v = nd(rng);
  QuantSpec fast, ref;
  fast.act_group_aware = ref.act_group_aware = gar;
  ref.reference_impl = true;
  const PreparedHessian hf = prepare_hessian(S.data(), K, n, fast), hr = prepare_hessian(S.data(), K, n, ref);
  ASSERT_EQ(hf.perm, hr.perm);
  ASSERT_EQ(hf.damp, hr.damp);
  ASSERT_EQ(hf.U.size(), hr.U.size());
  double umax = 0, udiff = 0;
  for (size_t i = 0; i < hr.U.size(); ++i) {
    umax = std::max(umax, static_cast<double>(std::fabs(hr.U[i])));
    udiff = std::max(udiff, static_cast<double>(std::fabs(hf.U[i] - hr.U[i])));
  }
  EXPECT_LE(udiff, 2e-4 * umax);
  const Quantized qf = quantize_gptq(W.data(), N, K, hf, fast), qr = quantize_gptq(W.data(), N, K, hr, ref);
  int64_t same = 0;
  for (int64_t i = 0; i < N * K; ++i) same += qf.w.q[i] == qr.w.q[i];
  // Rounding ties flip a few codes (each flip then steers the row's later columns a little).
  EXPECT_GE(same, N * K * 98 / 100) << "codes equal: " << same << " of " << N * K;
  int64_t scales_close = 0;
  for (size_t i = 0; i < qr.w.scale.size(); ++i)
    scales_close += std::fabs(qf.w.scale[i] - qr.w.scale[i]) <= 1e-3f * std::fabs(qr.w.scale[i]);
  EXPECT_GE(scales_close, static_cast<int64_t>(qr.w.scale.size()) * 97 / 100);
  const double ef = output_error(W.data(), qf.w, S.data()), er = output_error(W.data(), qr.w, S.data());
  EXPECT_NEAR(ef, er, 0.02 * er) << "output error fast " << ef << " reference " << er;
  EXPECT_NEAR(qf.avg_loss, qr.avg_loss, 0.02 * qr.avg_loss);
  std::fprintf(stderr, "blocked vs row-wise (%s): codes equal %lld of %lld, max |U - Uref| %.3g of %.3g, output error %.6g vs %.6g\n",
               gar ? "GAR" : "natural", static_cast<long long>(same), static_cast<long long>(N * K), udiff, umax, ef, er);
  const double rtn = output_error(W.data(), quantize_rtn(W.data(), N, K, fast).w, S.data());
  EXPECT_LT(ef, rtn);
}

TEST(Gptq, BlockedMatchesRowwiseReferenceNaturalOrder) { compare_blocked_with_rowwise(false); }
TEST(Gptq, BlockedMatchesRowwiseReferenceGroupAwareOrder) { compare_blocked_with_rowwise(true); }

TEST(Gptq, MatchesDoubleReferenceNaturalOrder) { compare_with_reference(false); }
TEST(Gptq, MatchesDoubleReferenceGroupAwareOrder) { compare_with_reference(true); }

TEST(Gptq, BeatsRtnOnOutputError) {
  const int64_t N = 16, K = 96, n = 300;
  std::vector<float> X;
  std::vector<float> S = random_S(K, n, 21, &X);
  std::mt19937 rng(8);
  std::normal_distribution<float> nd(0.0f, 0.05f);
  std::vector<float> W(N * K);
  for (auto& v : W) v = nd(rng);
  QuantSpec s;
  const Quantized g = quantize_gptq(W.data(), N, K, prepare_hessian(S.data(), K, n, s), s);
  const Quantized r = quantize_rtn(W.data(), N, K, s);
  const double eg = output_error(W.data(), g.w, S.data()), er = output_error(W.data(), r.w, S.data());
  EXPECT_LT(eg, er);
  // output_error against ||X Wᵀ − X Qᵀ||² computed directly.
  for (const Quantized* q : {&g, &r}) {
    double direct = 0;
    for (int64_t t = 0; t < n; ++t)
      for (int64_t o = 0; o < N; ++o) {
        double y = 0;
        for (int64_t k = 0; k < K; ++k) y += static_cast<double>(X[t * K + k]) * (W[o * K + k] - q->w.weight(o, k));
        direct += y * y;
      }
    EXPECT_NEAR(output_error(W.data(), q->w, S.data()), direct, 1e-3 * direct);
  }
}

TEST(Gptq, DeadInputsAndDescAct) {
  const int64_t N = 4, K = 64, n = 50;
  std::vector<float> S = random_S(K, n, 4);
  for (int64_t j = 0; j < K; ++j) S[5 * K + j] = S[j * K + 5] = 0.0f;   // input 5 never active
  std::vector<float> W(N * K, 0.01f);
  for (int64_t i = 0; i < N * K; ++i) W[i] = 0.01f * static_cast<float>((i * 37) % 17 - 8);
  QuantSpec s;
  PreparedHessian h = prepare_hessian(S.data(), K, n, s);
  EXPECT_TRUE(h.dead[5]);
  Quantized q = quantize_gptq(W.data(), N, K, h, s);
  for (int64_t r = 0; r < N; ++r) EXPECT_EQ(q.w.weight(r, 5), 0.0f);   // dead weight zeroed, then quantized
  s.desc_act = true;
  h = prepare_hessian(S.data(), K, n, s);
  q = quantize_gptq(W.data(), N, K, h, s);
  ASSERT_EQ(q.w.g_idx.size(), static_cast<size_t>(K));   // permuted groups
  for (int64_t i = 0; i < K; ++i) EXPECT_EQ(q.w.g_idx[h.perm[i]], i / 32);
}

TEST(Rtn, MatchesPlainRounding) {
  const int64_t N = 3, K = 64;
  std::vector<float> W(N * K);
  for (int64_t i = 0; i < N * K; ++i) W[i] = std::sin(0.37 * i) * (i % 5 == 0 ? 0.3 : 0.05);
  QuantSpec s;
  const Quantized q = quantize_rtn(W.data(), N, K, s);
  EXPECT_TRUE(q.failsafe);
  for (int64_t r = 0; r < N; ++r)
    for (int64_t g = 0; g < 2; ++g) {
      double amax = 0;
      for (int64_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(static_cast<double>(W[r * K + g * 32 + j])));
      // fp32 arithmetic as GPTQModel's (the ±amax ends sit exactly on a .5 tie: -7.5 -> -8).
      const float scale = (static_cast<float>(amax) + static_cast<float>(amax)) / 15.0f;
      EXPECT_FLOAT_EQ(q.w.scale[r * 2 + g], scale);
      for (int64_t j = 0; j < 32; ++j) {
        const float x = W[r * K + g * 32 + j];
        const int code = static_cast<int>(std::min(15.0f, std::max(0.0f, std::nearbyint(x / scale) + 8.0f)));
        EXPECT_EQ(q.w.q[r * K + g * 32 + j], code);
      }
    }
}

TEST(Rtn, GroupSizeMustDivide) {
  std::vector<float> W(4 * 48, 0.1f);
  QuantSpec s;
  EXPECT_THROW(quantize_rtn(W.data(), 4, 48, s), Error);
}

}  // namespace
}  // namespace qinfer::quant
