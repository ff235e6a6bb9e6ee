#include "model/delta_rule.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "model/clones.h"
#include "ops/nn.h"

namespace qinfer::model {

// Per token, two passes over S: u = beta (v - e^g Sᵀk) reads S (the decay is
// applied to the product, not the state), then S <- e^g S + k uᵀ and o = Sᵀq
// in one read-modify-write pass.
QINFER_CLONES void delta_rule_recurrent(const DeltaRuleIO& io) {
  const int64_t dk = io.dk, dv = io.dv;
  std::vector<float> u(dv);
  float* S = io.S;
  for (int64_t t = 0; t < io.T; ++t) {
    const float* q = io.q + t * io.q_stride;
    const float* k = io.k + t * io.k_stride;
    const float* v = io.v + t * io.v_stride;
    const float decay = std::exp(io.g[t * io.gb_stride]);
    const float beta = io.beta[t * io.gb_stride];
    std::fill(u.begin(), u.end(), 0.0f);
    for (int64_t i = 0; i < dk; ++i) ops::axpy(k[i], S + i * dv, dv, u.data());
    for (int64_t j = 0; j < dv; ++j) u[j] = beta * (v[j] - decay * u[j]);
    float* o = io.o + t * io.o_stride;
    std::fill(o, o + dv, 0.0f);
    for (int64_t i = 0; i < dk; ++i) {
      float* row = S + i * dv;
      const float ki = k[i], qi = q[i];
      for (int64_t j = 0; j < dv; ++j) {
        const float s = decay * row[j] + ki * u[j];
        row[j] = s;
        o[j] += qi * s;
      }
    }
  }
}

// One chunk of n <= C tokens in matrix form. With G_r the cumulative log-decay:
//   KS = K S, QS = Q S                        (S = state entering the chunk, one pass over S)
//   U_r = beta_r (v_r - e^{G_r} KS_r - Σ_{j<r} e^{G_r-G_j} (k_r·k_j) U_j)   (forward substitution)
//   o_r = e^{G_r} QS_r + Σ_{j<=r} e^{G_r-G_j} (q_r·k_j) U_j
//   S  <- e^{G_last} S + Σ_j e^{G_last-G_j} k_j U_jᵀ
QINFER_CLONES void delta_rule_chunked(const DeltaRuleIO& io, int64_t C) {
  const int64_t dk = io.dk, dv = io.dv;
  C = std::max<int64_t>(1, C);
  std::vector<float> G(C), U(C * dv), KS(C * dv), QS(C * dv), A(C * C), kk(C), kc(C * dk), qc(C * dk);
  float* S = io.S;
  for (int64_t s = 0; s < io.T; s += C) {
    const int64_t n = std::min(C, io.T - s);
    // Contiguous copies of the chunk's q and k (strided in the activations).
    for (int64_t r = 0; r < n; ++r) {
      std::copy_n(io.q + (s + r) * io.q_stride, dk, qc.data() + r * dk);
      std::copy_n(io.k + (s + r) * io.k_stride, dk, kc.data() + r * dk);
    }
    const float* K = kc.data();
    const float* Q = qc.data();
    float acc = 0.0f;
    for (int64_t r = 0; r < n; ++r) {
      acc += io.g[(s + r) * io.gb_stride];
      G[r] = acc;
    }
    std::fill(KS.begin(), KS.begin() + n * dv, 0.0f);
    std::fill(QS.begin(), QS.begin() + n * dv, 0.0f);
    for (int64_t i = 0; i < dk; ++i) {
      const float* Si = S + i * dv;
      for (int64_t r = 0; r < n; ++r) {
        const float a = K[r * dk + i], b = Q[r * dk + i];
        float* ks = KS.data() + r * dv;
        float* qs = QS.data() + r * dv;
        for (int64_t j = 0; j < dv; ++j) {
          ks[j] += a * Si[j];
          qs[j] += b * Si[j];
        }
      }
    }
    // A[r][j] = e^{G_r-G_j} (k_r·k_j), j < r
    for (int64_t r = 0; r < n; ++r)
      for (int64_t j = 0; j < r; ++j) A[r * C + j] = std::exp(G[r] - G[j]) * ops::dot(K + r * dk, K + j * dk, dk);
    for (int64_t r = 0; r < n; ++r) {
      float* u = U.data() + r * dv;
      const float* v = io.v + (s + r) * io.v_stride;
      const float* ks = KS.data() + r * dv;
      const float er = std::exp(G[r]);
      for (int64_t j = 0; j < dv; ++j) u[j] = v[j] - er * ks[j];
      for (int64_t j = 0; j < r; ++j) ops::axpy(-A[r * C + j], U.data() + j * dv, dv, u);
      const float beta = io.beta[(s + r) * io.gb_stride];
      for (int64_t j = 0; j < dv; ++j) u[j] *= beta;
    }
    for (int64_t r = 0; r < n; ++r) {
      float* o = io.o + (s + r) * io.o_stride;
      const float* qs = QS.data() + r * dv;
      const float er = std::exp(G[r]);
      for (int64_t j = 0; j < dv; ++j) o[j] = er * qs[j];
      for (int64_t j = 0; j <= r; ++j) {
        const float c = std::exp(G[r] - G[j]) * ops::dot(Q + r * dk, K + j * dk, dk);
        ops::axpy(c, U.data() + j * dv, dv, o);
      }
    }
    const float gl = G[n - 1];
    const float el = std::exp(gl);
    for (int64_t j = 0; j < n; ++j) kk[j] = std::exp(gl - G[j]);
    for (int64_t i = 0; i < dk; ++i) {
      float* row = S + i * dv;
      for (int64_t j = 0; j < dv; ++j) row[j] *= el;
      for (int64_t r = 0; r < n; ++r) ops::axpy(kk[r] * K[r * dk + i], U.data() + r * dv, dv, row);
    }
  }
}

}  // namespace qinfer::model
