// Gated full attention (spec §3.4): per-head [query | gate] projection, zero-centred
// q/k norms, partial interleaved mRoPE, KV cache, causal GQA softmax attention,
// sigmoid output gate, o_proj.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "model/clones.h"
#include "model/layers.h"
#include "model/profile.h"
#include "ops/nn.h"
#include "util/thread_pool.h"

namespace qinfer::model {

namespace {
struct AttendArgs {
  const float* q;            // [N][qw] normed, rotated queries
  const float* gate;         // [N][qw]
  float* o;                  // [N][qw]
  const int64_t* pos;        // [N]
  KvCache* const* caches;    // per span
  int64_t qw, hd, group;
  float scale;
};

// Rows [t0, t1) of span `span` times query heads [h0, h1) of one kv group:
// online softmax over blocks of 64 keys, then the sigmoid output gate. Each key
// block is transposed once ([head_dim][64]) so a query's 64 scores accumulate
// as vectors along the keys (no horizontal sums), shared by all queries of the tile.
QINFER_CLONES void attend_tile(const AttendArgs& a, int64_t span, int64_t t0, int64_t t1, int64_t h0, int64_t h1) {
  constexpr int64_t kKeys = 64;
  const int64_t qw = a.qw, hd = a.hd;
  const KvCache& c = *a.caches[span];
  const int64_t kvh = h0 / a.group, nhq = h1 - h0, Q = (t1 - t0) * nhq;
  std::vector<float> kt(hd * kKeys), sc(kKeys), mx(Q, -INFINITY), sum(Q, 0.0f), acc(Q * hd, 0.0f);
  const int64_t L = a.pos[t1 - 1] + 1;   // keys the last query of the tile sees
  for (int64_t kb = 0; kb < L; kb += kKeys) {
    const int64_t ke = std::min(L, kb + kKeys), nk = ke - kb;
    for (int64_t j = 0; j < nk; ++j) {
      const float* kr = c.k(kb + j) + kvh * hd;
      for (int64_t d = 0; d < hd; ++d) kt[d * kKeys + j] = kr[d];
    }
    for (int64_t i = 0; i < Q; ++i) {
      const int64_t t = t0 + i / nhq, h = h0 + i % nhq;
      const int64_t lim = std::min(ke, a.pos[t] + 1);   // causal mask
      if (lim <= kb) continue;
      const int64_t n = lim - kb;
      const float* qh = a.q + t * qw + h * hd;
      float* s = sc.data();
      for (int64_t j = 0; j < kKeys; ++j) s[j] = 0.0f;
      for (int64_t d = 0; d < hd; ++d) {
        const float qd = qh[d];
        const float* kd = kt.data() + d * kKeys;
        for (int64_t j = 0; j < kKeys; ++j) s[j] += qd * kd[j];
      }
      float m = mx[i];
      for (int64_t j = 0; j < n; ++j) {
        s[j] *= a.scale;
        m = std::max(m, s[j]);
      }
      const float corr = std::exp(mx[i] - m);
      float* ac = acc.data() + i * hd;
      if (corr != 1.0f) {
        sum[i] *= corr;
        for (int64_t d = 0; d < hd; ++d) ac[d] *= corr;
      }
      for (int64_t j = 0; j < n; ++j) {
        const float pj = std::exp(s[j] - m);
        sum[i] += pj;
        ops::axpy(pj, c.v(kb + j) + kvh * hd, hd, ac);
      }
      mx[i] = m;
    }
  }
  for (int64_t i = 0; i < Q; ++i) {
    const int64_t t = t0 + i / nhq, h = h0 + i % nhq;
    const float inv = 1.0f / sum[i];
    const float* ac = acc.data() + i * hd;
    const float* gh = a.gate + t * qw + h * hd;
    float* oh = a.o + t * qw + h * hd;
    for (int64_t d = 0; d < hd; ++d) oh[d] = ac[d] * inv * ops::sigmoid(gh[d]);
  }
}
}  // namespace

void attention_forward(const TextConfig& tc, const AttentionWeights& w, const float* inv_freq, const float* U,
                       int64_t N, const std::vector<Span>& spans, const std::vector<KvCache*>& caches, float* out,
                       Arena& ar) {
  const int64_t nh = tc.num_attention_heads, nkv = tc.num_key_value_heads, hd = tc.head_dim;
  const int64_t rd = tc.rotary_dim(), half = rd / 2;
  const int64_t qw = nh * hd, kvw = nkv * hd;
  const float eps = static_cast<float>(tc.rms_norm_eps);

  std::optional<ProfileScope> prof(std::in_place, Part::kAttnProj);
  float* qg = ar.alloc<float>(N * 2 * qw);
  float* k = ar.alloc<float>(N * kvw);
  float* v = ar.alloc<float>(N * kvw);
  apply_all({{&w.q, U, N, qg}, {&w.k, U, N, k}, {&w.v, U, N, v}});

  std::vector<int64_t> pos(N);
  for (size_t s = 0; s < spans.size(); ++s)
    for (int64_t t = 0; t < spans[s].n; ++t) pos[spans[s].begin + t] = spans[s].pos0 + t;

  prof.emplace(Part::kAttnCore);
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
  // key/value row read from the cache serves every query of the tile (16 tokens
  // x all heads of the group).
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
      // Tiles of several tokens, or a long context: all heads of a kv group per
      // task (each key row read once for the group). A single token over a short
      // context: one head per task, so the few keys still spread over threads.
      if (t1 - t0 >= 4 || sp.pos0 + t1 - sp.begin >= 256) {
        for (int64_t g = 0; g < nkv; ++g) tasks.push_back({int64_t(s), t0, t1, g * group, (g + 1) * group});
      } else {
        for (int64_t h = 0; h < nh; ++h) tasks.push_back({int64_t(s), t0, t1, h, h + 1});
      }
    }
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  AttendArgs args{q, gate, o, pos.data(), caches.data(), qw, hd, group, scale};
  parallel_for(static_cast<int64_t>(tasks.size()), 1, [&](int64_t i0, int64_t i1, int) {
    for (int64_t it = i0; it < i1; ++it) {
      const Task& tk = tasks[it];
      attend_tile(args, tk.span, tk.t0, tk.t1, tk.h0, tk.h1);
    }
  });
  prof.emplace(Part::kAttnOut);
  w.o.apply(o, N, out);
}

}  // namespace qinfer::model
