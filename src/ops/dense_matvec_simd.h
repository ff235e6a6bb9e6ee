// Internal: dense decode kernels (n = 1 and n < kPrefillMin activation rows):
// fused row tiles, the sequential-row matvec and its memory-access variants.
// Not include-guarded on purpose: included once, by matmul_simd.h, inside an ISA file's
// anonymous namespace (V is that file's vector-traits struct). The ISA file includes ops/prefetch_hint.h first (QINFER_MM_HINT).

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
    // The activations first, then each weight vector widened and used NX times:
    // NX + 1 vectors live beside the accumulators (dense_rows_wide's tiles).
    T xv[NX];
    QINFER_UNROLL
    for (int j = 0; j < NX; ++j) xv[j] = V::load(x + j * ldx + k);
    QINFER_UNROLL
    for (int r = 0; r < NR; ++r) {
      const T wv = L::ld(w + r * ldw + k);
      QINFER_UNROLL
      for (int j = 0; j < NX; ++j) acc[j][r] = V::fma(wv, xv[j], acc[j][r]);
    }
  }
  if (k < K) {
    const int rem = static_cast<int>(K - k);
    T xv[NX];
    QINFER_UNROLL
    for (int j = 0; j < NX; ++j) xv[j] = LdF32::ld_tail(x + j * ldx + k, rem);
    QINFER_UNROLL
    for (int r = 0; r < NR; ++r) {
      const T wv = L::ld_tail(w + r * ldw + k, rem);
      QINFER_UNROLL
      for (int j = 0; j < NX; ++j) acc[j][r] = V::fma(wv, xv[j], acc[j][r]);
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

// 2-4 activation rows (a speculative verify pass, a small batch) on AVX-512:
// dense_tile with all NX activation rows against NR = V::kTileAcc / NX weight rows
// (24 of the 32 registers as accumulators: 12 / 8 / 6 rows). More weight rows per
// pass over the activations than the NR x NX = 4 x 4 tiles: at these sizes (n x K
// fp32, 24 KiB for 3 rows of 2048) the activations do not stay in L1 beside the
// weight stream. AMD Zen 4, lm_head, 3 rows, alternating passes: one thread 20.3
// GB/s against 16.0 for the 4 x 4 tiles, two threads 32.3-32.7 against 28.8-28.9.
// Rows [r, r1) in tiles of kTileAcc / NX rows; returns where it stopped
// (the last r1 - r < NR rows are the caller's).
template <class L, class E, int NX>
inline int64_t dense_rows_wide(const E* w, int64_t K, const float* X, float* Y, int64_t ldy, const float* scales,
                               int64_t r, int64_t r1) {
  constexpr int NR = V::kTileAcc / NX;
  for (; r + NR <= r1; r += NR)
    dense_tile<L, E, NR, NX>(w + r * K, K, X, K, K, Y + r, ldy, scales ? scales + r : nullptr);
  return r;
}

// All activation rows [0, n) against NR weight rows, NX rows per tile.
template <class L, class E, int NR, bool Prefetch = false>
inline void dense_rows_x(const E* w, int64_t ldw, const float* X, int64_t ldx, int64_t n, int64_t K, float* Y,
                         int64_t ldy, const float* rscale) {
  for (int64_t j = 0; j < n; j += V::NX) {
    const int64_t nx = std::min<int64_t>(V::NX, n - j);
    const float* x = X + j * ldx;
    float* y = Y + j * ldy;
    switch (nx) {
      case 1: dense_tile<L, E, NR, 1, Prefetch>(w, ldw, x, ldx, K, y, ldy, rscale); break;
      case 2: dense_tile<L, E, NR, 2, Prefetch>(w, ldw, x, ldx, K, y, ldy, rscale); break;
      case 3: if constexpr (V::NX >= 3) dense_tile<L, E, NR, 3, Prefetch>(w, ldw, x, ldx, K, y, ldy, rscale); break;
      default: if constexpr (V::NX >= 4) dense_tile<L, E, NR, 4, Prefetch>(w, ldw, x, ldx, K, y, ldy, rscale); break;
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
        _mm_prefetch(pf + k * sizeof(E) + l, QINFER_MM_HINT(Hint));
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

// Decode (n = 1) on short rows (<= kSeqRowBytes) has exact variants that differ
// only in memory access (the probe in dispatch.cc picks one per host):
enum DecodeMode {
  kSeqNta = kMatvecSeqNta,    // rows one after another, non-temporal prefetch 4 KiB ahead
  kSeqT0 = kMatvecSeqT0,      // the same, prefetch into L1 (T0)
  kSeqNone = kMatvecSeqNone,  // the same, no software prefetch
  kTiled = kMatvecTiled,      // NR1-row tiles reading x once per tile, next tile prefetched (the long-row kernel)
};

