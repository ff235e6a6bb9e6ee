// Internal: GPTQ int4 products with few activation rows (decode): integer dot
// products on 16-row tiles against 21-bit quantized activations.
// Not include-guarded on purpose: included once, by matmul_simd.h, inside an ISA file's
// anonymous namespace (V is that file's vector-traits struct).

// ---- GPTQ int4: integer dot products on 16-row tiles ----
//
// A tile's 16 rows sit in the lanes of kH vectors (kH = 16 / W). Per 32-column
// block, each 64-byte chunk gives two vectors of byte codes (low and high
// nibbles), each lane holding 4 consecutive columns of its row; V::dot4 adds
// code · x over those 4 columns into the lane (vpdpbusd), once for each of the
// three bytes xh, xm, xl of the 21-bit activations. Per block:
// d = (2^14 acc_h + 2^7 acc_m + acc_l) - z * Σxq, y += (s * sx) * d. Without VNNI
// (V::kPairs16, AVX2) each level's pair sums add up in int16 over the block first.


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
    const uint8_t* cb = codes + b * GptqMatrix::kTileBlockBytes;
    QINFER_UNROLL
    for (int ch = 0; ch < 4; ++ch) _mm_prefetch(reinterpret_cast<const char*>(cb) + kQ4Prefetch + 64 * ch, _MM_HINT_T0);
    _mm_prefetch(sp + b * spb + kQ4Prefetch / 8, _MM_HINT_T0);
    if (zp) _mm_prefetch(zp + b * kTR / kBpg + kQ4Prefetch / 16, _MM_HINT_T0);
    I dq[NX][kH];   // the block's integer dot product per row, 2^14 h + 2^7 m + l
    if constexpr (V::kPairs16) {
      // Without VNNI (AVX2) a byte dot product is vpmaddubsw (int16 pair sums) then
      // vpmaddwd (to int32). Per level, the block's 8 pair sums of a lane (4 chunks x
      // low/high nibbles) are added in int16 first, |sum| <= 8 * 2 * 15 * 128 = 30720
      // < 2^15, and widened once: the same integers as widening each, a third fewer
      // instructions.
      I ph[NX][kH], pm[NX][kH], pl[NX][kH];
      QINFER_UNROLL
      for (int j = 0; j < NX; ++j)
        QINFER_UNROLL
        for (int h = 0; h < kH; ++h) ph[j][h] = pm[j][h] = pl[j][h] = V::izero();
      QINFER_UNROLL
      for (int ch = 0; ch < 4; ++ch)
        QINFER_UNROLL
        for (int h = 0; h < kH; ++h) {
          const I v = V::load_i(cb + 64 * ch + 4 * V::W * h);
          const I lo = V::nib_lo(v), hi = V::nib_hi(v);
          const int64_t c = b * GptqMatrix::kBlock + 8 * ch;
          QINFER_UNROLL
          for (int j = 0; j < NX; ++j) {
            ph[j][h] = V::add16(ph[j][h], V::add16(V::pairs(lo, xh[j] + c), V::pairs(hi, xh[j] + c + 4)));
            pm[j][h] = V::add16(pm[j][h], V::add16(V::pairs(lo, xm[j] + c), V::pairs(hi, xm[j] + c + 4)));
            pl[j][h] = V::add16(pl[j][h], V::add16(V::pairs(lo, xl[j] + c), V::pairs(hi, xl[j] + c + 4)));
          }
        }
      QINFER_UNROLL
      for (int j = 0; j < NX; ++j)
        QINFER_UNROLL
        for (int h = 0; h < kH; ++h)
          dq[j][h] = V::combine(V::widen16(ph[j][h]), V::widen16(pm[j][h]), V::widen16(pl[j][h]));
    } else if constexpr (NX * kH >= 4) {
      // One accumulator per row and level chain: the h level's sums, shifted left 7, then
      // the m level's, shifted 7, then the l level's, give 2^14 h + 2^7 m + l directly
      // (|sum| < 2^30: the same integers as adding the three levels after), with the
      // block's codes unpacked once for all rows and levels.
      I lo[4][kH], hi[4][kH], acc[NX][kH];
      QINFER_UNROLL
      for (int ch = 0; ch < 4; ++ch)
        QINFER_UNROLL
        for (int h = 0; h < kH; ++h) {
          const I v = V::load_i(cb + 64 * ch + 4 * V::W * h);
          lo[ch][h] = V::nib_lo(v);
          hi[ch][h] = V::nib_hi(v);
        }
      QINFER_UNROLL
      for (int j = 0; j < NX; ++j)
        QINFER_UNROLL
        for (int h = 0; h < kH; ++h) acc[j][h] = V::izero();
      const int8_t* const* lv[3] = {xh, xm, xl};
      QINFER_UNROLL
      for (int level = 0; level < 3; ++level) {
        if (level > 0) {
          QINFER_UNROLL
          for (int j = 0; j < NX; ++j)
            QINFER_UNROLL
            for (int h = 0; h < kH; ++h) acc[j][h] = V::shl7(acc[j][h]);
        }
        QINFER_UNROLL
        for (int ch = 0; ch < 4; ++ch)
          QINFER_UNROLL
          for (int h = 0; h < kH; ++h) {
            const int64_t c = b * GptqMatrix::kBlock + 8 * ch;
            QINFER_UNROLL
            for (int j = 0; j < NX; ++j)
              acc[j][h] = V::dot4(V::dot4(acc[j][h], lo[ch][h], lv[level][j] + c), hi[ch][h], lv[level][j] + c + 4);
          }
      }
      QINFER_UNROLL
      for (int j = 0; j < NX; ++j)
        QINFER_UNROLL
        for (int h = 0; h < kH; ++h) dq[j][h] = acc[j][h];
    } else {
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
      for (int j = 0; j < NX; ++j)
        QINFER_UNROLL
        for (int h = 0; h < kH; ++h) dq[j][h] = V::combine(V::iadd<S>(ah[j][h]), V::iadd<S>(am[j][h]), V::iadd<S>(al[j][h]));
    }
    QINFER_UNROLL
    for (int j = 0; j < NX; ++j) {
      const T bsx = V::set1(sx[j][b]), bsxq = V::set1(sxq[j][b]);
      QINFER_UNROLL
      for (int h = 0; h < kH; ++h) {
        const T d = V::fnmadd(zf[h], bsxq, V::cvt_i(dq[j][h]));
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

// One activation row against tiles t and t + 1 read side by side: each tile's codes
// are a stream of their own (a tile's bytes apart), and some CPUs fetch two streams
// from memory faster than one (the BF16 row tiles' lesson; Intel Xeon, 16 of 4096
// experts a call, 2 threads: 20 -> 23 GB/s). Each tile's sums run exactly as
// q4_tile<Half, 1> runs them (integer sums in another order: the same integers), so
// the results are the same bits. The lower and upper nibbles' products share an
// accumulator: 2 x 3 chains of dependent dot products per block step keep the unit
// busy. (Three tiles measured the same as two, four slower: registers.)
template <bool Half>
inline void q4_tile_pair(const GptqMatrix& W, int64_t t, const Q4Input& X, float* Y) {
  constexpr int NT = 2;
  using T = typename V::T;
  using I = typename V::I;
  const int64_t nb = W.blocks();
  const int8_t* xh = X.xh;
  const int8_t* xm = X.xm;
  const int8_t* xl = X.xl;
  T accf[NT][kH];
  const uint8_t* codes[NT];
  const char* sp[NT];
  Q4Group<Half> grp[NT] = {Q4Group<Half>(W), Q4Group<Half>(W)};
  QINFER_UNROLL
  for (int u = 0; u < NT; ++u) {
    QINFER_UNROLL
    for (int h = 0; h < kH; ++h) accf[u][h] = V::zero();
    codes[u] = W.tile_codes(t + u);
    sp[u] = Half ? reinterpret_cast<const char*>(W.tile_scales_f16(t + u, 0))
                 : reinterpret_cast<const char*>(W.tile_scales_f32(t + u, 0));
  }
  const int64_t kBpg = std::max<int64_t>(1, nb / W.groups());
  const int64_t spb = (Half ? 2 : 4) * kTR / kBpg;
  const bool zs = grp[0].stored_zeros;
  const int64_t tile_bytes = nb * GptqMatrix::kTileBlockBytes;
  for (int64_t b = 0; b < nb; ++b) {
    const int64_t c = b * GptqMatrix::kBlock;
    const T bsx = V::set1(X.sx[b]), bsxq = V::set1(X.sxq[b]);
    QINFER_UNROLL
    for (int u = 0; u < NT; ++u) {
      grp[u].at(W, t + u, b);
      const uint8_t* cb = codes[u] + b * GptqMatrix::kTileBlockBytes;
      // Past the tile's end, the prefetch skips the partner tile (read by this pass
      // already) into the next pair's tile u: bench_ops
      // int4_matvec_16of4096experts_512x2048/avx512, Intel Xeon (session 28), 2
      // threads, alternating: 385-395 -> 334-350 us, 8of256experts_random 381-412 ->
      // 310-345; in cache (one hot expert) ~4% slower. Splitting the block loop at
      // the switch instead of choosing per block measured slower from memory.
      const int64_t skip = b * GptqMatrix::kTileBlockBytes + kQ4Prefetch >= tile_bytes ? tile_bytes : 0;
      QINFER_UNROLL
      for (int ch = 0; ch < 4; ++ch) _mm_prefetch(reinterpret_cast<const char*>(cb) + skip + kQ4Prefetch + 64 * ch, _MM_HINT_T0);
      _mm_prefetch(sp[u] + b * spb + kQ4Prefetch / 8 + (skip ? nb * spb : 0), _MM_HINT_T0);
      if (zs) _mm_prefetch(reinterpret_cast<const char*>(W.tile_zeros(t + u, 0)) + b * kTR / kBpg + kQ4Prefetch / 16, _MM_HINT_T0);
      I ah[kH], am[kH], al[kH];
      QINFER_UNROLL
      for (int h = 0; h < kH; ++h) ah[h] = am[h] = al[h] = V::izero();
      QINFER_UNROLL
      for (int ch = 0; ch < 4; ++ch)
        QINFER_UNROLL
        for (int h = 0; h < kH; ++h) {
          const I v = V::load_i(cb + 64 * ch + 4 * V::W * h);
          const I lo = V::nib_lo(v), hi = V::nib_hi(v);
          const int64_t cc = c + 8 * ch;
          ah[h] = V::dot4(V::dot4(ah[h], lo, xh + cc), hi, xh + cc + 4);
          am[h] = V::dot4(V::dot4(am[h], lo, xm + cc), hi, xm + cc + 4);
          al[h] = V::dot4(V::dot4(al[h], lo, xl + cc), hi, xl + cc + 4);
        }
      QINFER_UNROLL
      for (int h = 0; h < kH; ++h) {
        const T d = V::fnmadd(grp[u].z[h], bsxq, V::cvt_i(V::combine(ah[h], am[h], al[h])));
        accf[u][h] = V::fma(V::mul(grp[u].s[h], bsx), d, accf[u][h]);
      }
    }
  }
  QINFER_UNROLL
  for (int u = 0; u < NT; ++u)
    QINFER_UNROLL
    for (int h = 0; h < kH; ++h) V::store(Y + (t + u) * kTR + h * V::W, accf[u][h]);
}

template <bool Half>
void gptq_rows_t(const GptqMatrix& W, const Q4Input& X, float* Y, int64_t r0, int64_t r1) {
  // Few activation rows (dispatch.cc sends q4_panel_min or more to the panels),
  // so all of them stay in cache while the tiles stream.
  const int64_t n = X.n;
  for (int64_t r = r0; r < r1; r += kTR) {
    const int64_t t = r / kTR;
    const int nr = static_cast<int>(std::min<int64_t>(kTR, r1 - r));
    int64_t j = 0;
    for (; j + V::Q4NX <= n; j += V::Q4NX) q4_tile<Half, V::Q4NX>(W, t, X, j, Y, nr);
    // The last n % Q4NX rows in one pass of that many, not one by one (each
    // pass unpacks the tile's codes again). Integer sums: the same bits.
    for_count<V::Q4NX - 1>(n - j, [&](auto nx) { q4_tile<Half, decltype(nx)::value>(W, t, X, j, Y, nr); });
  }
}

void gptq_rows(const GptqMatrix& W, const Q4Input& X, float* Y, int64_t r0, int64_t r1) {
  if (W.half_scales()) gptq_rows_t<true>(W, X, Y, r0, r1);
  else gptq_rows_t<false>(W, X, Y, r0, r1);
}

// gptq_rows for one activation row (X.n == 1) with whole pairs of tiles read side by
// side (q4_tile_pair), the rest as gptq_rows: the same bits. Q4Kernel::kPairs.
template <bool Half>
void gptq_rows_pairs_t(const GptqMatrix& W, const Q4Input& X, float* Y, int64_t r0, int64_t r1) {
  for (; r1 - r0 >= 2 * kTR; r0 += 2 * kTR) q4_tile_pair<Half>(W, r0 / kTR, X, Y);
  if (r0 < r1) gptq_rows_t<Half>(W, X, Y, r0, r1);
}

template <int Unused = 0>   // a template: instantiated only by the tables that list it
void gptq_rows_pairs(const GptqMatrix& W, const Q4Input& X, float* Y, int64_t r0, int64_t r1) {
  if (X.n != 1) return gptq_rows(W, X, Y, r0, r1);
  if (W.half_scales()) gptq_rows_pairs_t<true>(W, X, Y, r0, r1);
  else gptq_rows_pairs_t<false>(W, X, Y, r0, r1);
}

