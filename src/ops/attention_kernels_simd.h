// Internal: the attention core (SeqKernelTable::attend) on the vector traits V
// of the including per-ISA file (inside its anonymous namespace); needs exp_v
// from vec_math_simd.h. Not include-guarded on purpose.
//
// Items (query row x head of one kv group) are padded to a multiple of 4 and
// copied, pre-scaled, into scratch. Keys go in blocks of 64: scores of 4 items x
// V::NK keys per register tile (dot products over head_dim, one horizontal sum
// each), online softmax per item with exp_v, then p·V with V::PI items x up to
// 4 vectors of head_dim in registers per pass over the block's value rows. A
// key block is read in place from the cache when it is whole and head_dim is a
// multiple of W, else copied into zero-padded scratch.

constexpr int64_t kKB = kAttnKeyBlock;

inline int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }

// Software prefetch of the next key block (its keys during the scores, its values during
// p·V) is spread evenly over the work: one 64-byte line per row at a time, each item pass
// taking its share of the rows (scores) or of each row's lines (p·V). Issued in bursts (a
// tile's 64 lines at once) the prefetches queue behind each other and the stream from
// memory stalls: one Zen 5 core at 32768 keys read K/V at 12.8-13.9 GB/s so, 14.9-16.7
// spread (bench_ops_seq attention_decode_ctx32768_nosplit, alternating binaries; two threads
// split 24-27 -> 30-35 GB/s). From L3 (4096 keys) the same either way.
inline int64_t attn_share(int64_t total, int64_t parts, int64_t part) {
  const int64_t per = (total + parts - 1) / parts;
  return imin(total, part * per);
}

// sc[i][j] = qp[i] · k_j for items i < ni (multiple of 4), keys j < nkeys (multiple of V::NK).
// pf (or null): rows with the stride pfs to prefetch alongside (the next block's keys).
inline void attn_scores(const float* qp, int64_t ni, int64_t hdl, int64_t hdp, const float* kp, int64_t ks,
                        int64_t nkeys, float* sc, const float* pf, int64_t pfs) {
  constexpr int NK = V::NK;
  const int64_t passes = ni / 4;
  for (int64_t j0 = 0; j0 < nkeys; j0 += NK) {
    for (int64_t i0 = 0; i0 < ni; i0 += 4) {
      // This pass prefetches the next block's rows j0 + [pr0, pr1) (at pf), a line per d step.
      const int64_t pr0 = pf ? attn_share(NK, passes, i0 / 4) : 0, pr1 = pf ? attn_share(NK, passes, i0 / 4 + 1) : 0;
      V::T acc[4][NK];
      QSEQ_UNROLL
      for (int i = 0; i < 4; ++i)
        QSEQ_UNROLL
        for (int r = 0; r < NK; ++r) acc[i][r] = V::zero();
      for (int64_t d = 0; d < hdl; d += V::W) {
        V::T kv[NK];
        QSEQ_UNROLL
        for (int r = 0; r < NK; ++r) kv[r] = V::load(kp + (j0 + r) * ks + d);
        if (d % 16 == 0)
          for (int64_t r = pr0; r < pr1; ++r)
            _mm_prefetch(reinterpret_cast<const char*>(pf + (j0 + r) * pfs + d), _MM_HINT_T1);
        QSEQ_UNROLL
        for (int i = 0; i < 4; ++i) {
          const V::T qv = V::load(qp + (i0 + i) * hdp + d);
          QSEQ_UNROLL
          for (int r = 0; r < NK; ++r) acc[i][r] = V::fma(qv, kv[r], acc[i][r]);
        }
      }
      V::hsum_store(acc, sc + i0 * kKB + j0, kKB);
    }
  }
}

// acc[i][c0 + c*W ...] += Σ_j p[i][j] v_j[...] for c < PC vectors, items i < ni.
// pf (or null): rows with the stride pfs whose first pfl floats are prefetched, row j
// alongside key j (the next key block's values), the lines shared out among the item passes.
template <int PC>
inline void attn_pv(const float* p, int64_t ni, const float* vp, int64_t vs, int64_t nkeys, int64_t c0, float* acc,
                    int64_t hdp, const float* pf, int64_t pfs, int64_t pfl) {
  constexpr int PI = V::PI;
  const int64_t passes = (ni + PI - 1) / PI, lines = (pfl + 15) / 16;
  for (int64_t i0 = 0; i0 < ni; i0 += PI) {
    const int64_t l0 = pf ? 16 * attn_share(lines, passes, i0 / PI) : 0;
    const int64_t l1 = pf ? 16 * attn_share(lines, passes, i0 / PI + 1) : 0;
    const float* pfi = l0 < l1 ? pf : nullptr;
    V::T a[PI][PC];
    QSEQ_UNROLL
    for (int i = 0; i < PI; ++i)
      QSEQ_UNROLL
      for (int c = 0; c < PC; ++c) a[i][c] = V::load(acc + (i0 + i) * hdp + c0 + c * V::W);
    for (int64_t j = 0; j < nkeys; ++j) {
      if (pfi)
        for (int64_t d = l0; d < l1; d += 16) _mm_prefetch(reinterpret_cast<const char*>(pfi + j * pfs + d), _MM_HINT_T1);
      V::T vv[PC];
      QSEQ_UNROLL
      for (int c = 0; c < PC; ++c) vv[c] = V::load(vp + j * vs + c0 + c * V::W);
      QSEQ_UNROLL
      for (int i = 0; i < PI; ++i) {
        const V::T pb = V::set1(p[(i0 + i) * kKB + j]);
        QSEQ_UNROLL
        for (int c = 0; c < PC; ++c) a[i][c] = V::fma(pb, vv[c], a[i][c]);
      }
    }
    QSEQ_UNROLL
    for (int i = 0; i < PI; ++i)
      QSEQ_UNROLL
      for (int c = 0; c < PC; ++c) V::store(acc + (i0 + i) * hdp + c0 + c * V::W, a[i][c]);
  }
}

// Rows [r, r + kKB) of `rows` lie in one storage block.
inline bool block_contiguous(const KvRows& rows, int64_t r) { return r % rows.block_rows + kKB <= rows.block_rows; }

// nb rows of kv head g into dst (row stride hdp), zero padded to
// nbp rows and hdl columns.
inline void copy_rows(const KvRows& rows, int64_t r0, int64_t nb, int64_t nbp, int64_t g, int64_t hd, int64_t hdl,
                      int64_t hdp, float* dst) {
  for (int64_t j = 0; j < nbp; ++j) {
    float* d = dst + j * hdp;
    int64_t e = 0;
    if (j < nb) {
      const float* src = rows.at(r0 + j, g);
      for (; e < hd; ++e) d[e] = src[e];
    }
    for (; e < hdl; ++e) d[e] = 0.0f;
  }
}

// Shared by both paths below. Item i of a tile is query row t0 + i / nh, head h0 + i % nh;
// it attends to the keys before the returned end (causal: up to its own position).
inline int64_t attn_item_key_end(const AttentionSeq& seq, int64_t t0, int64_t nh, int64_t k1, int64_t i) {
  return imin(k1, seq.pos[t0 + i / nh] + 1);
}

// The items copied, pre-scaled, into qp (row stride hdp; rows items..ni and columns hd..hdp
// zero), acc zeroed, the running max and sum reset. Returns the end of the longest key range.
inline int64_t attn_load_items(const AttentionShape& s, const AttentionSeq& seq, int64_t t0, int64_t h0, int64_t nh,
                               int64_t items, int64_t ni, int64_t hdp, int64_t k0, int64_t k1, float* qp, float* acc,
                               float* mx, float* sum) {
  const int64_t hd = s.head_dim;
  int64_t kmax = k0;
  for (int64_t i = 0; i < ni; ++i) {
    float* row = qp + i * hdp;
    int64_t d = 0;
    if (i < items) {
      const float* src = seq.q + (t0 + i / nh) * s.q_stride + (h0 + i % nh) * hd;
      for (; d < hd; ++d) row[d] = s.scale * src[d];
      kmax = imax(kmax, attn_item_key_end(seq, t0, nh, k1, i));
    }
    for (; d < hdp; ++d) row[d] = 0.0f;
    for (d = 0; d < hdp; ++d) acc[i * hdp + d] = 0.0f;
    mx[i] = -INFINITY;
    sum[i] = 0.0f;
  }
  return kmax;
}

// Online softmax over the key block starting at kb: each item's scores sc[i][0, w) become
// weights in place (keys past its range masked), its running max and sum are updated and
// acc[i] rescaled. An item with no key in the block gets zero weights over [0, zw).
inline void attn_softmax_block(const AttentionSeq& seq, int64_t t0, int64_t nh, int64_t k1, int64_t items, int64_t ni,
                               int64_t kb, int64_t zw, int64_t w, int64_t hdp, int64_t hdl, float* sc, float* acc,
                               float* mx, float* sum) {
  for (int64_t i = 0; i < ni; ++i) {
    float* row = sc + i * kKB;
    const int64_t n = i < items ? imin(kb + kKB, attn_item_key_end(seq, t0, nh, k1, i)) - kb : 0;
    if (n <= 0) {
      for (int64_t j = 0; j < zw; ++j) row[j] = 0.0f;
      continue;
    }
    for (int64_t j = n; j < w; ++j) row[j] = -INFINITY;
    V::T mv = V::set1(-INFINITY);
    for (int64_t j = 0; j < w; j += V::W) mv = V::max(mv, V::load(row + j));
    const float bm = V::reduce_max(mv);
    const float m = mx[i] > bm ? mx[i] : bm;
    const V::T mvec = V::set1(m);
    V::T sv = V::zero();
    for (int64_t j = 0; j < w; j += V::W) {
      const V::T p = exp_v(V::sub(V::load(row + j), mvec));
      V::store(row + j, p);
      sv = V::add(sv, p);
    }
    const float corr = sexp(mx[i] - m);
    if (corr != 1.0f) {
      const V::T cv = V::set1(corr);
      float* a = acc + i * hdp;
      for (int64_t d = 0; d < hdl; d += V::W) V::store(a + d, V::mul(cv, V::load(a + d)));
      sum[i] *= corr;
    }
    sum[i] += V::reduce_add(sv);
    mx[i] = m;
  }
}

// The items' results: normalized into seq.out, or with part the unnormalized (m, l, acc)
// the split-K merge combines.
inline void attn_store_items(const AttentionShape& s, const AttentionSeq& seq, int64_t t0, int64_t h0, int64_t nh,
                             int64_t items, int64_t hdp, const float* acc, const float* mx, const float* sum,
                             const AttnPartial* part) {
  const int64_t hd = s.head_dim;
  for (int64_t i = 0; i < items; ++i) {
    const float* a = acc + i * hdp;
    if (part) {
      part->m[i] = mx[i];
      part->l[i] = sum[i];
      for (int64_t d = 0; d < hd; ++d) part->acc[i * hd + d] = a[d];
    } else {
      const float inv = sum[i] > 0.0f ? 1.0f / sum[i] : 0.0f;
      float* o = seq.out + (t0 + i / nh) * s.out_stride + (h0 + i % nh) * hd;
      for (int64_t d = 0; d < hd; ++d) o[d] = a[d] * inv;
    }
  }
}

void attend_simd(const AttentionShape& s, const AttentionSeq& seq, int64_t t0, int64_t t1, int64_t h0, int64_t h1,
                 int64_t k0, int64_t k1, const AttnPartial* part, float* work) {
  const int64_t hd = s.head_dim, group = s.heads / s.kv_heads, nh = h1 - h0;
  const int64_t items = (t1 - t0) * nh, ni = attn_round_up(items, kAttnItemPad);
  const int64_t hdp = attn_round_up(hd, kAttnDimPad), hdl = attn_round_up(hd, V::W);
  const int64_t g = h0 / group;
  float* qp = work;
  float* acc = qp + ni * hdp;
  float* sc = acc + ni * hdp;
  float* mx = sc + ni * kKB;
  float* sum = mx + ni;
  float* kbuf = sum + ni;
  float* vbuf = kbuf + kKB * hdp;
  const int64_t kmax = attn_load_items(s, seq, t0, h0, nh, items, ni, hdp, k0, k1, qp, acc, mx, sum);

  for (int64_t kb = k0; kb < kmax; kb += kKB) {
    const int64_t nb = imin(kKB, kmax - kb), nbp = attn_round_up(nb, V::NK), nbw = attn_round_up(nbp, V::W);
    const float *kp, *vp;
    int64_t ks, vs;
    if (nb == kKB && hd % V::W == 0 && block_contiguous(seq.k, kb) && block_contiguous(seq.v, kb)) {
      kp = seq.k.at(kb, g), ks = seq.k.row_stride;
      vp = seq.v.at(kb, g), vs = seq.v.row_stride;
    } else {
      copy_rows(seq.k, kb, nb, nbp, g, hd, hdl, hdp, kbuf);
      copy_rows(seq.v, kb, nb, nbp, g, hd, hdl, hdp, vbuf);
      kp = kbuf, ks = hdp, vp = vbuf, vs = hdp;
    }
    const bool direct = kp != kbuf;
    // The next block's rows are fetched while this one is worked on: its keys
    // during the scores, its values during p·V.
    const bool next = direct && kb + 2 * kKB <= kmax && block_contiguous(seq.k, kb + kKB) &&
                      block_contiguous(seq.v, kb + kKB);
    const float* nk = next ? seq.k.at(kb + kKB, g) : nullptr;
    const float* nv = next ? seq.v.at(kb + kKB, g) : nullptr;
    attn_scores(qp, ni, hdl, hdp, kp, ks, nbp, sc, nk, ks);
    attn_softmax_block(seq, t0, nh, k1, items, ni, kb, nbp, nbw, hdp, hdl, sc, acc, mx, sum);

    int64_t c0 = 0;
    for (; c0 + 4 * V::W <= hdl; c0 += 4 * V::W)
      attn_pv<4>(sc, ni, vp, vs, nbp, c0, acc, hdp, nv ? nv + c0 : nullptr, vs, 4 * V::W);
    for (; c0 < hdl; c0 += V::W) attn_pv<1>(sc, ni, vp, vs, nbp, c0, acc, hdp, nv ? nv + c0 : nullptr, vs, V::W);
  }

  attn_store_items(s, seq, t0, h0, nh, items, hdp, acc, mx, sum, part);
}

// ---- Packed path (long prefill; see AttnPackedKv) ----
// Items padded to a multiple of kAttnPackedItemPad and copied, pre-scaled, into
// scratch. Per block of kKB keys: q kᵀ as a small GEMM, V::QR items x V::QN key
// vectors of accumulators, one broadcast of q per item and dim against the
// block's transposed keys (no horizontal sums); the online softmax as above;
// then p·V with V::PR items x up to 3 vectors of head_dim per pass over the
// block's value rows. Keys and values are contiguous per kv head, so a tile of
// many items reads each block once from cache.

// sc[i][j] = qp[i] · k_j for items i < ni (a multiple of V::QR) and the kKB keys
// of the transposed block kt ([d][kKB]).
inline void pk_scores(const float* qp, int64_t ni, int64_t hd, int64_t hdp, const float* kt, float* sc) {
  constexpr int R = V::QR, N = V::QN, KW = V::QN * V::W;
  static_assert(kKB % KW == 0 && kAttnPackedItemPad % R == 0, "packed score tile");
  for (int64_t i0 = 0; i0 < ni; i0 += R) {
    const float* q = qp + i0 * hdp;
    for (int64_t j0 = 0; j0 < kKB; j0 += KW) {
      V::T a[R][N];
      QSEQ_UNROLL
      for (int r = 0; r < R; ++r)
        QSEQ_UNROLL
        for (int n = 0; n < N; ++n) a[r][n] = V::zero();
      const float* k = kt + j0;
      for (int64_t d = 0; d < hd; ++d, k += kKB) {
        V::T kv[N];
        QSEQ_UNROLL
        for (int n = 0; n < N; ++n) kv[n] = V::load(k + n * V::W);
        QSEQ_UNROLL
        for (int r = 0; r < R; ++r) {
          const V::T b = V::set1(q[r * hdp + d]);
          QSEQ_UNROLL
          for (int n = 0; n < N; ++n) a[r][n] = V::fma(b, kv[n], a[r][n]);
        }
      }
      QSEQ_UNROLL
      for (int r = 0; r < R; ++r)
        QSEQ_UNROLL
        for (int n = 0; n < N; ++n) V::store(sc + (i0 + r) * kKB + j0 + n * V::W, a[r][n]);
    }
  }
}

// acc[i][c0 + c*W ...] += Σ_{j < nkeys} p[i][j] v_j[c0 + c*W ...] for c < PC, items i < ni
// (a multiple of V::PR); value rows with the stride vs.
template <int PC>
inline void pk_pv(const float* p, int64_t ni, const float* v, int64_t vs, int64_t nkeys, int64_t c0, float* acc,
                  int64_t hdp) {
  constexpr int R = V::PR;
  static_assert(kAttnPackedItemPad % R == 0, "packed p·V tile");
  for (int64_t i0 = 0; i0 < ni; i0 += R) {
    V::T a[R][PC];
    QSEQ_UNROLL
    for (int r = 0; r < R; ++r)
      QSEQ_UNROLL
      for (int c = 0; c < PC; ++c) a[r][c] = V::load(acc + (i0 + r) * hdp + c0 + c * V::W);
    const float* pr = p + i0 * kKB;
    const float* vj = v + c0;
    for (int64_t j = 0; j < nkeys; ++j, vj += vs) {
      V::T vv[PC];
      QSEQ_UNROLL
      for (int c = 0; c < PC; ++c) vv[c] = V::load(vj + c * V::W);
      QSEQ_UNROLL
      for (int r = 0; r < R; ++r) {
        const V::T b = V::set1(pr[r * kKB + j]);
        QSEQ_UNROLL
        for (int c = 0; c < PC; ++c) a[r][c] = V::fma(b, vv[c], a[r][c]);
      }
    }
    QSEQ_UNROLL
    for (int r = 0; r < R; ++r)
      QSEQ_UNROLL
      for (int c = 0; c < PC; ++c) V::store(acc + (i0 + r) * hdp + c0 + c * V::W, a[r][c]);
  }
}

void attend_packed_simd(const AttentionShape& s, const AttentionSeq& seq, const AttnPackedKv& kv, int64_t t0,
                        int64_t t1, int64_t h0, int64_t h1, int64_t k0, int64_t k1, const AttnPartial* part,
                        float* work) {
  const int64_t hd = s.head_dim, nh = h1 - h0;
  const int64_t items = (t1 - t0) * nh, ni = attn_round_up(items, kAttnPackedItemPad);
  const int64_t hdp = attn_round_up(hd, kAttnDimPad), hdl = attn_round_up(hd, V::W);
  float* qp = work;
  float* acc = qp + ni * hdp;
  float* sc = acc + ni * hdp;
  float* mx = sc + ni * kKB;
  float* sum = mx + ni;
  const int64_t kmax = attn_load_items(s, seq, t0, h0, nh, items, ni, hdp, k0, k1, qp, acc, mx, sum);

  for (int64_t kb = k0; kb < kmax; kb += kKB) {
    const int64_t nb = imin(kKB, kmax - kb);
    pk_scores(qp, ni, hd, hdp, kv.kt + (kb / kKB) * hd * kKB, sc);
    attn_softmax_block(seq, t0, nh, k1, items, ni, kb, kKB, kKB, hdp, hdl, sc, acc, mx, sum);

    const float* vb = kv.v + kb * hdp;
    int64_t c0 = 0;
    for (; c0 + 3 * V::W <= hdl; c0 += 3 * V::W) pk_pv<3>(sc, ni, vb, hdp, nb, c0, acc, hdp);
    if (hdl - c0 == 2 * V::W) pk_pv<2>(sc, ni, vb, hdp, nb, c0, acc, hdp);
    else if (hdl - c0 == V::W) pk_pv<1>(sc, ni, vb, hdp, nb, c0, acc, hdp);
  }

  attn_store_items(s, seq, t0, h0, nh, items, hdp, acc, mx, sum, part);
}
