// Internal: BF16C (ops/bf16c.h) dense kernels, for every activation-row count.
// Each computes, per output, the fp32 operations of the plain BF16 kernel of the
// same shape in the same order (dense_row_seq<.., 4> for one row, dense_tile's one
// accumulator per output for 2-7 rows, the prefill scratch and panels from the same
// fp32 weights), so results are bit-identical to BF16's.
// V::C12 (the ISA file's vector traits) decodes one 64-weight block into 64 / W
// vectors in column order. Not include-guarded on purpose: included once, by
// matmul_simd.h, inside an ISA file's anonymous namespace.

constexpr int kC12Vecs = static_cast<int>(kBf16cBlock) / V::W;   // vectors per block

struct C12View {
  const uint8_t* s;               // stream
  int64_t K, nb, rb;              // columns, blocks per row, stream bytes per row
  const uint32_t* esc_start;
  const uint32_t* esc_block;
  const uint16_t* raw;
};
inline C12View c12_view(const DenseMatrix& W) {
  const Bf16cAux& a = *W.bf16c;
  const int64_t nb = W.cols / kBf16cBlock;
  return {static_cast<const uint8_t*>(W.weights()), W.cols, nb, nb * kBf16cBlockBytes, a.esc_start.data(),
          a.esc_block.data(), a.raw.data()};
}

// Walks the blocks of row r in order: block(b, w) receives block b's vectors.
// Escaped blocks are read from the raw list, the rest decoded from the stream.
struct C12Row {
  const uint8_t* blk;    // the row's first block
  const uint32_t* e;     // next escape
  const uint32_t* ee;
  const uint16_t* raw;   // its values
  int64_t next;          // its block index (INT64_MAX when none is left)
  C12Row() = default;
  C12Row(const C12View& c, int64_t r)
      : blk(c.s + r * c.rb), e(c.esc_block + c.esc_start[r]),
        ee(c.esc_block + c.esc_start[r + 1]), raw(c.raw + static_cast<size_t>(c.esc_start[r]) * kBf16cBlock),
        next(e < ee ? static_cast<int64_t>(*e) : INT64_MAX) {}
  void load(const typename V::C12& dec, int64_t b, typename V::T* w) {
    if (__builtin_expect(b == next, 0)) {
      QINFER_UNROLL
      for (int i = 0; i < kC12Vecs; ++i) w[i] = V::load_bf16(raw + i * V::W);
      raw += kBf16cBlock;
      ++e;
      next = e < ee ? static_cast<int64_t>(*e) : INT64_MAX;
      return;
    }
    const uint8_t* p = blk + b * kBf16cBlockBytes;
    dec.block(p, p + kBf16cBlock, w);
  }
};

// One row against one activation row: dense_row_seq<LdBF16, uint16_t, 4, Hint>'s sums.
template <int Hint>
inline void c12_row_seq(const C12View& c, const typename V::C12& dec, int64_t r, const float* x, float* y) {
  using T = typename V::T;
  constexpr int A = 4;
  T acc[A];
  QINFER_UNROLL
  for (int a = 0; a < A; ++a) acc[a] = V::zero();
  C12Row row(c, r);
  for (int64_t b = 0; b < c.nb; ++b) {
    if constexpr (Hint >= 0) {   // 96 bytes a block: two lines every other block
      const char* pf = reinterpret_cast<const char*>(row.blk + b * kBf16cBlockBytes + kSeqPrefetch);
      _mm_prefetch(pf, QINFER_MM_HINT(Hint));
      if (b % 2 == 0) _mm_prefetch(pf + 64, QINFER_MM_HINT(Hint));
    }
    T w[kC12Vecs];
    row.load(dec, b, w);
    const float* xb = x + b * kBf16cBlock;
    QINFER_UNROLL
    for (int i = 0; i < kC12Vecs; ++i) acc[i % A] = V::fma(w[i], V::load(xb + i * V::W), acc[i % A]);
  }
  QINFER_UNROLL
  for (int a = 1; a < A; ++a) acc[0] = V::add(acc[0], acc[a]);
  *y = V::reduce(acc[0]);
}

// NR rows against NX activation rows (ldx = K), one accumulator per output, k in
// order: dense_tile's sums.
template <int NR, int NX>
inline void c12_tile(const C12View& c, const typename V::C12& dec, int64_t r, const float* X, float* Y, int64_t ldy) {
  using T = typename V::T;
  T acc[NX][NR];
  QINFER_UNROLL
  for (int j = 0; j < NX; ++j)
    QINFER_UNROLL
    for (int i = 0; i < NR; ++i) acc[j][i] = V::zero();
  C12Row rows[NR];
  for (int i = 0; i < NR; ++i) rows[i] = C12Row(c, r + i);
  for (int64_t b = 0; b < c.nb; ++b) {
    const float* xb = X + b * kBf16cBlock;
    QINFER_UNROLL
    for (int i = 0; i < NR; ++i) {
      T w[kC12Vecs];
      rows[i].load(dec, b, w);
      QINFER_UNROLL
      for (int v = 0; v < kC12Vecs; ++v)
        QINFER_UNROLL
        for (int j = 0; j < NX; ++j) acc[j][i] = V::fma(w[v], V::load(xb + j * c.K + v * V::W), acc[j][i]);
    }
  }
  QINFER_UNROLL
  for (int j = 0; j < NX; ++j)
    QINFER_UNROLL
    for (int i = 0; i < NR; ++i) Y[j * ldy + i] = V::reduce(acc[j][i]);
}

// Rows [r0, r1) against NX activation rows: tiles of V::kC12Acc / NX rows, then one by one.
template <int NX>
inline void c12_rows_nx(const C12View& c, const typename V::C12& dec, const float* X, float* Y, int64_t ldy,
                        int64_t r0, int64_t r1) {
  constexpr int NR = V::kC12Acc / NX;
  int64_t r = r0;
  for (; r + NR <= r1; r += NR) c12_tile<NR, NX>(c, dec, r, X, Y + r, ldy);
  for (; r < r1; ++r) c12_tile<1, NX>(c, dec, r, X, Y + r, ldy);
}

// Rows [r0, r1) decoded to fp32 (ld floats apart): the prefill kernels' weights.
inline void c12_decode_f32(const C12View& c, const typename V::C12& dec, int64_t r0, int64_t count, float* dst,
                           int64_t ld) {
  for (int64_t i = 0; i < count; ++i) {
    C12Row row(c, r0 + i);
    for (int64_t b = 0; b < c.nb; ++b) {
      typename V::T w[kC12Vecs];
      row.load(dec, b, w);
      QINFER_UNROLL
      for (int v = 0; v < kC12Vecs; ++v) V::store(dst + i * ld + b * kBf16cBlock + v * V::W, w[v]);
    }
  }
}

template <int Mode = kSeqNta>
void c12_rows(const DenseMatrix& W, const float* X, int64_t n, float* Y, int64_t r0, int64_t r1) {
  const C12View c = c12_view(W);
  const typename V::C12 dec(W.bf16c->table);
  const int64_t K = W.cols, ldy = W.rows;
  if (n >= kPrefillMin) {
    if constexpr (V::kDensePanels) {
      if (n >= kDensePanelMin) {   // dense_panel_rows on 32 rows decoded at a time (a panel pair on AVX-512)
        constexpr int64_t kRows = 2 * kTR;
        thread_local std::vector<float> rows_buf;
        if (static_cast<int64_t>(rows_buf.size()) < kRows * K) rows_buf.resize(kRows * K);
        for (int64_t r = r0; r < r1; r += kRows) {
          const int64_t nr = std::min<int64_t>(kRows, r1 - r);
          c12_decode_f32(c, dec, r, nr, rows_buf.data(), K);
          dense_panel_rows<LdF32, float>(rows_buf.data(), K, nullptr, X, n, Y + r, ldy, 0, nr);
        }
        return;
      }
    }
    auto decode = [&](int64_t r, int64_t count, float* dst, int64_t ld) { c12_decode_f32(c, dec, r, count, dst, ld); };
    prefill_rows(decode, K, X, K, n, Y, ldy, r0, r1);
    return;
  }
  if (n == 1) {
    constexpr int hint = Mode == kSeqT0 ? _MM_HINT_T0 : Mode == kSeqNone ? -1 : _MM_HINT_NTA;
    for (int64_t r = r0; r < r1; ++r) c12_row_seq<hint>(c, dec, r, X, Y + r);
    return;
  }
  // 2-7 rows: up to 4 at a time (5-7: 4, then the rest).
  for (int64_t j = 0; j < n; j += 4) {
    const int64_t nx = std::min<int64_t>(4, n - j);
    const float* x = X + j * K;
    float* y = Y + j * ldy;
    switch (nx) {
      case 1: c12_rows_nx<1>(c, dec, x, y, ldy, r0, r1); break;
      case 2: c12_rows_nx<2>(c, dec, x, y, ldy, r0, r1); break;
      case 3: c12_rows_nx<3>(c, dec, x, y, ldy, r0, r1); break;
      default: c12_rows_nx<4>(c, dec, x, y, ldy, r0, r1); break;
    }
  }
}
