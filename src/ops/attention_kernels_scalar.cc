// Scalar twin of the attention core: per query item, all scores of the key
// range, max-subtracted softmax, weighted sum of values (no blocking, no online
// softmax). Reference for the SIMD paths and the QINFER_KERNELS=scalar path.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/seq_kernel_table.h"

namespace qinfer::ops::detail {

void attend_scalar(const AttentionShape& s, const AttentionSeq& seq, int64_t t0, int64_t t1, int64_t h0, int64_t h1,
                   int64_t k0, int64_t k1, const AttnPartial* part, float*) {
  const int64_t hd = s.head_dim, group = s.heads / s.kv_heads, nh = h1 - h0;
  std::vector<float> score, acc(hd);
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t kend = std::min(k1, seq.pos[t] + 1);
    for (int64_t h = h0; h < h1; ++h) {
      const int64_t i = (t - t0) * nh + (h - h0), off = (h / group) * hd;
      const float* q = seq.q + t * s.q_stride + h * hd;
      float m = -INFINITY, l = 0.0f;
      std::fill(acc.begin(), acc.end(), 0.0f);
      score.assign(std::max<int64_t>(0, kend - k0), 0.0f);
      for (int64_t p = k0; p < kend; ++p) {
        const float* k = seq.k.row(p) + off;
        float dot = 0.0f;
        for (int64_t d = 0; d < hd; ++d) dot += q[d] * k[d];
        score[p - k0] = s.scale * dot;
        m = std::max(m, score[p - k0]);
      }
      for (int64_t p = k0; p < kend; ++p) {
        const float w = std::exp(score[p - k0] - m);
        const float* v = seq.v.row(p) + off;
        l += w;
        for (int64_t d = 0; d < hd; ++d) acc[d] += w * v[d];
      }
      if (part) {
        part->m[i] = m;
        part->l[i] = l;
        std::copy(acc.begin(), acc.end(), part->acc + i * hd);
      } else {
        float* o = seq.out + t * s.out_stride + h * hd;
        for (int64_t d = 0; d < hd; ++d) o[d] = l > 0.0f ? acc[d] / l : 0.0f;
      }
    }
  }
}

}  // namespace qinfer::ops::detail

namespace qinfer::ops::detail {

// Scalar twin of the packed path: attend_scalar reading the packed layout.
void attend_packed_scalar(const AttentionShape& s, const AttentionSeq& seq, const AttnPackedKv& kv, int64_t t0,
                          int64_t t1, int64_t h0, int64_t h1, int64_t k0, int64_t k1, const AttnPartial* part,
                          float*) {
  const int64_t hd = s.head_dim, nh = h1 - h0, vs = attn_round_up(hd, kAttnDimPad), B = kAttnKeyBlock;
  std::vector<float> score, acc(hd);
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t kend = std::min(k1, seq.pos[t] + 1);
    for (int64_t h = h0; h < h1; ++h) {
      const int64_t i = (t - t0) * nh + (h - h0);
      const float* q = seq.q + t * s.q_stride + h * hd;
      float m = -INFINITY, l = 0.0f;
      std::fill(acc.begin(), acc.end(), 0.0f);
      score.assign(std::max<int64_t>(0, kend - k0), 0.0f);
      for (int64_t p = k0; p < kend; ++p) {
        const float* k = kv.kt + (p / B) * hd * B + p % B;   // dim d at k[d * B]
        float dot = 0.0f;
        for (int64_t d = 0; d < hd; ++d) dot += q[d] * k[d * B];
        score[p - k0] = s.scale * dot;
        m = std::max(m, score[p - k0]);
      }
      for (int64_t p = k0; p < kend; ++p) {
        const float w = std::exp(score[p - k0] - m);
        const float* v = kv.v + p * vs;
        l += w;
        for (int64_t d = 0; d < hd; ++d) acc[d] += w * v[d];
      }
      if (part) {
        part->m[i] = m;
        part->l[i] = l;
        std::copy(acc.begin(), acc.end(), part->acc + i * hd);
      } else {
        float* o = seq.out + t * s.out_stride + h * hd;
        for (int64_t d = 0; d < hd; ++d) o[d] = l > 0.0f ? acc[d] / l : 0.0f;
      }
    }
  }
}

}  // namespace qinfer::ops::detail
