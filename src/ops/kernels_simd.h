// Internal: SIMD kernel templates shared by kernels_avx2.cc and kernels_avx512.cc.
// Each of those files defines a vector-traits struct V (width W, loads that widen
// BF16/F16/int8 to fp32, the int4 block decoder, tile shapes) and includes this
// header inside an anonymous namespace, so every instantiation stays local to
// the translation unit compiled for its instruction set.
//
// Dense weights:
//  * n = 1 (decode): rows of <= 8 KiB read one after another (dense_row_seq),
//    longer rows in 8-row tiles; n < kPrefillMin: NR x NX fused tiles.
//  * kPrefillMin <= n < kDensePanelMin: 16 weight rows widened to fp32 once into
//    a per-thread scratch, reused by every activation row of a 64-row block.
//  * n >= kDensePanelMin (where V::kDensePanels): 16 rows transposed into a
//    k-major fp32 panel, then a broadcast-FMA GEMM (q4_panel_rows).
// GPTQ int4 weights: n < kQ4PanelMin integer (VNNI-style) dot products on
// 16-row tiles; n >= kQ4PanelMin each tile dequantized once into the same fp32
// panel form. See the sections below.
// Not include-guarded on purpose (meant for exactly one inclusion per ISA file).

#define QINFER_UNROLL _Pragma("GCC unroll 16")

constexpr int64_t kPrefillMin = 8;
constexpr int64_t kDensePanelMin = 128;  // dense prefill on k-major panels from here
constexpr int64_t kWBlock = 16;  // weight rows per prefill scratch
constexpr int64_t kXBlock = 64;  // activation rows per prefill pass

inline int64_t round_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

// Loaders: W consecutive weights of element type E widened to one fp32 vector.
template <class E, class Full>
struct Loader {
  using T = typename V::T;
  static T ld(const E* p) { return Full::ld(p); }
  static T ld_tail(const E* p, int rem) {  // rem < W elements, rest zero
    alignas(64) E tmp[V::W] = {};
    __builtin_memcpy(tmp, p, rem * sizeof(E));
    return Full::ld(tmp);
  }
};
struct FullF32 { static V::T ld(const float* p) { return V::load(p); } };
struct FullBF16 { static V::T ld(const uint16_t* p) { return V::load_bf16(p); } };
struct FullF16 { static V::T ld(const uint16_t* p) { return V::load_f16(p); } };
struct FullI8 { static V::T ld(const int8_t* p) { return V::load_i8(p); } };
using LdF32 = Loader<float, FullF32>;
using LdBF16 = Loader<uint16_t, FullBF16>;
using LdF16 = Loader<uint16_t, FullF16>;
using LdI8 = Loader<int8_t, FullI8>;

// y[j*ldy + r] = (rscale ? rscale[r] : 1) * sum_k w[r*ldw + k] * x[j*ldx + k],
// r < NR, j < NX. Prefetch: also pull in the next NR weight rows (decode).
template <class L, class E, int NR, int NX, bool Prefetch = false>
inline void dense_tile(const E* w, int64_t ldw, const float* x, int64_t ldx, int64_t K, float* y, int64_t ldy,
                       const float* rscale) {
  using T = typename V::T;
  T acc[NX][NR];
  QINFER_UNROLL
  for (int j = 0; j < NX; ++j)
    QINFER_UNROLL
    for (int r = 0; r < NR; ++r) acc[j][r] = V::zero();
  int64_t k = 0;
  for (; k + V::W <= K; k += V::W) {
    if (Prefetch && (k * sizeof(E)) % 64 == 0) {  // next tile's rows, same offset (never faults)
      QINFER_UNROLL
      for (int r = 0; r < NR; ++r) _mm_prefetch(reinterpret_cast<const char*>(w + (r + NR) * ldw + k), _MM_HINT_T0);
    }
    T wv[NR];
    QINFER_UNROLL
    for (int r = 0; r < NR; ++r) wv[r] = L::ld(w + r * ldw + k);
    QINFER_UNROLL
    for (int j = 0; j < NX; ++j) {
      const T xv = V::load(x + j * ldx + k);
      QINFER_UNROLL
      for (int r = 0; r < NR; ++r) acc[j][r] = V::fma(wv[r], xv, acc[j][r]);
    }
  }
  if (k < K) {
    const int rem = static_cast<int>(K - k);
    T wv[NR];
    QINFER_UNROLL
    for (int r = 0; r < NR; ++r) wv[r] = L::ld_tail(w + r * ldw + k, rem);
    QINFER_UNROLL
    for (int j = 0; j < NX; ++j) {
      const T xv = LdF32::ld_tail(x + j * ldx + k, rem);
      QINFER_UNROLL
      for (int r = 0; r < NR; ++r) acc[j][r] = V::fma(wv[r], xv, acc[j][r]);
    }
  }
  QINFER_UNROLL
  for (int j = 0; j < NX; ++j)
    QINFER_UNROLL
    for (int r = 0; r < NR; ++r) {
      const float v = V::reduce(acc[j][r]);
      y[j * ldy + r] = rscale ? v * rscale[r] : v;
    }
}

// All activation rows [0, n) against NR weight rows, NX rows per tile.
template <class L, class E, int NR>
inline void dense_rows_x(const E* w, int64_t ldw, const float* X, int64_t ldx, int64_t n, int64_t K, float* Y,
                         int64_t ldy, const float* rscale) {
  for (int64_t j = 0; j < n; j += V::NX) {
    const int64_t nx = std::min<int64_t>(V::NX, n - j);
    const float* x = X + j * ldx;
    float* y = Y + j * ldy;
    switch (nx) {
      case 1: dense_tile<L, E, NR, 1>(w, ldw, x, ldx, K, y, ldy, rscale); break;
      case 2: dense_tile<L, E, NR, 2>(w, ldw, x, ldx, K, y, ldy, rscale); break;
      case 3: if constexpr (V::NX >= 3) dense_tile<L, E, NR, 3>(w, ldw, x, ldx, K, y, ldy, rscale); break;
      default: if constexpr (V::NX >= 4) dense_tile<L, E, NR, 4>(w, ldw, x, ldx, K, y, ldy, rscale); break;
    }
  }
}

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

// One weight row read front to back against one activation row, A partial sums
// along k. Measured (bench_ops, 2 threads, huge pages) against the 8-row tile on
// the lm_head: 20.7 vs 21.9 ms; 8 rows 4 KiB apart plus the next tile's 8 rows
// fall into one L1 set.
constexpr int64_t kSeqRowBytes = 8192;
// Each step prefetches the weight lines this far ahead (into the next rows),
// non-temporal: they are read once. lm_head in bench_ops, 2 threads, alternating
// runs: into L1 (T0) 54-61 GB/s against 51-54 without prefetch (2048 and 8192
// ahead did no better than 4096); non-temporal 65-70 against T0 53-60, T1 50-56.
// The hint is a template parameter (Hint < 0: no prefetch) so the start-up probe
// can choose per host (dispatch.cc, Bf16Kernel::kWidenT0).
constexpr int64_t kSeqPrefetch = 4096;
template <class L, class E, int A, int Hint = _MM_HINT_NTA>
inline void dense_row_seq(const E* w, const float* x, int64_t K, float* y, const float* rscale) {
  using T = typename V::T;
  T acc[A];
  QINFER_UNROLL
  for (int a = 0; a < A; ++a) acc[a] = V::zero();
  int64_t k = 0;
  const char* pf = reinterpret_cast<const char*>(w) + kSeqPrefetch;   // a hint: may run past the matrix
  for (; k + A * V::W <= K; k += A * V::W) {
    if constexpr (Hint >= 0) {
      QINFER_UNROLL
      for (int l = 0; l < A * V::W * static_cast<int>(sizeof(E)); l += 64)
        _mm_prefetch(pf + k * sizeof(E) + l, static_cast<_mm_hint>(Hint));
    }
    QINFER_UNROLL
    for (int a = 0; a < A; ++a) acc[a] = V::fma(L::ld(w + k + a * V::W), V::load(x + k + a * V::W), acc[a]);
  }
  for (; k + V::W <= K; k += V::W) acc[0] = V::fma(L::ld(w + k), V::load(x + k), acc[0]);
  if (k < K) acc[0] = V::fma(L::ld_tail(w + k, static_cast<int>(K - k)), LdF32::ld_tail(x + k, static_cast<int>(K - k)), acc[0]);
  QINFER_UNROLL
  for (int a = 1; a < A; ++a) acc[0] = V::add(acc[0], acc[a]);
  const float v = V::reduce(acc[0]);
  *y = rscale ? v * *rscale : v;
}

template <class L, class E>
void dense_panel_rows(const E* w, int64_t K, const float* scales, const float* X, int64_t n, float* Y, int64_t ldy,
                      int64_t r0, int64_t r1);

// Decode (n = 1) on short rows (<= kSeqRowBytes) has exact variants that differ
// only in memory access (the probe in dispatch.cc picks one per host):
enum DecodeMode {
  kSeqNta = kBf16MatvecSeqNta,    // rows one after another, non-temporal prefetch 4 KiB ahead
  kSeqT0 = kBf16MatvecSeqT0,      // the same, prefetch into L1 (T0)
  kSeqNone = kBf16MatvecSeqNone,  // the same, no software prefetch
  kTiled = kBf16MatvecTiled,      // NR1-row tiles reading x once per tile, next tile prefetched (the long-row kernel)
};

template <class L, class E, int Mode = kSeqNta>
void dense_rows_typed(const DenseMatrix& W, const float* X, int64_t n, float* Y, int64_t r0, int64_t r1) {
  const E* w = static_cast<const E*>(W.weights());
  const int64_t K = W.cols, ldy = W.rows;
  const float* scales = W.type == WType::Q8 ? W.row_scale.data() : nullptr;
  if (n >= kPrefillMin) {
    if constexpr (V::kDensePanels) {
      // The transposes pay off from about 100 activation rows on (bench_ops:
      // n = 512 1.39x faster, n = 64 8% slower).
      if (n >= kDensePanelMin) {
        dense_panel_rows<L, E>(w, K, scales, X, n, Y, ldy, r0, r1);
        return;
      }
    }
    auto decode = [&](int64_t r, int64_t count, float* dst, int64_t ld) {
      for (int64_t i = 0; i < count; ++i) {
        const E* src = w + (r + i) * K;
        float* d = dst + i * ld;
        const typename V::T sc = V::set1(scales ? scales[r + i] : 1.0f);
        int64_t k = 0;
        for (; k + V::W <= K; k += V::W) V::store(d + k, V::mul(L::ld(src + k), sc));
        if (k < K) V::store(d + k, V::mul(L::ld_tail(src + k, static_cast<int>(K - k)), sc));
      }
    };
    prefill_rows(decode, K, X, K, n, Y, ldy, r0, r1);
    return;
  }
  int64_t r = r0;
  if (n == 1) {
    // Rows of up to 8 KiB of weights are read one after the other (one
    // sequential stream; x stays in L1); longer rows in 8-row tiles that read x once.
    if (Mode != kTiled && K * static_cast<int64_t>(sizeof(E)) <= kSeqRowBytes) {
      constexpr int hint = Mode == kSeqT0 ? _MM_HINT_T0 : Mode == kSeqNone ? -1 : _MM_HINT_NTA;
      for (; r < r1; ++r) dense_row_seq<L, E, 4, hint>(w + r * K, X, K, Y + r, scales ? scales + r : nullptr);
      return;
    }
    for (; r + V::NR1 <= r1; r += V::NR1)
      dense_tile<L, E, V::NR1, 1, true>(w + r * K, K, X, K, K, Y + r, ldy, scales ? scales + r : nullptr);
  } else {
    for (; r + V::NR <= r1; r += V::NR)
      dense_rows_x<L, E, V::NR>(w + r * K, K, X, K, n, K, Y + r, ldy, scales ? scales + r : nullptr);
  }
  for (; r < r1; ++r) dense_rows_x<L, E, 1>(w + r * K, K, X, K, n, K, Y + r, ldy, scales ? scales + r : nullptr);
}

void dense_rows(const DenseMatrix& W, const float* X, int64_t n, float* Y, int64_t r0, int64_t r1) {
  switch (W.type) {
    case WType::F32: return dense_rows_typed<LdF32, float>(W, X, n, Y, r0, r1);
    case WType::BF16: return dense_rows_typed<LdBF16, uint16_t>(W, X, n, Y, r0, r1);
    case WType::F16: return dense_rows_typed<LdF16, uint16_t>(W, X, n, Y, r0, r1);
    case WType::Q8: return dense_rows_typed<LdI8, int8_t>(W, X, n, Y, r0, r1);
  }
}

// BF16 decode (n = 1) with one of the DecodeMode variants (all fp32-widening,
// as exact as dense_rows; only the summation order of the tiled one differs).
void bf16_matvec_rows(int mode, const DenseMatrix& W, const float* X, float* Y, int64_t r0, int64_t r1) {
  switch (mode) {
    case kSeqT0: return dense_rows_typed<LdBF16, uint16_t, kSeqT0>(W, X, 1, Y, r0, r1);
    case kSeqNone: return dense_rows_typed<LdBF16, uint16_t, kSeqNone>(W, X, 1, Y, r0, r1);
    case kTiled: return dense_rows_typed<LdBF16, uint16_t, kTiled>(W, X, 1, Y, r0, r1);
    default: return dense_rows_typed<LdBF16, uint16_t, kSeqNta>(W, X, 1, Y, r0, r1);
  }
}

// ---- GPTQ int4: integer dot products on 16-row tiles ----
//
// A tile's 16 rows sit in the lanes of kH vectors (kH = 16 / W). Per 32-column
// block, each 64-byte chunk gives two vectors of byte codes (low and high
// nibbles), each lane holding 4 consecutive columns of its row; V::dot4 adds
// code · x over those 4 columns into the lane (vpdpbusd), once for each of the
// three bytes xh, xm, xl of the 21-bit activations. Per block:
// d = (2^14 acc_h + 2^7 acc_m + acc_l) - z * Σxq, y += (s * sx) * d.

constexpr int kTR = GptqMatrix::kTileRows;
constexpr int kH = kTR / V::W;

template <bool Half>
inline typename V::T q4_tile_scales(const GptqMatrix& W, int64_t t, int64_t g, int h) {
  if constexpr (Half) return V::load_f16(W.tile_scales_f16(t, g) + h * V::W);
  else return V::load(W.tile_scales_f32(t, g) + h * V::W);
}

// One tile's scales and zero points (as floats) of the current group.
template <bool Half>
struct Q4Group {
  typename V::T s[kH], z[kH];
  int64_t g = -1;
  const bool stored_zeros;
  explicit Q4Group(const GptqMatrix& W) : stored_zeros(W.uniform_zero() < 0) {
    const typename V::T z0 = V::set1(stored_zeros ? 0.0f : static_cast<float>(W.uniform_zero()));
    QINFER_UNROLL
    for (int h = 0; h < kH; ++h) s[h] = V::zero(), z[h] = z0;
  }
  // Loads the group of block b when it is not the current one; true if it did.
  bool at(const GptqMatrix& W, int64_t t, int64_t b) {
    const int64_t gb = W.block_group(b);
    if (gb == g) return false;
    g = gb;
    QINFER_UNROLL
    for (int h = 0; h < kH; ++h) {
      s[h] = q4_tile_scales<Half>(W, t, g, h);
      if (stored_zeros) z[h] = V::load_u8(W.tile_zeros(t, g) + h * V::W);
    }
    return true;
  }
};

// How far ahead (in code bytes: half a 2048-column tile) the decode kernel
// prefetches a tile's codes, and its scales and zeros as far ahead in their
// own arrays. Measured (bench_ops int4_matvec_8of256experts, 8 experts per call
// from a 272 MB pool in huge pages, 2 threads, six alternating runs): none
// 38-46 GB/s, codes only 38-52, codes + scales + zeros 41-59.
constexpr int64_t kQ4Prefetch = 8192;

// Tile t (rows [16t, 16t + nr)) against activation rows [j0, j0 + NX).
template <bool Half, int NX>
inline void q4_tile(const GptqMatrix& W, int64_t t, const Q4Input& X, int64_t j0, float* Y, int nr) {
  using T = typename V::T;
  using I = typename V::I;
  const int64_t kp = X.kp, nb = W.blocks();
  const int8_t* xh[NX];
  const int8_t* xm[NX];
  const int8_t* xl[NX];
  const float* sx[NX];
  const float* sxq[NX];
  T accf[NX][kH];
  QINFER_UNROLL
  for (int j = 0; j < NX; ++j) {
    xh[j] = X.xh + (j0 + j) * kp;
    xm[j] = X.xm + (j0 + j) * kp;
    xl[j] = X.xl + (j0 + j) * kp;
    sx[j] = X.sx + (j0 + j) * nb;
    sxq[j] = X.sxq + (j0 + j) * nb;
    QINFER_UNROLL
    for (int h = 0; h < kH; ++h) accf[j][h] = V::zero();
  }
  const uint8_t* codes = W.tile_codes(t);
  Q4Group<Half> grp(W);
  const T* sw = grp.s;
  const T* zf = grp.z;
  // Prefetch addresses (hints only: they may run past the arrays' ends).
  const int64_t kBpg = std::max<int64_t>(1, nb / W.groups());   // blocks per group, in the usual order
  const char* sp = Half ? reinterpret_cast<const char*>(W.tile_scales_f16(t, 0))
                        : reinterpret_cast<const char*>(W.tile_scales_f32(t, 0));
  const int64_t spb = (Half ? 2 : 4) * kTR / kBpg;   // scale bytes per block
  const char* zp = grp.stored_zeros ? reinterpret_cast<const char*>(W.tile_zeros(t, 0)) : nullptr;
  for (int64_t b = 0; b < nb; ++b) {
    grp.at(W, t, b);
    // S accumulators per level: with few vectors in flight the chains of
    // dependent vpdpbusd would be latency-bound, so the low- and high-nibble
    // products then go to separate registers.
    constexpr int S = NX * kH <= 2 ? 2 : 1;
    I ah[NX][kH][S], am[NX][kH][S], al[NX][kH][S];
    QINFER_UNROLL
    for (int j = 0; j < NX; ++j)
      QINFER_UNROLL
      for (int h = 0; h < kH; ++h)
        QINFER_UNROLL
        for (int e = 0; e < S; ++e) ah[j][h][e] = am[j][h][e] = al[j][h][e] = V::izero();
    const uint8_t* cb = codes + b * GptqMatrix::kTileBlockBytes;
    QINFER_UNROLL
    for (int ch = 0; ch < 4; ++ch) _mm_prefetch(reinterpret_cast<const char*>(cb) + kQ4Prefetch + 64 * ch, _MM_HINT_T0);
    _mm_prefetch(sp + b * spb + kQ4Prefetch / 8, _MM_HINT_T0);
    if (zp) _mm_prefetch(zp + b * kTR / kBpg + kQ4Prefetch / 16, _MM_HINT_T0);
    QINFER_UNROLL
    for (int ch = 0; ch < 4; ++ch)
      QINFER_UNROLL
      for (int h = 0; h < kH; ++h) {
        const I v = V::load_i(cb + 64 * ch + 4 * V::W * h);
        const I lo = V::nib_lo(v), hi = V::nib_hi(v);
        const int64_t c = b * GptqMatrix::kBlock + 8 * ch;
        QINFER_UNROLL
        for (int j = 0; j < NX; ++j) {
          ah[j][h][0] = V::dot4(ah[j][h][0], lo, xh[j] + c);
          ah[j][h][S - 1] = V::dot4(ah[j][h][S - 1], hi, xh[j] + c + 4);
          am[j][h][0] = V::dot4(am[j][h][0], lo, xm[j] + c);
          am[j][h][S - 1] = V::dot4(am[j][h][S - 1], hi, xm[j] + c + 4);
          al[j][h][0] = V::dot4(al[j][h][0], lo, xl[j] + c);
          al[j][h][S - 1] = V::dot4(al[j][h][S - 1], hi, xl[j] + c + 4);
        }
      }
    QINFER_UNROLL
    for (int j = 0; j < NX; ++j) {
      const T bsx = V::set1(sx[j][b]), bsxq = V::set1(sxq[j][b]);
      QINFER_UNROLL
      for (int h = 0; h < kH; ++h) {
        const T d = V::fnmadd(zf[h], bsxq, V::cvt_i(V::combine(V::iadd<S>(ah[j][h]), V::iadd<S>(am[j][h]), V::iadd<S>(al[j][h]))));
        accf[j][h] = V::fma(V::mul(sw[h], bsx), d, accf[j][h]);
      }
    }
  }
  const int64_t ldy = W.rows();
  QINFER_UNROLL
  for (int j = 0; j < NX; ++j) {
    float* y = Y + (j0 + j) * ldy + t * kTR;
    if (nr == kTR) {
      QINFER_UNROLL
      for (int h = 0; h < kH; ++h) V::store(y + h * V::W, accf[j][h]);
    } else {
      alignas(64) float tmp[kTR];
      QINFER_UNROLL
      for (int h = 0; h < kH; ++h) V::store(tmp + h * V::W, accf[j][h]);
      for (int i = 0; i < nr; ++i) y[i] = tmp[i];
    }
  }
}

template <bool Half>
void gptq_rows_t(const GptqMatrix& W, const Q4Input& X, float* Y, int64_t r0, int64_t r1) {
  // Fewer than kQ4PanelMin activation rows (dispatch.cc sends more to the
  // panels), so all of them stay in cache while the tiles stream.
  const int64_t n = X.n;
  for (int64_t r = r0; r < r1; r += kTR) {
    const int64_t t = r / kTR;
    const int nr = static_cast<int>(std::min<int64_t>(kTR, r1 - r));
    int64_t j = 0;
    for (; j + V::Q4NX <= n; j += V::Q4NX) q4_tile<Half, V::Q4NX>(W, t, X, j, Y, nr);
    for (; j < n; ++j) q4_tile<Half, 1>(W, t, X, j, Y, nr);
  }
}

void gptq_rows(const GptqMatrix& W, const Q4Input& X, float* Y, int64_t r0, int64_t r1) {
  if (W.half_scales()) gptq_rows_t<true>(W, X, Y, r0, r1);
  else gptq_rows_t<false>(W, X, Y, r0, r1);
}

// ---- GPTQ int4, many activation rows (prefill): fp32 panels ----
//
// From kQ4PanelMin rows on, a tile is dequantized once into an fp32 panel
// [packed column][16 rows] (w = s·q − s·z, one fmsub per weight) and every
// activation row runs against it as a plain FMA GEMM: for each column k,
// acc[row lanes] += x[k] · panel[k]. Each output accumulates over k in order, in
// one lane, so the scalar twin gives the same bits.

template <bool Half>
inline void q4_tile_panel(const GptqMatrix& W, int64_t t, float* panel) {
  using T = typename V::T;
  using I = typename V::I;
  const uint8_t* codes = W.tile_codes(t);
  Q4Group<Half> grp(W);
  const T* sw = grp.s;
  T sz[kH];
  QINFER_UNROLL
  for (int h = 0; h < kH; ++h) sz[h] = V::zero();
  for (int64_t b = 0; b < W.blocks(); ++b) {
    if (grp.at(W, t, b)) {
      QINFER_UNROLL
      for (int h = 0; h < kH; ++h) sz[h] = V::mul(grp.s[h], grp.z[h]);
    }
    const uint8_t* cb = codes + b * GptqMatrix::kTileBlockBytes;
    float* pb = panel + b * GptqMatrix::kBlock * kTR;
    QINFER_UNROLL
    for (int ch = 0; ch < 4; ++ch)
      QINFER_UNROLL
      for (int h = 0; h < kH; ++h) {
        const I v = V::load_i(cb + 64 * ch + 4 * V::W * h);
        const I lo = V::nib_lo(v), hi = V::nib_hi(v);
        QINFER_UNROLL
        for (int e = 0; e < 4; ++e) {
          V::store(pb + (8 * ch + e) * kTR + h * V::W, V::fmsub(sw[h], V::cvt_i(V::byte_lane(lo, e)), sz[h]));
          V::store(pb + (8 * ch + 4 + e) * kTR + h * V::W, V::fmsub(sw[h], V::cvt_i(V::byte_lane(hi, e)), sz[h]));
        }
      }
  }
}

// Activation rows [j0, j0 + NX) of Xp ([n][kp], packed order) against a panel.
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

template <bool Half>
void gptq_rows_f32_t(const GptqMatrix& W, const float* Xp, int64_t n, float* Y, int64_t r0, int64_t r1) {
  const int64_t kp = W.padded_cols();
  thread_local std::vector<float> panel_buf;
  if (static_cast<int64_t>(panel_buf.size()) < kp * kTR) panel_buf.resize(kp * kTR);
  float* panel = panel_buf.data();
  for (int64_t r = r0; r < r1; r += kTR) {
    const int64_t t = r / kTR;
    const int nr = static_cast<int>(std::min<int64_t>(kTR, r1 - r));
    q4_tile_panel<Half>(W, t, panel);
    int64_t j = 0;
    for (; j + V::PNX <= n; j += V::PNX) q4_panel_rows<V::PNX>(panel, kp, Xp, j, Y, W.rows(), r, nr);
    for (; j < n; ++j) q4_panel_rows<1>(panel, kp, Xp, j, Y, W.rows(), r, nr);
  }
}

void gptq_rows_f32(const GptqMatrix& W, const float* Xp, int64_t n, float* Y, int64_t r0, int64_t r1) {
  if (W.half_scales()) gptq_rows_f32_t<true>(W, Xp, n, Y, r0, r1);
  else gptq_rows_f32_t<false>(W, Xp, n, Y, r0, r1);
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
    int64_t j = 0;
    for (; j + V::PNX <= n; j += V::PNX) q4_panel_rows<V::PNX>(panel, K, X, j, Y, ldy, r, nr);
    for (; j < n; ++j) q4_panel_rows<1>(panel, K, X, j, Y, ldy, r, nr);
  }
}
