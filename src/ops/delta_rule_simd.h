// Internal: the gated delta rule (delta_rule.h) on the vector traits V of the
// including per-ISA file (inside its anonymous namespace). Rows of S are
// processed W values at a time with a scalar tail. Not include-guarded on purpose.

// y[j] += a * x[j]
inline void axpy_v(float a, const float* x, int64_t n, float* y) {
  const V::T av = V::set1(a);
  int64_t j = 0;
  for (; j + V::W <= n; j += V::W) V::store(y + j, V::fma(av, V::load(x + j), V::load(y + j)));
  for (; j < n; ++j) y[j] += a * x[j];
}

inline float dot_v(const float* x, const float* y, int64_t n) {
  V::T acc = V::zero();
  int64_t j = 0;
  for (; j + V::W <= n; j += V::W) acc = V::fma(V::load(x + j), V::load(y + j), acc);
  float s = V::reduce_add(acc);
  for (; j < n; ++j) s += x[j] * y[j];
  return s;
}

// Per token, two passes over S: u = beta (v - e^g Sᵀk) reads S (the decay is
// applied to the product, not the state), then S <- e^g S + k uᵀ and o = Sᵀq
// in one read-modify-write pass. work: dv floats.
void delta_recurrent_simd(const DeltaRuleIO& io, float* u) {
  const int64_t dk = io.dk, dv = io.dv;
  float* S = io.S;
  for (int64_t t = 0; t < io.T; ++t) {
    const float* q = io.q + t * io.q_stride;
    const float* k = io.k + t * io.k_stride;
    const float* v = io.v + t * io.v_stride;
    const float decay = sexp(io.g[t * io.gb_stride]);
    const float beta = io.beta[t * io.gb_stride];
    for (int64_t j = 0; j < dv; ++j) u[j] = 0.0f;
    for (int64_t i = 0; i < dk; ++i) axpy_v(k[i], S + i * dv, dv, u);
    for (int64_t j = 0; j < dv; ++j) u[j] = beta * (v[j] - decay * u[j]);
    float* o = io.o + t * io.o_stride;
    for (int64_t j = 0; j < dv; ++j) o[j] = 0.0f;
    const V::T dec = V::set1(decay);
    for (int64_t i = 0; i < dk; ++i) {
      float* row = S + i * dv;
      const float ki = k[i], qi = q[i];
      const V::T kv = V::set1(ki), qv = V::set1(qi);
      int64_t j = 0;
      for (; j + V::W <= dv; j += V::W) {
        const V::T s = V::fma(kv, V::load(u + j), V::mul(dec, V::load(row + j)));
        V::store(row + j, s);
        V::store(o + j, V::fma(qv, s, V::load(o + j)));
      }
      for (; j < dv; ++j) {
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
// work: delta_work_floats(dk, dv, C) floats.
void delta_chunked_simd(const DeltaRuleIO& io, int64_t C, float* work) {
  const int64_t dk = io.dk, dv = io.dv;
  float* G = work;
  float* kk = G + C;
  float* U = kk + C;
  float* KS = U + C * dv;
  float* QS = KS + C * dv;
  float* A = QS + C * dv;
  float* kc = A + C * C;
  float* qc = kc + C * dk;
  float* S = io.S;
  for (int64_t s = 0; s < io.T; s += C) {
    const int64_t n = C < io.T - s ? C : io.T - s;
    // Contiguous copies of the chunk's q and k (strided in the activations).
    for (int64_t r = 0; r < n; ++r)
      for (int64_t i = 0; i < dk; ++i) {
        qc[r * dk + i] = io.q[(s + r) * io.q_stride + i];
        kc[r * dk + i] = io.k[(s + r) * io.k_stride + i];
      }
    const float* K = kc;
    const float* Q = qc;
    float acc = 0.0f;
    for (int64_t r = 0; r < n; ++r) {
      acc += io.g[(s + r) * io.gb_stride];
      G[r] = acc;
    }
    for (int64_t j = 0; j < n * dv; ++j) KS[j] = QS[j] = 0.0f;
    for (int64_t i = 0; i < dk; ++i) {
      const float* Si = S + i * dv;
      for (int64_t r = 0; r < n; ++r) {
        const V::T a = V::set1(K[r * dk + i]), b = V::set1(Q[r * dk + i]);
        float* ks = KS + r * dv;
        float* qs = QS + r * dv;
        int64_t j = 0;
        for (; j + V::W <= dv; j += V::W) {
          const V::T sv = V::load(Si + j);
          V::store(ks + j, V::fma(a, sv, V::load(ks + j)));
          V::store(qs + j, V::fma(b, sv, V::load(qs + j)));
        }
        for (; j < dv; ++j) {
          ks[j] += K[r * dk + i] * Si[j];
          qs[j] += Q[r * dk + i] * Si[j];
        }
      }
    }
    // A[r][j] = e^{G_r-G_j} (k_r·k_j), j < r
    for (int64_t r = 0; r < n; ++r)
      for (int64_t j = 0; j < r; ++j) A[r * C + j] = sexp(G[r] - G[j]) * dot_v(K + r * dk, K + j * dk, dk);
    for (int64_t r = 0; r < n; ++r) {
      float* u = U + r * dv;
      const float* v = io.v + (s + r) * io.v_stride;
      const float* ks = KS + r * dv;
      const float er = sexp(G[r]);
      for (int64_t j = 0; j < dv; ++j) u[j] = v[j] - er * ks[j];
      for (int64_t j = 0; j < r; ++j) axpy_v(-A[r * C + j], U + j * dv, dv, u);
      const float beta = io.beta[(s + r) * io.gb_stride];
      for (int64_t j = 0; j < dv; ++j) u[j] *= beta;
    }
    for (int64_t r = 0; r < n; ++r) {
      float* o = io.o + (s + r) * io.o_stride;
      const float* qs = QS + r * dv;
      const float er = sexp(G[r]);
      for (int64_t j = 0; j < dv; ++j) o[j] = er * qs[j];
      for (int64_t j = 0; j <= r; ++j) {
        const float c = sexp(G[r] - G[j]) * dot_v(Q + r * dk, K + j * dk, dk);
        axpy_v(c, U + j * dv, dv, o);
      }
    }
    const float gl = G[n - 1];
    const float el = sexp(gl);
    for (int64_t j = 0; j < n; ++j) kk[j] = sexp(gl - G[j]);
    for (int64_t i = 0; i < dk; ++i) {
      float* row = S + i * dv;
      for (int64_t j = 0; j < dv; ++j) row[j] *= el;
      for (int64_t r = 0; r < n; ++r) axpy_v(kk[r] * K[r * dk + i], U + r * dv, dv, row);
    }
  }
}
