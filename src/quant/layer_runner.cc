#include "quant/layer_runner.h"

#include <algorithm>
#include <memory>

#include "model/model.h"
#include "ops/norms_activations_rope.h"
#include "util/error.h"

namespace qinfer::quant {

LayerRunner::LayerRunner(const TextConfig& tc) : tc_(tc) {
  inv_freq_.resize(tc.rotary_dim() / 2);
  ops::rope_inv_freq(tc.rope.theta, tc.rotary_dim(), inv_freq_.data());
  shape_ = model::text_state_shape(tc, false);
  shape_.num_full_layers = 1;     // one layer at a time: a cache for it alone
  shape_.num_linear_layers = 1;
}

void LayerRunner::run(const model::LayerWeights& l, const ActivationStore& in, ActivationStore* out,
                      model::MoeObserver* observer, const std::function<void(int64_t)>& on_rows) {
  if (l.cache_index != 0) fail("LayerRunner: the layer must be bound with cache_index 0");
  const int64_t H = tc_.hidden_size, maxN = Model::kMaxCallTokens;
  std::vector<float> X;
  const size_t S = in.samples();
  for (size_t s = 0; s < S;) {
    if (in.rows(s) > maxN) {   // one long sample in pieces, its caches carried over
      SequenceState st(shape_);
      if (out) out->begin_sample(in.rows(s));
      for (int64_t off = 0; off < in.rows(s); off += maxN) {
        const int64_t n = std::min(maxN, in.rows(s) - off);
        std::vector<model::Span> spans{{&st, 0, n, st.n_tokens()}};
        std::vector<KvCache*> caches{l.type == LayerType::kFullAttention ? &st.kv(0) : nullptr};
        X.resize(static_cast<size_t>(n * H));
        in.read(s, off, n, X.data());
        model::decoder_layer(tc_, l, inv_freq_.data(), X.data(), n, spans, caches, nullptr, arena_, observer);
        st.advance(n);
        if (out) out->append(X.data(), n);
        if (on_rows) on_rows(n);
      }
      ++s;
      continue;
    }
    // Whole samples batched up to maxN tokens.
    size_t e = s;
    int64_t N = 0;
    while (e < S && in.rows(e) <= maxN && N + in.rows(e) <= maxN) N += in.rows(e++);
    std::vector<std::unique_ptr<SequenceState>> states;
    std::vector<model::Span> spans;
    std::vector<KvCache*> caches;
    X.resize(static_cast<size_t>(N * H));
    int64_t row = 0;
    for (size_t i = s; i < e; ++i) {
      states.push_back(std::make_unique<SequenceState>(shape_));
      SequenceState* st = states.back().get();
      spans.push_back({st, row, in.rows(i), 0});
      caches.push_back(l.type == LayerType::kFullAttention ? &st->kv(0) : nullptr);
      in.read(i, 0, in.rows(i), X.data() + row * H);
      row += in.rows(i);
    }
    model::decoder_layer(tc_, l, inv_freq_.data(), X.data(), N, spans, caches, nullptr, arena_, observer);
    if (out)
      for (size_t i = s; i < e; ++i) {
        out->begin_sample(in.rows(i));
        out->append(X.data() + spans[i - s].begin * H, in.rows(i));
      }
    if (on_rows) on_rows(N);
    s = e;
  }
}

}  // namespace qinfer::quant
