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
// Activation rows [j0, j0 + NX) of Xp (row stride ldx) against kc columns of a panel;
// with acc_in the sums go on from the Y values (the panel's earlier columns, in order).
template <int NX>
inline void q4_panel_rows(const float* panel, int64_t kc, const float* Xp, int64_t ldx, int64_t j0, float* Y,
                          int64_t ldy, int64_t r0, int nr, bool acc_in) {
  using T = typename V::T;
  alignas(64) float tmp[NX][kTR];   // one buffer before and after the loop (see q4_panel2_rows)
  T acc[NX][kH];
  if (acc_in) {
    for (int j = 0; j < NX; ++j) {
      const float* y = Y + (j0 + j) * ldy + r0;
      for (int i = 0; i < kTR; ++i) tmp[j][i] = i < nr ? y[i] : 0.0f;
    }
    QINFER_UNROLL
    for (int j = 0; j < NX; ++j)
      QINFER_UNROLL
      for (int h = 0; h < kH; ++h) acc[j][h] = V::load(tmp[j] + h * V::W);
  } else {
    QINFER_UNROLL
    for (int j = 0; j < NX; ++j)
      QINFER_UNROLL
      for (int h = 0; h < kH; ++h) acc[j][h] = V::zero();
  }
  const float* x = Xp + j0 * ldx;
  for (int64_t k = 0; k < kc; ++k) {
    T w[kH];
    QINFER_UNROLL
    for (int h = 0; h < kH; ++h) w[h] = V::load(panel + k * kTR + h * V::W);
    QINFER_UNROLL
    for (int j = 0; j < NX; ++j) {
      const T xv = V::set1(x[j * ldx + k]);
      QINFER_UNROLL
      for (int h = 0; h < kH; ++h) acc[j][h] = V::fma(xv, w[h], acc[j][h]);
    }
  }
  QINFER_UNROLL
  for (int j = 0; j < NX; ++j)
    QINFER_UNROLL
    for (int h = 0; h < kH; ++h) V::store(tmp[j] + h * V::W, acc[j][h]);
  for (int j = 0; j < NX; ++j) {
    float* y = Y + (j0 + j) * ldy + r0;
    for (int i = 0; i < nr; ++i) y[i] = tmp[j][i];
  }
}

// Every activation row of Xp against one panel, in passes of at most V::PNX rows of
// nearly equal size (AVX2, 8 rows: 4 + 4, not 6 + 2, whose short pass is 4 FMA chains,
// bound by the FMA latency at half the rate; a single row would be a quarter).
// Each output still sums over k in order in one lane: the same bits either way.
inline void q4_panel_all(const float* panel, int64_t kc, const float* Xp, int64_t ldx, int64_t n, float* Y,
                         int64_t ldy, int64_t r0, int nr, bool acc_in) {
  for_even_passes<V::PNX>(n, [&](auto nx, int64_t j) {
    q4_panel_rows<decltype(nx)::value>(panel, kc, Xp, ldx, j, Y, ldy, r0, nr, acc_in);
  });
}

// Two panels side by side (32 weight rows; where V::kPanelPairs): every activation row
// costs one broadcast for two weight vectors instead of one, so the kernel is bound by
// the FMAs rather than by the loads (AVX-512: 2 + NX loads for 2 NX FMAs per column, against
// 1 + PNX for PNX with one panel). Zen 5, 2 threads, bench_ops: dense n = 512 1.35x (88% of
// the FMA peak), one expert's 512 rows 1.48x, the 256-expert MoE 1.2-1.4x. The rows of b are
// r0 + kTR ... Each output still sums over k in order in one lane: the same bits.
template <int NX>
inline void q4_panel2_rows(const float* a, const float* b, int64_t kc, const float* Xp, int64_t ldx, int64_t j0,
                           float* Y, int64_t ldy, int64_t r0, int nra, int nrb, bool acc_in) {
  static_assert(NX > 0 && kTR == V::W, "panel pairs are for 16-lane vectors");
  using T = typename V::T;
  // All results to one buffer first: a per-row buffer with its copy loops inside the unrolled
  // loop makes GCC 12 keep the accumulators in memory (zmm16-31 unused).
  alignas(64) float tmp[NX][2 * kTR];
  T acc_a[NX], acc_b[NX];
  if (acc_in) {
    for (int j = 0; j < NX; ++j) {
      const float* y = Y + (j0 + j) * ldy + r0;
      for (int i = 0; i < kTR; ++i) tmp[j][i] = i < nra ? y[i] : 0.0f;
      for (int i = 0; i < kTR; ++i) tmp[j][kTR + i] = i < nrb ? y[kTR + i] : 0.0f;
    }
    QINFER_UNROLL
    for (int j = 0; j < NX; ++j) acc_a[j] = V::load(tmp[j]), acc_b[j] = V::load(tmp[j] + kTR);
  } else {
    QINFER_UNROLL
    for (int j = 0; j < NX; ++j) acc_a[j] = acc_b[j] = V::zero();
  }
  const float* x = Xp + j0 * ldx;
  for (int64_t k = 0; k < kc; ++k) {
    const T wa = V::load(a + k * kTR), wb = V::load(b + k * kTR);
    QINFER_UNROLL
    for (int j = 0; j < NX; ++j) {
      const T xv = V::set1(x[j * ldx + k]);
      acc_a[j] = V::fma(xv, wa, acc_a[j]);
      acc_b[j] = V::fma(xv, wb, acc_b[j]);
    }
  }
  QINFER_UNROLL
  for (int j = 0; j < NX; ++j) {
    V::store(tmp[j], acc_a[j]);
    V::store(tmp[j] + kTR, acc_b[j]);
  }
  for (int j = 0; j < NX; ++j) {
    float* y = Y + (j0 + j) * ldy + r0;
    for (int i = 0; i < nra; ++i) y[i] = tmp[j][i];
    for (int i = 0; i < nrb; ++i) y[kTR + i] = tmp[j][kTR + i];
  }
}

// Every activation row against two panels, in passes of at most V::PNX2 rows of nearly
// equal size (for_even_passes).
template <class VV = V>
inline void q4_panel2_all(const float* a, const float* b, int64_t kc, const float* Xp, int64_t ldx, int64_t n,
                          float* Y, int64_t ldy, int64_t r0, int nra, int nrb, bool acc_in) {
  for_even_passes<VV::PNX2>(n, [&](auto nx, int64_t j) {
    q4_panel2_rows<decltype(nx)::value>(a, b, kc, Xp, ldx, j, Y, ldy, r0, nra, nrb, acc_in);
  });
}

// Panels of rows [r, r + nr) (nr <= 2 kTR: a pair where V::kPanelPairs, else one panel)
// against every activation row; the second panel starts `stride` floats after the first.
// The panels hold kc columns, Xp's rows the same kc columns at stride ldx; acc_in: see
// q4_panel_rows.
template <class VV = V>
inline void panels_all(const float* panel, int64_t stride, int64_t kc, const float* Xp, int64_t ldx, int64_t n,
                       float* Y, int64_t ldy, int64_t r, int nr, bool acc_in = false) {
  if constexpr (VV::kPanelPairs) {
    if (nr > kTR) {
      q4_panel2_all(panel, panel + stride, kc, Xp, ldx, n, Y, ldy, r, kTR, nr - kTR, acc_in);
      return;
    }
  }
  q4_panel_all(panel, kc, Xp, ldx, n, Y, ldy, r, nr, acc_in);
}

// Rows [r, r + nr) (nr <= 16) of a dense matrix widened, scaled and transposed 16 columns
// at a time into a k-major panel (K + V::W rows of 16: the last transpose may run past K;
// rows past nr are zero). The dense twin of q4_tile_panel.
template <class L, class E>
inline void dense_tile_panel(const E* w, int64_t K, const float* scales, int64_t r, int nr, float* panel) {
  using T = typename V::T;
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
    V::transpose16(v);   // columns k .. k + W - 1 as panel rows, kH vectors each
    QINFER_UNROLL
    for (int c = 0; c < kTR; ++c) V::store(panel + k * kTR + c * V::W, v[c]);
  }
}

// Dense prefill on the same panels (where V::kDensePanels): 16 weight rows at a time
// into a k-major panel (dense_tile_panel; two panels where V::kPanelPairs), then every
// activation row runs against them (panels_all). r0 is a multiple of 16 (for_rows hands
// out 16-row blocks).
template <class L, class E>
void dense_panel_rows(const E* w, int64_t K, const float* scales, const float* X, int64_t n, float* Y, int64_t ldy,
                      int64_t r0, int64_t r1) {
  constexpr int kPanels = V::kPanelPairs ? 2 : 1;
  const int64_t stride = (K + V::W) * kTR;   // floats per panel
  thread_local std::vector<float> panel_buf;
  if (static_cast<int64_t>(panel_buf.size()) < kPanels * stride) panel_buf.resize(kPanels * stride);
  for (int64_t r = r0; r < r1; r += kPanels * kTR) {
    const int nr = static_cast<int>(std::min<int64_t>(kPanels * kTR, r1 - r));
    for (int p = 0; p * kTR < nr; ++p)
      dense_tile_panel<L, E>(w, K, scales, r + p * kTR, std::min(kTR, nr - p * kTR), panel_buf.data() + p * stride);
    panels_all(panel_buf.data(), stride, K, X, K, n, Y, ldy, r, nr);
  }
}
