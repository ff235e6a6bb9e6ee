// Scalar twins of the delta rule: the formulas of delta_rule.h written out
// directly (reference for the SIMD paths, and the QINFER_KERNELS=scalar path).
#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/seq_kernel_table.h"

namespace qinfer::ops::detail {

void delta_recurrent_scalar(const DeltaRuleIO& io, float*) {
  const int64_t dk = io.dk, dv = io.dv;
  float* S = io.S;
  if (io.S_in && io.S_in != S && io.T > 0) std::copy(io.S_in, io.S_in + dk * dv, S);
  std::vector<float> u(dv);
  for (int64_t t = 0; t < io.T; ++t) {
    const float* q = io.q + t * io.q_stride;
    const float* k = io.k + t * io.k_stride;
    const float* v = io.v + t * io.v_stride;
    const float decay = std::exp(io.g[t * io.gb_stride]);
    const float beta = io.beta[t * io.gb_stride];
    for (int64_t i = 0; i < dk * dv; ++i) S[i] *= decay;
    for (int64_t j = 0; j < dv; ++j) {
      float kS = 0.0f;
      for (int64_t i = 0; i < dk; ++i) kS += k[i] * S[i * dv + j];
      u[j] = beta * (v[j] - kS);
    }
    for (int64_t i = 0; i < dk; ++i)
      for (int64_t j = 0; j < dv; ++j) S[i * dv + j] += k[i] * u[j];
    float* o = io.o + t * io.o_stride;
    for (int64_t j = 0; j < dv; ++j) {
      float acc = 0.0f;
      for (int64_t i = 0; i < dk; ++i) acc += q[i] * S[i * dv + j];
      o[j] = acc;
    }
  }
}

// Per chunk of n tokens with cumulative log-decay G (S = state entering the chunk):
//   U_r = beta_r (v_r - e^{G_r} Sᵀk_r - Σ_{j<r} e^{G_r-G_j} (k_r·k_j) U_j)
//   o_r = e^{G_r} Sᵀq_r + Σ_{j<=r} e^{G_r-G_j} (q_r·k_j) U_j
//   S  <- e^{G_last} S + Σ_j e^{G_last-G_j} k_j U_jᵀ
void delta_chunked_scalar(const DeltaRuleIO& io, int64_t C, float*) {
  const int64_t dk = io.dk, dv = io.dv;
  float* S = io.S;
  auto q = [&](int64_t t) { return io.q + t * io.q_stride; };
  auto k = [&](int64_t t) { return io.k + t * io.k_stride; };
  auto dot = [&](const float* a, const float* b) {
    float s = 0.0f;
    for (int64_t i = 0; i < dk; ++i) s += a[i] * b[i];
    return s;
  };
  for (int64_t s0 = 0; s0 < io.T; s0 += C) {
    const int64_t n = std::min(C, io.T - s0);
    std::vector<float> G(n), U(n * dv), KK(n * n), QK(n * n);
    float cum = 0.0f;
    for (int64_t r = 0; r < n; ++r) G[r] = cum += io.g[(s0 + r) * io.gb_stride];
    for (int64_t r = 0; r < n; ++r)
      for (int64_t p = 0; p < n; ++p) {
        KK[r * n + p] = dot(k(s0 + r), k(s0 + p));
        QK[r * n + p] = dot(q(s0 + r), k(s0 + p));
      }
    for (int64_t r = 0; r < n; ++r) {
      const int64_t t = s0 + r;
      const float beta = io.beta[t * io.gb_stride];
      const float* v = io.v + t * io.v_stride;
      for (int64_t j = 0; j < dv; ++j) {
        float kS = 0.0f;
        for (int64_t i = 0; i < dk; ++i) kS += k(t)[i] * S[i * dv + j];
        float x = v[j] - std::exp(G[r]) * kS;
        for (int64_t p = 0; p < r; ++p) x -= std::exp(G[r] - G[p]) * KK[r * n + p] * U[p * dv + j];
        U[r * dv + j] = beta * x;
      }
    }
    for (int64_t r = 0; r < n; ++r) {
      const int64_t t = s0 + r;
      float* o = io.o + t * io.o_stride;
      for (int64_t j = 0; j < dv; ++j) {
        float qS = 0.0f;
        for (int64_t i = 0; i < dk; ++i) qS += q(t)[i] * S[i * dv + j];
        float y = std::exp(G[r]) * qS;
        for (int64_t p = 0; p <= r; ++p) y += std::exp(G[r] - G[p]) * QK[r * n + p] * U[p * dv + j];
        o[j] = y;
      }
    }
    const float gl = G[n - 1];
    for (int64_t i = 0; i < dk; ++i)
      for (int64_t j = 0; j < dv; ++j) {
        float x = std::exp(gl) * S[i * dv + j];
        for (int64_t p = 0; p < n; ++p) x += std::exp(gl - G[p]) * k(s0 + p)[i] * U[p * dv + j];
        S[i * dv + j] = x;
      }
  }
}

}  // namespace qinfer::ops::detail
