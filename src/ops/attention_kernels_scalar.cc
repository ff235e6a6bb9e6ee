// Scalar twin of the attention core: per query item, all scores of the key
// range, max-subtracted softmax, weighted sum of values (no blocking, no online
// softmax). Reference for the SIMD paths and the QINFER_KERNELS=scalar path.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/seq_kernel_table.h"

namespace qinfer::ops::detail {
namespace {

// The scalar core over any key/value layout: key(p, h) gives key p of head h's kv group as a
// pointer and the stride between its dims, value(p, h) its value row.
template <class KeyAt, class ValueAt>
void attend_rows(const AttentionShape& s, const AttentionSeq& seq, int64_t t0, int64_t t1, int64_t h0, int64_t h1,
                 int64_t k0, int64_t k1, const AttnPartial* part, KeyAt key, ValueAt value) {
  const int64_t hd = s.head_dim, nh = h1 - h0;
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
        const auto [k, ks] = key(p, h);
        float dot = 0.0f;
        for (int64_t d = 0; d < hd; ++d) dot += q[d] * k[d * ks];
        score[p - k0] = s.scale * dot;
        m = std::max(m, score[p - k0]);
      }
      for (int64_t p = k0; p < kend; ++p) {
        const float w = std::exp(score[p - k0] - m);
        const float* v = value(p, h);
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

struct KeyPtr {
  const float* k;
  int64_t stride;   // between dims
};

}  // namespace

void attend_scalar(const AttentionShape& s, const AttentionSeq& seq, int64_t t0, int64_t t1, int64_t h0, int64_t h1,
                   int64_t k0, int64_t k1, const AttnPartial* part, float*) {
  const int64_t hd = s.head_dim, group = s.heads / s.kv_heads;
  attend_rows(
      s, seq, t0, t1, h0, h1, k0, k1, part,
      [&](int64_t p, int64_t h) { return KeyPtr{seq.k.at(p, h / group), 1}; },
      [&](int64_t p, int64_t h) { return seq.v.at(p, h / group); });
}

// Scalar twin of the packed path: the same core reading the packed layout (kv holds one kv
// group: keys transposed in blocks of kAttnKeyBlock, dim d of key p at kt[(p / B) * hd * B +
// d * B + p % B]; value rows padded to kAttnDimPad).
void attend_packed_scalar(const AttentionShape& s, const AttentionSeq& seq, const AttnPackedKv& kv, int64_t t0,
                          int64_t t1, int64_t h0, int64_t h1, int64_t k0, int64_t k1, const AttnPartial* part,
                          float*) {
  const int64_t hd = s.head_dim, vs = attn_round_up(hd, kAttnDimPad), B = kAttnKeyBlock;
  attend_rows(
      s, seq, t0, t1, h0, h1, k0, k1, part,
      [&](int64_t p, int64_t) { return KeyPtr{kv.kt + (p / B) * hd * B + p % B, B}; },
      [&](int64_t p, int64_t) { return kv.v + p * vs; });
}

}  // namespace qinfer::ops::detail
