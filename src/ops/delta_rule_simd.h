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

// The update pass of one token on value columns [j0, j0 + NB * W): for every key
// row i, S[i] <- e^g S_in[i] + k_i u, o += q_i S[i] and (Next) un += kn_i S[i]. The
// o and un columns stay in registers over all rows (summed over i in ascending order
// with one FMA each, as a pass per row of memory-held sums would: the same bits).
constexpr int kDeltaCols = V::W == 16 ? 8 : 4;   // vectors of columns per block
template <int NB, bool Next>
inline void delta_update_cols(const DeltaRuleIO& io, const float* src, float* S, int64_t j0, const float* k,
                              const float* q, const float* kn, const float* u, V::T dec, float* o, float* un) {
  const int64_t dk = io.dk, dv = io.dv;
  V::T oa[NB], na[NB];
  QINFER_UNROLL
  for (int b = 0; b < NB; ++b) oa[b] = na[b] = V::zero();
  for (int64_t i = 0; i < dk; ++i) {
    const V::T kv = V::set1(k[i]), qv = V::set1(q[i]);
    const V::T knv = V::set1(Next ? kn[i] : 0.0f);
    const float* in = src + i * dv + j0;
    float* row = S + i * dv + j0;
    QINFER_UNROLL
    for (int b = 0; b < NB; ++b) {
      const V::T s = V::fma(kv, V::load(u + j0 + b * V::W), V::mul(dec, V::load(in + b * V::W)));
      V::store(row + b * V::W, s);
      oa[b] = V::fma(qv, s, oa[b]);
      if constexpr (Next) na[b] = V::fma(knv, s, na[b]);
    }
  }
  QINFER_UNROLL
  for (int b = 0; b < NB; ++b) {
    V::store(o + j0 + b * V::W, oa[b]);
    if constexpr (Next) V::store(un + j0 + b * V::W, na[b]);
  }
}

template <bool Next>
inline void delta_update(const DeltaRuleIO& io, const float* src, float* S, const float* k, const float* q,
                         const float* kn, const float* u, float decay, float* o, float* un) {
  const int64_t dk = io.dk, dv = io.dv;
  const V::T dec = V::set1(decay);
  int64_t j = 0;
  for (; j + kDeltaCols * V::W <= dv; j += kDeltaCols * V::W)
    delta_update_cols<kDeltaCols, Next>(io, src, S, j, k, q, kn, u, dec, o, un);
  const int64_t rest = (dv - j) / V::W;
  for_count<kDeltaCols - 1>(rest, [&](auto nb) {
    delta_update_cols<decltype(nb)::value, Next>(io, src, S, j, k, q, kn, u, dec, o, un);
  });
  j += rest * V::W;
  if (j == dv) return;
  // The last dv % W columns, one value at a time (the same order over i).
  for (int64_t c = j; c < dv; ++c) {
    o[c] = 0.0f;
    if (Next) un[c] = 0.0f;
  }
  for (int64_t i = 0; i < dk; ++i) {
    const float* in = src + i * dv;
    float* row = S + i * dv;
    const float ki = k[i], qi = q[i];
    for (int64_t c = j; c < dv; ++c) {
      const float s = decay * in[c] + ki * u[c];
      row[c] = s;
      o[c] += qi * s;
    }
    if (Next)
      for (int64_t c = j; c < dv; ++c) un[c] += kn[i] * row[c];
  }
}

// Per token: u = beta (v - e^g Sᵀk) (the decay applied to the product, not the
// state), then S <- e^g S + k uᵀ and o = Sᵀq in one read-modify-write pass (token 0
// reads S_in when set). The product Sᵀk is a pass of its own for the first token
// only: each later token's is summed by the previous token's update pass from the
// rows it writes (the same products in the same order as a pass of their own: the
// same bits as T calls of one token). work: 2 dv floats.
void delta_recurrent_simd(const DeltaRuleIO& io, float* work) {
  const int64_t dk = io.dk, dv = io.dv;
  float* S = io.S;
  float* u = work;        // this token's Sᵀk, then its update vector
  float* un = work + dv;  // the next token's Sᵀk
  for (int64_t t = 0; t < io.T; ++t) {
    const float* src = t == 0 && io.S_in ? io.S_in : S;   // the state before token t
    const float* q = io.q + t * io.q_stride;
    const float* k = io.k + t * io.k_stride;
    const float* v = io.v + t * io.v_stride;
    const float decay = sexp(io.g[t * io.gb_stride]);
    const float beta = io.beta[t * io.gb_stride];
    if (t == 0) {
      for (int64_t j = 0; j < dv; ++j) u[j] = 0.0f;
      for (int64_t i = 0; i < dk; ++i) axpy_v(k[i], src + i * dv, dv, u);
    } else {
      std::swap(u, un);
    }
    for (int64_t j = 0; j < dv; ++j) u[j] = beta * (v[j] - decay * u[j]);
    float* o = io.o + t * io.o_stride;
    if (t + 1 < io.T) delta_update<true>(io, src, S, k, q, io.k + (t + 1) * io.k_stride, u, decay, o, un);
    else delta_update<false>(io, src, S, k, q, nullptr, u, decay, o, nullptr);
  }
}

// ---- Small row-major products for the chunked form ----
//
// Y[r][c] = I[r][c] + Σ_{p<P} A[r][p] · M[p][c]  (rows r < R, columns c < N; I may be
// null for zero, and may be Y itself). Tiles of kDR output rows x kDNV vectors
// stay in registers over the whole sum, so each M row loaded serves kDR rows
// and nothing is stored until the tile is done (the earlier axpy loops loaded
// and stored the outputs for every p: bound by the cache, not the FMAs).
// With causal, row r needs only p <= r: a tile of rows [r, r + NR) sums
// p < r + NR, so the caller zeroes A[r][p] for p > r.
// AVX-512: 4 rows x 4 vectors. AVX2: 6 x 2 (12 accumulators of its 16 registers;
// 8 loads per 12 FMAs instead of 6 per 8 with 4 x 2: bench_ops_seq
// delta_rule_chunk64_32heads/avx2, Intel Xeon, one thread, alternating: 6.2 -> 5.5 ms).
constexpr int kDR = V::W == 16 ? 4 : 6;
constexpr int kDNV = V::W == 16 ? 4 : 2;

struct DeltaGemm {
  int64_t P;
  const float* A;
  int64_t lda;
  const float* M;
  int64_t ldm;
  const float* I;
  int64_t ldi;
  float* Y;
  int64_t ldy;
  bool causal = false;
};

template <int NR, int NV>
inline void delta_gemm_tile(const DeltaGemm& g, int64_t r, int64_t c) {
  V::T acc[NR][NV];
  QINFER_UNROLL
  for (int i = 0; i < NR; ++i)
    QINFER_UNROLL
    for (int v = 0; v < NV; ++v) acc[i][v] = g.I ? V::load(g.I + (r + i) * g.ldi + c + v * V::W) : V::zero();
  const int64_t P = g.causal ? std::min<int64_t>(g.P, r + NR) : g.P;
  const float* a = g.A + r * g.lda;
  for (int64_t p = 0; p < P; ++p) {
    V::T m[NV];
    QINFER_UNROLL
    for (int v = 0; v < NV; ++v) m[v] = V::load(g.M + p * g.ldm + c + v * V::W);
    QINFER_UNROLL
    for (int i = 0; i < NR; ++i) {
      const V::T ai = V::set1(a[i * g.lda + p]);
      QINFER_UNROLL
      for (int v = 0; v < NV; ++v) acc[i][v] = V::fma(ai, m[v], acc[i][v]);
    }
  }
  QINFER_UNROLL
  for (int i = 0; i < NR; ++i)
    QINFER_UNROLL
    for (int v = 0; v < NV; ++v) V::store(g.Y + (r + i) * g.ldy + c + v * V::W, acc[i][v]);
}

template <int NV>
inline void delta_gemm_cols(const DeltaGemm& g, int64_t R, int64_t c) {
  int64_t r = 0;
  for (; r + kDR <= R; r += kDR) delta_gemm_tile<kDR, NV>(g, r, c);
  for_count<kDR - 1>(R - r, [&](auto nr) { delta_gemm_tile<decltype(nr)::value, NV>(g, r, c); });
}

inline void delta_gemm(const DeltaGemm& g, int64_t R, int64_t N) {
  int64_t c = 0;
  for (; c + kDNV * V::W <= N; c += kDNV * V::W) delta_gemm_cols<kDNV>(g, R, c);
  for (; c + V::W <= N; c += V::W) delta_gemm_cols<1>(g, R, c);
  for (; c < N; ++c)   // the last N % W columns
    for (int64_t r = 0; r < R; ++r) {
      const int64_t P = g.causal ? std::min<int64_t>(g.P, r + 1) : g.P;
      float acc = g.I ? g.I[r * g.ldi + c] : 0.0f;
      for (int64_t p = 0; p < P; ++p) acc += g.A[r * g.lda + p] * g.M[p * g.ldm + c];
      g.Y[r * g.ldy + c] = acc;
    }
}

// One chunk of n <= C tokens in matrix form. With G_r the cumulative log-decay:
//   KS = K S, QS = Q S                        (S = state entering the chunk)
//   U_r = beta_r (v_r - e^{G_r} KS_r - Σ_{j<r} e^{G_r-G_j} (k_r·k_j) U_j)   (forward substitution)
//   o_r = e^{G_r} QS_r + Σ_{j<=r} e^{G_r-G_j} (q_r·k_j) U_j
//   S  <- e^{G_last} S + Σ_j e^{G_last-G_j} k_j U_jᵀ
// Every product is a delta_gemm; K Kᵀ and Q Kᵀ through a transposed copy of K.
// work: delta_work_floats(dk, dv, C) floats.
void delta_chunked_simd(const DeltaRuleIO& io, int64_t C, float* work) {
  const int64_t dk = io.dk, dv = io.dv;
  float* G = work;
  float* ex = G + C;        // one row of exponents
  float* U = ex + C;        // [C][dv]
  float* KS = U + C * dv;   // [C][dv]
  float* QS = KS + C * dv;  // [C][dv]
  float* A = QS + C * dv;   // [C][C]: -e^{G_r-G_j} k_r·k_j, j < r
  float* B = A + C * C;     // [C][C]: e^{G_r-G_j} q_r·k_j, j <= r, else 0
  float* KT = B + C * C;    // [dk][C]: Kᵀ
  float* KW = KT + C * dk;  // [dk][C]: e^{G_last-G_j} Kᵀ
  float* S = io.S;
  for (int64_t s = 0; s < io.T; s += C) {
    const int64_t n = C < io.T - s ? C : io.T - s;
    const float* K = io.k + s * io.k_stride;
    const float* Q = io.q + s * io.q_stride;
    float acc = 0.0f;
    for (int64_t r = 0; r < n; ++r) {
      acc += io.g[(s + r) * io.gb_stride];
      G[r] = acc;
    }
    for (int64_t r = 0; r < n; ++r)
      for (int64_t i = 0; i < dk; ++i) KT[i * C + r] = K[r * io.k_stride + i];
    delta_gemm({dk, K, io.k_stride, S, dv, nullptr, 0, KS, dv}, n, dv);
    delta_gemm({dk, Q, io.q_stride, S, dv, nullptr, 0, QS, dv}, n, dv);
    delta_gemm({dk, K, io.k_stride, KT, C, nullptr, 0, A, C}, n, n);
    delta_gemm({dk, Q, io.q_stride, KT, C, nullptr, 0, B, C}, n, n);
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t j = 0; j <= r; ++j) ex[j] = G[r] - G[j];
      vexp_simd(ex, r + 1, ex);
      float* a = A + r * C;
      float* b = B + r * C;
      for (int64_t j = 0; j < r; ++j) a[j] *= -ex[j];
      for (int64_t j = 0; j <= r; ++j) b[j] *= ex[j];
      for (int64_t j = r + 1; j < n; ++j) b[j] = 0.0f;
    }
    // Forward substitution, row by row: U_r needs U_0 .. U_{r-1}.
    for (int64_t r = 0; r < n; ++r) {
      float* u = U + r * dv;
      const float* v = io.v + (s + r) * io.v_stride;
      const float* ks = KS + r * dv;
      float* qs = QS + r * dv;
      const float er = sexp(G[r]);
      for (int64_t j = 0; j < dv; ++j) u[j] = v[j] - er * ks[j];
      for (int64_t j = 0; j < dv; ++j) qs[j] *= er;   // o's first term, e^{G_r} QS_r
      delta_gemm({r, A + r * C, C, U, dv, u, dv, u, dv}, 1, dv);
      const float beta = io.beta[(s + r) * io.gb_stride];
      for (int64_t j = 0; j < dv; ++j) u[j] *= beta;
    }
    DeltaGemm og{n, B, C, U, dv, QS, dv, io.o + s * io.o_stride, io.o_stride};
    og.causal = true;
    delta_gemm(og, n, dv);
    const float gl = G[n - 1];
    const float el = sexp(gl);
    for (int64_t j = 0; j < n; ++j) ex[j] = gl - G[j];
    vexp_simd(ex, n, ex);
    for (int64_t i = 0; i < dk; ++i)
      for (int64_t j = 0; j < n; ++j) KW[i * C + j] = ex[j] * KT[i * C + j];
    for (int64_t j = 0; j < dk * dv; ++j) S[j] *= el;
    delta_gemm({n, KW, C, U, dv, S, dv, S, dv}, dk, dv);
  }
}
