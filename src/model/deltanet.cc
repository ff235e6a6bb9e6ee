// Gated DeltaNet layer (docs/MODEL.md §3): projections, causal depthwise conv + SiLU
// with the conv state, L2-normed q/k, decay and beta gates, the delta rule
// (recurrent for a single token, chunked C = 64 otherwise), gated RMSNorm, out_proj.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "model/layers.h"
#include "model/profile.h"
#include "ops/conv_silu.h"
#include "ops/delta_rule.h"
#include "ops/norms_activations_rope.h"
#include "util/thread_pool.h"

namespace qinfer::model {

void deltanet_forward(const TextConfig& tc, const DeltaNetWeights& w, int cache_index, const float* U, int64_t N,
                      const std::vector<Span>& spans, float* out, Arena& ar) {
  const int64_t nk = tc.linear_num_key_heads, nv = tc.linear_num_value_heads;
  const int64_t dk = tc.linear_key_head_dim, dv = tc.linear_value_head_dim;
  const int64_t K = tc.linear_conv_kernel_dim, KS = K - 1;
  const int64_t kdim = nk * dk, vdim = nv * dv, conv_dim = 2 * kdim + vdim;
  const float eps = static_cast<float>(tc.rms_norm_eps);

  std::optional<ProfileScope> prof(std::in_place, Part::kGdnProj);
  float* qkv = ar.alloc<float>(N * conv_dim);
  float* z = ar.alloc<float>(N * vdim);
  float* b = ar.alloc<float>(N * nv);
  float* a = ar.alloc<float>(N * nv);
  apply_all({{&w.in_qkv, U, N, qkv}, {&w.in_z, U, N, z}, {&w.in_b, U, N, b},
             {&w.in_a, U, N, a}});

  prof.emplace(Part::kGdnConv);
  // Causal depthwise conv over time, per span, channels split across threads.
  float* act = ar.alloc<float>(N * conv_dim);
  constexpr int64_t kChanBlock = 512;
  const int64_t nblocks = (conv_dim + kChanBlock - 1) / kChanBlock;
  // A few tokens are cheaper inline than a thread-pool dispatch.
  const int64_t conv_items = static_cast<int64_t>(spans.size()) * nblocks;
  parallel_for(conv_items, N >= 8 ? 1 : conv_items, [&](int64_t i0, int64_t i1, int) {
    for (int64_t it = i0; it < i1; ++it) {
      const Span& sp = spans[it / nblocks];
      const int64_t c0 = (it % nblocks) * kChanBlock, c1 = std::min(conv_dim, c0 + kChanBlock);
      float* cs = sp.state->delta(cache_index).conv.data();   // [KS][conv_dim]
      auto input = [&](int64_t idx) -> const float* {          // idx relative to the span's first token
        return idx < 0 ? cs + (KS + idx) * conv_dim : qkv + (sp.begin + idx) * conv_dim;
      };
      std::vector<const float*> rows(K);
      for (int64_t t = 0; t < sp.n; ++t) {
        for (int64_t j = 0; j < K; ++j) rows[j] = input(t + j - KS);
        ops::conv_silu(rows.data(), K, w.conv_t.data(), conv_dim, c0, c1, act + (sp.begin + t) * conv_dim);
      }
      if (sp.keep_states) {   // [old state; inputs] for SequenceState::rollback
        float* keep_rows = sp.state->delta(cache_index).spec_conv.data();
        for (int64_t r = 0; r < KS + sp.n; ++r)
          std::memcpy(keep_rows + r * conv_dim + c0, input(r - KS) + c0, (c1 - c0) * sizeof(float));
      }
      // New conv state: the last KS inputs of [state; new tokens].
      std::vector<float> keep(KS * (c1 - c0));
      for (int64_t r = 0; r < KS; ++r) {
        const float* x = input(sp.n - KS + r);
        std::memcpy(keep.data() + r * (c1 - c0), x + c0, (c1 - c0) * sizeof(float));
      }
      for (int64_t r = 0; r < KS; ++r)
        std::memcpy(cs + r * conv_dim + c0, keep.data() + r * (c1 - c0), (c1 - c0) * sizeof(float));
    }
  });

  // Gates and L2-normed q, k (in place in act).
  float* g = ar.alloc<float>(N * nv);
  float* beta = ar.alloc<float>(N * nv);
  const float qscale = 1.0f / std::sqrt(static_cast<float>(dk));
  parallel_for(N, 16, [&](int64_t t0, int64_t t1, int) {
    for (int64_t t = t0; t < t1; ++t) {
      float* row = act + t * conv_dim;
      for (int64_t h = 0; h < nk; ++h) {
        ops::l2norm(row + h * dk, dk, 1e-6f, qscale, row + h * dk);
        ops::l2norm(row + kdim + h * dk, dk, 1e-6f, 1.0f, row + kdim + h * dk);
      }
      for (int64_t h = 0; h < nv; ++h) {
        beta[t * nv + h] = ops::sigmoid(b[t * nv + h]);
        g[t * nv + h] = w.a_neg[h] * ops::softplus(a[t * nv + h] + w.dt_bias[h]);
      }
    }
  });

  prof.emplace(Part::kGdnRule);
  // A verify step keeps its tokens' delta-rule inputs (SequenceState::rollback replays them).
  for (const Span& sp : spans) {
    if (!sp.keep_states) continue;
    DeltaNetState& ds = sp.state->delta(cache_index);
    for (int64_t t = 0; t < sp.n; ++t) {
      std::memcpy(ds.spec_kv.data() + t * (kdim + vdim), act + (sp.begin + t) * conv_dim + kdim,
                  (kdim + vdim) * sizeof(float));
      std::memcpy(ds.spec_g.data() + t * nv, g + (sp.begin + t) * nv, nv * sizeof(float));
      std::memcpy(ds.spec_beta.data() + t * nv, beta + (sp.begin + t) * nv, nv * sizeof(float));
    }
  }
  // Delta rule per (span, value head); value head h reads key head h / (nv / nk).
  float* o = ar.alloc<float>(N * vdim);
  const int64_t rep = nv / nk;
  parallel_for(static_cast<int64_t>(spans.size()) * nv, 1, [&](int64_t i0, int64_t i1, int) {
    for (int64_t it = i0; it < i1; ++it) {
      const Span& sp = spans[it / nv];
      const int64_t h = it % nv, kh = h / rep;
      const float* base = act + sp.begin * conv_dim;
      ops::DeltaRuleIO io;
      io.T = sp.n;
      io.dk = dk;
      io.dv = dv;
      io.q = base + kh * dk;
      io.k = base + kdim + kh * dk;
      io.v = base + 2 * kdim + h * dv;
      io.q_stride = io.k_stride = io.v_stride = conv_dim;
      io.g = g + sp.begin * nv + h;
      io.beta = beta + sp.begin * nv + h;
      io.gb_stride = nv;
      io.o = o + sp.begin * vdim + h * dv;
      io.o_stride = vdim;
      DeltaNetState& ds = sp.state->delta(cache_index);
      io.S = ds.ssm.data() + h * dk * dv;
      if (sp.keep_states) {
        // Token by token (as decode runs it), out of place: the state before the step
        // stays in ssm for a rollback (swapped into spec_ssm below).
        io.S_in = io.S;
        io.S = ds.spec_ssm.data() + h * dk * dv;
        ops::delta_rule_recurrent(io);
      } else if (sp.n == 1) {
        ops::delta_rule_recurrent(io);
      } else {
        ops::delta_rule_chunked(io, 64);
      }
    }
  });

  for (const Span& sp : spans)
    if (sp.keep_states) {
      DeltaNetState& ds = sp.state->delta(cache_index);
      ds.ssm.swap(ds.spec_ssm);   // ssm: after the step's tokens; spec_ssm: before them
    }

  prof.emplace(Part::kGdnOut);
  // Gated RMSNorm per head, then out_proj.
  parallel_for(N, 16, [&](int64_t t0, int64_t t1, int) {
    for (int64_t t = t0; t < t1; ++t)
      for (int64_t h = 0; h < nv; ++h) {
        float* oh = o + t * vdim + h * dv;
        ops::rmsnorm_gated(oh, z + t * vdim + h * dv, w.norm.data(), dv, eps, oh);
      }
  });
  w.out.apply(o, N, out);
}

}  // namespace qinfer::model
