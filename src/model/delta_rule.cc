#include "model/delta_rule.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/nn.h"

namespace qinfer::model {

namespace {
// out[dv] = Sᵀ x  (S is [dk][dv])
void state_t_times(const float* S, const float* x, int64_t dk, int64_t dv, float* out) {
  std::fill(out, out + dv, 0.0f);
  for (int64_t i = 0; i < dk; ++i) ops::axpy(x[i], S + i * dv, dv, out);
}
}  // namespace

void delta_rule_recurrent(const DeltaRuleIO& io) {
  const int64_t dk = io.dk, dv = io.dv;
  std::vector<float> u(dv);
  float* S = io.S;
  for (int64_t t = 0; t < io.T; ++t) {
    const float* q = io.q + t * io.q_stride;
    const float* k = io.k + t * io.k_stride;
    const float* v = io.v + t * io.v_stride;
    const float decay = std::exp(io.g[t * io.gb_stride]);
    const float beta = io.beta[t * io.gb_stride];
    // decay, then what the decayed state predicts for k
    std::fill(u.begin(), u.end(), 0.0f);
    for (int64_t i = 0; i < dk; ++i) {
      float* row = S + i * dv;
      for (int64_t j = 0; j < dv; ++j) row[j] *= decay;
      ops::axpy(k[i], row, dv, u.data());
    }
    for (int64_t j = 0; j < dv; ++j) u[j] = beta * (v[j] - u[j]);
    // rank-1 write, then read with the updated state
    float* o = io.o + t * io.o_stride;
    std::fill(o, o + dv, 0.0f);
    for (int64_t i = 0; i < dk; ++i) {
      float* row = S + i * dv;
      ops::axpy(k[i], u.data(), dv, row);
      ops::axpy(q[i], row, dv, o);
    }
  }
}

void delta_rule_chunked(const DeltaRuleIO& io, int64_t C) {
  const int64_t dk = io.dk, dv = io.dv;
  C = std::max<int64_t>(1, C);
  std::vector<float> G(C), U(C * dv), tmp(dv), kk(C);
  float* S = io.S;
  for (int64_t s = 0; s < io.T; s += C) {
    const int64_t n = std::min(C, io.T - s);
    auto q = [&](int64_t r) { return io.q + (s + r) * io.q_stride; };
    auto k = [&](int64_t r) { return io.k + (s + r) * io.k_stride; };
    auto v = [&](int64_t r) { return io.v + (s + r) * io.v_stride; };
    float acc = 0.0f;
    for (int64_t r = 0; r < n; ++r) {
      acc += io.g[(s + r) * io.gb_stride];
      G[r] = acc;
    }
    // U_r = beta_r (v_r - e^{G_r} Sᵀk_r - Σ_{j<r} e^{G_r-G_j} (k_r·k_j) U_j)   (forward substitution)
    for (int64_t r = 0; r < n; ++r) {
      float* u = U.data() + r * dv;
      state_t_times(S, k(r), dk, dv, tmp.data());
      const float er = std::exp(G[r]);
      for (int64_t j = 0; j < dv; ++j) u[j] = v(r)[j] - er * tmp[j];
      for (int64_t j = 0; j < r; ++j) {
        const float c = std::exp(G[r] - G[j]) * ops::dot(k(r), k(j), dk);
        ops::axpy(-c, U.data() + j * dv, dv, u);
      }
      const float beta = io.beta[(s + r) * io.gb_stride];
      for (int64_t j = 0; j < dv; ++j) u[j] *= beta;
    }
    // o_r = e^{G_r} Sᵀq_r + Σ_{j<=r} e^{G_r-G_j} (q_r·k_j) U_j   (S = state entering the chunk)
    for (int64_t r = 0; r < n; ++r) {
      float* o = io.o + (s + r) * io.o_stride;
      state_t_times(S, q(r), dk, dv, o);
      const float er = std::exp(G[r]);
      for (int64_t j = 0; j < dv; ++j) o[j] *= er;
      for (int64_t j = 0; j <= r; ++j) {
        const float c = std::exp(G[r] - G[j]) * ops::dot(q(r), k(j), dk);
        ops::axpy(c, U.data() + j * dv, dv, o);
      }
    }
    // S <- e^{G_last} S + Σ_j e^{G_last-G_j} k_j U_jᵀ
    const float gl = G[n - 1];
    const float el = std::exp(gl);
    for (int64_t i = 0; i < dk * dv; ++i) S[i] *= el;
    for (int64_t j = 0; j < n; ++j) kk[j] = std::exp(gl - G[j]);
    for (int64_t i = 0; i < dk; ++i) {
      float* row = S + i * dv;
      for (int64_t j = 0; j < n; ++j) ops::axpy(kk[j] * k(j)[i], U.data() + j * dv, dv, row);
    }
  }
}

}  // namespace qinfer::model
