// Gated full attention (spec §3.4): per-head [query | gate] projection, zero-centred
// q/k norms, partial interleaved mRoPE, KV cache, causal GQA softmax attention,
// sigmoid output gate, o_proj.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "model/layers.h"
#include "ops/nn.h"
#include "util/thread_pool.h"

namespace qinfer::model {

void attention_forward(const TextConfig& tc, const AttentionWeights& w, const float* inv_freq, const float* U,
                       int64_t N, const std::vector<Span>& spans, const std::vector<KvCache*>& caches, float* out,
                       Arena& ar) {
  const int64_t nh = tc.num_attention_heads, nkv = tc.num_key_value_heads, hd = tc.head_dim;
  const int64_t rd = tc.rotary_dim(), half = rd / 2;
  const int64_t qw = nh * hd, kvw = nkv * hd;
  const float eps = static_cast<float>(tc.rms_norm_eps);

  float* qg = ar.alloc<float>(N * 2 * qw);
  float* k = ar.alloc<float>(N * kvw);
  float* v = ar.alloc<float>(N * kvw);
  apply_all({{&w.q, U, N, qg}, {&w.k, U, N, k}, {&w.v, U, N, v}});

  std::vector<int64_t> pos(N);
  for (size_t s = 0; s < spans.size(); ++s)
    for (int64_t t = 0; t < spans[s].n; ++t) pos[spans[s].begin + t] = spans[s].pos0 + t;

  // Split q | gate, norms, rotary embedding.
  float* q = ar.alloc<float>(N * qw);
  float* gate = ar.alloc<float>(N * qw);
  const int* section = tc.rope.mrope_section.data();
  const int n_section = static_cast<int>(tc.rope.mrope_section.size());
  parallel_for(N, 4, [&](int64_t t0, int64_t t1, int) {
    std::vector<float> cs(half), sn(half);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t p3[3] = {pos[t], pos[t], pos[t]};   // text: all three mRoPE streams equal
      ops::mrope_cos_sin(p3, inv_freq, half, section, n_section, cs.data(), sn.data());
      for (int64_t h = 0; h < nh; ++h) {
        const float* src = qg + t * 2 * qw + h * 2 * hd;
        float* qh = q + t * qw + h * hd;
        std::memcpy(gate + t * qw + h * hd, src + hd, hd * sizeof(float));
        ops::rmsnorm(src, w.q_norm.data(), hd, eps, qh);
        ops::rope_rotate_half(qh, cs.data(), sn.data(), rd);
      }
      for (int64_t h = 0; h < nkv; ++h) {
        float* kh = k + t * kvw + h * hd;
        ops::rmsnorm(kh, w.k_norm.data(), hd, eps, kh);
        ops::rope_rotate_half(kh, cs.data(), sn.data(), rd);
      }
    }
  });

  // Append to the caches.
  for (size_t s = 0; s < spans.size(); ++s) {
    KvCache& c = *caches[s];
    c.reserve(spans[s].pos0 + spans[s].n);
    for (int64_t t = 0; t < spans[s].n; ++t) {
      const int64_t r = spans[s].begin + t;
      std::memcpy(c.k(spans[s].pos0 + t), k + r * kvw, kvw * sizeof(float));
      std::memcpy(c.v(spans[s].pos0 + t), v + r * kvw, kvw * sizeof(float));
    }
  }

  // Causal attention, flash style (online softmax over blocks of keys). A task is
  // a tile of query tokens of one span times query heads of one kv group, so each
  // key/value row read from the cache serves every query of the tile. Prefill
  // tiles: 16 tokens x all heads of the group; single tokens: one head per task,
  // so a decode step still spreads over the heads.
  float* o = ar.alloc<float>(N * qw);
  const int64_t group = nh / nkv;
  struct Task {
    int64_t span, t0, t1, h0, h1;   // rows [t0, t1) of the batch, query heads [h0, h1)
  };
  std::vector<Task> tasks;
  constexpr int64_t kTile = 16;
  for (size_t s = 0; s < spans.size(); ++s) {
    const Span& sp = spans[s];
    for (int64_t t0 = sp.begin; t0 < sp.begin + sp.n; t0 += kTile) {
      const int64_t t1 = std::min(sp.begin + sp.n, t0 + kTile);
      if (t1 - t0 >= 4) {
        for (int64_t g = 0; g < nkv; ++g) tasks.push_back({int64_t(s), t0, t1, g * group, (g + 1) * group});
      } else {
        for (int64_t h = 0; h < nh; ++h) tasks.push_back({int64_t(s), t0, t1, h, h + 1});
      }
    }
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  parallel_for(static_cast<int64_t>(tasks.size()), 1, [&](int64_t i0, int64_t i1, int) {
    constexpr int64_t kKeys = 64;
    std::vector<float> sc(kKeys), mx, sum, acc;
    for (int64_t it = i0; it < i1; ++it) {
      const Task& tk = tasks[it];
      const KvCache& c = *caches[tk.span];
      const int64_t kvh = tk.h0 / group, nhq = tk.h1 - tk.h0, Q = (tk.t1 - tk.t0) * nhq;
      mx.assign(Q, -INFINITY);
      sum.assign(Q, 0.0f);
      acc.assign(Q * hd, 0.0f);
      const int64_t L = pos[tk.t1 - 1] + 1;   // keys the last query of the tile sees
      for (int64_t kb = 0; kb < L; kb += kKeys) {
        const int64_t ke = std::min(L, kb + kKeys);
        for (int64_t i = 0; i < Q; ++i) {
          const int64_t t = tk.t0 + i / nhq, h = tk.h0 + i % nhq;
          const int64_t lim = std::min(ke, pos[t] + 1);   // causal mask
          if (lim <= kb) continue;
          const float* qh = q + t * qw + h * hd;
          float m = mx[i];
          for (int64_t j = kb; j < lim; ++j) {
            sc[j - kb] = ops::dot(qh, c.k(j) + kvh * hd, hd) * scale;
            m = std::max(m, sc[j - kb]);
          }
          const float corr = std::exp(mx[i] - m);
          float* a = acc.data() + i * hd;
          if (corr != 1.0f) {
            sum[i] *= corr;
            for (int64_t d = 0; d < hd; ++d) a[d] *= corr;
          }
          for (int64_t j = kb; j < lim; ++j) {
            const float pj = std::exp(sc[j - kb] - m);
            sum[i] += pj;
            ops::axpy(pj, c.v(j) + kvh * hd, hd, a);
          }
          mx[i] = m;
        }
      }
      for (int64_t i = 0; i < Q; ++i) {
        const int64_t t = tk.t0 + i / nhq, h = tk.h0 + i % nhq;
        const float inv = 1.0f / sum[i];
        const float* a = acc.data() + i * hd;
        const float* gh = gate + t * qw + h * hd;
        float* oh = o + t * qw + h * hd;
        for (int64_t d = 0; d < hd; ++d) oh[d] = a[d] * inv * ops::sigmoid(gh[d]);
      }
    }
  });
  w.o.apply(o, N, out);
}

}  // namespace qinfer::model
