// Internal: GPTQ int4 products with many activation rows (prefill): each tile
// dequantized once into an fp32 panel, then the panel GEMM of dense_panel_simd.h.
// Not include-guarded on purpose: included once, by matmul_simd.h, inside an ISA file's
// anonymous namespace (V is that file's vector-traits struct).

// ---- GPTQ int4, many activation rows (prefill): fp32 panels ----
//
// From the table's q4_panel_min rows on, a tile is dequantized once into an fp32 panel
// [packed column][16 rows] (w = s·q − s·z, one fmsub per weight) and every
// activation row runs against it as a plain FMA GEMM: for each column k,
// acc[row lanes] += x[k] · panel[k]. Each output accumulates over k in order, in
// one lane, so the scalar twin gives the same bits.

// Blocks [b0, b1) of tile t into panel (its first column is block b0's).
template <bool Half>
inline void q4_tile_panel(const GptqMatrix& W, int64_t t, int64_t b0, int64_t b1, float* panel) {
  using T = typename V::T;
  using I = typename V::I;
  const uint8_t* codes = W.tile_codes(t);
  Q4Group<Half> grp(W);
  const T* sw = grp.s;
  T sz[kH];
  QINFER_UNROLL
  for (int h = 0; h < kH; ++h) sz[h] = V::zero();
  for (int64_t b = b0; b < b1; ++b) {
    if (grp.at(W, t, b)) {
      QINFER_UNROLL
      for (int h = 0; h < kH; ++h) sz[h] = V::mul(grp.s[h], grp.z[h]);
    }
    const uint8_t* cb = codes + b * GptqMatrix::kTileBlockBytes;
    float* pb = panel + (b - b0) * GptqMatrix::kBlock * kTR;
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

// Output rows [r0, r1) of every activation row of Xp ([n][kp], packed order), a tile (or a
// pair) at a time, in column chunks of kQ4PanelBlocks blocks: each chunk's panel is built
// and then used by every activation row while it is in L1 (a whole 2048-column panel is
// 128 KB, read back from L2 by every pass). Each output still sums over k in order.
template <bool Half>
void gptq_rows_f32_t(const GptqMatrix& W, const float* Xp, int64_t n, float* Y, int64_t r0, int64_t r1) {
  constexpr int kPanels = V::kPanelPairs ? 2 : 1;   // tiles dequantized per pass (panels_all)
  const int64_t kp = W.padded_cols(), nb = W.blocks();
  const int64_t cb = n <= kQ4ChunkRows ? std::min(kQ4PanelBlocks, nb) : nb, kc = cb * GptqMatrix::kBlock;
  thread_local std::vector<float> panel_buf;
  if (static_cast<int64_t>(panel_buf.size()) < kPanels * kc * kTR) panel_buf.resize(kPanels * kc * kTR);
  for (int64_t r = r0; r < r1; r += kPanels * kTR) {
    const int nr = static_cast<int>(std::min<int64_t>(kPanels * kTR, r1 - r));
    for (int64_t b0 = 0; b0 < nb; b0 += cb) {
      const int64_t b1 = std::min(nb, b0 + cb), c = (b1 - b0) * GptqMatrix::kBlock;
      for (int p = 0; p * kTR < nr; ++p) q4_tile_panel<Half>(W, r / kTR + p, b0, b1, panel_buf.data() + p * c * kTR);
      panels_all(panel_buf.data(), c * kTR, c, Xp + b0 * GptqMatrix::kBlock, kp, n, Y, W.rows(), r, nr, b0 > 0);
    }
  }
}

void gptq_rows_f32(const GptqMatrix& W, const float* Xp, int64_t n, float* Y, int64_t r0, int64_t r1) {
  if (W.half_scales()) gptq_rows_f32_t<true>(W, Xp, n, Y, r0, r1);
  else gptq_rows_f32_t<false>(W, Xp, n, Y, r0, r1);
}

