// Gated full attention (docs/MODEL.md §4): per-head [query | gate] projection, zero-centred
// q/k norms, partial interleaved mRoPE, KV cache, causal GQA softmax attention,
// sigmoid output gate, o_proj.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "model/layers.h"
#include "model/profile.h"
#include "ops/attention_kernels.h"
#include "ops/norms_activations_rope.h"
#include "util/thread_pool.h"

namespace qinfer::model {

namespace {
// The (t, h, w) rotary position of batch row `row` (token index `index`) of span s.
void rope_position(const std::vector<Span>& spans, int s, int64_t row, int64_t index, int64_t p3[3]) {
  const Span& sp = spans[s];
  if (sp.mrope_pos) {
    const int64_t* p = sp.mrope_pos + (row - sp.begin) * 3;
    p3[0] = p[0], p3[1] = p[1], p3[2] = p[2];
  } else {
    p3[0] = p3[1] = p3[2] = index + sp.rope_delta;   // text: all three mRoPE streams equal
  }
}

// Batch row -> position and span.
void row_positions(const std::vector<Span>& spans, int64_t N, std::vector<int64_t>& pos, std::vector<int>& span_of) {
  pos.resize(N);
  span_of.resize(N);
  for (size_t s = 0; s < spans.size(); ++s)
    for (int64_t t = 0; t < spans[s].n; ++t) {
      pos[spans[s].begin + t] = spans[s].pos0 + t;
      span_of[spans[s].begin + t] = static_cast<int>(s);
    }
}

// fn(t, cos, sin) for every batch row t with the rotary cos/sin of its position
// (row_positions), rows split across threads.
template <class Fn>
void for_rows_rotary(const TextConfig& tc, const float* inv_freq, const std::vector<Span>& spans,
                     const std::vector<int64_t>& pos, const std::vector<int>& span_of, const Fn& fn) {
  const int64_t half = tc.rotary_dim() / 2;
  const int* section = tc.rope.mrope_section.data();
  const int n_section = static_cast<int>(tc.rope.mrope_section.size());
  parallel_for(static_cast<int64_t>(pos.size()), 4, [&](int64_t t0, int64_t t1, int) {
    std::vector<float> cs(half), sn(half);
    for (int64_t t = t0; t < t1; ++t) {
      int64_t p3[3];
      rope_position(spans, span_of[t], t, pos[t], p3);
      ops::mrope_cos_sin(p3, inv_freq, half, section, n_section, cs.data(), sn.data());
      fn(t, cs.data(), sn.data());
    }
  });
}

// Key rows: k_norm and the rotary embedding of row t's position (cs, sn), in place.
void norm_rotate_keys(const TextConfig& tc, const AttentionWeights& w, const float* cs, const float* sn, float* kt) {
  const int64_t hd = tc.head_dim;
  for (int64_t h = 0; h < tc.num_key_value_heads; ++h) {
    float* kh = kt + h * hd;
    ops::rmsnorm(kh, w.k_norm.data(), hd, static_cast<float>(tc.rms_norm_eps), kh);
    ops::rope_rotate_half(kh, cs, sn, tc.rotary_dim());
  }
}

// Appends each span's key and value rows to its cache.
void append_kv(const std::vector<Span>& spans, const std::vector<KvCache*>& caches, const float* k, const float* v,
               int64_t kvw) {
  for (size_t s = 0; s < spans.size(); ++s) {
    KvCache& c = *caches[s];
    c.reserve(spans[s].pos0 + spans[s].n);
    for (int64_t t = 0; t < spans[s].n; ++t) {
      const int64_t r = spans[s].begin + t;
      c.put(spans[s].pos0 + t, k + r * kvw, v + r * kvw);
    }
  }
}
}  // namespace

void attention_write_kv(const TextConfig& tc, const AttentionWeights& w, const float* inv_freq, const float* U,
                        int64_t N, const std::vector<Span>& spans, const std::vector<KvCache*>& caches, Arena& ar) {
  const int64_t kvw = tc.num_key_value_heads * tc.head_dim;
  ProfileScope prof(Part::kAttnProj);
  float* k = ar.alloc<float>(N * kvw);
  float* v = ar.alloc<float>(N * kvw);
  apply_all({{&w.k, U, N, k}, {&w.v, U, N, v}});
  std::vector<int64_t> pos;
  std::vector<int> span_of;
  row_positions(spans, N, pos, span_of);
  for_rows_rotary(tc, inv_freq, spans, pos, span_of, [&](int64_t t, const float* cs, const float* sn) {
    norm_rotate_keys(tc, w, cs, sn, k + t * kvw);
  });
  append_kv(spans, caches, k, v, kvw);
}

void attention_forward(const TextConfig& tc, const AttentionWeights& w, const float* inv_freq, const float* U,
                       int64_t N, const std::vector<Span>& spans, const std::vector<KvCache*>& caches, float* out,
                       Arena& ar) {
  const int64_t nh = tc.num_attention_heads, nkv = tc.num_key_value_heads, hd = tc.head_dim;
  const int64_t rd = tc.rotary_dim();
  const int64_t qw = nh * hd, kvw = nkv * hd;
  const float eps = static_cast<float>(tc.rms_norm_eps);

  std::optional<ProfileScope> prof(std::in_place, Part::kAttnProj);
  float* qg = ar.alloc<float>(N * 2 * qw);
  float* k = ar.alloc<float>(N * kvw);
  float* v = ar.alloc<float>(N * kvw);
  apply_all({{&w.q, U, N, qg}, {&w.k, U, N, k}, {&w.v, U, N, v}});

  std::vector<int64_t> pos;
  std::vector<int> span_of;
  row_positions(spans, N, pos, span_of);

  prof.emplace(Part::kAttnCore);
  // Split q | gate, norms, rotary embedding.
  float* q = ar.alloc<float>(N * qw);
  float* gate = ar.alloc<float>(N * qw);
  for_rows_rotary(tc, inv_freq, spans, pos, span_of, [&](int64_t t, const float* cs, const float* sn) {
    for (int64_t h = 0; h < nh; ++h) {
      const float* src = qg + t * 2 * qw + h * 2 * hd;
      float* qh = q + t * qw + h * hd;
      std::memcpy(gate + t * qw + h * hd, src + hd, hd * sizeof(float));
      ops::rmsnorm(src, w.q_norm.data(), hd, eps, qh);
      ops::rope_rotate_half(qh, cs, sn, rd);
    }
    norm_rotate_keys(tc, w, cs, sn, k + t * kvw);
  });
  append_kv(spans, caches, k, v, kvw);

  // Causal GQA attention over each span's cache (ops::attention: flash style,
  // split-K for decode), then the sigmoid output gate.
  float* o = ar.alloc<float>(N * qw);
  const int64_t cap_rows = KvCache::kBlockTokens;
  std::vector<std::vector<const float*>> kblocks(spans.size()), vblocks(spans.size());
  std::vector<ops::AttentionSeq> seqs(spans.size());
  for (size_t s = 0; s < spans.size(); ++s) {
    const KvCache& c = *caches[s];
    for (int64_t b = 0; b * cap_rows < c.capacity(); ++b) {
      kblocks[s].push_back(c.k_block(b));
      vblocks[s].push_back(c.v_block(b));
    }
    ops::AttentionSeq& sq = seqs[s];
    sq.q = q + spans[s].begin * qw;
    sq.out = o + spans[s].begin * qw;
    sq.pos = pos.data() + spans[s].begin;
    sq.rows = spans[s].n;
    sq.k = {kblocks[s].data(), cap_rows, c.row_stride(), c.head_stride()};
    sq.v = {vblocks[s].data(), cap_rows, c.row_stride(), c.head_stride()};
  }
  ops::AttentionShape shape;
  shape.heads = nh;
  shape.kv_heads = nkv;
  shape.head_dim = hd;
  shape.q_stride = shape.out_stride = qw;
  shape.scale = 1.0f / std::sqrt(static_cast<float>(hd));
  ops::attention(shape, seqs.data(), seqs.size());
  parallel_for(N, 4, [&](int64_t t0, int64_t t1, int) {
    for (int64_t i = t0 * qw; i < t1 * qw; ++i) o[i] *= ops::sigmoid(gate[i]);
  });
  prof.emplace(Part::kAttnOut);
  w.o.apply(o, N, out);
}

}  // namespace qinfer::model
