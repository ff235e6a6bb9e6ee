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

  std::vector<int64_t> pos(N), span_of(N);
  for (size_t s = 0; s < spans.size(); ++s)
    for (int64_t t = 0; t < spans[s].n; ++t) {
      pos[spans[s].begin + t] = spans[s].pos0 + t;
      span_of[spans[s].begin + t] = static_cast<int64_t>(s);
    }

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

  // Causal attention per (token, query head); query head h reads kv head h / (nh / nkv).
  float* o = ar.alloc<float>(N * qw);
  const int64_t group = nh / nkv;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  parallel_for(N * nh, 1, [&](int64_t i0, int64_t i1, int) {
    std::vector<float> scores;
    for (int64_t it = i0; it < i1; ++it) {
      const int64_t t = it / nh, h = it % nh, kvh = h / group;
      const KvCache& c = *caches[span_of[t]];
      const int64_t L = pos[t] + 1;
      scores.resize(L);
      const float* qh = q + t * qw + h * hd;
      for (int64_t j = 0; j < L; ++j) scores[j] = ops::dot(qh, c.k(j) + kvh * hd, hd) * scale;
      ops::softmax(scores.data(), L);
      float* oh = o + t * qw + h * hd;
      std::fill(oh, oh + hd, 0.0f);
      for (int64_t j = 0; j < L; ++j) ops::axpy(scores[j], c.v(j) + kvh * hd, hd, oh);
      const float* gh = gate + t * qw + h * hd;
      for (int64_t d = 0; d < hd; ++d) oh[d] *= ops::sigmoid(gh[d]);
    }
  });
  w.o.apply(o, N, out);
}

}  // namespace qinfer::model
