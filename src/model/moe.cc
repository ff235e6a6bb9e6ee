// Sparse MoE block (docs/MODEL.md §5): softmax router over all experts -> top-k ->
// renormalise; SwiGLU experts run on the tokens routed to them (all experts'
// products in one batched pass); shared SwiGLU expert scaled by sigmoid(gate).
#include <algorithm>
#include <cstring>
#include <numeric>
#include <optional>

#include "model/expert_cache.h"
#include "model/layers.h"
#include "model/weights.h"
#include "model/profile.h"
#include "ops/norms_activations_rope.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace qinfer::model {

namespace {
// Top-k of p (descending; ties to the lower index), weights renormalised.
void top_k(const float* p, int64_t E, int64_t K, int* idx, float* wts) {
  std::vector<int> order(E);
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + K, order.end(),
                    [&](int a, int b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
  float sum = 0.0f;
  for (int64_t k = 0; k < K; ++k) {
    idx[k] = order[k];
    wts[k] = p[order[k]];
    sum += wts[k];
  }
  for (int64_t k = 0; k < K; ++k) wts[k] /= sum;
}
}  // namespace

void moe_forward(const TextConfig& tc, const MoeWeights& w, const float* U, int64_t N, float* out,
                 std::vector<int>* topk, Arena& ar, MoeObserver* observer) {
  const int64_t H = tc.hidden_size, E = tc.num_experts, K = tc.num_experts_per_tok;
  const int64_t I = tc.moe_intermediate_size, Is = tc.shared_expert_intermediate_size;

  // Router.
  std::optional<ProfileScope> prof(std::in_place, Part::kRouter);
  float* probs = ar.alloc<float>(N * E);
  w.router.apply(U, N, probs);
  std::vector<int> sel(N * K);
  float* wts = ar.alloc<float>(N * K);
  parallel_for(N, 16, [&](int64_t t0, int64_t t1, int) {
    for (int64_t t = t0; t < t1; ++t) {
      ops::softmax(probs + t * E, E);
      top_k(probs + t * E, E, K, sel.data() + t * K, wts + t * K);
    }
  });
  if (topk) *topk = sel;
  if (w.routing) ExpertCache::note_routing(w, sel.data(), N * K);

  prof.emplace(Part::kExperts);
  // Group the (token, slot) pairs by expert: rows [offset[e], offset[e+1]).
  std::vector<int64_t> offset(E + 1, 0), slot_row(N * K);
  for (int64_t i = 0; i < N * K; ++i) ++offset[sel[i] + 1];
  for (int64_t e = 0; e < E; ++e) offset[e + 1] += offset[e];
  std::vector<int64_t> fill(offset.begin(), offset.end() - 1);
  const int64_t R = N * K;
  float* xg = ar.alloc<float>(R * H);
  for (int64_t i = 0; i < R; ++i) slot_row[i] = fill[sel[i]]++;
  // The copies in parallel (R * H floats: 33.5 MB a layer for a 512-token prefill of the
  // real model, a serial part that would cap the scaling on many cores).
  parallel_for(R, 64, [&](int64_t i0, int64_t i1, int) {
    for (int64_t i = i0; i < i1; ++i) std::memcpy(xg + slot_row[i] * H, U + (i / K) * H, H * sizeof(float));
  });

  if (observer)
    for (int64_t e = 0; e < E; ++e)
      if (offset[e + 1] > offset[e]) observer->gate_up_input(e, xg + offset[e] * H, offset[e + 1] - offset[e]);

  // The experts run in windows [win[i], win[i + 1]), each window's products in one pass
  // (the shared expert's in the first). One window, unless file-backed GPTQ experts
  // that are not hot must be repacked for the call: then at most cold_per_pass of them
  // a window, so a long prefill (most experts of the layer routed) holds a bounded
  // repack scratch rather than all of them at once.
  const size_t cold_per_pass = static_cast<size_t>(std::max(8, 4 * ThreadPool::global().size()));
  std::vector<int64_t> win = {0};
  std::vector<std::vector<int64_t>> cold_ids(1);
  for (int64_t e = 0; w.gptq_source && e < E; ++e) {
    if (offset[e + 1] == offset[e] || !w.experts[e].down.empty()) continue;
    if (cold_ids.back().size() == cold_per_pass) {
      win.push_back(e);
      cold_ids.emplace_back();
    }
    cold_ids.back().push_back(e);
  }
  win.push_back(E);

  float* gu = ar.alloc<float>(R * 2 * I);
  float* sgu = ar.alloc<float>(N * 2 * Is);
  float* sgate = ar.alloc<float>(N);
  float* hid = ar.alloc<float>(R * I);
  float* shid = ar.alloc<float>(N * Is);
  float* yd = ar.alloc<float>(R * H);
  for (size_t wi = 0; wi + 1 < win.size(); ++wi) {
    const int64_t e_begin = win[wi], e_end = win[wi + 1];
    const bool shared = wi == 0;
    prof.emplace(Part::kExperts);
    // File-backed GPTQ experts that are not hot: repacked from the mapping for this window.
    const std::vector<int64_t>& ids = cold_ids[wi];   // ascending
    const std::vector<Expert> cold = repack_cold(w, ids);
    auto expert = [&](int64_t e) -> const Expert& {
      const auto it = std::lower_bound(ids.begin(), ids.end(), e);
      return it != ids.end() && *it == e ? cold[static_cast<size_t>(it - ids.begin())] : w.experts[e];
    };

    // Gate/up products of the window's experts (and the shared expert) in one pass.
    std::vector<Product> first;
    for (int64_t e = e_begin; e < e_end; ++e) {
      const int64_t n = offset[e + 1] - offset[e];
      if (n == 0) continue;
      const Expert& x = expert(e);
      const float* X = xg + offset[e] * H;
      float* Y = gu + offset[e] * 2 * I;
      if (x.fused()) {
        first.push_back({&x.gate_up, X, n, Y});
      } else {  // gate rows then up rows of this expert's block
        first.push_back({&x.gate, X, n, Y});
        first.push_back({&x.up, X, n, Y + n * I});
      }
    }
    if (shared) {
      first.push_back({&w.shared_gate, U, N, sgu});
      first.push_back({&w.shared_up, U, N, sgu + N * Is});
      first.push_back({&w.shared_expert_gate, U, N, sgate});
    }
    apply_all(first);

    // SwiGLU. Fused experts give [n][gate | up] rows, split ones [gate block][up block].
    const int64_t We = e_end - e_begin;
    parallel_for(We, R >= 64 ? 1 : We, [&](int64_t e0, int64_t e1, int) {   // inline for a few tokens
      for (int64_t e = e_begin + e0; e < e_begin + e1; ++e) {
        const int64_t n = offset[e + 1] - offset[e];
        const float* Y = gu + offset[e] * 2 * I;
        float* h = hid + offset[e] * I;
        const bool fused = expert(e).fused();
        for (int64_t r = 0; r < n; ++r) {
          const float* gp = fused ? Y + r * 2 * I : Y + r * I;
          const float* up = fused ? gp + I : Y + n * I + r * I;
          ops::swiglu(gp, up, I, h + r * I);
        }
      }
    });
    if (shared)
      parallel_for(N, 16, [&](int64_t t0, int64_t t1, int) {
        ops::swiglu(sgu + t0 * Is, sgu + N * Is + t0 * Is, (t1 - t0) * Is, shid + t0 * Is);
      });

    if (observer)
      for (int64_t e = e_begin; e < e_end; ++e)
        if (offset[e + 1] > offset[e]) observer->down_input(e, hid + offset[e] * I, offset[e + 1] - offset[e]);

    // Down products.
    prof.emplace(Part::kExpertsDown);
    std::vector<Product> second;
    for (int64_t e = e_begin; e < e_end; ++e) {
      const int64_t n = offset[e + 1] - offset[e];
      if (n == 0) continue;
      second.push_back({&expert(e).down, hid + offset[e] * I, n, yd + offset[e] * H});
    }
    if (shared) second.push_back({&w.shared_down, shid, N, out});
    apply_all(second);
  }

  prof.emplace(Part::kCombine);
  // out = Σ_k w_k y_k (top-k order) + sigmoid(gate) * shared.
  parallel_for(N, 4, [&](int64_t t0, int64_t t1, int) {
    std::vector<float> acc(H);
    for (int64_t t = t0; t < t1; ++t) {
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t k = 0; k < K; ++k)
        ops::axpy(wts[t * K + k], yd + slot_row[t * K + k] * H, H, acc.data());
      const float gs = ops::sigmoid(sgate[t]);
      float* o = out + t * H;
      for (int64_t j = 0; j < H; ++j) o[j] = acc[j] + gs * o[j];
    }
  });
}

void decoder_layer(const TextConfig& tc, const LayerWeights& l, const float* inv_freq, float* X, int64_t N,
                   const std::vector<Span>& spans, const std::vector<KvCache*>& caches, std::vector<int>* topk,
                   Arena& ar, MoeObserver* observer) {
  const int64_t H = tc.hidden_size;
  const float eps = static_cast<float>(tc.rms_norm_eps);
  ar.reset();
  float* u = ar.alloc<float>(N * H);
  float* y = ar.alloc<float>(N * H);
  // fn(t) for each token row, in parallel for a prefill (each row alone: the same bits).
  auto each_row = [&](const auto& fn) {
    parallel_for(N, 16, [&](int64_t t0, int64_t t1, int) {
      for (int64_t t = t0; t < t1; ++t) fn(t);
    });
  };
  {
    // 1. u = RMSNorm(X) with the input norm (a layer of docs/MODEL.md §2).
    ProfileScope prof(Part::kNorms);
    each_row([&](int64_t t) { ops::rmsnorm(X + t * H, l.input_norm.data(), H, eps, u + t * H); });
  }
  // 2. The token mixer: y = DeltaNet(u) on linear-attention layers, else gated attention(u).
  if (l.type == LayerType::kLinearAttention)
    deltanet_forward(tc, l.delta, l.cache_index, u, N, spans, y, ar);
  else
    attention_forward(tc, l.attn, inv_freq, u, N, spans, caches, y, ar);
  {
    // 3. Residual X += y, then u = RMSNorm(X) with the post-attention norm.
    ProfileScope prof(Part::kNorms);
    each_row([&](int64_t t) {
      float* x = X + t * H;
      for (int64_t i = 0; i < H; ++i) x[i] += y[t * H + i];
      ops::rmsnorm(x, l.post_norm.data(), H, eps, u + t * H);
    });
  }
  // 4. y = MoE(u): routed top-k experts plus the gated shared expert.
  moe_forward(tc, l.moe, u, N, y, topk, ar, observer);
  // 5. Residual X += y.
  ProfileScope prof(Part::kNorms);
  each_row([&](int64_t t) {
    for (int64_t i = t * H; i < (t + 1) * H; ++i) X[i] += y[i];
  });
}

}  // namespace qinfer::model
