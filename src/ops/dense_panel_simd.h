// Internal: dense prefill kernels (n >= kPrefillMin activation rows): weight
// rows widened into a per-thread fp32 scratch, and k-major fp32 panels with the
// broadcast-FMA panel GEMM (q4_panel_rows) the GPTQ prefill path shares.
// Not include-guarded on purpose: included once, by matmul_simd.h, inside an ISA file's
// anonymous namespace (V is that file's vector-traits struct).

// Prefill: widen kWBlock weight rows to fp32 with decode(r, count, dst, ld)
// (which must fill K values per row), then run fp32 tiles over 64-row
// activation blocks.
template <class Decode>
void prefill_rows(const Decode& decode, int64_t K, const float* X, int64_t ldx, int64_t n, float* Y, int64_t ldy,
                  int64_t r0, int64_t r1) {
  const int64_t ld = round_up(K, V::W);
  thread_local std::vector<float> scratch;
  if (static_cast<int64_t>(scratch.size()) < kWBlock * ld) scratch.resize(kWBlock * ld);
  float* s = scratch.data();
  for (int64_t xb = 0; xb < n; xb += kXBlock) {
    const int64_t nx = std::min(kXBlock, n - xb);
    for (int64_t wb = r0; wb < r1; wb += kWBlock) {
      const int64_t nw = std::min(kWBlock, r1 - wb);
      decode(wb, nw, s, ld);
      int64_t r = 0;
      for (; r + V::NR <= nw; r += V::NR)
        dense_rows_x<LdF32, float, V::NR>(s + r * ld, ld, X + xb * ldx, ldx, nx, K, Y + xb * ldy + wb + r, ldy,
                                          nullptr);
      for (; r < nw; ++r)
        dense_rows_x<LdF32, float, 1>(s + r * ld, ld, X + xb * ldx, ldx, nx, K, Y + xb * ldy + wb + r, ldy,
                                      nullptr);
    }
  }
}
template <int NX>
inline void q4_panel_rows(const float* panel, int64_t kp, const float* Xp, int64_t j0, float* Y, int64_t ldy,
                          int64_t r0, int nr) {
  using T = typename V::T;
  T acc[NX][kH];
  QINFER_UNROLL
  for (int j = 0; j < NX; ++j)
    QINFER_UNROLL
    for (int h = 0; h < kH; ++h) acc[j][h] = V::zero();
  const float* x = Xp + j0 * kp;
  for (int64_t k = 0; k < kp; ++k) {
    T w[kH];
    QINFER_UNROLL
    for (int h = 0; h < kH; ++h) w[h] = V::load(panel + k * kTR + h * V::W);
    QINFER_UNROLL
    for (int j = 0; j < NX; ++j) {
      const T xv = V::set1(x[j * kp + k]);
      QINFER_UNROLL
      for (int h = 0; h < kH; ++h) acc[j][h] = V::fma(xv, w[h], acc[j][h]);
    }
  }
  QINFER_UNROLL
  for (int j = 0; j < NX; ++j) {
    float* y = Y + (j0 + j) * ldy + r0;
    alignas(64) float tmp[kTR];
    QINFER_UNROLL
    for (int h = 0; h < kH; ++h) V::store(tmp + h * V::W, acc[j][h]);
    for (int i = 0; i < nr; ++i) y[i] = tmp[i];
  }
}

// Every activation row of Xp against one panel: V::PNX rows per pass, then the
// last n % PNX rows in one pass of that many (not one by one: a single row is
// one FMA chain, bound by the FMA latency, at a quarter or less of the rate).
// Each output still sums over k in order in one lane: the same bits either way.
inline void q4_panel_all(const float* panel, int64_t kp, const float* Xp, int64_t n, float* Y, int64_t ldy,
                         int64_t r0, int nr) {
  int64_t j = 0;
  for (; j + V::PNX <= n; j += V::PNX) q4_panel_rows<V::PNX>(panel, kp, Xp, j, Y, ldy, r0, nr);
  for_count<V::PNX - 1>(n - j, [&](auto nx) { q4_panel_rows<decltype(nx)::value>(panel, kp, Xp, j, Y, ldy, r0, nr); });
}

// Dense prefill on the same panels (where V::kDensePanels): 16 weight rows are
// widened, scaled and transposed 16 columns at a time into a k-major panel,
// then every activation row runs against it (q4_panel_rows). r0 is a multiple
// of 16 (for_rows hands out 16-row blocks).
template <class L, class E>
void dense_panel_rows(const E* w, int64_t K, const float* scales, const float* X, int64_t n, float* Y, int64_t ldy,
                      int64_t r0, int64_t r1) {
  using T = typename V::T;
  thread_local std::vector<float> panel_buf;
  if (static_cast<int64_t>(panel_buf.size()) < (K + V::W) * kTR) panel_buf.resize((K + V::W) * kTR);
  float* panel = panel_buf.data();
  for (int64_t r = r0; r < r1; r += kTR) {
    const int nr = static_cast<int>(std::min<int64_t>(kTR, r1 - r));
    for (int64_t k = 0; k < K; k += V::W) {
      const int rem = static_cast<int>(std::min<int64_t>(V::W, K - k));
      T v[kTR];
      QINFER_UNROLL
      for (int i = 0; i < kTR; ++i) {
        if (i >= nr) {
          v[i] = V::zero();
          continue;
        }
        const E* src = w + (r + i) * K + k;
        const T x = rem == V::W ? L::ld(src) : L::ld_tail(src, rem);
        v[i] = scales ? V::mul(x, V::set1(scales[r + i])) : x;
      }
      V::transpose16(v);
      QINFER_UNROLL
      for (int c = 0; c < kTR; ++c) V::store(panel + (k + c) * kTR, v[c]);
    }
    q4_panel_all(panel, K, X, n, Y, ldy, r, nr);
  }
}
