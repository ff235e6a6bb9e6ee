// Internal: SIMD kernel templates shared by kernels_avx2.cc and kernels_avx512.cc.
// Each of those files defines a vector-traits struct V (width W, loads that widen
// BF16/F16/int8 to fp32, the int4 block decoder, tile shapes) and includes this
// header inside an anonymous namespace, so every instantiation stays local to
// the translation unit compiled for its instruction set.
//
// Two strategies:
//  * n < kPrefillMin (decode): fused tiles read the typed weights directly,
//    NR rows of W at a time against up to NX activation rows, fp32 FMA.
//  * n >= kPrefillMin (prefill): 16 weight rows are widened to fp32 once into a
//    per-thread scratch and reused by every activation row of a 64-row block.
// Not include-guarded on purpose (meant for exactly one inclusion per ISA file).

#define QINFER_UNROLL _Pragma("GCC unroll 16")

constexpr int64_t kPrefillMin = 8;
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

template <class L, class E>
void dense_rows_typed(const DenseMatrix& W, const float* X, int64_t n, float* Y, int64_t r0, int64_t r1) {
  const E* w = static_cast<const E*>(W.weights());
  const int64_t K = W.cols, ldy = W.rows;
  const float* scales = W.type == WType::Q8 ? W.row_scale.data() : nullptr;
  if (n >= kPrefillMin) {
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

// ---- GPTQ int4 ----

constexpr int kQ4Vecs = GptqMatrix::kBlock / V::W;  // fp32 vectors per 32-column block

// Row r's scale storage (fp16 bits or fp32) and one group's scale from it.
template <bool Half>
inline const void* q4_scales(const GptqMatrix& W, int64_t r) {
  if constexpr (Half) return W.row_scales_f16(r);
  else return W.row_scales_f32(r);
}
template <bool Half>
inline float q4_scale(const void* p, int64_t g) {
  if constexpr (Half) return _cvtsh_ss(static_cast<const uint16_t*>(p)[g]);
  else return static_cast<const float*>(p)[g];
}

// Decode tiles use sum_i s*(q_i - z)*x_i = s*(sum_i q_i*x_i) - s*z*(sum_i x_i):
// the codes are FMA'd as plain numbers per group, scaled once per group, and
// the zero-point term comes from per-group activation sums (q4_zero_terms).

// xs[j*groups + g] = sum of activation row j over group g (packed order).
inline void q4_group_sums(const GptqMatrix& W, const float* X, int64_t n, float* xs) {
  const int64_t kp = W.padded_cols(), groups = W.groups();
  for (int64_t j = 0; j < n; ++j)
    for (int64_t g = 0; g < groups; ++g) {
      typename V::T acc = V::zero();
      for (int64_t k = W.group_begin(g); k < W.group_begin(g + 1); k += V::W) acc = V::add(acc, V::load(X + j * kp + k));
      xs[j * groups + g] = V::reduce(acc);
    }
}

// sum_g scale[g] * zero[g] * xs[g] for one row and one activation row.
template <bool Half>
inline float q4_zero_term(const void* sc, const uint8_t* zr, const float* xs, int64_t groups) {
  typename V::T acc = V::zero();
  int64_t g = 0;
  for (; g + V::W <= groups; g += V::W) {
    typename V::T s;
    if constexpr (Half) s = V::load_f16(static_cast<const uint16_t*>(sc) + g);
    else s = V::load(static_cast<const float*>(sc) + g);
    acc = V::fma(V::mul(s, V::load_u8(zr + g)), V::load(xs + g), acc);
  }
  float t = V::reduce(acc);
  for (; g < groups; ++g) t += q4_scale<Half>(sc, g) * static_cast<float>(zr[g]) * xs[g];
  return t;
}

// Rows [r, r+NR) against activation rows [0, NX) of X (packed column order).
// Rows of an expert are short (1 KiB of codes), too short for the hardware
// prefetcher to ramp up, so the next tile's codes and group parameters are
// prefetched one tile ahead.
template <bool Half, int NR, int NX>
inline void q4_tile(const GptqMatrix& W, int64_t r, const float* x, int64_t ldx, const float* xs, float* y,
                    int64_t ldy) {
  using T = typename V::T;
  constexpr int B = GptqMatrix::kBlock;
  T acc[NX][NR];
  QINFER_UNROLL
  for (int j = 0; j < NX; ++j)
    QINFER_UNROLL
    for (int i = 0; i < NR; ++i) acc[j][i] = V::zero();
  const uint8_t* codes[NR];
  const void* sc[NR];
  QINFER_UNROLL
  for (int i = 0; i < NR; ++i) {
    codes[i] = W.row_codes(r + i);
    sc[i] = q4_scales<Half>(W, r + i);
  }
  const int64_t groups = W.groups();
  const int64_t ahead = r + 2 * NR <= W.rows() ? NR : 0;  // rows to prefetch ahead (0: last tile)
  const int64_t code_ahead = ahead * (W.padded_cols() / 2);
  const int64_t param_ahead = ahead * groups;
  constexpr int64_t kScaleBytes = Half ? 2 : 4;
  for (int64_t g = 0; g < groups; ++g) {
    if (ahead && g % 32 == 0) {
      QINFER_UNROLL
      for (int i = 0; i < NR; ++i) {
        _mm_prefetch(reinterpret_cast<const char*>(sc[i]) + (param_ahead + g) * kScaleBytes, _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(W.row_zeros(r + i) + param_ahead + g), _MM_HINT_T0);
      }
    }
    T part[NX][NR];
    QINFER_UNROLL
    for (int j = 0; j < NX; ++j)
      QINFER_UNROLL
      for (int i = 0; i < NR; ++i) part[j][i] = V::zero();
    const int64_t be = W.group_begin(g + 1);
    for (int64_t b = W.group_begin(g); b < be; b += B) {
      if (ahead && (b & 127) == 0) {  // one prefetch per 64-byte line of codes
        QINFER_UNROLL
        for (int i = 0; i < NR; ++i)
          _mm_prefetch(reinterpret_cast<const char*>(codes[i] + code_ahead + b / 2), _MM_HINT_T0);
      }
      T wq[NR][kQ4Vecs];
      QINFER_UNROLL
      for (int i = 0; i < NR; ++i) V::q4_codes(codes[i] + b / 2, wq[i]);
      QINFER_UNROLL
      for (int j = 0; j < NX; ++j)
        QINFER_UNROLL
        for (int v = 0; v < kQ4Vecs; ++v) {
          const T xv = V::load(x + j * ldx + b + v * V::W);
          QINFER_UNROLL
          for (int i = 0; i < NR; ++i) part[j][i] = V::fma(wq[i][v], xv, part[j][i]);
        }
    }
    QINFER_UNROLL
    for (int i = 0; i < NR; ++i) {
      const T s = V::set1(q4_scale<Half>(sc[i], g));
      QINFER_UNROLL
      for (int j = 0; j < NX; ++j) acc[j][i] = V::fma(part[j][i], s, acc[j][i]);
    }
  }
  QINFER_UNROLL
  for (int j = 0; j < NX; ++j)
    QINFER_UNROLL
    for (int i = 0; i < NR; ++i)
      y[j * ldy + i] = V::reduce(acc[j][i]) - q4_zero_term<Half>(sc[i], W.row_zeros(r + i), xs + j * groups, groups);
}

template <bool Half, int NR>
inline void q4_rows_x(const GptqMatrix& W, int64_t r, const float* X, const float* xs, int64_t n, float* Y) {
  const int64_t ldx = W.padded_cols(), ldy = W.rows(), groups = W.groups();
  for (int64_t j = 0; j < n; j += V::Q4NX) {
    const int64_t nx = std::min<int64_t>(V::Q4NX, n - j);
    if (nx == 1) q4_tile<Half, NR, 1>(W, r, X + j * ldx, ldx, xs + j * groups, Y + j * ldy + r, ldy);
    else if constexpr (V::Q4NX >= 2) {
      if (nx == 2) q4_tile<Half, NR, 2>(W, r, X + j * ldx, ldx, xs + j * groups, Y + j * ldy + r, ldy);
    }
  }
}

// Widens rows [r, r+count) to fp32 s * (q - z) in packed column order.
template <bool Half>
void q4_decode_rows(const GptqMatrix& W, int64_t r, int64_t count, float* dst, int64_t ld) {
  constexpr int B = GptqMatrix::kBlock;
  for (int64_t i = 0; i < count; ++i) {
    const uint8_t* codes = W.row_codes(r + i);
    const void* sc = q4_scales<Half>(W, r + i);
    const uint8_t* zr = W.row_zeros(r + i);
    float* d = dst + i * ld;
    for (int64_t g = 0; g < W.groups(); ++g) {
      const typename V::T s = V::set1(q4_scale<Half>(sc, g));
      const typename V::I z = V::iset1(zr[g]);
      for (int64_t b = W.group_begin(g); b < W.group_begin(g + 1); b += B) {
        typename V::T wv[kQ4Vecs];
        V::q4_block(codes + b / 2, z, s, wv);
        QINFER_UNROLL
        for (int v = 0; v < kQ4Vecs; ++v) V::store(d + b + v * V::W, wv[v]);
      }
    }
  }
}

template <bool Half>
void gptq_rows_t(const GptqMatrix& W, const float* X, int64_t n, float* Y, int64_t r0, int64_t r1) {
  const int64_t kp = W.padded_cols();
  if (n >= kPrefillMin) {
    auto decode = [&](int64_t r, int64_t count, float* dst, int64_t ld) { q4_decode_rows<Half>(W, r, count, dst, ld); };
    prefill_rows(decode, kp, X, kp, n, Y, W.rows(), r0, r1);
    return;
  }
  thread_local std::vector<float> xs;
  xs.resize(n * W.groups());
  q4_group_sums(W, X, n, xs.data());
  int64_t r = r0;
  for (; r + V::Q4NR <= r1; r += V::Q4NR) q4_rows_x<Half, V::Q4NR>(W, r, X, xs.data(), n, Y);
  for (; r < r1; ++r) q4_rows_x<Half, 1>(W, r, X, xs.data(), n, Y);
}

void gptq_rows(const GptqMatrix& W, const float* X, int64_t n, float* Y, int64_t r0, int64_t r1) {
  if (W.half_scales()) gptq_rows_t<true>(W, X, n, Y, r0, r1);
  else gptq_rows_t<false>(W, X, n, Y, r0, r1);
}
